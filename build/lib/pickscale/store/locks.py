"""The writer lock of a results store, kept apart as xarray keeps backends/locks.py.

A lock file ``.<name>.lock`` next to the target, created exclusively, lets only
one run at a time write a given target.  It holds the writer's *owner record*
(:mod:`.lease`): host, boot id, pid and a lease that a background thread renews
while the run lives.  When a run dies its lock stays behind and is taken over
by the next run: at once when it was written on this host and its pid no
longer runs, and, when it was written on another host of a shared file system
(where a pid here means nothing), only once its lease has expired.

``pickscale score`` holds the lock for its whole run (:func:`reserved`), so a
second run aimed at the same folder stops before computing, and the tables
and figures next to the store always come from the run that wrote it.

Examples
--------
>>> import os
>>> pid_running(os.getpid()), pid_running(0)
(True, False)
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import stat as _stat
import time
from collections.abc import Iterator

from pickscale.errors import StoreError

from . import lease
from .lease import pid_running
from .paths import PathLike, check_parent, describe, local_store_path, sibling
from .remote import check_remote, is_remote
from .remote import reserved as remote_reserved

__all__ = ["HELD", "reserved", "pid_running", "lock_path", "acquire_lock", "release_lock", "read_lock",
           "confirm_held"]

# A lock that holds no readable record yet (its writer is between creating and
# writing it) is treated as held for this long before it counts as stale.
_EMPTY_LOCK_GRACE_S = lease.EMPTY_GRACE_S

#: The token of each lock this process holds: lock file -> token.
_TOKENS: dict[pathlib.Path, str] = {}

#: Targets whose lock this process holds for a whole run (see :func:`reserved`):
#: target path -> lock file.
HELD: dict[pathlib.Path, pathlib.Path] = {}


@contextlib.contextmanager
def reserved(path: PathLike) -> Iterator[pathlib.Path]:
    """Hold the writer lock of a store for a whole run, not just while saving.

    ``pickscale score`` reserves its target before it starts computing, so a
    second run aimed at the same folder fails at once with a clear message
    instead of computing for an hour and then racing the first run (its
    tables and figures would be mixed with the first run's).  Inside the
    block, :func:`~pickscale.store.save` and :func:`~pickscale.store.cleanup_stale`
    of this process use the lock held here.

    Parameters
    ----------
    path : str or os.PathLike
        The store path, as passed to :func:`~pickscale.store.save`.  Its parent folder must
        exist and be writable.

    Yields
    ------
    pathlib.Path
        The absolute store path.

    Raises
    ------
    StoreError
        When the folder is missing or not writable, or another run holds
        the lock.

    Examples
    --------
    >>> import tempfile, pathlib, xarray as xr
    >>> from pickscale.store import save
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "results.zarr"
    >>> with reserved(target):
    ...     _ = save(xr.Dataset({"n": ("x", [1])}), target)
    >>> sorted(p.name for p in target.parent.iterdir())
    ['results.zarr']
    """
    if is_remote(path):  # a store on object storage: a writer session, whose commit fails if another came first
        with remote_reserved(check_remote(os.fspath(path)), overwrite=True):
            yield os.fspath(path)  # type: ignore[misc]  # (a URL)
        return
    target = local_store_path(path, what="results store")
    check_parent(target)
    if target in HELD:
        raise StoreError(f"cannot reserve {target}: this process has already reserved it")
    lock = acquire_lock(target)
    try:  # (entered as soon as the lock is returned: nothing between that could leave it behind)
        HELD[target] = lock
        yield target
    finally:
        HELD.pop(target, None)
        release_lock(lock)


def lock_path(target: pathlib.Path) -> pathlib.Path:
    """The lock file of a target, ``.<name>.lock``."""
    return target.parent / f".{target.name}.lock"


def acquire_lock(target: pathlib.Path) -> pathlib.Path:
    """Create the lock file exclusively, taking over a lock whose owner died."""
    lock = lock_path(target)
    token = lease.new_token()
    for _attempt in range(5):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _take_over_if_stale(lock, target)
            continue
        except OSError as exc:
            raise StoreError(
                f"cannot save results to {target}: cannot create the lock file {lock} "
                f"({describe(exc)}); is the folder writable?"
            ) from exc
        try:
            try:
                os.write(fd, lease.record(token))
            finally:
                os.close(fd)
            _TOKENS[lock] = token
            lease.renewing(lock, token)
        except BaseException:
            # A Ctrl-C (or any error) once the lock exists but before the caller guards it: the lock is ours,
            # and nobody else would remove it while this process lives.
            lease.release(lock)
            _TOKENS.pop(lock, None)
            lock.unlink(missing_ok=True)
            raise
        return lock
    raise StoreError(f"cannot save results to {target}: could not take the lock file {lock}; try again")


def read_lock(lock: pathlib.Path) -> tuple[int | None, str | None, float]:
    """The pid and host in a lock file, and its age in seconds."""
    owner, age = lease.read_owner(lock)
    return (owner.pid, owner.host, age) if owner is not None else (None, None, age)


def _take_over_if_stale(lock: pathlib.Path, target: pathlib.Path) -> None:
    """Remove ``lock`` if its owner is gone (:func:`.lease.alive`); raise StoreError if it may be alive."""
    try:
        with open(lock, "rb") as f:
            judged = f.read()
            age = time.time() - os.fstat(f.fileno()).st_mtime
    except FileNotFoundError:
        return  # vanished meanwhile: just try to create it again
    except OSError as exc:  # e.g. another user's lock this account may not read
        raise StoreError(
            f"cannot save results to {target}: the lock file {lock} is in the way and cannot be read "
            f"({describe(exc)}){_owner_note(lock)}; if no pickscale run is writing {target}, delete "
            f"{lock} (or ask its owner to), or choose another output folder"
        ) from None
    owner = lease.parse(judged)
    if (owner is None and age < _EMPTY_LOCK_GRACE_S) or (owner is not None and lease.alive(owner)):
        raise StoreError(_held_message(lock, target, owner))
    # Stale.  Move it aside under a unique name rather than unlinking, then
    # check we moved the lock we judged: another run may have replaced it, or
    # its owner renewed it meanwhile.
    aside = sibling(target, "stalelock")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return
    except OSError as exc:  # a sticky folder (like /tmp) and a lock of another user, a read-only folder
        raise StoreError(_stuck_lock_message(lock, target, owner.pid if owner else None, exc)) from None
    try:
        moved = aside.read_bytes()
    except OSError:
        moved = None
    if moved == judged:
        aside.unlink(missing_ok=True)
        return
    # We took a fresh (or just renewed) lock of a live run: give it back (link fails if a third
    # run already made a new one, which then holds the lock instead).
    try:
        os.link(aside, lock)
    except OSError:
        pass
    aside.unlink(missing_ok=True)
    raise StoreError(
        f"cannot save results to {target}: another pickscale run is writing it right now "
        f"(lock file {lock}); wait for it to finish"
    )


def _held_message(lock: pathlib.Path, target: pathlib.Path, owner: lease.Owner | None) -> str:
    """Another run holds the lock: who, where, and what to do."""
    text = (f"cannot save results to {target}: another pickscale run ({lease.describe_owner(owner)}) is writing "
            f"it right now (lock file {lock}); wait for it to finish")
    if owner is not None and not owner.here and owner.expires is not None:
        return text + (f"; if {owner.host} is down, its lock is taken over once the lease has expired "
                       f"(it lasts {lease.lease_seconds():g} s without renewal)")
    return text + ", or delete the lock file if that run no longer exists"


def confirm_held(target: pathlib.Path) -> None:
    """Raise StoreError unless this process still holds the lock of ``target`` (its lease may have run out)."""
    lock = HELD.get(target, lock_path(target))
    token = _TOKENS.get(lock)
    try:
        owner, _ = lease.read_owner(lock)
    except OSError:
        owner = None
    if token is not None and not lease.lost(lock) and owner is not None and owner.token == token:
        return
    raise StoreError(
        f"could not save results to {target}: this run lost its lock {lock} (its lease expired -- was the "
        f"process stopped, or the file system unreachable, for more than {lease.lease_seconds():g} s? -- and "
        f"{'another run (' + lease.describe_owner(owner) + ') took it over' if owner else 'it is gone'}); "
        "nothing was changed at the target"
    )


def _owner_note(lock: pathlib.Path) -> str:
    """``"; it belongs to another user, x"`` when another user owns ``lock``, else ``""``."""
    try:
        uid = lock.stat().st_uid
    except OSError:
        return ""
    if uid == os.geteuid():
        return ""
    try:
        import pwd

        name = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        name = f"uid {uid}"
    return f"; it belongs to another user, {name}"


def _stuck_lock_message(lock: pathlib.Path, target: pathlib.Path, pid: int | None, exc: OSError) -> str:
    """Why a stale lock cannot be taken over, and how to clear it."""
    run = f"pid {pid}" if pid is not None else "that never wrote its pid"
    try:
        sticky = bool(os.stat(lock.parent).st_mode & _stat.S_ISVTX)
    except OSError:
        sticky = False
    why = (f"the folder {lock.parent} has the sticky bit (like /tmp), so only the lock file's owner, the "
           "folder's owner or root may remove it" if sticky else f"it cannot be removed ({describe(exc)})")
    return (
        f"cannot save results to {target}: the lock file {lock} is in the way: it was left by a pickscale "
        f"run that no longer runs ({run}){_owner_note(lock)}, and {why}; delete {lock} (ask its owner or an "
        "administrator to), or choose another output folder"
    )


def release_lock(lock: pathlib.Path) -> None:
    """Remove ``lock`` if this process holds it."""
    token = _TOKENS.pop(lock, None)
    lease.release(lock)
    try:
        owner, _ = lease.read_owner(lock)
    except OSError:
        return
    if owner is not None and owner.pid == os.getpid() and owner.here and (token is None or owner.token == token):
        lock.unlink(missing_ok=True)
