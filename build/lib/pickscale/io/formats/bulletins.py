"""Bulletin files: which sources are bulletins (by name, XML root element or text content), read through ObsPy.

:class:`BulletinFiles` is their reader in the table of
:mod:`pickscale.io.formats.registry`.

A bulletin (QuakeML, SC3ML, NonLinLoc ``.hyp``, hypoDD ``.pha``, Nordic,
IMS1.0 ...) is read with ``obspy.read_events`` on the client (bulletins are
small) and converted by :func:`~pickscale.io.formats.quakeml.catalog_to_frame`.
The XML root element (:func:`xml_root`, :func:`is_bulletin_root`) and
:data:`OBSPY_HINT` are :mod:`pickscale.io.sniff`'s, below the readers (the CSV
reader's messages name a bulletin too); they are importable here as before.
ObsPy is an optional dependency (``pip install 'pickscale[obspy]'``): it is
imported only when a bulletin is read, never by the core or the workers.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...errors import InputError
from ..sniff import OBSPY_HINT, is_bulletin_root, xml_root
from ..sources import has_magic, listed_suffixes
from ..storage import open_input
from ..table import NOTES_ATTR
from .quakeml import catalog_to_frame
from .reader import Probe, SourceReader

__all__ = [
    "BulletinFiles",
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
    "bulletin_files",
    "read_bulletins",
    "xml_root",
    "is_bulletin_root",
    "text_bulletin",
]


#: File name endings read as bulletins (through ``obspy.read_events``, format detected by ObsPy):
#: QuakeML, SC3ML/SCML, NonLinLoc ``.hyp``, hypoDD ``.pha``, Nordic, IMS1.0.
BULLETIN_SUFFIXES = (".xml", ".qml", ".quakeml", ".sc3ml", ".scml", ".hyp", ".pha", ".nordic", ".ims")
_SNIFF = 4096


def _obspy() -> Any:
    try:
        import obspy  # noqa: F401
        from obspy.core.event import read_events
    except ImportError:
        raise InputError(OBSPY_HINT + ".") from None
    return read_events


def text_bulletin(head: bytes) -> str | None:
    """The text bulletin format that a file's first bytes show, or None: recognised by content, as ObsPy
    recognises them, so that real names (``select.out``, S-files such as ``01-0411-15L.S201309``) are read
    without a suffix of their own.

    - Nordic (SEISAN): the first line is 80 characters wide (trailing blanks may be cut) with type ``1`` in
      column 80 and a date and time in columns 2–20 (ObsPy's own test: year, month, day, hour, minute,
      seconds as numbers);
    - IMS1.0: ``DATA_TYPE BULLETIN IMS1.0``;
    - NonLinLoc ``.hyp``: a line starting with ``NLLOC``.

    Examples
    --------
    >>> text_bulletin(b" 2013  9 1 0411 15.7 L -43.340 170.376  8.5  VUW  8 0.2 0.6LVUW                1\\n")
    'nordic'
    >>> text_bulletin(b"DATA_TYPE BULLETIN IMS1.0:short\\n"), text_bulletin(b"station,phase,time\\n") is None
    ('ims', True)
    """
    text = head.lstrip(b"\xef\xbb\xbf").decode("latin-1")
    lines = [line.rstrip("\r") for line in text.split("\n")]
    first = next((line for line in lines if line.strip()), "")
    if first.upper().startswith("DATA_TYPE BULLETIN"):
        return "ims"
    if any(line.startswith("NLLOC ") for line in lines[:50]):
        return "nlloc"
    if len(first) >= 80 and first[79] == "1":
        try:
            int(first[1:5]), int(first[6:8]), int(first[8:10]), int(first[11:13]), int(first[13:15])
            float(first[16:20])
        except ValueError:
            return None
        return "nordic"
    return None


def _head(path: str) -> bytes:

    try:
        with open_input(path, "rb", compression="infer") as f:  # the run's storage options, for a URL
            return f.read(_SNIFF)
    except (OSError, ValueError):
        return b""


def _is_bulletin_name(path: str) -> bool:
    low = path.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    return low.endswith(BULLETIN_SUFFIXES)


def bulletin_files(source: Any) -> list[str] | None:
    """The bulletin files that ``source`` names, or None when it is not a bulletin.

    A file whose name ends in one of :data:`BULLETIN_SUFFIXES`, or that is
    XML with another name (not CSV/Parquet); a glob or folder whose files are
    all of that kind (a folder holding CSV or Parquet files is not a
    bulletin folder).  A list of sources is a bulletin when all its items are.
    """
    if isinstance(source, (list, tuple)):
        if not source or not all(isinstance(s, (str, os.PathLike)) for s in source):
            return None
        found: list[str] = []
        for item in source:
            files = bulletin_files(item)
            if files is None:
                return None
            found.extend(files)
        return list(dict.fromkeys(found))
    if not isinstance(source, (str, os.PathLike)):
        return None
    import fsspec

    text = os.fspath(source)
    tables = listed_suffixes()  # the names of CSV and Parquet files (and other file formats registered)
    try:
        fs, path = fsspec.core.url_to_fs(text)
        if has_magic(path):
            matched = [p for p in sorted(fs.glob(path)) if not fs.isdir(p)]
        elif fs.isdir(path):
            matched = sorted(p for p in fs.find(path)
                             if _is_bulletin_name(p) or p.lower().endswith(tables))
        elif fs.exists(path):
            matched = [path]
        else:
            return None
    except (OSError, ValueError):
        return None
    if not matched:
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")
    out = []
    for p in matched:
        name = p if local else fs.unstrip_protocol(p)
        if _is_bulletin_name(p):
            out.append(name)
        elif not p.lower().endswith(tables) and (xml_root(head := _head(name)) is not None
                                                           or text_bulletin(head) is not None):
            out.append(name)  # XML, Nordic, IMS1.0 or NonLinLoc under another name: read as a bulletin
        else:
            return None
    return out


def _read_one(path: str) -> Any:

    head = _head(path)
    root = xml_root(head)
    if root is not None and not is_bulletin_root(root):
        raise InputError(
            f"{path}: is an XML file whose root element is <{root or '?'}>, not a bulletin "
            "(QuakeML <quakeml>, SC3ML <seiscomp>); pickscale reads reference arrivals from a bulletin, "
            "a CSV or a Parquet file."
        )
    read_events = _obspy()
    try:
        with open_input(path, "rb", compression="infer") as f:  # the run's storage options, for a URL
            data = io.BytesIO(f.read())
        return read_events(data)
    except InputError:
        raise
    except Exception as exc:  # ObsPy raises TypeError / ValueError / lxml errors for what it cannot read
        raise InputError(f"{path}: cannot be read as a bulletin by ObsPy ({type(exc).__name__}: {exc}).") from None


def read_bulletins(paths: Sequence[str], *, manual_only: bool = False, dataset: str | None = None,
                   description: str | None = None) -> pd.DataFrame:
    """Read bulletin files with ``obspy.read_events`` into one raw reference frame (see :func:`catalog_to_frame`)."""
    frames = []
    for path in paths:
        frames.append(catalog_to_frame(_read_one(path), manual_only=manual_only, dataset=dataset, source=path))
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    notes = [n for f in frames for n in f.attrs.get(NOTES_ATTR, [])]
    counts: dict[str, int] = {}
    for f in frames:
        for k, v in f.attrs.get("pickscale_counts", {}).items():
            counts[k] = counts.get(k, 0) + v
    frame.attrs = {}
    frame.attrs[NOTES_ATTR] = notes
    frame.attrs["pickscale_counts"] = counts
    what = description or (paths[0] if len(paths) == 1 else f"{len(paths)} bulletin files")
    frame.attrs["pickscale_description"] = (f"{what} ({counts.get('events', 0)} event(s), "
                                            f"{counts.get('arrivals', 0)} arrival(s))")
    frame.attrs["pickscale_files"] = list(paths)
    return frame


class BulletinFiles(SourceReader):
    """A bulletin file, folder, glob or list of them (:func:`bulletin_files`), read as the reference.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "select.out").write_text("DATA_TYPE BULLETIN IMS1.0:short\\n")
    >>> _ = (d / "picks.csv").write_text("station,phase,time\\n")
    >>> BulletinFiles().guess_can_open(d / "select.out"), BulletinFiles().guess_can_open(d / "picks.csv")
    (True, False)
    """

    name = "bulletin"
    description = "QuakeML and other bulletins obspy.read_events reads"
    suffixes = BULLETIN_SUFFIXES + tuple(s + ".gz" for s in BULLETIN_SUFFIXES)
    in_dicts = ("reference",)  # a bulletin given as picks is refused (it holds no confidence)

    def guess_can_open(self, source: Any) -> bool:
        return bulletin_files(source.path if isinstance(source, Probe) else source) is not None

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> pd.DataFrame:
        files = bulletin_files(source)
        if files is None:
            raise InputError(f"{source!r}: names no bulletin file.")
        path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
        if role == "picks":
            raise InputError(f"{path or files[0]}: is a bulletin; "
                             "a bulletin is read as the reference (its picks carry no confidence).")
        return read_bulletins(files, manual_only=manual_only, dataset=dataset,
                              description=path if name is None else None)

    def labelled(self, frame: pd.DataFrame, label: str, *, role: str, name: str) -> pd.DataFrame:
        frame.insert(0, "dataset", label)  # a column of the one name (a bulletin is only ever a reference)
        return frame
