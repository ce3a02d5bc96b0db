"""A file's first bytes: read once (:func:`read_head`), their compression (gzip, bzip2, xz, Zstandard) and
the text encoding their byte-order mark names.

Which format a file is — Parquet, CSV, a bulletin, EQTransformer's table —
is each reader's to say, from these bytes (:mod:`pickscale.io.formats`,
``guess_can_open``); so is what a file that is no table is instead
(:func:`pickscale.io.formats.csv_files.not_text_reason`).
"""

from __future__ import annotations

from ..errors import InputError
from .storage import open_input

__all__ = ["GZIP_MAGIC", "COMPRESSIONS", "SNIFF_BYTES", "read_head", "compression_of", "check_codec",
           "text_encoding", "not_text_reason"]


GZIP_MAGIC = b"\x1f\x8b"
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


def not_text_reason(head: bytes) -> str | None:
    """Why ``head`` cannot be the start of a CSV file, or ``None``: the CSV reader's
    (:func:`pickscale.io.formats.csv_files.not_text_reason`), for :mod:`pickscale.io.csv`."""
    from .formats.csv_files import not_text_reason as reason  # (the readers import this module)

    return reason(head)
