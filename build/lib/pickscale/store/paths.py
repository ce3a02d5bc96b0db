"""Paths of a results store: the target, its checks, and its hidden siblings.

A store is saved at a *target* folder; while it is written, and while a
previous store is swapped out, it lives in hidden *siblings* next to it,
``.<name>.<kind>-<pid>-<random>`` (kinds ``tmp``, ``old``, ``stalelock``),
whose pid says which process made them (a small ``<sibling>.lease`` beside each
says on which host, and until when its run renews it: :mod:`.lease`).

Every path a user gives goes through :func:`local_store_path` first: a URL
(``s3://bucket/run``) is refused there, before any work, instead of becoming a
local folder named ``s3:``.

Examples
--------
>>> import pathlib
>>> sibling(pathlib.Path("/data/results.zarr"), "tmp").name.startswith(".results.zarr.tmp-")
True
>>> local_store_path("file:///data/run/results.zarr", what="results store").as_posix()
'/data/run/results.zarr'
>>> local_store_path("s3://bucket/run", what="--out")
Traceback (most recent call last):
...
pickscale.errors.StoreError: --out s3://bucket/run: ...
"""

from __future__ import annotations

import os
import pathlib
import re
import secrets
import urllib.parse
import urllib.request

from pickscale.errors import StoreError

from .buckets import SCHEMES, cloud_installed, extra_of
from .schema import is_pickscale_store

__all__ = [
    "PathLike",
    "absolute",
    "local_store_path",
    "url_scheme",
    "check_parent",
    "check_replaceable",
    "describe",
    "fsync_dir",
    "sibling",
    "siblings",
]

PathLike = str | os.PathLike[str]


def absolute(path: PathLike) -> pathlib.Path:
    """The absolute path of ``path``, symbolic links not followed."""
    # abspath, not resolve: a symlinked target is replaced as a link, and
    # siblings are created next to the name the user gave.
    return pathlib.Path(os.path.abspath(os.fspath(path)))


#: ``scheme://`` at the start of a location: a URL, not a path.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: ``s3:/bucket``: what ``pathlib.Path("s3://bucket")`` makes of a URL (one letter is a Windows drive).
_COLLAPSED_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)")


def url_scheme(location: object) -> str | None:
    """The scheme of a URL (``"s3"`` for ``"s3://bucket/run"``), or None for a path.

    >>> url_scheme("gs://bucket/run"), url_scheme("run/results.zarr"), url_scheme(pathlib.Path("C:/x"))
    ('gs', None, None)
    """
    if not isinstance(location, (str, os.PathLike)):
        return None
    text = os.fspath(location)
    if not isinstance(text, str):
        return None
    match = _URL.match(text)
    return match.group(1).lower() if match else None


def local_store_path(location: PathLike, *, what: str = "results store") -> pathlib.Path:
    """The absolute local path of ``location``; a URL pickscale cannot write is refused.

    ``file://`` URLs are mapped to their local path.  Any other ``scheme://`` URL raises
    :class:`~pickscale.errors.StoreError` naming it, as does a path that is a URL whose ``//``
    was collapsed (``pathlib.Path("s3://b/run")`` is ``s3:/b/run``): nothing derived from a URL is
    ever created on the local disk.  ``what`` says what the location is for, in the message (``"--out"``).
    """
    text = os.fspath(location)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    scheme = url_scheme(text)
    if scheme == "file":
        parts = urllib.parse.urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise StoreError(f"{what} {text}: a file:// URL of another host ({parts.netloc}) is not a local "
                             "path; give the folder as this machine sees it.")
        return absolute(urllib.request.url2pathname(parts.path))
    if scheme is not None:
        raise StoreError(f"{what} {text}: {_remote_refusal(scheme)}; nothing was written.")
    collapsed = _COLLAPSED_URL.match(text)
    if collapsed:
        raise StoreError(f"{what} {text}: this looks like a URL whose // was lost (pathlib.Path turns "
                         f"'{collapsed.group(1)}://…' into '{collapsed.group(1)}:/…'); pass the URL as a string, "
                         "or give a local folder; nothing was written.")
    return absolute(text)


def _remote_refusal(scheme: str) -> str:
    """Why a ``scheme://`` location cannot be written here, and what to do."""
    if scheme not in SCHEMES:
        return (f"pickscale cannot write results to {scheme}:// URLs (only to a local folder, or with the extra "
                f"pickscale[cloud] to {', '.join(s + '://' for s in SCHEMES)} object storage)")
    if not cloud_installed(scheme):
        return (f"results on {scheme}:// object storage need the extra {extra_of(scheme)}, which is not "
                "installed; install it, or give a local folder")
    return "this takes a local folder, not a URL"


def check_parent(target: pathlib.Path) -> None:
    """Refuse a target whose folder is missing or not writable."""
    parent = target.parent
    if not parent.is_dir():
        raise StoreError(f"cannot save results to {target}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot save results to {target}: the folder {parent} is not writable")


def check_replaceable(target: pathlib.Path, overwrite: bool) -> None:
    """Refuse an existing target unless it is our store and overwrite is set."""
    if not os.path.lexists(target):
        return
    if not is_pickscale_store(target):
        raise StoreError(
            f"refusing to write results to {target}: it exists and is not a pickscale "
            "results store, so pickscale will not replace it (even with overwrite); "
            "choose another path or remove it yourself"
        )
    if not overwrite:
        raise StoreError(
            f"results store {target} already exists; pass overwrite=True to replace it"
        )


def describe(exc: BaseException) -> str:
    """An exception as ``"Type: message"``, for messages."""
    return f"{type(exc).__name__}: {exc}"


def fsync_dir(folder: pathlib.Path) -> None:
    """Best effort: make the renames durable across a power cut."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sibling(target: pathlib.Path, kind: str) -> pathlib.Path:
    """A fresh hidden sibling name, ``.<name>.<kind>-<pid>-<random>``."""
    return target.parent / f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def siblings(target: pathlib.Path, kind: str, *, suffix: str = "") -> list[tuple[pathlib.Path, int]]:
    """Existing ``.<name>.<kind>-<pid>-<random><suffix>`` siblings with their pid."""
    pattern = re.compile(re.escape(f".{target.name}.{kind}-") + r"(\d+)-[0-9a-f]+" + re.escape(suffix))
    found = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match:
            found.append((pathlib.Path(entry.path), int(match.group(1))))
    return found
