"""What a reader of one input format declares: what it can open and how it opens it.

The shape is xarray's ``BackendEntrypoint``: a class per format with
``guess_can_open(source)`` (by type, by file name, by content) and
``open(source, ...)``; the readers are registered, in order, in one table
(:data:`pickscale.io.formats.registry.READERS`) that every dispatcher walks.
A reader recognises its input at one of three stages:

=========  =====================================================  ===================================
stage      ``source`` given to ``guess_can_open`` / ``open``        ``open`` returns
=========  =====================================================  ===================================
source     what the user passed (an object, a path, a dict ...)   a raw frame (:class:`SourceReader`)
file       one listed file (a path or a :class:`Probe`)           the file as it is (:class:`FileReader`)
table      a table as read (its columns)                          the table in long form
                                                                  (:class:`LayoutReader`)
=========  =====================================================  ===================================

Source readers run on the client; file readers in the read tasks (they must
stay lean: no ObsPy, SeisBench, xarray); layout readers in the normaliser.

The registry imports the readers; a reader never imports the registry.  A
reader that dispatches again (a dict opens each value with the reader the
table picks for it; CSV leaves a file to any other reader that claims it)
asks :func:`dispatchers`, which the registry passes in when it builds the
table (:func:`use_dispatchers`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal, NamedTuple

import pandas as pd

from ...errors import InputError
from ..sniff import check_codec, compression_of, read_head

__all__ = ["Stage", "Probe", "probe_of", "Described", "Reader", "SourceReader", "FileReader", "LayoutReader",
           "LABEL", "with_dataset", "Dispatchers", "dispatchers", "use_dispatchers"]

Stage = Literal["source", "file", "table"]

#: The column a ``{name: input}`` dict names, per role: the model of picks, the dataset of a reference.
LABEL = {"picks": "model", "reference": "dataset"}


class Probe:
    """One file as the readers look at it: its name and its first bytes, read once and only when asked for.

    A reader that knows a file by its name costs no request; the first that
    looks at the content reads :attr:`head` (``read_head``'s messages name the
    file), and every later one sees the same bytes.

    Examples
    --------
    >>> p = Probe("picks.CSV.gz", head=b"\\x1f\\x8b...")
    >>> p.ends_with((".csv.gz",)), p.compression
    (True, 'gzip')
    """

    __slots__ = ("path", "_head", "_content")

    def __init__(self, path: str, head: bytes | None = None) -> None:
        self.path = path
        self._head = head
        self._content: bytes | None = None

    def ends_with(self, suffixes: tuple[str, ...]) -> bool:
        """Whether the file name ends in one of ``suffixes`` (lower case), whatever its case."""
        return bool(suffixes) and self.path.lower().endswith(suffixes)

    @property
    def head(self) -> bytes:
        """The first bytes, as stored (:func:`~pickscale.io.sniff.read_head`)."""
        if self._head is None:
            self._head = read_head(self.path)
        return self._head

    @property
    def compression(self) -> str | None:
        """The compression the first bytes show (fsspec's name), or None."""
        return compression_of(self.head)

    @property
    def content(self) -> bytes:
        """The first bytes once decompressed (the head itself when not compressed; ``b""`` for an empty stream).

        Raises InputError when this Python cannot decompress it (naming the package) or the stream is damaged.
        """
        if self._content is None:
            compression = self.compression
            if compression:
                check_codec(self.path, compression)
                self._content = read_head(self.path, compression)
            else:
                self._content = self.head
        return self._content


def probe_of(source: Any) -> Probe | None:
    """``source`` as a :class:`Probe` when it names one file (a path or a probe), else None."""
    if isinstance(source, Probe):
        return source
    if isinstance(source, (str, os.PathLike)):
        return Probe(os.fspath(source))
    return None


class Described(NamedTuple):
    """What the engine calls an opened input (``Source.description``), its rows in messages, the files read."""

    name: str
    rows: str
    files: list[str]


class Reader:
    """One input format: what it can open (:meth:`guess_can_open`) and how (``open``, per stage).

    Subclass :class:`SourceReader`, :class:`FileReader` or
    :class:`LayoutReader` and add an instance to
    :data:`~pickscale.io.formats.registry.READERS`: the dispatchers walk that
    table in order and open an input with the first reader that claims it.
    """

    #: A short name (``"csv"``, ``"bulletin"``): tests and messages.
    name: ClassVar[str] = ""
    #: What the format is, for the table of docs/internals.md.
    description: ClassVar[str] = ""
    #: Where the format is recognised (see the module).
    stage: ClassVar[Stage]
    #: File name endings the format claims (lower case; ``()``: none).
    suffixes: ClassVar[tuple[str, ...]] = ()

    def guess_can_open(self, source: Any) -> bool:
        """Whether this reader reads ``source``: cheap, never raising (an unreadable file: False)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.stage})>"


class SourceReader(Reader):
    """A format recognised in what the user passed, and made a frame on the client."""

    stage: ClassVar[Stage] = "source"
    #: Its ``open`` converts the input (an object, a bulletin) into a raw frame in SPEC §1's names; False for
    #: inputs that already are tables (pandas, Dask), which :func:`~pickscale.io.formats.as_frame` leaves alone.
    converts: ClassVar[bool] = True
    #: The roles in which a value of a ``{name: input}`` dict may be of this format.
    in_dicts: ClassVar[tuple[str, ...]] = ("picks", "reference")
    #: Its table is a Dask DataFrame, read a partition a task (else a pandas frame, read in chunks of rows).
    partitioned: ClassVar[bool] = False

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> Any:
        """``source`` as a raw table (``name``: what messages call it, when it is a value of a dict)."""
        raise NotImplementedError

    def describe(self, source: Any, table: Any, *, role: str) -> Described:
        """What the engine calls the opened input: the description a converter left in ``attrs``."""
        name = table.attrs.get("pickscale_description") or f"<{role}: {type(source).__name__}>"
        return Described(name, name, list(table.attrs.get("pickscale_files") or []))

    def labelled(self, frame: pd.DataFrame, label: str, *, role: str, name: str) -> pd.DataFrame:
        """``frame``, a value of a dict under ``label``, with that label as its model (picks) or dataset column."""
        column = LABEL[role]
        frame.insert(0, column, pd.Series([label] * len(frame), dtype=object, index=frame.index))
        if role == "picks" and any(str(c).strip().casefold() == "model" for c in frame.columns[1:]):
            raise InputError(f"{name}: picks given under the model name {label!r} already have a model column.")
        return frame


def with_dataset(frame: pd.DataFrame, dataset: str | None) -> pd.DataFrame:
    """``frame`` with a ``dataset`` column of ``dataset`` when one is given and the frame has none."""
    if dataset is not None and "dataset" not in frame.columns:
        frame.insert(0, "dataset", dataset)
    return frame


class FileReader(Reader):
    """A format recognised in one listed file (its name, its first bytes), read as it is in a read task."""

    stage: ClassVar[Stage] = "file"
    #: File name endings a folder is searched for (:func:`pickscale.io.sources.listed_suffixes`): its files of
    #: this format; other names are read only when given one by one or matched by a glob.
    listed: ClassVar[tuple[str, ...]] = ()
    #: Small files of this format are parsed as one text with others of the same header
    #: (:func:`~pickscale.io.raw.read_raw_batch`).
    batched: ClassVar[bool] = False

    def guess_can_open(self, source: Any) -> bool:
        """A path or :class:`Probe` whose name ends in :attr:`suffixes`, or whose content :meth:`recognises`."""
        probe = probe_of(source)
        if probe is None:
            return False
        if probe.ends_with(self.suffixes):
            return True
        try:
            return self.recognises(probe)
        except InputError:  # unreadable here: not claimed (the last file reader says why)
            return False

    def recognises(self, probe: Probe) -> bool:
        """Whether the first bytes (:attr:`Probe.head`, :attr:`Probe.content`) are of this format."""
        raise NotImplementedError

    def open(self, probe: Probe) -> pd.DataFrame:
        """The file as it is (``attrs``: ``source``, ``format`` ...); InputError naming it when it is not."""
        raise NotImplementedError


class LayoutReader(Reader):
    """A tool's own layout of a table (recognised by its header), made one row per pick in the normaliser."""

    stage: ClassVar[Stage] = "table"

    def open(self, raw: pd.DataFrame, *, carry: Iterable[str] = ()) -> pd.DataFrame:
        """``raw`` in long form (``carry``: further columns kept, by name)."""
        raise NotImplementedError


class Dispatchers(NamedTuple):
    """The dispatchers of the table of readers that a reader dispatches through again (:mod:`.registry`'s own)."""

    #: ``reader_for(source, *, converts=None, in_dict=None)``: the source reader that claims ``source``, or None.
    reader_for: Callable[..., SourceReader | None]
    #: ``claimed_elsewhere(probe, reader)``: whether a source or file reader other than ``reader`` claims the file.
    claimed_elsewhere: Callable[[Probe, Reader], bool]


_dispatchers: Dispatchers | None = None


def use_dispatchers(table: Dispatchers) -> None:
    """Make ``table`` what :func:`dispatchers` returns: the registry passes its own in, once it has built the table."""
    global _dispatchers
    _dispatchers = table


def dispatchers() -> Dispatchers:
    """The table's dispatchers, for a reader that dispatches again (:func:`use_dispatchers`).

    They are set as soon as :mod:`pickscale.io` is imported (its package imports the registry), so before any
    reader is asked anything.
    """
    if _dispatchers is None:
        raise RuntimeError("the table of readers (pickscale.io.formats.registry) is not built yet")
    return _dispatchers
