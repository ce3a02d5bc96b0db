"""What the user typed (a file, a folder, a glob, an fsspec URL) as a sorted list of files to read."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

import fsspec

from ..errors import InputError

__all__ = ["COMPRESSION_SUFFIXES", "CSV_SUFFIXES", "PARQUET_SUFFIXES", "SOURCE_SUFFIXES", "has_magic",
           "resolve_sources", "suffix_list"]


#: Endings of compressed files (gzip, bzip2, xz, Zstandard); the content is sniffed whatever the name.
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
#: File name endings of the files a folder is searched for (any case).
CSV_SUFFIXES = (".csv",) + tuple(".csv" + c for c in COMPRESSION_SUFFIXES)
PARQUET_SUFFIXES = (".parquet", ".pq")
SOURCE_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES


def suffix_list(suffixes: tuple[str, ...] = SOURCE_SUFFIXES, *, last: str = "or") -> str:
    """The suffixes as a message lists them.

    Examples
    --------
    >>> suffix_list()
    '*.csv, *.csv.gz, *.csv.bz2, *.csv.xz, *.csv.zst, *.parquet or *.pq'
    """
    names = [f"*{s}" for s in suffixes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {last} " + names[-1]


def has_magic(path: str) -> bool:
    """Whether ``path`` is a glob pattern (holds ``*``, ``?`` or ``[``)."""
    return any(c in path for c in "*?[")


def _is_source_file(path: str) -> bool:
    return path.lower().endswith(SOURCE_SUFFIXES)


def _hidden(path: str, root: str) -> bool:
    # Skip .ipynb_checkpoints/, .DS_Store and friends below the folder given.
    rel = path[len(root):].lstrip("/")
    return any(part.startswith(".") for part in rel.split("/"))


def _list_folder(fs: Any, folder: str) -> list[str]:
    files = [p for p in fs.find(folder) if _is_source_file(p) and not _hidden(p, folder)]
    return sorted(files)


def resolve_sources(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """Expand a file, folder, glob or fsspec URL into a sorted list of files.

    A folder yields every ``*.csv`` (also compressed: ``*.csv.gz``,
    ``*.csv.bz2``, ``*.csv.xz``, ``*.csv.zst``), ``*.parquet`` and ``*.pq``
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

    text = os.fspath(cast("str | os.PathLike", source))
    fs, path = fsspec.core.url_to_fs(text)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")

    if has_magic(path):
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
            raise InputError(f"{text}: the folder holds no {suffix_list()} file.")
    elif fs.exists(path):
        found = [path]
    else:
        raise InputError(f"{text}: no such file or folder.")
    found = sorted(dict.fromkeys(found))
    return found if local else [fs.unstrip_protocol(p) for p in found]
