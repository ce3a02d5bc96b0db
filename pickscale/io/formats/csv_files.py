"""CSV files, the text tables no other reader claims, and why a file cannot be one (what it is instead).

Any delimiter (``,``, ``;``, tab), gzip, bzip2, xz or Zstandard compression
(from the content, whatever the name), UTF-8, or UTF-16/UTF-32 with a
byte-order mark; parsed by :func:`pickscale.io.csv.read_csv_file`.  The
messages of :func:`not_text_reason` name what a file is instead (a ZIP or
Excel workbook, an HTML page, a bulletin, UTF-16 without a byte-order mark,
binary data), so that the user knows what to do with it.
"""

from __future__ import annotations

import pandas as pd

from ...errors import InputError
from ..csv import read_csv_file
from ..sniff import COMPRESSIONS, compression_of, text_encoding
from ..sources import COMPRESSION_SUFFIXES, CSV_SUFFIXES
from .reader import FileReader, Probe

__all__ = ["ZIP_MAGIC", "CsvFiles", "not_text_reason"]

ZIP_MAGIC = b"PK\x03\x04"
_TEXT_SUFFIXES = (".tsv", ".txt")


class CsvFiles(FileReader):
    """CSV (and ``.tsv``/``.txt``) files: a file named so, or text no other reader claims.

    The last file reader of the table: a file that no other claims is read
    as CSV, whose messages say what the file is instead.

    Examples
    --------
    >>> reader = CsvFiles()
    >>> reader.guess_can_open("picks.csv.gz"), reader.guess_can_open(Probe("x.dat", head=b"PAR1\\x15\\x04"))
    (True, False)
    """

    name = "csv"
    description = "CSV (any delimiter, compressed or not)"
    suffixes = CSV_SUFFIXES + _TEXT_SUFFIXES + tuple(t + c for t in _TEXT_SUFFIXES for c in COMPRESSION_SUFFIXES)
    listed = CSV_SUFFIXES
    batched = True

    def recognises(self, probe: Probe) -> bool:
        from .registry import claimed_elsewhere  # (the registry imports this module)

        if claimed_elsewhere(probe, self):  # a bulletin under another name, Parquet ...
            return False
        content = probe.content
        return bool(content) and not_text_reason(content) is None

    def open(self, probe: Probe) -> pd.DataFrame:
        content = probe.content  # decompressed: the codec is checked first, naming the package to install
        if not content and probe.compression:
            raise InputError(f"{probe.path}: the compressed file is empty.")
        return read_csv_file(probe.path, content, probe.compression)


def _utf16_without_bom(head: bytes) -> bool:
    """Text of the first bytes in UTF-16 with no mark: one byte of every pair is 0 (ASCII characters)."""
    sample = head[:512]
    if len(sample) < 8:
        return False
    even, odd = sample[0::2], sample[1::2]
    return even.count(0) >= 0.9 * len(even) or odd.count(0) >= 0.9 * len(odd)


def not_text_reason(head: bytes) -> str | None:
    """Why ``head`` cannot be the start of a CSV file, or ``None``.

    ``head`` is what the file holds once decompressed; UTF-16/UTF-32 text with
    a byte-order mark is looked at as text.

    Examples
    --------
    >>> not_text_reason(b"station,phase,time\\n") is None
    True
    >>> not_text_reason(b"PK\\x03\\x04...")
    'is a ZIP archive (an Excel .xlsx workbook?), not a CSV or Parquet file; export it as CSV'
    """
    encoding = text_encoding(head)
    if encoding != "utf-8-sig":
        head = head.decode(encoding, errors="replace").encode("utf-8")
    compression = compression_of(head)
    if compression:
        return (f"is {COMPRESSIONS[compression][1]}-compressed data: neither a CSV (text) nor a "
                "Parquet file (is the file name's ending wrong?)")
    if head.startswith(ZIP_MAGIC):
        return ("is a ZIP archive (an Excel .xlsx workbook?), not a CSV or Parquet file; "
                "export it as CSV")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if stripped.startswith((b"<?xml", b"<q:quakeml", b"<quakeml", b"<seiscomp")):
        return _xml_reason(head)
    if stripped.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return ("is an HTML/XML page, not a CSV or Parquet file (a download that returned "
                "a web page, e.g. a login or error page?)")
    if b"\x00" in head and _utf16_without_bom(head):
        return ("looks like UTF-16 text without a byte-order mark: save it as UTF-8 (or as UTF-16 with "
                "a byte-order mark, as Excel's \"Unicode text\" does)")
    if b"\x00" in head:
        return "holds binary data: it is neither a CSV (text) nor a Parquet file"
    return None


def _xml_reason(head: bytes) -> str:
    """Why an XML file is not a table: a bulletin (read as the reference, through ObsPy) or other XML."""
    from .bulletins import OBSPY_HINT, is_bulletin_root, xml_root

    root = xml_root(head)
    if root and root.casefold() == "html":
        return ("is an HTML page, not a CSV or Parquet file (a download that returned a web page, "
                "e.g. a login or error page?)")
    if is_bulletin_root(root):
        return (f"is a bulletin (XML root <{root}>), not a CSV or Parquet table: pass it as the reference "
                f"(a file named *.xml, *.qml or *.quakeml, or an ObsPy Catalog); {OBSPY_HINT}")
    return (f"is an XML file (root element <{root or '?'}>), neither a bulletin (QuakeML, SC3ML) "
            "nor a CSV or Parquet table")
