"""Checking, before any work is sent, that a Dask cluster can run pickscale's tasks.

A scheduler with no worker, or with workers whose Python has no pickscale (or
another version of it), would otherwise leave a run waiting forever, or fail
deep inside a task.  :func:`check_workers` waits a bounded time for a worker,
then asks every worker to import ``pickscale.engine.parts`` and report its version,
and raises :class:`~pickscale.errors.ClusterError` (exit status 2 in the CLI)
with what to do.

The probe that runs on the workers is pickled *by value* (a function defined
inside another one), so a worker without pickscale can still run it and say
so.  Its replies are awaited with the same bound.

Only synchronous clients (``distributed.Client(address)``) are supported.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .. import __version__
from ..errors import ClusterError, OptionsError

__all__ = ["check_workers", "worker_timeout", "TIMEOUT_ENV", "DEFAULT_TIMEOUT"]

#: Environment variable with the bound, in seconds, for workers to join and answer.
TIMEOUT_ENV = "PICKSCALE_WORKER_TIMEOUT"
DEFAULT_TIMEOUT = 30.0

def _make_probe():
    """The probe that runs on each worker.

    Defined inside this function, so that cloudpickle sends its code by value rather than a reference to
    ``pickscale.engine.workers`` (which a worker without pickscale could not import); it imports inside.
    """

    def pickscale_probe():
        import sys

        out = {"python": sys.version.split()[0], "executable": sys.executable}
        try:
            import pickscale
            import pickscale.engine.parts  # noqa: F401 - what the tasks need
            import pickscale.engine.scoring  # noqa: F401
        except BaseException as exc:  # noqa: BLE001 - reported, whatever it is
            out.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            return out
        out.update(ok=True, version=str(getattr(pickscale, "__version__", "?")))
        return out

    return pickscale_probe


def worker_timeout(timeout: float | None = None) -> float:
    """The bound in seconds: ``timeout`` if given, else ``$PICKSCALE_WORKER_TIMEOUT``, else 30."""
    if timeout is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return DEFAULT_TIMEOUT
        try:
            timeout = float(text)
        except ValueError:
            raise OptionsError(f"{TIMEOUT_ENV} must be a number of seconds > 0; got {text!r}.") from None
        where = TIMEOUT_ENV
    else:
        where = "timeout"
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise OptionsError(f"{where} must be a number of seconds > 0; got {timeout!r}.")
    return float(timeout)


def _address(client: Any) -> str:
    try:
        return str(client.scheduler.address)
    except Exception:  # noqa: BLE001 - only for the message
        return "the scheduler"


def check_workers(client: Any, *, timeout: float | None = None) -> int:
    """Wait (bounded) for a worker, check that every worker can run pickscale; return how many there are.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client connected to the scheduler.
    timeout : float, optional
        Seconds to wait for the first worker, and again for the workers' answers.
        Default: ``$PICKSCALE_WORKER_TIMEOUT``, else 30.

    Raises
    ------
    ClusterError
        No worker joined within ``timeout``; or some workers cannot import
        ``pickscale.engine.parts``, run another pickscale version, or did not answer
        within ``timeout`` (their addresses are listed).
    OptionsError
        ``timeout`` (or the environment variable) is not a number > 0.
    """
    limit = worker_timeout(timeout)
    address = _address(client)
    try:
        client.wait_for_workers(1, timeout=limit)
    except (TimeoutError, OSError) as exc:
        if not isinstance(exc, TimeoutError) and "timed out" not in str(exc).lower():
            raise ClusterError(f"lost the Dask scheduler at {address} while waiting for workers: "
                               f"{type(exc).__name__}: {exc}.") from None
        raise ClusterError(
            f"no Dask worker joined the scheduler at {address} within {limit:g} s: start one with "
            f"`dask worker {address}` in an environment with pickscale {__version__} installed "
            f"(or wait longer: {TIMEOUT_ENV}=SECONDS).") from None
    try:
        replies = client.sync(client._run, _make_probe(), on_error="return", callback_timeout=limit)
    except TimeoutError:
        raise ClusterError(
            f"the Dask workers at {address} did not answer within {limit:g} s (they may be busy or "
            f"unreachable from the scheduler); check them, or wait longer: {TIMEOUT_ENV}=SECONDS.") from None
    missing: list[str] = []
    other: list[str] = []
    for worker, reply in sorted(replies.items()):
        if isinstance(reply, BaseException) or not isinstance(reply, dict):
            missing.append(f"{worker} ({type(reply).__name__}: {reply})")
        elif not reply.get("ok"):
            missing.append(f"{worker} ({reply.get('error')}; Python {reply.get('python')} at "
                           f"{reply.get('executable')})")
        elif reply.get("version") != __version__:
            other.append(f"{worker} (pickscale {reply.get('version')})")
    problems = []
    if missing:
        problems.append(f"{len(missing)} of {len(replies)} worker(s) cannot import pickscale: "
                        + "; ".join(missing))
    if other:
        problems.append(f"{len(other)} of {len(replies)} worker(s) run another pickscale version than this "
                        f"client ({__version__}): " + "; ".join(other))
    if problems:
        raise ClusterError(
            f"the Dask workers at {address} cannot run pickscale's tasks: " + ". ".join(problems)
            + f". Install the same version in the workers' environment (pip install pickscale=={__version__}) "
              "and restart them.")
    return len(replies)
