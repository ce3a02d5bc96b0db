"""Paths of a results store: the target, its checks, and its hidden siblings.

A store is saved at a *target* folder; while it is written, and while a
previous store is swapped out, it lives in hidden *siblings* next to it,
``.<name>.<kind>-<pid>-<random>`` (kinds ``tmp``, ``old``, ``stalelock``),
whose pid says which process made them.

Examples
--------
>>> import pathlib
>>> sibling(pathlib.Path("/data/results.zarr"), "tmp").name.startswith(".results.zarr.tmp-")
True
"""

from __future__ import annotations

import os
import pathlib
import re
import secrets

from pickscale.errors import StoreError

from .schema import is_pickscale_store

__all__ = [
    "PathLike",
    "absolute",
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


def siblings(target: pathlib.Path, kind: str) -> list[tuple[pathlib.Path, int]]:
    """Existing ``.<name>.<kind>-<pid>-<random>`` siblings with their pid."""
    pattern = re.compile(re.escape(f".{target.name}.{kind}-") + r"(\d+)-[0-9a-f]+")
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
