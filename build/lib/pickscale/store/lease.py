"""Who owns a lock or a temporary: host, pid and a lease that its run keeps renewing.

A folder on a shared file system is written from several machines, where a pid means
nothing: a pid checked on this host says nothing about a run on another node.  So every lock
and every temporary sibling carries an *owner record* -- a small JSON text in the lock file
itself, and in ``<temporary>.lease`` beside a temporary (:mod:`pickscale.store.temporaries`) --
with the writer's host name, the host's boot id (``/proc/sys/kernel/random/boot_id`` where there
is one), its pid and a lease expiry.  While the run lives, a background thread renews the lease (every
:func:`renew_seconds`, a lease lasting :func:`lease_seconds`).  A record is judged
(:func:`alive`):

* written on this host (same host name; same boot id where both are known): alive while its
  pid runs -- a run that died is taken over or cleared at once, as before leases;
* written on this host before the machine rebooted (another boot id): dead;
* written on another host: alive until its lease has expired, whatever the pids here are.
  Hosts' clocks are assumed to agree to well within a lease (NTP);
* no record (a file of an earlier pickscale, which wrote ``"<pid> <host>"`` or nothing beside
  its temporaries): judged by the pid when it names this host or none; a lock of another host
  without a lease is never taken over (the message says to delete it).

The durations come from ``PICKSCALE_LEASE_SECONDS`` (default 60) and
``PICKSCALE_LEASE_RENEW_SECONDS`` (default a sixth of the lease), read on every use.

Examples
--------
>>> import os
>>> mine = Owner(pid=os.getpid(), host=HOST, boot_id=boot_id(), expires=None, token="t")
>>> alive(mine), alive(Owner(pid=os.getpid(), host="elsewhere", boot_id=None, expires=0.0, token="t"))
(True, False)
>>> parse(record("abc", expires=12.5)).expires, parse(b"123 node7\\n").host
(12.5, 'node7')
"""

from __future__ import annotations

import functools
import json
import math
import os
import pathlib
import secrets
import socket
import threading
import time
from dataclasses import dataclass

__all__ = [
    "HOST",
    "Owner",
    "alive",
    "boot_id",
    "lease_seconds",
    "renew_seconds",
    "new_token",
    "record",
    "parse",
    "read_owner",
    "pid_running",
    "renewing",
    "release",
    "lost",
    "describe_owner",
]

#: This machine's name, as recorded in locks and leases.
HOST = socket.gethostname()

LEASE_ENV = "PICKSCALE_LEASE_SECONDS"
RENEW_ENV = "PICKSCALE_LEASE_RENEW_SECONDS"
DEFAULT_LEASE_S = 60.0

#: An owner record is padded to this many bytes, so that a renewal rewrites it in place at one length.
RECORD_BYTES = 512

#: A lock or lease file that holds no readable record yet (its writer is between creating and
#: writing it) is treated as alive for this long before it counts as stale.
EMPTY_GRACE_S = 30.0


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


def lease_seconds() -> float:
    """How long a lease lasts without renewal (``PICKSCALE_LEASE_SECONDS``, default 60)."""
    return _seconds(LEASE_ENV, DEFAULT_LEASE_S)


def renew_seconds() -> float:
    """How often a run renews its leases (``PICKSCALE_LEASE_RENEW_SECONDS``, default lease / 6, at most lease / 2)."""
    lease = lease_seconds()
    return min(_seconds(RENEW_ENV, lease / 6), lease / 2)


@functools.lru_cache(maxsize=1)
def boot_id() -> str | None:
    """This machine's boot id (Linux), or None: tells a pid of this boot from one of before a reboot."""
    try:
        return pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def new_token() -> str:
    """A random token naming one lock or lease of this process."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Owner:
    """An owner record: ``expires`` (seconds since the epoch) is None in records without a lease."""

    pid: int | None
    host: str | None
    boot_id: str | None
    expires: float | None
    token: str | None

    @property
    def here(self) -> bool:
        """Written on this host (a record that names no host is of this host: earlier pickscales')."""
        return self.host is None or self.host == HOST


def record(token: str, *, expires: float | None = None) -> bytes:
    """This process's owner record, with a lease until ``expires`` (default: now + :func:`lease_seconds`)."""
    body = {"pickscale_lease": 1, "pid": os.getpid(), "host": HOST, "boot_id": boot_id(), "token": token,
            "expires": time.time() + lease_seconds() if expires is None else expires}
    text = json.dumps(body).encode()
    return text + b" " * max(RECORD_BYTES - len(text) - 1, 0) + b"\n"


def parse(data: bytes) -> Owner | None:
    """The owner in a record: JSON, or an earlier pickscale's ``"<pid> [<host>]"``; None if unreadable."""
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    if text.startswith("{"):
        try:
            body = json.loads(text)
        except ValueError:
            return None
        if not isinstance(body, dict):
            return None
        pid, expires = body.get("pid"), body.get("expires")
        return Owner(pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                     host=str(body["host"]) if body.get("host") else None,
                     boot_id=str(body["boot_id"]) if body.get("boot_id") else None,
                     expires=float(expires) if isinstance(expires, (int, float)) else None,
                     token=str(body["token"]) if body.get("token") else None)
    parts = text.split()
    if not parts[0].isdigit():
        return None
    return Owner(pid=int(parts[0]), host=parts[1] if len(parts) > 1 else None, boot_id=None, expires=None,
                 token=None)


def read_owner(path: pathlib.Path) -> tuple[Owner | None, float]:
    """The owner recorded in ``path`` and the file's age in seconds (``inf`` when it is gone).

    Raises OSError when the file exists but cannot be read.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
            age = time.time() - os.fstat(f.fileno()).st_mtime
    except FileNotFoundError:
        return None, math.inf
    return parse(data), age


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


def alive(owner: Owner, *, now: float | None = None) -> bool:
    """Whether the run that wrote ``owner`` may still be running (see the module's docstring)."""
    if owner.here:
        mine = boot_id()
        if owner.boot_id is not None and mine is not None and owner.boot_id != mine:
            return False  # written before this machine rebooted
        return owner.pid is not None and pid_running(owner.pid)
    if owner.expires is None:
        return True  # another host's lock of an earlier pickscale: no lease to run out
    return (time.time() if now is None else now) < owner.expires


def describe_owner(owner: Owner | None) -> str:
    """``"pid 12 on node7, its lease renewed until 18:02:11 UTC"``, or ``"pid 12"`` for this host."""
    if owner is None:
        return "a process"
    who = f"pid {owner.pid}" if owner.pid is not None else "a process"
    if owner.here:
        return who
    who += f" on {owner.host}"
    if owner.expires is not None:
        who += f", its lease renewed until {time.strftime('%H:%M:%S UTC', time.gmtime(owner.expires))}"
    return who


class _Renewer:
    """The thread that renews this process's leases, in place, while it holds them."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._files: dict[pathlib.Path, str] = {}
        self._lost: set[pathlib.Path] = set()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._pid = os.getpid()

    def _forked(self) -> None:
        # A forked child inherits the parent's registrations but not its thread: its leases are not its own.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._files, self._lost, self._thread = {}, set(), None
            self._guard = threading.Lock()
            self._wake = threading.Event()

    def add(self, path: pathlib.Path, token: str) -> None:
        self._forked()
        with self._guard:
            self._files[path] = token
            self._lost.discard(path)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="pickscale-lease", daemon=True)
                self._thread.start()
            else:  # (asleep for the interval of the leases it had: it takes the new one's from now on)
                self._wake.set()

    def remove(self, path: pathlib.Path) -> None:
        self._forked()
        with self._guard:
            self._files.pop(path, None)
            self._lost.discard(path)

    def is_lost(self, path: pathlib.Path) -> bool:
        self._forked()
        with self._guard:
            return path in self._lost

    def _run(self) -> None:
        while True:
            self._wake.wait(renew_seconds())
            self._wake.clear()
            with self._guard:
                if not self._files:
                    self._thread = None
                    return
                files = dict(self._files)
            for path, token in files.items():
                if not _renew(path, token):
                    with self._guard:
                        if self._files.get(path) == token:
                            del self._files[path]
                            self._lost.add(path)


_RENEWER = _Renewer()


def _renew(path: pathlib.Path, token: str) -> bool:
    """Extend the lease in ``path`` if it still holds ``token``; False when the file is gone or another's.

    Through one descriptor: if another run moves the file aside meanwhile, this writes into the moved
    file (which that run then sees changed), never into a new lock at the path.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreachable for a moment: try again next time
    try:
        owner = parse(os.pread(fd, 4 * RECORD_BYTES, 0))
        if owner is None or owner.token != token or owner.pid != os.getpid():
            return owner is None  # a record being rewritten reads as nothing: not lost yet
        os.pwrite(fd, record(token), 0)
        return True
    except OSError:
        return True
    finally:
        os.close(fd)


def renewing(path: pathlib.Path, token: str) -> None:
    """Renew the lease in ``path`` (holding ``token``) from now on, until :func:`release`."""
    _RENEWER.add(path, token)


def release(path: pathlib.Path) -> None:
    """Stop renewing the lease in ``path``."""
    _RENEWER.remove(path)


def lost(path: pathlib.Path) -> bool:
    """Whether the lease in ``path`` was found gone or taken by another run while being renewed."""
    return _RENEWER.is_lost(path)
