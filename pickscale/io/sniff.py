"""What a file holds, from its name and first bytes: Parquet, compressed (gzip, bzip2, xz, Zstandard), text
(UTF-8, or UTF-16/UTF-32 with a byte-order mark), or something that is no table.

The messages name what the file is instead (a ZIP or Excel workbook, an HTML
page, a bulletin, UTF-16 without a byte-order mark, binary data), so that the
user knows what to do with it.
"""

from __future__ import annotations

from ..errors import InputError
from .sources import COMPRESSION_SUFFIXES, CSV_SUFFIXES, PARQUET_SUFFIXES
from .storage import open_input

__all__ = ["PARQUET_MAGIC", "GZIP_MAGIC", "ZIP_MAGIC", "COMPRESSIONS", "SNIFF_BYTES", "suffix_kind", "read_head",
           "compression_of", "check_codec", "text_encoding", "not_text_reason"]


PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
SNIFF_BYTES = 64 * 1024

#: Compression (fsspec's name) -> (its magic bytes, what a message calls it, the package that reads it).
COMPRESSIONS: dict[str, tuple[bytes, str, str | None]] = {
    "gzip": (GZIP_MAGIC, "gzip", None),
    "bz2": (b"BZh", "bzip2", None),
    "xz": (b"\xfd7zXZ\x00", "xz", None),
    "zstd": (b"\x28\xb5\x2f\xfd", "Zstandard (zstd)", "zstandard"),
}

# Byte-order marks, longest first (the UTF-32-LE mark starts with the UTF-16-LE one).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def suffix_kind(path: str) -> str | None:
    """``"parquet"``, ``"csv"`` (also ``.tsv``/``.txt``, compressed or not) or None, from the file name alone."""
    low = path.lower()
    for c in COMPRESSION_SUFFIXES:
        if low.endswith(c) and low[: -len(c)].endswith((".tsv", ".txt")):
            return "csv"
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(CSV_SUFFIXES) or low.endswith((".tsv", ".txt")):
        return "csv"
    return None


def compression_of(head: bytes) -> str | None:
    """The compression whose magic bytes ``head`` starts with (fsspec's name), or None.

    Examples
    --------
    >>> import bz2, lzma
    >>> compression_of(bz2.compress(b"x")), compression_of(lzma.compress(b"x")), compression_of(b"station")
    ('bz2', 'xz', None)
    """
    for name, (magic, _, _) in COMPRESSIONS.items():
        if head.startswith(magic):
            if name == "bz2" and not head[3:4].isdigit():  # "BZh" + the block size, 1-9
                continue
            return name
    return None


def check_codec(path: str, compression: str) -> None:
    """InputError naming the compression and the package to install, when fsspec cannot decompress it."""
    from fsspec.compression import compr

    if compression in compr:
        return
    _, label, package = COMPRESSIONS[compression]
    need = f"the {package!r} package (pip install {package})" if package else "a codec this Python lacks"
    raise InputError(f"{path}: is {label}-compressed; reading it needs {need}, or decompress the file first.")


def text_encoding(head: bytes) -> str:
    """The encoding a text file's byte-order mark names: ``"utf-16"``, ``"utf-32"``, else ``"utf-8-sig"``.

    ``utf-8-sig`` reads UTF-8 with or without its mark.  Excel's "Unicode
    text" export is UTF-16 with a mark (tab-separated).

    Examples
    --------
    >>> text_encoding("station\tphase".encode("utf-16")), text_encoding(b"station,phase")
    ('utf-16', 'utf-8-sig')
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8-sig"


def _utf16_without_bom(head: bytes) -> bool:
    """Text of the first bytes in UTF-16 with no mark: one byte of every pair is 0 (ASCII characters)."""
    sample = head[:512]
    if len(sample) < 8:
        return False
    even, odd = sample[0::2], sample[1::2]
    return even.count(0) >= 0.9 * len(even) or odd.count(0) >= 0.9 * len(odd)


def read_head(path: str, compression: str | None = None) -> bytes:
    """The first :data:`SNIFF_BYTES` bytes of a file (decompressed), or an InputError naming the file."""
    try:
        with open_input(path, "rb", compression=compression) as f:
            return f.read(SNIFF_BYTES)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file.") from None
    except (OSError, EOFError) as exc:  # e.g. a truncated gzip stream
        raise InputError(f"{path}: cannot be read ({exc}).") from None


def not_text_reason(head: bytes) -> str | None:
    """Why ``head`` cannot be the start of a CSV file, or ``None``.

    ``head`` is what the file holds once decompressed; UTF-16/UTF-32 text with
    a byte-order mark is looked at as text.
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
