"""Reading reference and pick tables, and normalising them (SPEC §1).

Three steps, each usable on its own so that a Dask engine can run the last one
on partitions:

1. :func:`resolve_sources` turns what the user typed (a file, a folder, a glob,
   an fsspec URL) into a sorted list of files.
2. :func:`read_raw` reads one CSV or Parquet file *as it is*: CSV cells stay
   strings, so that nothing is guessed by pandas before pickscale decides.
3. :func:`normalise` maps column aliases to the canonical names, parses times
   to int64 nanoseconds since 1970 UTC, maps phase names to ``P``/``S`` and
   validates every row.  Invalid rows are a fatal :class:`InputError` unless
   ``drop_invalid`` (then they are dropped and counted).

Row numbers in messages are spreadsheet row numbers: the header is row 1, the
first data row is row 2 (``row_offset`` shifts them for later partitions).

Everything here is vectorised: there is no Python loop over rows.  Text
columns (dataset, model, station, phase) are normalised per distinct value and
mapped back to rows through integer codes (a ``Categorical`` input's own codes),
so that no per-row Python string is made; ``normalise(..., categorical=True)``
keeps them as codes in its output too.
"""

from __future__ import annotations

import codecs
import csv
import decimal
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InputError

__all__ = [
    "ALIASES",
    "COLUMNS",
    "REQUIRED",
    "Normalised",
    "resolve_sources",
    "read_raw",
    "normalise",
    "map_phase",
    "STATION_KEYS",
    "station_key_of",
    "join_failures",
    "NOTES_ATTR",
]

# --------------------------------------------------------------------------- #
# The input contract (SPEC §1)
# --------------------------------------------------------------------------- #

#: Canonical column name -> accepted names, canonical first, in SPEC order
#: (the first name found in a file wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset", "sequence", "region", "study", "experiment", "catalogue"),
    "model": ("model", "weights", "picker", "method", "run", "rid", "version"),
    "station": ("station", "trace_id", "tid", "station_id", "sta"),
    "phase": ("phase", "phase_hint", "phase_type", "pha"),
    "time": (
        "time", "pick_time", "arrival_time", "peak_time", "phase_time", "peak",
        "onset", "timestamp",
    ),
    "conf": ("conf", "confidence", "probability", "peak_value", "phase_score", "prob", "score"),
}

#: ``frame.attrs`` key of lines a converter (``pickscale.formats``) wants reported with the warnings.
NOTES_ATTR = "pickscale_notes"

#: How stations are compared (SPEC §1): as written, or reduced to ``NET.STA`` on both sides.
STATION_KEYS = ("as-is", "net.sta")

#: Columns of a normalised frame, in order, per role.
COLUMNS: dict[str, tuple[str, ...]] = {
    "reference": ("dataset", "station", "phase", "time"),
    "picks": ("dataset", "model", "station", "phase", "time", "conf"),
}

#: Columns a file must have, per role.
REQUIRED: dict[str, tuple[str, ...]] = {
    "reference": ("station", "phase", "time"),
    "picks": ("station", "phase", "time", "conf"),
}

#: Values used when an optional column is absent.
DEFAULTS: dict[str, str] = {"dataset": "all", "model": "model"}

_WHAT = {
    "dataset": "the dataset name",
    "model": "the model name",
    "station": "the station, e.g. CI.CLC",
    "phase": "the phase name, e.g. P, Pg, S, Sn",
    "time": "the arrival/pick time: ISO-8601 or seconds since 1970",
    "conf": "the pick confidence, a number in [0, 1]",
}

_CSV_SUFFIXES = (".csv", ".csv.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_SOURCE_SUFFIXES = _CSV_SUFFIXES + _PARQUET_SUFFIXES
_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
_SNIFF_BYTES = 64 * 1024
_N_EXAMPLES = 5
_ROWS_CONVENTION = "row numbers as a spreadsheet shows them: header = row 1"
#: How a user asks for invalid rows to be dropped (the CLI flag).
DROP_HINT = "or rerun with --drop-invalid to drop them (they are then counted in a warning)"

_I64_MAX = np.iinfo(np.int64).max
# Largest whole number of seconds whose nanosecond count fits in int64 (~year 2262).
_MAX_SECONDS = _I64_MAX // 10**9 - 1


# --------------------------------------------------------------------------- #
# Normalised result
# --------------------------------------------------------------------------- #

@dataclass
class Normalised:
    """A normalised table and what normalising it did.

    Attributes
    ----------
    frame
        Canonical columns only (:data:`COLUMNS` of the role): ``dataset``,
        (``model``,) ``station``, ``phase`` as object columns of Python ``str``
        (pandas ``Categorical`` with sorted categories when :func:`normalise`
        was asked for ``categorical=True``); ``time`` int64 ns since 1970 UTC;
        (``conf`` float64).  Index 0..n-1.
    role
        ``"reference"`` or ``"picks"``.
    source
        The file name used in messages.
    columns
        Canonical name -> the file's column that was used, or ``None`` when the
        column was absent and the default (``all`` / ``model``) was used.
    n_rows_read
        Data rows in the input.
    n_invalid
        Invalid rows dropped (only ever non-zero with ``drop_invalid``).
    invalid_counts
        Canonical column -> number of rows invalid in that column (a row can
        count under several columns).
    invalid_examples
        Up to five short descriptions per column, e.g. ``"row 7: conf '85'"``.
    dropped_phases
        Original phase name -> rows dropped because it is not P- or S-like.
    mapped_phases
        Original phase name -> ``"P"``/``"S"`` for every name that was kept.
    ignored_columns
        Columns of the file that pickscale does not use (e.g. ``event``).
    model_candidates
        Picks without a model column: unused text columns with a few (2–20)
        distinct values -> some of those values (a run id or weights name
        that may be the model; reported by :meth:`warnings`).
    notes
        Lines a converter (``pickscale.formats``) left in ``raw.attrs``
        (what a bulletin's conversion left out), reported by :meth:`warnings`.
    """

    frame: pd.DataFrame
    role: str
    source: str
    columns: dict[str, str | None]
    n_rows_read: int
    n_invalid: int = 0
    invalid_counts: dict[str, int] = field(default_factory=dict)
    invalid_examples: list[str] = field(default_factory=list)
    dropped_phases: dict[str, int] = field(default_factory=dict)
    mapped_phases: dict[str, str] = field(default_factory=dict)
    ignored_columns: list[str] = field(default_factory=list)
    model_candidates: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        """Rows kept in :attr:`frame`."""
        return len(self.frame)

    @property
    def n_dropped_phases(self) -> int:
        """Rows dropped because their phase is neither P- nor S-like."""
        return int(sum(self.dropped_phases.values()))

    def warnings(self) -> list[str]:
        """Human-readable lines for what was dropped (empty when nothing was)."""
        out = []
        if self.n_invalid:
            per = ", ".join(f"{k}: {v}" for k, v in self.invalid_counts.items())
            ex = "; ".join(self.invalid_examples[:_N_EXAMPLES])
            out.append(
                f"{self.source}: dropped {self.n_invalid} invalid row(s) of "
                f"{self.n_rows_read} ({per}); first: {ex} ({_ROWS_CONVENTION})"
            )
        if self.dropped_phases:
            per = ", ".join(f"{k!r}: {v}" for k, v in sorted(self.dropped_phases.items()))
            out.append(
                f"{self.source}: dropped {self.n_dropped_phases} row(s) whose phase is "
                f"neither P- nor S-like ({per})"
            )
        out.extend(self.notes)
        if self.model_candidates:
            out.append(_model_hint(self.model_candidates))
        return out

    @classmethod
    def combine(cls, parts: Sequence[Normalised]) -> Normalised:
        """Concatenate the results of several partitions or files of one role.

        Counts are summed, examples are kept in order (first five per part),
        ``columns`` and ``source`` are taken from the first part (files of one
        input may use different aliases: ``source`` then lists them all).

        Examples
        --------
        >>> import pandas as pd
        >>> raw = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2020-01-01T00:00:00Z"]})
        >>> a = normalise(raw, role="reference", source="a.csv")
        >>> Normalised.combine([a, a]).n_rows
        2
        """
        if not parts:
            raise ValueError("combine() needs at least one part")
        first = parts[0]
        frame = _concat_frames([p.frame for p in parts])
        sources = list(dict.fromkeys(p.source for p in parts))
        invalid_counts: dict[str, int] = {}
        dropped: dict[str, int] = {}
        mapped: dict[str, str] = {}
        for p in parts:
            for k, v in p.invalid_counts.items():
                invalid_counts[k] = invalid_counts.get(k, 0) + v
            for k, v in p.dropped_phases.items():
                dropped[k] = dropped.get(k, 0) + v
            mapped.update(p.mapped_phases)
        _attach_report(frame, sum(p.n_rows_read for p in parts), sum(p.n_invalid for p in parts), dropped)
        return cls(
            frame=frame,
            role=first.role,
            source=", ".join(sources),
            columns=dict(first.columns),
            n_rows_read=sum(p.n_rows_read for p in parts),
            n_invalid=sum(p.n_invalid for p in parts),
            invalid_counts=invalid_counts,
            invalid_examples=[e for p in parts for e in p.invalid_examples],
            dropped_phases=dropped,
            mapped_phases=mapped,
            ignored_columns=list(dict.fromkeys(c for p in parts for c in p.ignored_columns)),
            model_candidates=_union_candidates(p.model_candidates for p in parts),
            notes=list(dict.fromkeys(n for p in parts for n in p.notes)),
        )


_MODEL_CANDIDATES_MAX = 20  # "a few distinct values": more is an id or a file name, not a model
_NOT_MODEL = ("file", "time", "event", "network", "channel", "location", "instrument", "polarity", "trace",
              "comment", "author", "agency")


def _union_candidates(maps) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in maps:
        for col, values in m.items():
            out[col] = sorted(set(out.get(col, [])) | set(values))[:_MODEL_CANDIDATES_MAX + 1]
    return out


def _model_hint(candidates: dict[str, list[str]]) -> str:
    """The warning for picks without a model column but with a column that may name the model."""
    parts = []
    for col, values in sorted(candidates.items()):
        shown = ", ".join(repr(v) for v in values[:4]) + (", ..." if len(values) > 4 else "")
        parts.append(f"{col!r} ({len(values)}{'+' if len(values) > _MODEL_CANDIDATES_MAX else ''} "
                     f"distinct values: {shown})")
    first = sorted(candidates)[0]
    return ("the picks have no model column, so every pick is scored as one model 'model'; but "
            + ("column " if len(parts) == 1 else "columns ") + ", ".join(parts)
            + " may name the picker or its weights: if so, say which column holds the model, e.g. "
            f"columns={{'model': {first!r}}} (CLI: --columns model={first}).")


def unused_text_candidates(columns: Sequence[Any], distinct: Any) -> dict[str, list[str]]:
    """Columns (not used, not named like a file/time/event/network column) whose few distinct values may be models.

    ``distinct(col)`` returns the distinct values of a column (or None to
    skip it); columns with 2 to 20 distinct values are kept.
    """
    out: dict[str, list[str]] = {}
    for col in columns:
        key = _key(col)
        if any(word in key for word in _NOT_MODEL):
            continue
        values = distinct(col)
        if values is None:
            continue
        values = sorted({str(v).strip() for v in values if v is not None and str(v).strip() != ""})
        if all(pd.notna(pd.to_numeric(v, errors="coerce")) for v in values):
            continue  # numbers (an index, a count) name no model
        if 2 <= len(values) <= _MODEL_CANDIDATES_MAX:
            out[str(col)] = values
    return out


def join_failures(messages: Sequence[str]) -> str:
    """Input errors of many files as one text: a message that several files share is said once.

    Messages that are equal once the file name that starts them is taken
    out (a glob of files of one layout: "<file>: the picks table has no
    column for ...") become one message naming the first file and how many
    files share it.  Order: first occurrence.

    Examples
    --------
    >>> print(join_failures(["a.csv: no column for 'conf'.", "b.csv: no column for 'conf'.", "c.csv: empty."]))
    a.csv (and 1 more file with the same problem, 2 in all): no column for 'conf'.
    c.csv: empty.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for m in messages:
        head, sep, rest = m.partition(": ")
        key = rest if sep and head and "\n" not in head else m
        groups.setdefault(key, []).append((head if sep else "", m))
    out = []
    for key, items in groups.items():
        if len(items) == 1 or not items[0][0]:
            out.extend(dict.fromkeys(m for _, m in items))
            continue
        n = len(items)
        out.append(f"{items[0][0]} (and {n - 1} more file{'s' if n > 2 else ''} with the same problem, "
                   f"{n} in all): {key}")
    return "\n".join(out)


def _concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat`` of normalised frames, keeping ``Categorical`` text columns categorical.

    ``pd.concat`` turns categoricals with different categories into object
    columns of per-row strings; here such a column gets the union of the
    categories, sorted as Python ``str`` (as :func:`_categorical` sorts them),
    and each frame's codes are re-mapped (a take per frame, no string per row).
    """
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    names = list(frames[0].columns)
    is_cat = {c: all(isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames) for c in names}
    if not any(is_cat.values()) or any(list(f.columns) != names for f in frames):
        return pd.concat(frames, ignore_index=True)
    rest = pd.concat([f[[c for c in names if not is_cat[c]]] for f in frames], ignore_index=True)
    out: dict[str, Any] = {}
    for c in names:
        if not is_cat[c]:
            out[c] = rest[c]
            continue
        first = frames[0][c].dtype
        if all(f[c].dtype.categories.equals(first.categories) for f in frames[1:]):  # the usual case
            all_codes = np.concatenate([f[c].cat.codes.to_numpy() for f in frames])
            out[c] = pd.Series(pd.Categorical.from_codes(all_codes, dtype=first, validate=False), copy=False)
            continue
        cats = [np.asarray(f[c].cat.categories.astype(object), dtype=object) for f in frames]
        union = np.unique(np.concatenate(cats)) if sum(map(len, cats)) else np.zeros(0, dtype=object)
        dtype = pd.CategoricalDtype(pd.Index(union, dtype="str"))
        index = pd.Index(union, dtype=object)
        codes = [np.append(index.get_indexer(cat), -1).take(f[c].cat.codes.to_numpy())
                 for cat, f in zip(cats, frames)]
        all_codes = np.concatenate(codes).astype(_code_dtype(len(union)))
        out[c] = pd.Series(pd.Categorical.from_codes(all_codes, dtype=dtype, validate=False), copy=False)
    return pd.DataFrame(out, copy=False)


def _attach_report(frame: pd.DataFrame, rows_read: int, n_invalid: int, dropped: dict[str, int]) -> None:
    """Record in ``frame.attrs`` why rows are missing, for the messages of :mod:`pickscale.scope`.

    When nothing is left to score, "no P- or S-like phase" is only helpful with
    the phases that *were* found.
    """
    frame.attrs["pickscale_rows"] = {
        "rows_read": int(rows_read),
        "invalid_dropped": int(n_invalid),
        "dropped_phases": {str(k): int(v) for k, v in sorted(dropped.items())},
    }


# --------------------------------------------------------------------------- #
# Sources
# --------------------------------------------------------------------------- #

def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def _is_source_file(path: str) -> bool:
    return path.lower().endswith(_SOURCE_SUFFIXES)


def _hidden(path: str, root: str) -> bool:
    # Skip .ipynb_checkpoints/, .DS_Store and friends below the folder given.
    rel = path[len(root):].lstrip("/")
    return any(part.startswith(".") for part in rel.split("/"))


def _list_folder(fs: Any, folder: str) -> list[str]:
    files = [p for p in fs.find(folder) if _is_source_file(p) and not _hidden(p, folder)]
    return sorted(files)


def resolve_sources(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """Expand a file, folder, glob or fsspec URL into a sorted list of files.

    A folder yields every ``*.csv``, ``*.csv.gz``, ``*.parquet`` and ``*.pq``
    file inside it, recursively (hidden files and folders skipped).  A glob
    yields every file it matches (folders it matches are expanded as above).
    A list of sources is resolved item by item, in order, without repeats.

    Parameters
    ----------
    source
        A local path, a glob, an fsspec URL (``s3://...``, ``memory://...``),
        or a list of these.

    Returns
    -------
    list of str
        Local files as plain paths, remote files as URLs with their protocol.

    Raises
    ------
    InputError
        When the path does not exist or nothing readable is found.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "b.csv").write_text("x"); _ = (d / "a.parquet").write_text("x")
    >>> [pathlib.Path(p).name for p in resolve_sources(d)]
    ['a.parquet', 'b.csv']
    """
    if isinstance(source, (list, tuple)):
        out: list[str] = []
        for item in source:
            out.extend(resolve_sources(item))
        return list(dict.fromkeys(out))

    text = os.fspath(source)
    fs, path = fsspec.core.url_to_fs(text)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")

    if _has_magic(path):
        found: list[str] = []
        for p in sorted(fs.glob(path)):
            if fs.isdir(p):
                found.extend(_list_folder(fs, p))
            else:
                found.append(p)
        if not found:
            raise InputError(f"{text}: no file matches this pattern.")
    elif fs.isdir(path):
        found = _list_folder(fs, path)
        if not found:
            raise InputError(
                f"{text}: the folder holds no *.csv, *.csv.gz, *.parquet or *.pq file."
            )
    elif fs.exists(path):
        found = [path]
    else:
        raise InputError(f"{text}: no such file or folder.")
    found = sorted(dict.fromkeys(found))
    return found if local else [fs.unstrip_protocol(p) for p in found]


# --------------------------------------------------------------------------- #
# Reading one file
# --------------------------------------------------------------------------- #

def _suffix_kind(path: str) -> str | None:
    low = path.lower()
    if low.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(_CSV_SUFFIXES) or low.endswith((".tsv", ".txt", ".tsv.gz", ".txt.gz")):
        return "csv"
    return None


def _head(path: str, compression: str | None = None) -> bytes:
    try:
        with fsspec.open(path, "rb", compression=compression) as f:
            return f.read(_SNIFF_BYTES)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file.") from None
    except (OSError, EOFError) as exc:  # e.g. a truncated gzip stream
        raise InputError(f"{path}: cannot be read ({exc}).") from None


def _not_text_reason(head: bytes) -> str | None:
    """Why ``head`` cannot be the start of a CSV file, or ``None``."""
    if head.startswith(_ZIP_MAGIC):
        return ("is a ZIP archive (an Excel .xlsx workbook?), not a CSV or Parquet file; "
                "export it as CSV")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if stripped.startswith((b"<?xml", b"<q:quakeml", b"<quakeml", b"<seiscomp")):
        return _xml_reason(head)
    if stripped.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return ("is an HTML/XML page, not a CSV or Parquet file (a download that returned "
                "a web page, e.g. a login or error page?)")
    if b"\x00" in head:
        return "holds binary data: it is neither a CSV (text) nor a Parquet file"
    return None


def _xml_reason(head: bytes) -> str:
    """Why an XML file is not a table: a bulletin (read as the reference, through ObsPy) or other XML."""
    from .formats.quakeml import OBSPY_HINT, is_bulletin_root, xml_root

    root = xml_root(head)
    if root and root.casefold() == "html":
        return ("is an HTML page, not a CSV or Parquet file (a download that returned a web page, "
                "e.g. a login or error page?)")
    if is_bulletin_root(root):
        return (f"is a bulletin (XML root <{root}>), not a CSV or Parquet table: pass it as the reference "
                f"(a file named *.xml, *.qml or *.quakeml, or an ObsPy Catalog); {OBSPY_HINT}")
    return (f"is an XML file (root element <{root or '?'}>), neither a bulletin (QuakeML, SC3ML) "
            "nor a CSV or Parquet table")


def _utf8_error(path: str, compression: str | None) -> str:
    """Locate the first byte that is not UTF-8; streamed, so big files are fine."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    lines = 1
    with fsspec.open(path, "rb", compression=compression) as f:
        while True:
            chunk = f.read(1 << 20)
            final = not chunk
            try:
                decoder.decode(chunk, final=final)
            except UnicodeDecodeError as exc:
                # exc.start counts from the decoder's buffered bytes + this chunk;
                # the buffer holds at most 3 bytes of an unfinished character.
                buffered = len(exc.object) - len(chunk)
                pos = offset - buffered + exc.start
                lines_in_chunk = exc.object[: exc.start].count(b"\n")
                bad = exc.object[exc.start: exc.start + 1]
                return (
                    f"byte 0x{bad.hex().upper()} at byte offset {pos} (line {lines + lines_in_chunk}"
                    f" of the file) is not UTF-8"
                )
            if final:
                return "it is not UTF-8 text"
            lines += chunk.count(b"\n")
            offset += len(chunk)


def _sniff_delimiter(text: str) -> str:
    """``,``, ``;`` or tab, from the first lines.

    ``csv.Sniffer`` looks for a delimiter that splits every line into the same
    number of fields; if it fails, or picks a character absent from the header
    line, the candidate occurring most often in the header line wins (``,`` on
    a tie or when none occurs).
    """
    lines = text.splitlines()
    header = lines[0] if lines else ""
    sample = "\n".join(lines[:20])
    try:
        delim = csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
    except csv.Error:
        delim = ""
    if delim and delim in header:
        return delim
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


def _read_csv(path: str, head: bytes, compression: str | None) -> pd.DataFrame:
    # A one-column result cannot come from a ';' or tab file: the sniffer takes
    # any candidate found in the header line.  Other delimiters ('|') yield one
    # column, and normalise() then names it with a hint.
    name = path
    reason = _not_text_reason(head)
    if reason:
        raise InputError(f"{name}: {reason}.")
    try:
        # final=False: the sniffed block may end inside a multi-byte character.
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
    except UnicodeDecodeError:
        raise InputError(
            f"{name}: {_utf8_error(path, compression)}; save the file as UTF-8 "
            "(Latin-1/Windows-1252 accents such as 'é' are the usual cause)."
        ) from None
    if not text.strip():
        raise InputError(f"{name}: the file holds no header and no rows (only white space).")
    delim = _sniff_delimiter(text)
    try:
        with fsspec.open(path, "rb", compression=compression) as f:
            df = pd.read_csv(
                f, sep=delim, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                engine="c",
            )
    except UnicodeDecodeError:
        raise InputError(
            f"{name}: {_utf8_error(path, compression)}; save the file as UTF-8 "
            "(Latin-1/Windows-1252 accents such as 'é' are the usual cause)."
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{name}: the file holds no header and no rows.") from None
    except pd.errors.ParserError as exc:
        raise InputError(
            f"{name}: not a well-formed CSV file (delimiter {delim!r}): {exc}"
        ) from None
    if len(df) == 0:
        raise InputError(
            f"{name}: the file has a header ({', '.join(map(str, df.columns))}) but no data rows."
        )
    df.attrs.update(source=path, format="csv", delimiter=delim)
    return df


def _read_parquet(path: str) -> pd.DataFrame:
    try:
        with fsspec.open(path, "rb") as f:
            df = pd.read_parquet(f, engine="pyarrow")
    except (OSError, ValueError, TypeError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise InputError(f"{path}: cannot be read as Parquet ({exc}).") from None
    if len(df) == 0:
        cols = ", ".join(map(str, df.columns)) or "none"
        raise InputError(f"{path}: the Parquet file has no rows (columns: {cols}).")
    df.attrs.update(source=path, format="parquet")
    return df


def read_raw(path: str) -> pd.DataFrame:
    """Read one CSV or Parquet file as it is.

    CSV cells are read as strings (``dtype=str``, empty cells ``''``) so that
    pandas guesses nothing; the delimiter (``,``, ``;`` or tab) is sniffed
    from the first lines, a UTF-8 byte-order mark is ignored, gzip is detected
    from the extension or the content.  Parquet columns keep their types
    (pyarrow).  The format comes from the extension; a file with another
    extension is sniffed (Parquet starts with ``PAR1``).  ``df.attrs`` records
    ``source``, ``format`` and, for CSV, ``delimiter``.

    Parameters
    ----------
    path
        A local path or fsspec URL of one file.

    Raises
    ------
    InputError
        Naming the file: missing, empty, header only, binary or HTML content,
        not UTF-8 (with the byte offset and line), malformed CSV or Parquet.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ref.csv"
    >>> _ = p.write_text("station;phase;time\\nCLC;P;2020-01-01T00:00:00Z\\n")
    >>> df = read_raw(str(p))
    >>> list(df.columns), df.attrs["delimiter"]
    (['station', 'phase', 'time'], ';')
    """
    path = os.fspath(path)
    head = _head(path)
    if not head:
        raise InputError(f"{path}: the file is empty (0 bytes).")
    kind = _suffix_kind(path)
    if head.startswith(_PARQUET_MAGIC):
        return _read_parquet(path)
    if kind == "parquet":
        reason = _not_text_reason(head) or "is not a Parquet file (it does not start with 'PAR1')"
        raise InputError(f"{path}: {reason}.")
    compression = "gzip" if head.startswith(_GZIP_MAGIC) else None
    if compression:
        head = _head(path, compression)
        if not head:
            raise InputError(f"{path}: the compressed file is empty.")
    return _read_csv(path, head, compression)


# --------------------------------------------------------------------------- #
# Column resolution
# --------------------------------------------------------------------------- #

def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _key(name: Any) -> str:
    return str(name).strip().casefold()


def check_columns(columns: Any) -> dict[str, str]:
    """Validate explicit column names (``columns={"model": "rid", "station": "tid"}``); canonical keys.

    Also accepts the CLI's text form ``"model=rid,station=tid"``.

    Examples
    --------
    >>> check_columns("model=rid, station=tid")
    {'model': 'rid', 'station': 'tid'}
    """
    from .errors import OptionsError

    if columns is None:
        return {}
    if isinstance(columns, str):
        pairs = [item.partition("=") for item in columns.split(",") if item.strip()]
        if any(not sep or not k.strip() or not v.strip() for k, sep, v in pairs):
            raise OptionsError(f"columns: {columns!r} is not of the form canonical=column[,canonical=column...], "
                               "e.g. model=rid,station=tid.")
        columns = {k.strip(): v.strip() for k, _, v in pairs}
    if not isinstance(columns, dict):
        raise OptionsError(f"columns must map SPEC names to column names, not {type(columns).__name__}.")
    out: dict[str, str] = {}
    for k, v in columns.items():
        key = _key(k)
        if key not in ALIASES:
            raise OptionsError(f"columns: {k!r} is not one of {', '.join(ALIASES)}.")
        if not isinstance(v, str) or not v.strip():
            raise OptionsError(f"columns: the column for {key!r} must be a non-empty name, not {v!r}.")
        out[key] = v.strip()
    return out


def _resolve_columns(raw: pd.DataFrame, role: str, source: str,
                     explicit: dict[str, str] | None = None) -> dict[str, str | None]:
    """Canonical name -> column of ``raw`` (an explicit name first, else the first alias found), or None."""
    by_key: dict[str, Any] = {}
    for col in raw.columns:
        # Among columns equal up to case, an exact canonical spelling is preferred,
        # otherwise the left-most one.
        k = _key(col)
        if k not in by_key or str(col).strip() == k:
            by_key[k] = col
    found: dict[str, str | None] = {}
    explicit = explicit or {}
    for canonical, name in explicit.items():
        if canonical in COLUMNS[role] and _key(name) not in by_key:
            in_file = raw.attrs.get("columns_in_file") or list(raw.columns)
            have = ", ".join(repr(str(c)) for c in in_file) or "none"
            raise InputError(f"{source}: no column {name!r}, which was given as the {canonical} column "
                             f"(columns found: {have}).")
    for canonical in COLUMNS[role]:
        if canonical in explicit:
            found[canonical] = by_key[_key(explicit[canonical])]
            continue
        taken = {_key(v) for v in explicit.values()}
        found[canonical] = next(
            (by_key[a] for a in ALIASES[canonical] if a in by_key and a not in taken), None
        )
    labels = list(raw.columns)
    for canonical, col in found.items():
        if col is not None and labels.count(col) > 1:
            raise InputError(
                f"{source}: the column name {str(col)!r} appears {labels.count(col)} times, so pickscale "
                f"cannot tell which one holds {_WHAT[canonical]}; rename or remove the extra columns."
            )
    missing = [c for c in REQUIRED[role] if found[c] is None]
    if missing:
        lines = [
            f"{source}: the {role} table has no column for "
            + _and([repr(m) for m in missing]) + "."
        ]
        # A reader that projected the file onto the columns it wanted records them all here.
        in_file = raw.attrs.get("columns_in_file") or list(raw.columns)
        have = ", ".join(repr(str(c)) for c in in_file) or "none"
        lines.append(f"  Columns found: {have}.")
        for m in missing:
            lines.append(
                f"  {m} ({_WHAT[m]}) is accepted under any of these names (any case): "
                + ", ".join(ALIASES[m]) + "."
            )
        if len(raw.columns) == 1 and any(d in str(raw.columns[0]) for d in ";\t|"):
            lines.append("  The single column name contains a delimiter: is the file "
                         "separated by something other than ',', ';' or tab?")
        raise InputError("\n".join(lines))
    return found


# --------------------------------------------------------------------------- #
# Column parsers: each returns values and a boolean "valid" mask
# --------------------------------------------------------------------------- #

def _as_text(col: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Stripped string values (pandas ``str`` dtype) and a missing-value mask."""
    missing = col.isna().to_numpy()
    if not (pd.api.types.is_string_dtype(col.dtype) and col.dtype != object):
        try:
            col = col.astype("str")
        except UnicodeDecodeError:  # bytes that are not UTF-8 (a Parquet binary column)
            col = col.map(lambda v: v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v,
                          na_action="ignore").astype("str")
    text = col.str.strip()
    missing = missing | (text == "").fillna(True).to_numpy(dtype=bool)
    return text, missing


def _defused(col: pd.Series) -> pd.Series | None:
    """An object column that pandas cannot even test for missing values, made testable; else None.

    A ``Decimal('sNaN')`` (signalling NaN, e.g. from a Parquet decimal column
    or a frame built in Python) raises ``decimal.InvalidOperation`` in every
    pandas missing-value check: it becomes an ordinary missing value.
    """
    if col.dtype != object:
        return None
    try:
        col.isna()
        pd.api.types.infer_dtype(col, skipna=True)
        return None
    except ArithmeticError:  # decimal.InvalidOperation
        return col.map(lambda v: np.nan if isinstance(v, decimal.Decimal) and v.is_nan() else v)


def _to_object(values: pd.Series) -> np.ndarray:
    return values.astype(object).to_numpy(dtype=object)


def parse_station(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Station strings stripped of surrounding white space and trailing dots.

    Returns ``(values, valid)``: an object array of ``str`` and a mask that is
    False for empty or missing stations.

    Examples
    --------
    >>> v, ok = parse_station(pd.Series([" CI.CLC. ", "", "X.."]))
    >>> v.tolist(), ok.tolist()
    (['CI.CLC', '', 'X'], [True, False, True])
    """
    text, missing = _as_text(col)
    # strip -> rstrip('.') -> strip keeps the operation idempotent ("CLC . " -> "CLC").
    text = text.str.rstrip(".").str.strip().fillna("")
    valid = ~missing & (text != "").to_numpy(dtype=bool)
    return _to_object(text), valid


_P_NAMES = frozenset({"P", "Pg", "Pn", "Pb", "P*"})
_S_NAMES = frozenset({"S", "Sg", "Sn", "Sb", "S*"})


def map_phase(name: str) -> str | None:
    """SPEC §1 phase mapping for one (already stripped) name; ``None`` = dropped.

    Case-sensitive: ``pP``/``sS`` are depth phases and ``p``/``s`` are not
    ``P``/``S``.  ``P*``/``S*`` are the literal phase names (Conrad phases).

    Examples
    --------
    >>> [map_phase(x) for x in ["P", "Pg", "Sn", "P*", "pP", "p", "PKP"]]
    ['P', 'P', 'S', 'P', None, None, None]
    """
    if name in _P_NAMES:
        return "P"
    if name in _S_NAMES:
        return "S"
    return None


def parse_phase(col: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int],
                                           dict[str, str]]:
    """Map phase names to ``P``/``S`` over unique values.

    Returns ``(phase, valid, keep, counts_dropped, mapped)``: ``phase`` object
    array (``None`` where not P/S-like), ``valid`` False for empty phases,
    ``keep`` True for P/S-like phases, counts of dropped rows per original
    (stripped) name, and the mapping used for the names kept.

    Examples
    --------
    >>> phase, ok, keep, dropped, used = parse_phase(pd.Series(["Pg", " PKP", None, "PKP"]))
    >>> phase.tolist(), ok.tolist(), keep.tolist(), dropped, used
    (['P', None, None, None], [True, True, False, True], [True, False, False, False], {'PKP': 2}, {'Pg': 'P'})
    """
    phase, dropped, used = _phase_column(col)
    values = np.append(phase.values, None).take(phase.codes)  # code -1 picks the trailing None
    return values, phase.valid_rows(), phase.kept_rows(), dropped, used


# ---- text columns, per distinct value ---------------------------------------- #
#
# A text column of a million rows usually holds a few hundred distinct values
# (stations, models, one dataset, a handful of phase names).  The parsers above
# run on those distinct values only and rows refer to them by integer codes, so
# that no per-row Python string is ever made (the per-row cost is a few numpy
# takes over small integer codes).


@dataclass
class _Text:
    """A text column normalised per distinct value.

    Attributes
    ----------
    codes
        Per row: index into ``values``; -1 for a missing value.
    values
        Object array: the normalised ``str`` of each distinct raw value
        (``None`` for a phase that is not P- or S-like).
    valid
        Per distinct value: False when it normalises to an invalid (empty) value.
    keep
        Per distinct value: False for a phase that is not P- or S-like (rows
        dropped before validation); all True for other columns.
    """

    codes: np.ndarray
    values: np.ndarray
    valid: np.ndarray
    keep: np.ndarray

    def valid_rows(self) -> np.ndarray:
        """Per row: the value is present and valid."""
        return _per_row(self.valid, self.codes)

    def kept_rows(self) -> np.ndarray:
        """Per row: the value is present and not dropped."""
        return _per_row(self.keep, self.codes)

    def column(self, rows: np.ndarray, categorical: bool) -> pd.Series:
        """The normalised values of ``rows`` (which must all be valid and kept).

        An object column of ``str`` or, with ``categorical``, a ``Categorical``
        (see :func:`_categorical`).
        """
        # Usually every row is kept: then the codes need no take.  (No -1 among
        # them: the rows are valid.)
        codes = self.codes if len(rows) == len(self.codes) else self.codes.take(rows)
        if categorical:
            return pd.Series(_categorical(codes, self.values), copy=False)
        return pd.Series(self.values.take(codes), dtype=object, copy=False)


def _per_row(flags: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row: the flag of its distinct value; False for a missing value (code -1)."""
    if flags.all():
        return codes >= 0  # a comparison is cheaper than a take
    return np.append(flags, False).take(codes)  # code -1 picks the trailing False


def _row_counts(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Rows per distinct value (missing rows, code -1, not counted)."""
    return np.bincount(codes.astype(np.intp) + 1, minlength=n_values + 1)[1:]


def _code_dtype(n_categories: int) -> np.dtype:
    """The smallest signed integer type that holds codes -1..n-1 (as pandas' own categoricals do)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _categorical(codes: np.ndarray, values: np.ndarray) -> pd.Categorical:
    """A ``Categorical`` of ``values[codes]`` built from the codes, without per-row strings.

    ``codes`` must not hold -1.  The categories are the distinct strings among
    the values used, sorted (as ``astype("category")`` sorts them): distinct
    raw values that normalise to the same string (``" A"``, ``"A."``, ``"A"``)
    become one category.  The result owns its codes (``codes`` may be a view
    of the caller's input, which must not change with the output).
    """
    used = np.bincount(codes, minlength=len(values)) > 0
    # Sorted as Python str (code points); not as numpy "U" strings, which lose trailing NULs.
    categories, inverse = np.unique(values[used], return_inverse=True)
    table = np.full(len(values), -1, dtype=_code_dtype(len(categories)))
    table[used] = inverse.reshape(-1)
    if codes.dtype == table.dtype and np.array_equal(table, np.arange(len(values))):
        new_codes = codes.copy()  # already sorted, distinct and all used: a copy beats a take
    else:
        new_codes = table.take(codes)
    dtype = pd.CategoricalDtype(pd.Index(categories, dtype="str"))
    # validate=False: the codes index the categories by construction (no pass over them).
    return pd.Categorical.from_codes(new_codes, dtype=dtype, validate=False)


def _distinct(col: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Per-row codes (-1 = missing) into the distinct values of ``col``, and those values.

    The distinct values keep the dtype of ``col`` (a ``Categorical`` gives a
    ``Categorical`` of its categories), so that :func:`_as_text` converts each
    of them exactly as it would convert the rows holding it.  A
    ``Categorical`` costs nothing: its codes are used as they are.

    Examples
    --------
    >>> codes, values = _distinct(pd.Series(["B", None, "A", "B"]))
    >>> codes.tolist(), values.tolist()
    ([0, -1, 1, 0], ['B', 'A'])
    """
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        everything = pd.Categorical.from_codes(np.arange(len(dtype.categories)), dtype=dtype)
        return col.cat.codes.to_numpy(), pd.Series(everything)
    if dtype == object:
        try:
            codes, uniques = pd.factorize(col)
        except TypeError:  # unhashable objects (lists, dicts)
            pass
        else:
            # Objects other than str may hash equal when their text differs (1 == 1.0 == True).
            if pd.api.types.infer_dtype(uniques, skipna=False) in ("string", "empty"):
                return codes, pd.Series(uniques, copy=False)
    elif dtype.kind in "iub" or pd.api.types.is_string_dtype(dtype):
        codes, uniques = pd.factorize(col)
        return codes, pd.Series(uniques, copy=False)
    # Mixed objects, floats (0.0 == -0.0), datetimes...: keyed by their text, made per row.
    text, missing = _as_text(col)
    codes, uniques = pd.factorize(text.mask(missing))
    return codes, pd.Series(uniques, copy=False)


def _label_column(col: pd.Series) -> _Text:
    """A dataset or model column per distinct value (see :func:`parse_label`)."""
    codes, distinct = _distinct(col)
    values, valid = parse_label(distinct)
    return _Text(codes, values, valid, np.ones(len(values), dtype=bool))


def _default_column(value: str, n: int) -> _Text:
    """An absent optional column: ``value`` on every row."""
    one = np.ones(1, dtype=bool)
    return _Text(np.zeros(n, dtype=np.int8), np.array([value], dtype=object), one, one)


def station_key_of(values: np.ndarray, station_key: str = "as-is") -> np.ndarray:
    """Normalised station strings reduced as ``station_key`` says (per distinct value).

    ``"as-is"``: unchanged; ``"net.sta"``: ``NET.STA[.LOC[.CHA]]`` -> ``NET.STA``
    (a bare ``STA`` stays as it is), so that PhaseNet's ``CI.CLC..HH``, a
    SeisBench ``CI.CLC.00`` and a bulletin's ``CI.CLC`` are one station.

    Examples
    --------
    >>> station_key_of(np.array(["CI.CLC..HH", "CI.CLC.00", "CLC", "CI.CLC"], dtype=object), "net.sta").tolist()
    ['CI.CLC', 'CI.CLC', 'CLC', 'CI.CLC']
    """
    if station_key == "as-is":
        return values
    if station_key != "net.sta":
        from .errors import OptionsError

        raise OptionsError(f"station_key must be one of {', '.join(STATION_KEYS)}, not {station_key!r}.")
    out = [".".join(str(v).split(".")[:2]).rstrip(".").strip() if isinstance(v, str) else v for v in values]
    return np.array(out, dtype=object)


def _station_column(col: pd.Series, station_key: str = "as-is") -> _Text:
    """A station column per distinct value (see :func:`parse_station` and :func:`station_key_of`)."""
    codes, distinct = _distinct(col)
    values, valid = parse_station(distinct)
    if station_key != "as-is":
        values = station_key_of(values, station_key)
        valid = valid & np.array([v != "" for v in values], dtype=bool)
    return _Text(codes, values, valid, np.ones(len(values), dtype=bool))


def _phase_column(col: pd.Series) -> tuple[_Text, dict[str, int], dict[str, str]]:
    """A phase column per distinct value, and what :func:`parse_phase` reports.

    Returns ``(phase, dropped, used)``: ``phase.values`` holds ``"P"``/``"S"``
    (``None`` where not P/S-like), ``phase.valid`` is False for empty phases
    and ``phase.keep`` True for P/S-like ones; ``dropped`` counts the rows of
    each (stripped) name not P/S-like, ``used`` maps each name kept (on at
    least one row) to ``"P"``/``"S"``.  Distinct raw values with the same
    stripped name (``" Sn "``, ``"Sn"``) add up under that name.
    """
    codes, distinct = _distinct(col)
    text, missing = _as_text(distinct)
    names = _to_object(text.fillna(""))
    mapped = np.array([map_phase(name) for name in names], dtype=object)
    keep = np.array([m is not None for m in mapped], dtype=bool)
    valid = ~missing
    rows_of = _row_counts(codes, len(names))
    dropped: dict[str, int] = {}
    for i in np.flatnonzero(valid & ~keep & (rows_of > 0)):
        dropped[str(names[i])] = dropped.get(str(names[i]), 0) + int(rows_of[i])
    used = {str(names[i]): str(mapped[i]) for i in np.flatnonzero(keep & (rows_of > 0))}
    return _Text(codes, mapped, valid, keep), dropped, used


# ---- times ------------------------------------------------------------------ #

# ASCII digits only: Python's \d (and float()) also take full-width or Arabic-Indic digits, which
# pyarrow's regex and pandas' parsers do not; such a time is an unreadable time (an invalid row).
_NUMBER_RE = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_DECIMAL_RE = r"^(?P<sign>[+-]?)(?P<whole>\d*)(?:\.(?P<frac>\d*))?$"
_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _datetimes_to_ns(dt: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """datetime64 Series (naive = UTC, aware -> UTC) to int64 ns with a valid mask.

    Values outside the int64 ns range (before 1677 or after 2262) are invalid
    rather than an OverflowError, so they are reported with their row.
    """
    if isinstance(dt.dtype, pd.ArrowDtype):
        if dt.dt.tz is not None:
            dt = dt.dt.tz_convert("UTC").dt.tz_localize(None)
        dt = dt.astype(f"datetime64[{dt.dtype.pyarrow_dtype.unit}]")
    # An aware numpy-backed column already stores UTC instants: to_numpy(datetime64)
    # returns them as they are (no tz_convert/tz_localize pass, no copy).
    unit = dt.dtype.unit if isinstance(dt.dtype, pd.DatetimeTZDtype) else np.datetime_data(dt.dtype)[0]
    values = dt.to_numpy(dtype=f"datetime64[{unit}]").view(np.int64)
    factor = _UNIT_NS[unit]
    # |value| within the bound; NaT (the smallest int64) lies below -bound.
    bound = _I64_MAX // factor - 1
    valid = (values >= -bound) & (values <= bound)
    ns = np.where(valid, values, 0)
    if factor != 1:
        ns *= factor
    return ns, valid


def _float_seconds_to_ns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float seconds -> the float's exact value rounded to the nearest ns.

    Whole and fractional seconds are converted separately: ``np.round(x * 1e9)``
    would round the product to float64's spacing near 1.6e18 (256 ns) first.
    ``x - floor(x)`` is exact in float64, and ``np.round`` rounds ties to even.
    (A float64 near 1.7e9 s itself only resolves ~0.24 µs: give ISO strings or
    decimal text when nanoseconds matter.)
    """
    x = np.asarray(x, dtype=np.float64)
    valid = np.isfinite(x) & (np.abs(x) <= _MAX_SECONDS)
    x = np.where(valid, x, 0.0)
    whole = np.floor(x)
    frac_ns = np.round((x - whole) * 1e9).astype(np.int64)
    return whole.astype(np.int64) * np.int64(10**9) + frac_ns, valid


def _int_seconds_to_ns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.dtype.kind == "u":
        valid = x <= _MAX_SECONDS
        x = np.where(valid, x, 0).astype(np.int64)
    else:
        x = x.astype(np.int64)
        valid = (x >= -_MAX_SECONDS) & (x <= _MAX_SECONDS)  # np.abs(-2**63) overflows
    return np.where(valid, x, 0) * np.int64(10**9), valid


def _decimal_strings_to_ns(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Exact seconds->ns for plain decimal strings ('1153670347.960123456').

    Digits beyond the 9th decimal are rounded half away from zero on the 10th.
    Strings with an exponent ('1.1e9') go through float64.  pyarrow compute
    does the string work: pandas' ``str.extract`` would loop in Python.
    """
    n = len(text)
    ns = np.zeros(n, dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    has_exp = text.str.contains("[eE]", regex=True).to_numpy(dtype=bool)
    if has_exp.any():
        f = pd.to_numeric(text[has_exp], errors="coerce").to_numpy(dtype=np.float64)
        ns[has_exp], valid[has_exp] = _float_seconds_to_ns(f)
    plain = ~has_exp
    if plain.any():
        arr = pa.array(text[plain].to_numpy(dtype=object), type=pa.string())
        parts = pc.extract_regex(arr, _DECIMAL_RE)
        sign = pc.struct_field(parts, "sign")
        whole = pc.utf8_ltrim(pc.struct_field(parts, "whole"), "0")
        frac = pc.utf8_rpad(pc.struct_field(parts, "frac"), 10, "0")
        fits = pc.less_equal(pc.utf8_length(whole), 10)
        whole = pc.if_else(pc.and_(fits, pc.not_equal(whole, "")), whole, "0")
        whole_int = pc.cast(whole, pa.int64()).to_numpy()
        nano = pc.cast(pc.utf8_slice_codeunits(frac, 0, 9), pa.int64()).to_numpy()
        round_up = pc.greater_equal(pc.utf8_slice_codeunits(frac, 9, 10), "5").to_numpy(
            zero_copy_only=False)
        ok = fits.to_numpy(zero_copy_only=False) & (whole_int <= _MAX_SECONDS)
        total = np.where(ok, whole_int, 0) * np.int64(10**9) + nano + round_up
        negative = pc.equal(sign, "-").to_numpy(zero_copy_only=False)
        ns[plain] = np.where(negative, -total, total)
        valid[plain] = ok
    return ns, valid


def _string_times_to_ns(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Strings: numbers are seconds since 1970, everything else ISO-8601.

    ISO strings may carry any UTC offset ('Z', '+02:00') or none (then UTC);
    a column may mix them (naive values are taken as UTC).  Fractional seconds
    are kept to the nanosecond (a 10th digit and beyond is truncated by pandas).
    """
    n = len(text)
    ns = np.zeros(n, dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    # RFC 3339 allows a lower-case 't'/'z'; pandas' ISO8601 parser does not.
    text = text.str.upper()
    numeric = text.str.fullmatch(_NUMBER_RE).fillna(False).to_numpy(dtype=bool)
    if numeric.any():
        ns[numeric], valid[numeric] = _decimal_strings_to_ns(text[numeric])
    iso = ~numeric
    if iso.any():
        dt = pd.to_datetime(text[iso], utc=True, format="ISO8601", errors="coerce")
        ns[iso], valid[iso] = _datetimes_to_ns(dt)
    return ns, valid


def parse_time(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Any supported time column to ``(int64 ns since 1970 UTC, valid mask)``.

    - strings: ISO-8601 (``T`` or space, ``Z``/offset/none = UTC; values
      without an offset are parsed as UTC even among values with one —
      :func:`normalise` then reports them, see :func:`time_zones`) or numbers
      (seconds since 1970, parsed exactly from the decimal digits);
    - datetime64 columns: naive = UTC, aware converted to UTC;
    - numeric columns: seconds since 1970; integers are exact, floats are
      rounded to the nearest ns (ties to even; see ``_float_seconds_to_ns``).

    Values that cannot be parsed or fall outside 1677–2262 are invalid.

    Examples
    --------
    >>> ns, ok = parse_time(pd.Series(["1970-01-01T00:00:01.000000001Z",
    ...                                "1970-01-01 02:00:00+02:00", "1.5", "x"]))
    >>> ns.tolist(), ok.tolist()
    ([1000000001, 0, 1500000000, 0], [True, True, True, False])
    """
    dtype = col.dtype
    if dtype.kind == "M" or isinstance(dtype, pd.DatetimeTZDtype):
        return _datetimes_to_ns(col)
    if dtype.kind in "iu" and not col.hasnans:
        return _int_seconds_to_ns(col.to_numpy(dtype=np.dtype(dtype.kind + "8")))
    if dtype.kind in "iuf":  # also nullable / pyarrow numbers with missing values
        return _float_seconds_to_ns(col.to_numpy(dtype=np.float64, na_value=np.nan))
    if dtype == object:
        kind = pd.api.types.infer_dtype(col, skipna=True)
        if kind in ("datetime64", "datetime", "date"):
            dt = pd.to_datetime(col, utc=True, errors="coerce")
            return _datetimes_to_ns(dt)
        if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
            f = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
            return _float_seconds_to_ns(f)
    text, missing = _as_text(col)
    ns, valid = _string_times_to_ns(text.fillna(""))
    valid &= ~missing
    return np.where(valid, ns, 0), valid


_ISO_DATE_RE = r"^[+-]?\d{4}-\d{2}-\d{2}|^\d{8}T"
# A time of day followed by a UTC offset ('Z', '+02', '+0200', '+02:00') at the end ...
_TIME_OF_DAY = r"[T ]\d{1,2}(?::?\d{2}){0,2}(?:[.,]\d*)?\s*"
_OFFSET_RE = _TIME_OF_DAY + r"(?:Z|[+-]\d{2}(?::?\d{2})?)$"
# ... and one that is not zero (not 'Z', '+00', '+00:00', '-0000').
_NONZERO_OFFSET_RE = _TIME_OF_DAY + r"[+-](?:(?:0[1-9]|[1-9]\d)(?::?\d{2})?|00:?(?:0[1-9]|[1-5]\d))$"


def time_zones(col: pd.Series, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which valid ISO time strings carry no UTC offset, and which a non-zero one.

    Returns ``(naive, with_offset)`` boolean masks.  Both are all False for
    columns that are not text (datetime and number columns are unambiguous).
    SPEC §1 reads a time without an offset as UTC; a column that mixes such
    times with times at a non-zero offset ('+02:00') was most likely written in
    local time with the offset left off some rows, so :func:`normalise` treats
    the times without an offset as invalid rows then.  ``Z``/``+00:00`` mixed
    with no offset is not ambiguous: both mean UTC.

    Examples
    --------
    >>> naive, off = time_zones(pd.Series(["2020-01-01T00:00:00", "2020-01-01T01:00:00+01:00",
    ...                                    "2020-01-01T00:00:00Z", "1577836800"]), np.ones(4, bool))
    >>> naive.tolist(), off.tolist()
    ([True, False, False, False], [False, True, False, False])
    """
    n = len(col)
    none = np.zeros(n, dtype=bool)
    if n == 0 or not valid.any() or col.dtype.kind in "iufbmM" or isinstance(col.dtype, pd.DatetimeTZDtype):
        return none, none
    if col.dtype == object and pd.api.types.infer_dtype(col, skipna=True) != "string":
        return none, none
    text, _ = _as_text(col)
    arr = pa.array(text)  # pyarrow-backed text: no copy

    def match(pattern: str) -> np.ndarray:
        found = pc.match_substring_regex(arr, pattern, ignore_case=True)
        return pc.fill_null(found, False).to_numpy(zero_copy_only=False).astype(bool)

    with_offset = match(_NONZERO_OFFSET_RE) & valid
    if not with_offset.any():
        return none, none
    iso = match(_ISO_DATE_RE) & valid
    offset = match(_OFFSET_RE)
    return iso & ~offset, with_offset


def parse_conf(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Confidence as float64 and a mask: valid = finite and within [0, 1]."""
    if col.dtype.kind in "iuf":
        conf = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text, _ = _as_text(col)
        conf = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    valid = np.isfinite(conf) & (conf >= 0.0) & (conf <= 1.0)
    return conf, valid


def parse_label(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A dataset or model name: stripped string; empty or missing is invalid."""
    text, missing = _as_text(col)
    text = text.fillna("")
    return _to_object(text), ~missing


# --------------------------------------------------------------------------- #
# Messages about invalid rows
# --------------------------------------------------------------------------- #

_PROBLEM = {
    "dataset": "an empty dataset name",
    "model": "an empty model name",
    "station": "an empty station",
    "phase": "an empty phase",
    "time": "an unreadable time (or one outside 1677-2262)",
    "time zone": "a time without a UTC offset, in a column whose other times have one",
    "conf": "conf missing or outside [0, 1]",
}
#: Problems that are not named after their column: problem -> canonical column.
_COLUMN_OF = {"time zone": "time"}


def _show(value: Any) -> str:
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return repr(text)


def _time_hint(values: pd.Series) -> str:
    x = pd.to_numeric(_as_text(values)[0], errors="coerce").to_numpy(np.float64)
    x = np.abs(x[np.isfinite(x)])
    hint = (" Expected ISO-8601 (e.g. 2021-03-04T05:06:07.89Z; any UTC offset, none = UTC)"
            " or a number of seconds since 1970.")
    if x.size == 0:
        return hint
    mag = float(np.median(x))
    for lo, unit, div in ((1e17, "nanoseconds", "1e9"), (1e14, "microseconds", "1e6"),
                          (1e11, "milliseconds", "1000")):
        if mag >= lo:
            return hint + (f" The numbers look like {unit} since 1970; convert to seconds "
                           f"(divide by {div}).")
    return hint


def _conf_hint(values: pd.Series, all_values: pd.Series) -> str:
    hint = " Expected a number in [0, 1]."
    text, _ = _as_text(all_values)
    x = pd.to_numeric(text, errors="coerce").to_numpy(np.float64)
    x = x[np.isfinite(x)]
    # A percentage column: everything in [0, 100] and most values above 1 (a
    # stray 1.5 among probabilities is a bad row, not a different scale).
    if x.size and 1 < x.max() <= 100 and x.min() >= 0 and np.mean(x > 1) >= 0.5:
        hint += " conf looks like a percentage (0-100); divide by 100."
    if _as_text(values)[0].str.fullmatch(r"[+-]?\d+,\d+").fillna(False).any():
        hint += " Some values use a decimal comma; use a decimal point."
    return hint


def _zone_hint(col: pd.Series, with_offset: np.ndarray, row_offset: int) -> str:
    i = int(np.flatnonzero(with_offset)[0])
    return (f" Times without an offset are read as UTC, but this column also holds times with one "
            f"(e.g. row {row_offset + i + 2}: {_show(col.iloc[i])}), so those without are probably "
            "local time: give every time its UTC offset, or write them all in UTC.")


def _describe_invalid(
    raw: pd.DataFrame,
    columns: dict[str, str | None],
    problems: dict[str, np.ndarray],
    row_offset: int,
    with_offset: np.ndarray | None = None,
) -> tuple[list[str], list[str]]:
    """(message lines per problem, short examples) for the invalid rows."""
    lines: list[str] = []
    examples: list[str] = []
    for problem, bad in problems.items():
        idx = np.flatnonzero(bad)
        if idx.size == 0:
            continue
        canonical = _COLUMN_OF.get(problem, problem)
        name = columns[canonical]
        col = raw[name]
        first = idx[:_N_EXAMPLES]
        shown = [f"row {row_offset + i + 2}: {_show(col.iloc[i])}" for i in first]
        examples += [f"row {row_offset + i + 2}: {problem} {_show(col.iloc[i])}" for i in first]
        more = f" (first {len(first)} shown)" if idx.size > len(first) else ""
        hint = ""
        if problem == "time":
            hint = _time_hint(col.iloc[idx[:1000]])
        elif problem == "time zone" and with_offset is not None:
            hint = _zone_hint(col, with_offset, row_offset)
        elif problem == "conf":
            hint = _conf_hint(col.iloc[idx[:1000]], col)
        lines.append(
            f"  {canonical} (column {str(name)!r}): {idx.size} row(s) with {_PROBLEM[problem]}"
            f"{more} — " + ", ".join(shown) + "." + hint
        )
    return lines, examples


# --------------------------------------------------------------------------- #
# normalise
# --------------------------------------------------------------------------- #

def _take_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` as a new array (``values`` may be a view of the input frame).

    When every row is kept (the usual case) a copy is cheaper than a take.
    """
    return values.copy() if len(rows) == len(values) else values.take(rows)


def normalise(
    raw: pd.DataFrame,
    *,
    role: str,
    source: str,
    drop_invalid: bool = False,
    row_offset: int = 0,
    categorical: bool = False,
    station_key: str = "as-is",
    columns: dict[str, str] | str | None = None,
) -> Normalised:
    """Map aliases, parse and validate one raw table (SPEC §1).

    Parameters
    ----------
    raw
        A frame from :func:`read_raw` (or any frame with the same meaning).
    role
        ``"reference"`` (analyst arrivals) or ``"picks"`` (model output).
    source
        The file name shown in messages.
    drop_invalid
        Drop invalid rows (and count them) instead of raising.
    row_offset
        Data rows of the same file before this frame, so that row numbers in
        messages are those of the file.
    categorical
        Return the text columns (``dataset``, ``model``, ``station``,
        ``phase``) as pandas ``Categorical`` instead of object columns of
        ``str``: built from integer codes, so that no per-row Python string is
        made.  The categories are the distinct normalised strings of the rows
        kept, **sorted** (as ``astype("category")`` sorts them, ``str`` dtype);
        the values equal those of ``categorical=False`` row for row.
    station_key
        ``"as-is"`` (default) or ``"net.sta"``: stations ``NET.STA[.LOC[.CHA]]``
        reduced to ``NET.STA`` (see :func:`station_key_of`); give the same
        key for both sides.
    columns
        Explicit column names for SPEC names no alias covers, e.g.
        ``{"model": "rid", "station": "tid"}`` (or ``"model=rid,station=tid"``);
        they win over the aliases.

    An EQTransformer prediction table (``p_arrival_time, p_probability,
    s_arrival_time, ...``) is first turned into one row per pick
    (:func:`pickscale.formats.eqtransformer.eqt_to_long`).

    Returns
    -------
    Normalised
        See the class.  Rows whose phase is neither P- nor S-like are dropped
        first (and counted per name) and are not validated further.

    Raises
    ------
    InputError
        A required column is missing (lists the columns found and the accepted
        names) or appears twice, or rows are invalid and ``drop_invalid`` is False (names the
        file, the count, the first five row numbers per column and their
        values; row numbers as a spreadsheet shows them, header = row 1).

    Notes
    -----
    Times: ISO-8601 strings with any UTC offset or none (= UTC); datetime
    columns (naive = UTC); numbers = seconds since 1970 (a float's value
    rounded to the nearest ns, ties to even; numeric strings parsed exactly
    from their digits).  Mixed time zones: in a column where some times carry
    a non-zero UTC offset, the times without one are invalid rows (problem
    ``"time zone"``): they are most likely local time with the offset left
    off.  ``Decimal('sNaN')`` values count as missing.  Stations: surrounding
    white space and trailing '.' removed.  Dataset/model names: surrounding white space
    removed; an empty one is invalid.  An ``event`` column is never a dataset.

    Text columns are normalised per distinct value, not per row: a pandas
    ``Categorical`` input (e.g. Parquet read with pyarrow's
    ``read_dictionary``) is used through its codes and categories, any other
    column is factorized first.  Distinct raw values that normalise to the
    same string (``" A"``, ``"A."``, ``"A"``) give the same output value.

    Examples
    --------
    >>> raw = pd.DataFrame({"station_id": ["CI.CLC."], "phase_type": ["Pg"],
    ...                     "phase_time": ["2020-01-01T00:00:00.5Z"], "phase_score": ["0.9"]})
    >>> n = normalise(raw, role="picks", source="picks.csv")
    >>> r = n.frame.iloc[0]
    >>> r["dataset"], r["model"], r["station"], r["phase"], int(r["time"]), float(r["conf"])
    ('all', 'model', 'CI.CLC', 'P', 1577836800500000000, 0.9)
    >>> n.columns["time"]
    'phase_time'
    >>> normalise(raw, role="picks", source="picks.csv", categorical=True).frame["station"].dtype
    CategoricalDtype(categories=['CI.CLC'], ordered=False, categories_dtype=str)
    """
    if role not in COLUMNS:
        raise ValueError(f"role must be 'reference' or 'picks', not {role!r}")
    explicit = check_columns(columns)
    if station_key not in STATION_KEYS:
        station_key_of(np.zeros(0, dtype=object), station_key)  # raises OptionsError
    from .formats.eqtransformer import eqt_to_long, is_eqt_wide

    if is_eqt_wide(raw.columns):
        raw = eqt_to_long(raw, carry=explicit.values())
    columns = _resolve_columns(raw, role, source, explicit)
    raw = raw.reset_index(drop=True)
    n = len(raw)
    copied = False
    for name in dict.fromkeys(c for c in columns.values() if c is not None):
        safe = _defused(raw[name])
        if safe is not None:
            if not copied:
                raw, copied = raw.copy(deep=False), True
            raw[name] = safe

    phase, dropped, mapped = _phase_column(raw[columns["phase"]])
    keep = phase.kept_rows()
    phase_ok = phase.valid_rows()
    # Rows of other phases leave first: a bulletin's PKP rows are not validated.
    considered = keep | ~phase_ok

    texts: dict[str, _Text] = {}
    out: dict[str, np.ndarray] = {}
    problems: dict[str, np.ndarray] = {}
    for label in ("dataset", "model"):
        if label not in COLUMNS[role]:
            continue
        if columns[label] is None:
            texts[label] = _default_column(DEFAULTS[label], n)
        else:
            texts[label] = _label_column(raw[columns[label]])
            problems[label] = ~texts[label].valid_rows() & considered
    texts["station"] = _station_column(raw[columns["station"]], station_key)
    problems["station"] = ~texts["station"].valid_rows() & considered
    texts["phase"] = phase
    problems["phase"] = ~phase_ok
    out["time"], ok = parse_time(raw[columns["time"]])
    problems["time"] = ~ok & considered
    naive, with_offset = time_zones(raw[columns["time"]], ok & considered)
    if with_offset.any() and naive.any():
        # Mixed time zones: the values without an offset are ambiguous.
        problems["time zone"] = naive
    if role == "picks":
        out["conf"], ok = parse_conf(raw[columns["conf"]])
        problems["conf"] = ~ok & considered

    invalid = np.zeros(n, dtype=bool)
    for bad in problems.values():
        invalid |= bad
    n_invalid = int(invalid.sum())
    invalid_counts = {k: int(v.sum()) for k, v in problems.items() if v.any()}
    examples: list[str] = []
    if n_invalid:
        lines, examples = _describe_invalid(raw, columns, problems, row_offset, with_offset)
        if not drop_invalid:
            head = (f"{source}: {n_invalid} invalid row(s) of {n} in the {role} table "
                    f"({_ROWS_CONVENTION}):")
            raise InputError("\n".join([head, *lines, f"Fix these rows, {DROP_HINT}."]))

    rows = np.flatnonzero(keep & ~invalid)
    frame = pd.DataFrame({
        name: (texts[name].column(rows, categorical) if name in texts
               else pd.Series(_take_rows(out[name], rows), copy=False))
        for name in COLUMNS[role]
    }, copy=False)
    _attach_report(frame, n, n_invalid, dropped)
    used = {c for c in columns.values() if c is not None}
    candidates: dict[str, list[str]] = {}
    if role == "picks" and columns["model"] is None:
        candidates = dict(raw.attrs.get("unused_text_columns") or {})  # a projected Parquet file's own look
        candidates.update(unused_text_candidates([c for c in raw.columns if c not in used],
                                                 lambda c: _few_distinct(raw[c])))
    return Normalised(
        frame=frame,
        role=role,
        source=source,
        columns={k: (None if v is None else str(v)) for k, v in columns.items()},
        n_rows_read=n,
        n_invalid=n_invalid,
        invalid_counts=invalid_counts,
        invalid_examples=examples,
        dropped_phases=dropped,
        mapped_phases=mapped,
        ignored_columns=[str(c) for c in raw.columns if c not in used],
        model_candidates=candidates,
        notes=list(raw.attrs.get(NOTES_ATTR) or []),
    )


def _few_distinct(col: pd.Series) -> list[Any] | None:
    """The distinct values of a text column (None for other columns or more than a few values)."""
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        used = np.unique(col.cat.codes.to_numpy())
        used = used[used >= 0]
        return None if used.size > _MODEL_CANDIDATES_MAX else list(dtype.categories[used])
    if not (dtype == object or pd.api.types.is_string_dtype(dtype)):
        return None
    try:
        _, uniques = pd.factorize(col)
    except TypeError:
        return None
    if len(uniques) > _MODEL_CANDIDATES_MAX or (dtype == object and pd.api.types.infer_dtype(uniques) != "string"):
        return None
    return list(uniques)
