"""One CSV file read as it is: cells as strings, delimiter sniffed, UTF-8 checked to the byte.

UTF-16/UTF-32 with a byte-order mark are read too, and a run of ``#`` comment
lines before the header is skipped.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from typing import NamedTuple

import pandas as pd

from ..errors import InputError
from .sniff import SNIFF_BYTES, not_text_reason, text_encoding
from .storage import open_input

__all__ = ["CsvText", "csv_text", "read_csv_file", "read_csv_texts"]


def _utf8_error(path: str, compression: str | None) -> str:
    """Locate the first byte that is not UTF-8; streamed, so big files are fine."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    lines = 1
    with open_input(path, "rb", compression=compression) as f:
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


_LINE_END = re.compile(r"\r\n|\r|\n")


def _comment_lines(text: str) -> int:
    r"""How many lines before the header to skip: a run of ``#`` lines (and blank lines among them).

    0 when no line before the header starts with ``#`` (blank lines alone are
    left to pandas, as before).  A ``#`` further down is data, never a comment.
    The header itself never starts with ``#``.

    Examples
    --------
    >>> _comment_lines("# exported by SeisComP\n#  2024-01-01\n\nstation,phase\nA,P\n")
    3
    >>> _comment_lines("station,phase\n#A,P\n")
    0
    """
    lines = _LINE_END.split(text)
    seen = False
    for i, line in enumerate(lines[:-1]):  # the last piece may be a cut line
        stripped = line.strip()
        if stripped.startswith("#"):
            seen = True
        elif stripped:
            return i if seen else 0
    return len(lines) - 1 if seen else 0


def _not_utf8(path: str, compression: str | None) -> InputError:
    return InputError(f"{path}: {_utf8_error(path, compression)}; save the file as UTF-8 "
                      "(Latin-1/Windows-1252 accents such as 'é' are the usual cause).")


def read_csv_file(path: str, head: bytes, compression: str | None) -> pd.DataFrame:
    """Read one CSV file whose first bytes (decompressed) are ``head``: every cell a string, ``''`` if empty.

    The delimiter (``,``, ``;`` or tab) is sniffed from the first lines, a
    UTF-8 byte-order mark is ignored, UTF-16/UTF-32 with a byte-order mark
    are decoded, and a run of ``#`` comment lines before the header is
    skipped; ``df.attrs`` records ``source``, ``format``, ``delimiter``,
    ``encoding`` (when not UTF-8) and ``comment_lines`` (when skipped).  A one-column result cannot come from a
    ``;`` or tab file: the sniffer takes any candidate found in the header
    line.  Other delimiters (``|``) yield one column, and the normaliser then
    names it with a hint.
    """
    reason = not_text_reason(head)
    if reason:
        raise InputError(f"{path}: {reason}.")
    encoding = text_encoding(head)
    try:
        # final=False: the sniffed block may end inside a multi-byte character.
        text = codecs.getincrementaldecoder(encoding)().decode(head, final=False)
    except UnicodeDecodeError as exc:
        if encoding == "utf-8-sig":
            raise _not_utf8(path, compression) from None
        raise _not_bom_text(path, encoding, exc) from None
    if not text.strip():
        raise InputError(f"{path}: the file holds no header and no rows (only white space).")
    skip = _comment_lines(text)
    body = "\n".join(_LINE_END.split(text)[skip:])
    if skip and not body.strip():
        raise InputError(f"{path}: the file holds only comment lines (starting with '#'): no header and no rows.")
    delim = _sniff_delimiter(body)
    try:
        with open_input(path, "rb", compression=compression) as f:
            if skip or encoding != "utf-8-sig":
                handle = io.TextIOWrapper(f, encoding=encoding, newline="")
                for _ in range(skip):
                    handle.readline()
                df = pd.read_csv(handle, sep=delim, dtype=str, keep_default_na=False, engine="c")
            else:
                df = pd.read_csv(
                    f, sep=delim, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                    engine="c",
                )
    except UnicodeDecodeError as exc:
        if encoding == "utf-8-sig":
            raise _not_utf8(path, compression) from None
        raise _not_bom_text(path, encoding, exc) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the file holds no header and no rows.") from None
    except pd.errors.ParserError as exc:
        raise InputError(
            f"{path}: not a well-formed CSV file (delimiter {delim!r}): {exc}"
        ) from None
    if len(df) == 0:
        raise InputError(
            f"{path}: the file has a header ({', '.join(map(str, df.columns))}) but no data rows."
        )
    df.attrs.update(source=path, format="csv", delimiter=delim)
    if encoding != "utf-8-sig":
        df.attrs["encoding"] = encoding
    if skip:
        df.attrs["comment_lines"] = skip
    return df


def _not_bom_text(path: str, encoding: str, exc: UnicodeDecodeError) -> InputError:
    name = encoding.upper()
    return InputError(f"{path}: starts with a {name} byte-order mark but is not valid {name} text ({exc.reason}); "
                      "save the file as UTF-8.")


class CsvText(NamedTuple):
    """A plain CSV file's text cut at its header: what :func:`read_csv_texts` reads with other files."""

    header: str  # the first line, without its line end
    delimiter: str  # what read_csv_file sniffs for the whole file
    body: str  # the data lines, ending with a line end
    rows: int  # its lines that are not blank (the rows pandas reads from them)


_CANDIDATES = (",", ";", "\t")


def csv_text(data: bytes) -> CsvText | None:
    r"""The whole content of a small CSV file as header and rows, or None when it must be read on its own.

    Only plain files qualify: UTF-8 (a byte-order mark is dropped), not compressed, no quote character, no
    ``\r`` line end, no NUL, a header on the first line (no ``#`` comment lines, no blank line above it) and
    at least one row.  Any other file (and every file with a problem to report) is read by
    :func:`read_csv_file`, which says what is wrong with it, row numbers counted from its top.  The
    delimiter is the one :func:`read_csv_file` sniffs: read from the header alone when at most one of
    ``,``, ``;`` and tab occurs in it (the sniffer then cannot choose another), else sniffed as there.

    Examples
    --------
    >>> csv_text(b"station;phase;time\nCLC;P;0\n\n")
    CsvText(header='station;phase;time', delimiter=';', body='CLC;P;0\n\n', rows=1)
    >>> csv_text(b'station,phase\n"CLC",P\n') is None, csv_text(b"station,phase\n") is None
    (True, True)
    """
    if not data or text_encoding(data) != "utf-8-sig" or not_text_reason(data[:SNIFF_BYTES]):  # (compressed too)
        return None
    if b'"' in data or b"\r" in data or b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    header, newline, body = text.partition("\n")
    stripped = header.strip()
    if not newline or not stripped or stripped.startswith("#"):
        return None
    rows = sum(1 for line in body.split("\n") if line.strip())
    if not rows:
        return None
    present = [d for d in _CANDIDATES if d in header]
    if len(present) <= 1 and header.splitlines() == [header]:
        delim = present[0] if present else ","
    else:  # exactly as read_csv_file sniffs it (from the first bytes)
        delim = _sniff_delimiter(codecs.getincrementaldecoder("utf-8-sig")().decode(data[:SNIFF_BYTES]))
    return CsvText(header, delim, body if body.endswith("\n") else body + "\n", rows)


def read_csv_texts(header: str, delimiter: str, bodies: list[str]) -> pd.DataFrame | None:
    """The rows of several :class:`CsvText` of one header and delimiter as one frame (cells as strings).

    The same frame as the files' :func:`read_csv_file` frames one after the other, or None when it might
    not be (a line with more fields than the header, rows that are not the lines counted): the caller then
    reads the files one by one.
    """
    text = header + "\n" + "".join(bodies)
    try:
        df = pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False, engine="c")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError):
        return None
    if not isinstance(df.index, pd.RangeIndex):  # a first row with one field more: pandas made it the index
        return None
    df.attrs.update(format="csv", delimiter=delimiter)
    return df
