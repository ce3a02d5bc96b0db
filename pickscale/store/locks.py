"""The writer lock of a results store (POSIX, one machine), kept apart as xarray keeps backends/locks.py.

A lock file ``.<name>.lock`` next to the target, created exclusively and
holding the writer's pid and host, lets only one run at a time write a given
target.  When a run dies its lock stays behind and is taken over by the next
run once its pid no longer runs.  The lock and the pid checks assume every
writer of a folder runs on the same machine (pids mean nothing across hosts
on a shared file system).

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
import math
import os
import pathlib
import socket
import stat as _stat
import time
from collections.abc import Iterator

from pickscale.errors import StoreError

from .paths import PathLike, absolute, check_parent, describe, sibling

__all__ = ["HELD", "reserved", "pid_running", "lock_path", "acquire_lock", "release_lock", "read_lock"]

# A lock that holds no readable pid yet (its writer is between creating and
# writing it) is treated as held for this long before it counts as stale.
_EMPTY_LOCK_GRACE_S = 30.0

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
    target = absolute(path)
    check_parent(target)
    if target in HELD:
        raise StoreError(f"cannot reserve {target}: this process has already reserved it")
    lock = acquire_lock(target)
    HELD[target] = lock
    try:
        yield target
    finally:
        HELD.pop(target, None)
        release_lock(lock)


def pid_running(pid: int) -> bool:
    """Whether a process with this pid runs on this machine (zombies do not count)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OSError:
        return False
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust kill()
    # The state follows the parenthesised command name, which may hold spaces.
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def lock_path(target: pathlib.Path) -> pathlib.Path:
    """The lock file of a target, ``.<name>.lock``."""
    return target.parent / f".{target.name}.lock"


def acquire_lock(target: pathlib.Path) -> pathlib.Path:
    """Create the lock file exclusively, taking over a lock whose owner died."""
    lock = lock_path(target)
    content = f"{os.getpid()} {socket.gethostname()}\n".encode()
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
            os.write(fd, content)
        finally:
            os.close(fd)
        return lock
    raise StoreError(f"cannot save results to {target}: could not take the lock file {lock}; try again")


def read_lock(lock: pathlib.Path) -> tuple[int | None, str | None, float]:
    """The pid and host in a lock file, and its age in seconds."""
    try:
        text = lock.read_text(encoding="utf-8", errors="replace")
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return None, None, math.inf
    parts = text.split()
    pid = int(parts[0]) if parts and parts[0].isdigit() else None
    host = parts[1] if len(parts) > 1 else None
    return pid, host, age


def _take_over_if_stale(lock: pathlib.Path, target: pathlib.Path) -> None:
    """Remove ``lock`` if its owner is dead; raise StoreError if it is alive."""
    try:
        pid, host, age = read_lock(lock)
    except OSError as exc:  # e.g. another user's lock this account may not read
        raise StoreError(
            f"cannot save results to {target}: the lock file {lock} is in the way and cannot be read "
            f"({describe(exc)}){_owner_note(lock)}; if no pickscale run is writing {target}, delete "
            f"{lock} (or ask its owner to), or choose another output folder"
        ) from None
    if age == math.inf:
        return  # vanished meanwhile: just try to create it again
    other_host = host is not None and host != socket.gethostname()
    empty_and_young = pid is None and age < _EMPTY_LOCK_GRACE_S
    if other_host or empty_and_young or (pid is not None and pid_running(pid)):
        who = f"pid {pid}" if pid is not None else "a process"
        where = f" on {host}" if other_host else ""
        raise StoreError(
            f"cannot save results to {target}: another pickscale run ({who}{where}) is writing it "
            f"right now (lock file {lock}); wait for it to finish, or delete the lock file if "
            "that run no longer exists"
        )
    # Stale.  Move it aside under a unique name rather than unlinking, then
    # check we moved the lock we judged: another run may have replaced it.
    aside = sibling(target, "stalelock")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return
    except OSError as exc:  # a sticky folder (like /tmp) and a lock of another user, a read-only folder
        raise StoreError(_stuck_lock_message(lock, target, pid, exc)) from None
    moved_pid, _, _ = read_lock(aside)
    if moved_pid == pid:
        aside.unlink(missing_ok=True)
        return
    # We took a fresh lock of a live run: give it back (link fails if a third
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
    pid, _, _ = read_lock(lock)
    if pid == os.getpid():
        lock.unlink(missing_ok=True)
