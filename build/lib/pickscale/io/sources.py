"""What the user typed (a file, a folder, a glob, an fsspec URL) as a sorted list of files to read.

Below the readers: this module imports none of them, nor their registry.  What
a folder is searched for is what the file readers of the table list; the
registry passes that in when it builds the table (:func:`use_listed_suffixes`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import fsspec

from ..errors import InputError
from .storage import storage_error

__all__ = ["COMPRESSION_SUFFIXES", "CSV_SUFFIXES", "PARQUET_SUFFIXES", "SOURCE_SUFFIXES", "SourceFile", "has_magic",
           "list_sources", "listed_suffixes", "resolve_sources", "suffix_list", "use_listed_suffixes"]


#: Endings of compressed files (gzip, bzip2, xz, Zstandard); the content is sniffed whatever the name.
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
#: File name endings of the files a folder is searched for (any case).
CSV_SUFFIXES = (".csv",) + tuple(".csv" + c for c in COMPRESSION_SUFFIXES)
PARQUET_SUFFIXES = (".parquet", ".pq")
#: What a folder is searched for with the table of readers as shipped (:func:`listed_suffixes`: as registered).
SOURCE_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES


def _shipped() -> tuple[str, ...]:
    return SOURCE_SUFFIXES


_listed: Callable[[], tuple[str, ...]] = _shipped


def use_listed_suffixes(listed: Callable[[], tuple[str, ...]]) -> None:
    """Make ``listed`` what :func:`listed_suffixes` asks: the registry passes the table's own in
    (:func:`pickscale.io.formats.registry.listed_suffixes`), once it has built the table."""
    global _listed
    _listed = listed


def listed_suffixes() -> tuple[str, ...]:
    """The file name endings a folder is searched for: what the file readers of the table list (``listed``).

    As the table is when asked (:func:`use_listed_suffixes`; set as soon as :mod:`pickscale.io` is imported).
    """
    return _listed()


def suffix_list(suffixes: tuple[str, ...] | None = None, *, last: str = "or") -> str:
    """The suffixes (default: :func:`listed_suffixes`) as a message lists them.

    Examples
    --------
    >>> suffix_list()
    '*.csv, *.csv.gz, *.csv.bz2, *.csv.xz, *.csv.zst, *.parquet or *.pq'
    """
    names = [f"*{s}" for s in (listed_suffixes() if suffixes is None else suffixes)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {last} " + names[-1]


def has_magic(path: str) -> bool:
    """Whether ``path`` is a glob pattern (holds ``*``, ``?`` or ``[``)."""
    return any(c in path for c in "*?[")


def _hidden(path: str, root: str) -> bool:
    # Skip .ipynb_checkpoints/, .DS_Store and friends below the folder given.
    rel = path[len(root):].lstrip("/")
    return any(part.startswith(".") for part in rel.split("/"))


class SourceFile(NamedTuple):
    """One file to read and its size in bytes, as the filesystem's listing gave it (None: not known)."""

    path: str
    size: int | None


def _size_of(info: dict[str, Any]) -> int | None:
    size = info.get("size")
    return int(size) if isinstance(size, (int, float)) and not isinstance(size, bool) else None


def _is_dir(info: dict[str, Any]) -> bool:
    return info.get("type") == "directory"


def _folder_files(listing: dict[str, dict[str, Any]], folder: str) -> dict[str, int | None]:
    """The source files of a listing below ``folder`` (hidden ones skipped), with their sizes."""
    below = folder.rstrip("/") + "/"
    suffixes = listed_suffixes()
    return {p: _size_of(i) for p, i in listing.items()
            if p.startswith(below) and not _is_dir(i) and p.lower().endswith(suffixes) and not _hidden(p, folder)}


def _glob(fs: Any, path: str, local: bool) -> dict[str, int | None]:
    """Every file a glob matches (folders it matches expanded), with sizes: for a remote filesystem, one listing.

    A local glob is fsspec's own (a walk of the folders the pattern can reach).  Remote, that walk is one
    request per folder level (``s3://b/hive/*/*.parquet``: one per station folder); instead the folder before
    the first wildcard is listed once, flat (with the literal start of the next name as a prefix), and the
    pattern is matched as fsspec's glob matches it.
    """
    first = min(i for i in (path.find(c) for c in "*?[") if i >= 0)
    root, _, stem = path[:first].rpartition("/")
    if local or not root:
        matches = fs.glob(path, detail=True)
        found: dict[str, int | None] = {}
        for p, info in sorted(matches.items()):
            if _is_dir(info):
                found.update(_folder_files(fs.find(p, detail=True), p))
            else:
                found[p] = _size_of(info)
        return found
    from fsspec.utils import glob_translate

    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    narrow = {"prefix": stem} if stem and protocol in ("s3", "s3a", "gs", "gcs") else {}  # their find takes it
    listing = fs.find(root, withdirs=True, detail=True, **narrow)
    pattern = re.compile(glob_translate(path))
    found = {}
    for p, info in sorted(listing.items()):
        if not pattern.match(p):
            continue
        if _is_dir(info):
            found.update(_folder_files(listing, p))
        else:
            found[p] = _size_of(info)
    return found


def list_sources(source: str | os.PathLike | Sequence[str | os.PathLike], *,
                 storage_options: dict[str, Any] | None = None) -> list[SourceFile]:
    """:func:`resolve_sources`, each file with its size from the filesystem's listing.

    A folder or glob on object storage is listed once (not one request per
    object): read planning batches small objects and splits large Parquet
    ones by row groups as it does local files.  ``storage_options`` go to
    fsspec (``{"endpoint_url": ..., "key": ..., "secret": ...}`` for S3);
    without them fsspec's environment and configuration apply
    (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID`` …).  An unreachable
    endpoint, missing credentials, a refused access or a missing bucket is an
    :class:`InputError` naming the URL and the setting to check.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "b.csv").write_text("xyz")
    >>> [(pathlib.Path(f.path).name, f.size) for f in list_sources(d)]
    [('b.csv', 3)]
    """
    if isinstance(source, (list, tuple)):
        out: dict[str, SourceFile] = {}
        for item in source:
            for f in list_sources(item, storage_options=storage_options):
                out.setdefault(f.path, f)
        return list(out.values())

    text = os.fspath(cast("str | os.PathLike", source))
    try:
        return _list_one(text, storage_options or {})
    except InputError:
        raise
    except Exception as exc:
        error = storage_error(exc, text, storage_options)
        if error is None:
            raise
        raise error from None


def _list_one(text: str, storage_options: dict[str, Any]) -> list[SourceFile]:
    fs, path = fsspec.core.url_to_fs(text, **storage_options)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")

    if has_magic(path):
        found = _glob(fs, path, local)
        if not found:
            raise InputError(f"{text}: no file matches this pattern.")
    else:
        listing = fs.find(path, detail=True)  # a folder's files (one listing), or the file itself
        if list(listing) == [path] and not _is_dir(listing[path]):
            info = listing[path]
            found = {path: _size_of(info) if "size" in info else _size_of(fs.info(path))}
        elif listing:
            found = _folder_files(listing, path)
            if not found:
                raise InputError(f"{text}: the folder holds no {suffix_list()} file.")
        elif fs.isdir(path):
            raise InputError(f"{text}: the folder holds no {suffix_list()} file.")
        else:
            raise InputError(f"{text}: no such file or folder.")
    files = sorted(found)
    return [SourceFile(p if local else fs.unstrip_protocol(p), found[p]) for p in files]


def resolve_sources(source: str | os.PathLike | Sequence[str | os.PathLike], *,
                    storage_options: dict[str, Any] | None = None) -> list[str]:
    """Expand a file, folder, glob or fsspec URL into a sorted list of files.

    A folder yields every ``*.csv`` (also compressed: ``*.csv.gz``,
    ``*.csv.bz2``, ``*.csv.xz``, ``*.csv.zst``), ``*.parquet`` and ``*.pq``
    file inside it, recursively (hidden files and folders skipped).  A glob
    yields every file it matches (folders it matches are expanded as above).
    A list of sources is resolved item by item, in order, without repeats.
    Their sizes too: :func:`list_sources`.

    Parameters
    ----------
    source
        A local path, a glob, an fsspec URL (``s3://...``, ``memory://...``),
        or a list of these.
    storage_options
        Passed to fsspec for URLs (credentials, endpoint); see :func:`list_sources`.

    Returns
    -------
    list of str
        Local files as plain paths, remote files as URLs with their protocol.

    Raises
    ------
    InputError
        When the path does not exist or nothing readable is found, or object
        storage cannot be reached or refuses access.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "b.csv").write_text("x"); _ = (d / "a.parquet").write_text("x")
    >>> [pathlib.Path(p).name for p in resolve_sources(d)]
    ['a.parquet', 'b.csv']
    """
    return [f.path for f in list_sources(source, storage_options=storage_options)]
