"""What a file holds, from its name and first bytes: Parquet, gzip, text, or something that is no table.

The messages name what the file is instead (a ZIP or Excel workbook, an HTML
page, a bulletin, binary data), so that the user knows what to do with it.
"""

from __future__ import annotations

import fsspec

from ..errors import InputError
from .sources import CSV_SUFFIXES, PARQUET_SUFFIXES

__all__ = ["PARQUET_MAGIC", "GZIP_MAGIC", "ZIP_MAGIC", "SNIFF_BYTES", "suffix_kind", "read_head",
           "not_text_reason"]


PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
SNIFF_BYTES = 64 * 1024


def suffix_kind(path: str) -> str | None:
    """``"parquet"``, ``"csv"`` (also ``.tsv``/``.txt``, gzipped or not) or None, from the file name alone."""
    low = path.lower()
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(CSV_SUFFIXES) or low.endswith((".tsv", ".txt", ".tsv.gz", ".txt.gz")):
        return "csv"
    return None


def read_head(path: str, compression: str | None = None) -> bytes:
    """The first :data:`SNIFF_BYTES` bytes of a file (decompressed), or an InputError naming the file."""
    try:
        with fsspec.open(path, "rb", compression=compression) as f:
            return f.read(SNIFF_BYTES)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file.") from None
    except (OSError, EOFError) as exc:  # e.g. a truncated gzip stream
        raise InputError(f"{path}: cannot be read ({exc}).") from None


def not_text_reason(head: bytes) -> str | None:
    """Why ``head`` cannot be the start of a CSV file, or ``None``."""
    if head.startswith(ZIP_MAGIC):
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
    from .formats.bulletins import OBSPY_HINT, is_bulletin_root, xml_root

    root = xml_root(head)
    if root and root.casefold() == "html":
        return ("is an HTML page, not a CSV or Parquet file (a download that returned a web page, "
                "e.g. a login or error page?)")
    if is_bulletin_root(root):
        return (f"is a bulletin (XML root <{root}>), not a CSV or Parquet table: pass it as the reference "
                f"(a file named *.xml, *.qml or *.quakeml, or an ObsPy Catalog); {OBSPY_HINT}")
    return (f"is an XML file (root element <{root or '?'}>), neither a bulletin (QuakeML, SC3ML) "
            "nor a CSV or Parquet table")
