"""A file's first bytes: read once (:func:`read_head`), their compression (gzip, bzip2, xz, Zstandard),
the text encoding their byte-order mark names, and what they are when they cannot start a table.

Which format a file is — Parquet, CSV, a bulletin, EQTransformer's table —
is each reader's to say, from these bytes (:mod:`pickscale.io.formats`,
``guess_can_open``).  What they need of the bytes is here, below every
reader (this module imports none): what a file that is no text table is
instead (:func:`not_text_reason`, the CSV reader's messages) and the root
element of an XML document (:func:`xml_root`, :func:`is_bulletin_root`).
"""

from __future__ import annotations

from ..errors import InputError
from .storage import open_input

__all__ = ["GZIP_MAGIC", "ZIP_MAGIC", "COMPRESSIONS", "SNIFF_BYTES", "OBSPY_HINT", "read_head", "compression_of",
           "check_codec", "text_encoding", "not_text_reason", "xml_root", "is_bulletin_root"]


GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
SNIFF_BYTES = 64 * 1024
#: What a user without ObsPy is told (:mod:`pickscale.io.formats.bulletins`, and here, of a bulletin given as a table).
OBSPY_HINT = "reading a bulletin (QuakeML, SC3ML, NonLinLoc, hypoDD ...) needs ObsPy: pip install 'pickscale[obspy]'"
_BULLETIN_ROOTS = ("quakeml", "seiscomp", "eventparameters")

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
    a byte-order mark is looked at as text.  The messages name what the file
    is instead (a ZIP or Excel workbook, an HTML page, a bulletin, UTF-16
    without a byte-order mark, binary data), so that the user knows what to
    do with it.

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
    root = xml_root(head)
    if root and root.casefold() == "html":
        return ("is an HTML page, not a CSV or Parquet file (a download that returned a web page, "
                "e.g. a login or error page?)")
    if is_bulletin_root(root):
        return (f"is a bulletin (XML root <{root}>), not a CSV or Parquet table: pass it as the reference "
                f"(a file named *.xml, *.qml or *.quakeml, or an ObsPy Catalog); {OBSPY_HINT}")
    return (f"is an XML file (root element <{root or '?'}>), neither a bulletin (QuakeML, SC3ML) "
            "nor a CSV or Parquet table")


def xml_root(head: bytes) -> str | None:
    """The local name of the root element of an XML document's first bytes, or None if not XML.

    Examples
    --------
    >>> xml_root(b"<?xml version='1.0'?>\\n<!-- c -->\\n<q:quakeml xmlns:q='x'>")
    'quakeml'
    >>> xml_root(b"station,phase") is None
    True
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return None
    i = 0
    while True:
        j = text.find(b"<", i)
        if j < 0 or j + 1 >= len(text):
            return ""
        nxt = text[j + 1:j + 2]
        if nxt in (b"?", b"!"):
            end = text.find(b">", j)
            if end < 0:
                return ""
            i = end + 1
            continue
        name = text[j + 1:].split(None, 1)[0].split(b">", 1)[0].split(b"/", 1)[0]
        return name.split(b":")[-1].decode("utf-8", "replace")


def is_bulletin_root(root: str | None) -> bool:
    """Whether an XML root element name is a bulletin's (QuakeML, SeisComP)."""
    return root is not None and root != "" and root.casefold() in _BULLETIN_ROOTS
