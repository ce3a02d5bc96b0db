"""Clearing up after runs that died: their temporary siblings, and a previous store moved aside.

A run killed while saving leaves ``.<name>.tmp-<pid>-<random>`` (a
half-written store) or ``.<name>.old-<pid>-<random>`` (the previous store,
about to be deleted) next to the target, each with its lease
``<sibling>.lease`` (:mod:`.temporaries`); :func:`cleanup_stale` removes those of
runs that are gone -- on this host, whose pid no longer runs; on another host
of a shared file system, whose lease has expired -- and puts a previous store
back when the target is missing.
"""

from __future__ import annotations

import os
import pathlib
import shutil

from pickscale.errors import StoreError

from . import temporaries
from .locks import HELD, acquire_lock, release_lock
from .paths import PathLike, local_store_path, siblings
from .schema import is_pickscale_store

__all__ = ["cleanup_stale", "remove_dead_siblings"]


def cleanup_stale(path: PathLike) -> list[pathlib.Path]:
    """Remove temporary siblings of a store left behind by runs that died.

    A run that is killed while saving leaves ``.<name>.tmp-<pid>-<random>``
    (a half-written store) or ``.<name>.old-<pid>-<random>`` (the previous
    store, about to be deleted) next to the target.  Those of runs that are
    gone are removed -- written on this machine by a pid that no longer runs,
    or on another machine sharing the folder and whose lease (renewed while
    that run lives) has expired; those of live runs are left alone.  If the
    run died between moving the previous store aside and moving the new one
    in, so that the target is missing, the newest such previous store is put
    back at the target instead of being deleted.

    Parameters
    ----------
    path : str or os.PathLike
        The store path, as passed to :func:`~pickscale.store.save`.  It need not exist.

    Returns
    -------
    list of pathlib.Path
        The siblings removed (not including a previous store put back), and leases left without their
        temporary.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> cleanup_stale(pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    []
    """
    target = local_store_path(path, what="results store")
    if not target.parent.is_dir():
        return []
    if target in HELD:  # reserved by this process: we are the lock holder
        if not os.path.lexists(target):
            _restore_newest_old(target)
        return remove_dead_siblings(target, kinds=("tmp", "old"))
    try:
        lock = acquire_lock(target)
    except StoreError:
        # A live run is saving: its own siblings carry its live pid and are
        # kept; dead previous stores are kept too, as the target may be
        # missing for a moment and only the lock holder may restore.
        return remove_dead_siblings(target, kinds=("tmp",))
    try:
        if not os.path.lexists(target):
            _restore_newest_old(target)
        return remove_dead_siblings(target, kinds=("tmp", "old"))
    finally:
        release_lock(lock)


def remove_dead_siblings(target: pathlib.Path, kinds: tuple[str, ...]) -> list[pathlib.Path]:
    """Remove the siblings of these kinds whose process is gone; return those removed, sorted."""
    removed = []
    for kind in kinds:
        for sibling, pid in siblings(target, kind):
            if not temporaries.sibling_stale(sibling, pid):
                continue
            _remove_path(sibling)
            if not os.path.lexists(sibling):
                removed.append(sibling)
                _remove_path(temporaries.sidecar(sibling))
        for orphan, pid in siblings(target, kind, suffix=temporaries.SIDECAR_SUFFIX):
            # A lease whose temporary is gone: its run died before creating it, or after removing it.
            base = orphan.with_name(orphan.name.removesuffix(temporaries.SIDECAR_SUFFIX))
            if not os.path.lexists(base) and temporaries.sibling_stale(base, pid):
                _remove_path(orphan)
                if not os.path.lexists(orphan):
                    removed.append(orphan)
    return sorted(removed)


def _restore_newest_old(target: pathlib.Path) -> None:
    """Put back the previous store a dead run moved aside before dying."""
    dead = [(p.stat().st_mtime, p) for p, pid in siblings(target, "old") if temporaries.sibling_stale(p, pid)]
    candidates = [p for _, p in sorted(dead, reverse=True) if is_pickscale_store(p)]
    if candidates:
        os.rename(candidates[0], target)
        _remove_path(temporaries.sidecar(candidates[0]))


def _remove_path(path: pathlib.Path) -> None:
    """Remove a folder or a file, as far as possible."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass
