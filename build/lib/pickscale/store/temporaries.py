"""The temporaries of a run and their leases: ``<temporary>.lease`` beside each, renewed while its run lives.

A temporary sibling (``.results.zarr.tmp-…``, a report's ``.<folder>.tmp-…``) is written, checked and renamed
into place; a run that dies leaves it behind.  Its *lease* -- an owner record (:mod:`pickscale.store.lease`)
in a file beside it -- says whose it is and until when, so that a run on another host of a shared file
system can tell a temporary still being written from one left by a run that is gone.
"""

from __future__ import annotations

import contextlib
import math
import os
import pathlib

from .lease import EMPTY_GRACE_S, alive, new_token, pid_running, read_owner, record, release, renewing

__all__ = ["SIDECAR_SUFFIX", "sidecar", "claim", "drop", "sibling_stale"]

SIDECAR_SUFFIX = ".lease"


def sidecar(path: pathlib.Path) -> pathlib.Path:
    """The lease file of a temporary: ``<temporary>.lease``."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def claim(path: pathlib.Path) -> None:
    """Write and keep renewing the lease of a temporary this process is about to create at ``path``.

    Written before the temporary, removed after it (:func:`drop`): a temporary of this version always
    has its lease beside it while its run lives.
    """
    token = new_token()
    lease = sidecar(path)
    fd = os.open(lease, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, record(token))
    finally:
        os.close(fd)
    renewing(lease, token)


def drop(path: pathlib.Path) -> None:
    """Stop renewing the lease of the temporary at ``path``, and remove the lease once the temporary is gone."""
    lease = sidecar(path)
    release(lease)
    if not os.path.lexists(path):
        with contextlib.suppress(OSError):
            lease.unlink()


def sibling_stale(path: pathlib.Path, pid: int) -> bool:
    """Whether the temporary at ``path`` (named with ``pid``) was left by a run that is gone.

    Judged by its lease (:func:`alive`) when it has one, else -- an earlier pickscale's, or one whose
    lease was already removed -- by ``pid`` on this host.
    """
    try:
        owner, age = read_owner(sidecar(path))
    except OSError:
        return False  # a lease this account cannot read: not ours to judge
    if age == math.inf:
        return not pid_running(pid)
    if owner is None:
        return age >= EMPTY_GRACE_S
    return not alive(owner)
