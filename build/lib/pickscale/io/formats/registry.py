"""The one table of input formats (:data:`READERS`) and the dispatchers that walk it.

Each format is a reader class (:mod:`.reader`: ``guess_can_open``, ``open``);
an input is opened by the first reader of its stage that claims it, in the
order of the table.  A new format is a class added here: no dispatcher
changes.

- :func:`reader_for` — what the user passed (on the client: ``engine.inputs.load``);
  :func:`as_frame` — the same, for the readers that convert (bulletins, Catalogs, picks, dicts);
- :func:`file_reader_for` — one listed file (in the read tasks: :func:`pickscale.io.read_raw`);
- :func:`layout_for` — a table as read, in a tool's own layout (EQTransformer).

The registry sits on top: it imports the readers, none of them imports it.
What a reader or the listing of sources dispatches through again (a dict's
values, CSV leaving a file to another reader, the endings a folder is
searched for) is passed down from here when the table is built
(:func:`~.reader.use_dispatchers`, :func:`~pickscale.io.sources.use_listed_suffixes`),
as these functions, which read :data:`READERS` when called.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..sources import use_listed_suffixes
from .bulletins import BulletinFiles
from .csv_files import CsvFiles
from .dicts import ModelDict
from .eqtransformer import EqtTables
from .frames import DaskFrame, PandasFrame
from .parquet_files import ParquetFiles
from .quakeml import ObspyCatalog
from .reader import LABEL, Dispatchers, FileReader, LayoutReader, Probe, Reader, SourceReader, use_dispatchers
from .seisbench import SeisbenchPicks

__all__ = ["READERS", "reader_for", "as_frame", "file_reader_for", "named_reader", "layout_for",
           "claimed_elsewhere", "listed_suffixes"]

#: Every input format, in the order its stage's dispatcher asks them.  Source stage: a dict first (its values are
#: opened through this table again), objects before paths, a bulletin path before the CSV/Parquet listing the
#: engine makes of any other path.  File stage: Parquet (by its magic bytes, or its name) before CSV, which is
#: last: it reads what no other file reader claims, and says why a file that is no text cannot be read.
READERS: tuple[Reader, ...] = (
    ModelDict(),
    ObspyCatalog(),
    SeisbenchPicks(),
    BulletinFiles(),
    PandasFrame(),
    DaskFrame(),
    ParquetFiles(),
    CsvFiles(),
    EqtTables(),
)


def reader_for(source: Any, *, converts: bool | None = None, in_dict: str | None = None) -> SourceReader | None:
    """The first source reader that claims what the user passed, or None (a path left to the file listing).

    ``converts``: only readers that do (True) or do not (False) convert; ``in_dict``: only readers whose
    inputs may be values of a dict in that role.

    Examples
    --------
    >>> reader_for({"PhaseNet": []}).name, reader_for(pd.DataFrame()).name, reader_for(pd.DataFrame(), converts=True)
    ('dict', 'pandas', None)
    """
    for reader in READERS:
        if (isinstance(reader, SourceReader) and (converts is None or reader.converts == converts)
                and (in_dict is None or in_dict in reader.in_dicts) and reader.guess_can_open(source)):
            return reader
    return None


def as_frame(source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None) -> pd.DataFrame | None:
    """An input that is not a CSV/Parquet path or a frame, as a raw frame for the normaliser; else ``None``.

    Parameters
    ----------
    source
        What the user passed as the reference or the picks: an ObsPy
        ``Catalog``; a bulletin file, folder, glob or list of them (QuakeML
        ``.xml``/``.qml``/``.quakeml`` or any name ending in
        :data:`~pickscale.io.formats.bulletins.BULLETIN_SUFFIXES`, or XML
        under another name; read with ``obspy.read_events`` on the client —
        bulletins are small); a SeisBench ``PickList`` or any list or
        iterator of objects with SeisBench ``Pick``'s ``trace_id, peak_time,
        peak_value, phase``; or a dict of name → one of these (or a
        DataFrame): the name is the **model** of picks, the **dataset** of a
        reference.  Whichever reader of :data:`READERS` that converts claims it first.
    role
        ``"reference"`` or ``"picks"``.
    manual_only
        Bulletins: keep only the picks whose ``evaluation_mode`` is ``"manual"``.
    dataset
        The dataset name of a bulletin or pick list (default: none, which SPEC
        §1 reads as the single dataset ``all``).

    Returns
    -------
    pandas.DataFrame or None
        Columns in SPEC §1 names (``[dataset|model,] station, phase, time[, conf]``);
        ``attrs["pickscale_description"]`` says what it was,
        ``attrs["pickscale_notes"]`` what was left out (reported as warnings),
        ``attrs["pickscale_files"]`` the bulletin files read.

    Raises
    ------
    InputError
        A bulletin without ObsPy installed (names the extra), XML that is not
        a bulletin, a bulletin ObsPy cannot read, or a Catalog given as picks.

    Examples
    --------
    >>> class Pick:
    ...     trace_id, peak_time, peak_value, phase = "CI.CLC.", pd.Timestamp("2020-01-01", tz="UTC"), 0.9, "P"
    >>> as_frame({"PhaseNet": [Pick()]}, role="picks")[["model", "station", "conf"]].to_dict("records")
    [{'model': 'PhaseNet', 'station': 'CI.CLC.', 'conf': 0.9}]
    >>> as_frame(pd.DataFrame({"station": ["CLC"]}), role="picks") is None
    True
    """
    if role not in LABEL:
        raise ValueError(f"role must be 'reference' or 'picks', not {role!r}")
    reader = reader_for(source, converts=True)
    return None if reader is None else reader.open(source, role=role, manual_only=manual_only, dataset=dataset)


def _file_readers() -> list[FileReader]:
    return [r for r in READERS if isinstance(r, FileReader)]


def file_reader_for(probe: Probe) -> FileReader:
    """The file reader of one file: the first that claims it, else the last of the table (it says why it cannot).

    Examples
    --------
    >>> file_reader_for(Probe("part-0", head=b"PAR1")).name, file_reader_for(Probe("x.dat", head=b"\\x00")).name
    ('parquet', 'csv')
    """
    readers = _file_readers()
    for reader in readers[:-1]:
        if reader.guess_can_open(probe):
            return reader
    return readers[-1]


def named_reader(path: str) -> FileReader | None:
    """The file reader whose file name endings ``path`` ends in (no byte read), or None.

    Examples
    --------
    >>> named_reader("a/b.PQ").name, named_reader("a/picks.tsv.gz").name, named_reader("a/part-0") is None
    ('parquet', 'csv', True)
    """
    probe = Probe(path, head=b"")
    return next((r for r in _file_readers() if probe.ends_with(r.suffixes)), None)


def listed_suffixes() -> tuple[str, ...]:
    """The file name endings a folder is searched for: every file reader's ``listed``, the last reader's first.

    Examples
    --------
    >>> listed_suffixes()
    ('.csv', '.csv.gz', '.csv.bz2', '.csv.xz', '.csv.zst', '.parquet', '.pq')
    """
    readers = _file_readers()
    # The last (CSV: the default) first, so that messages list the endings as they always have.
    return tuple(dict.fromkeys(s for r in readers[-1:] + readers[:-1] for s in r.listed))


def claimed_elsewhere(probe: Probe, reader: Reader) -> bool:
    """Whether a reader of the source or file stage other than ``reader`` claims the file (by name or content)."""
    return any(r is not reader and not isinstance(r, LayoutReader) and r.guess_can_open(probe) for r in READERS)


def layout_for(columns: Any) -> LayoutReader | None:
    """The layout reader that claims a table's columns (or a file, or a frame), or None: SPEC §1's long form.

    Examples
    --------
    >>> layout_for(["station", "p_arrival_time", "p_probability", "s_arrival_time", "s_probability"]).name
    'eqtransformer'
    >>> layout_for(["station", "phase", "time"]) is None
    True
    """
    return next((r for r in READERS if isinstance(r, LayoutReader) and r.guess_can_open(columns)), None)


use_dispatchers(Dispatchers(reader_for=reader_for, claimed_elsewhere=claimed_elsewhere))
use_listed_suffixes(listed_suffixes)
