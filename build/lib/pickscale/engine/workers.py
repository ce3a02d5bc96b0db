"""Checking that a Dask cluster can run pickscale's tasks, before the job's own work is sent.

A scheduler with no worker, or with workers whose Python has no pickscale (or
another version of it), would otherwise leave a run waiting forever, or fail
deep inside a task.  :func:`check_workers` submits a probe as the first task —
so a cluster that starts with no workers and scales on demand (``cluster.adapt``
of dask-jobqueue, Gateway, Kubernetes) sees work and starts one — and waits a
bounded time for it to run; then it asks every worker to import
``pickscale.engine.parts`` and report its version, and raises
:class:`~pickscale.errors.ClusterError` (exit status 2 in the CLI) with what to do.

The bound is ``PICKSCALE_WORKER_TIMEOUT`` seconds if set, else 30 s for a
scheduler reached by its address (its workers are started by someone else,
and are there or not), and 600 s for a cluster object that starts its own
workers (``client.cluster``: batch jobs of dask-jobqueue wait in a queue, pods
are scheduled, an adaptive cluster scales up for the probe).

The probe is pickled *by value* (a function defined inside another one), so a
worker without pickscale can still run it and say so.  Its replies are awaited
with the same bound.

Only synchronous clients (``distributed.Client(address)``) are supported.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from .. import __version__
from ..errors import ClusterError, OptionsError

__all__ = ["check_workers", "worker_timeout", "scales_itself", "adaptive_of", "TIMEOUT_ENV",
           "DEFAULT_TIMEOUT", "SCALING_TIMEOUT"]

#: Environment variable with the bound, in seconds, for workers to join and answer.
TIMEOUT_ENV = "PICKSCALE_WORKER_TIMEOUT"
#: The bound for a scheduler reached by its address.
DEFAULT_TIMEOUT = 30.0
#: The bound for a cluster that starts its own workers (queued batch jobs, pods, adaptive scaling).
SCALING_TIMEOUT = 600.0

def _make_probe() -> Callable[[], dict[str, Any]]:
    """The probe that runs on each worker.

    Defined inside this function, so that cloudpickle sends its code by value rather than a reference to
    ``pickscale.engine.workers`` (which a worker without pickscale could not import); it imports inside.
    """

    def pickscale_probe() -> dict[str, Any]:
        import sys

        out: dict[str, Any] = {"python": sys.version.split()[0], "executable": sys.executable}
        try:
            # lazy: the probe runs on a worker (sent by value), to find out whether it can import pickscale at all
            import pickscale
            import pickscale.engine.parts  # noqa: F401 - what the tasks need
            import pickscale.engine.scoring  # noqa: F401
        except BaseException as exc:  # noqa: BLE001 - reported, whatever it is
            out.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            return out
        out.update(ok=True, version=str(getattr(pickscale, "__version__", "?")))
        return out

    return pickscale_probe


def worker_timeout(timeout: float | None = None, *, scaling: bool = False) -> float:
    """The bound in seconds: ``timeout`` if given, else ``$PICKSCALE_WORKER_TIMEOUT``, else 30 (600 if ``scaling``).

    Examples
    --------
    >>> worker_timeout(5.0), worker_timeout(5.0, scaling=True)
    (5.0, 5.0)
    """
    if timeout is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return SCALING_TIMEOUT if scaling else DEFAULT_TIMEOUT
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


def adaptive_of(client: Any) -> Any:
    """The running ``Adaptive`` of the client's cluster object (``cluster.adapt(...)``), else None.

    Examples
    --------
    >>> adaptive_of(None) is None
    True
    """
    cluster = getattr(client, "cluster", None)
    adaptive = getattr(cluster, "_adaptive", None) if cluster is not None else None
    if adaptive is None:
        return None
    try:
        from distributed.deploy.adaptive_core import AdaptiveCore
    except ImportError:  # pragma: no cover - distributed without it
        return None
    if not isinstance(adaptive, AdaptiveCore) or getattr(adaptive, "state", "running") in ("stopped", "inactive"):
        return None
    return adaptive


def scales_itself(client: Any) -> bool:
    """True when the client has a cluster object that starts workers itself (then the longer bound applies).

    A ``client.cluster`` — dask-jobqueue's ``SLURMCluster`` / ``PBSCluster``, a Gateway or Kubernetes
    cluster, a ``LocalCluster`` — starts its workers on request (``cluster.scale``), on demand
    (``cluster.adapt``), or as batch jobs that wait in a queue; a client that reached a scheduler by its
    address (``Client("tcp://…")``, ``--scheduler``, ``--scheduler-file``) has none, and its workers are
    started by someone else.
    """
    return getattr(client, "cluster", None) is not None


def _n_workers(client: Any) -> int:
    try:
        return len(client.scheduler_info(n_workers=-1).get("workers", {}))
    except TypeError:  # an older client without n_workers
        return len(client.scheduler_info().get("workers", {}))


def _no_worker(client: Any, address: str, limit: float) -> ClusterError:
    adaptive = adaptive_of(client)
    if adaptive is not None:
        bounds = ", ".join(f"{name}={getattr(adaptive, name)!r}" for name in ("minimum", "maximum")
                           if getattr(adaptive, name, None) is not None)
        return ClusterError(
            f"no Dask worker joined the adaptive cluster at {address} within {limit:g} s ({bounds}), although "
            "pickscale's first task was waiting for one: check why the cluster starts none — batch jobs held "
            "in the queue (squeue, qstat), a job script that fails (the cluster's job logs), a quota — or start "
            "workers with `cluster.scale(n)`, or wait longer: "
            f"{TIMEOUT_ENV}=SECONDS (in an environment with pickscale {__version__} on the workers).")
    if scales_itself(client):
        return ClusterError(
            f"no Dask worker joined the cluster at {address} within {limit:g} s: the cluster object starts "
            "none by itself; start some with `cluster.scale(n)` (or let it scale on demand: "
            "`cluster.adapt(minimum=0, maximum=n)`), check that queued batch jobs run (squeue, qstat), "
            f"or wait longer: {TIMEOUT_ENV}=SECONDS; its workers need pickscale {__version__} installed.")
    return ClusterError(
        f"no Dask worker joined the scheduler at {address} within {limit:g} s: start one with "
        f"`dask worker {address}` (or `dask worker --scheduler-file FILE`, with the file the scheduler wrote) "
        f"in an environment with pickscale {__version__} installed; a cluster object scales with "
        f"`cluster.scale(n)` or `cluster.adapt(minimum=0, maximum=n)` (or wait longer: {TIMEOUT_ENV}=SECONDS).")


#: How many times the probe is submitted again when its future was cancelled under it (not a failure of the
#: probe: distributed's ``sync`` then raises ``UnboundLocalError``, dask/distributed#8514, or CancelledError).
PROBE_ATTEMPTS = 3


def _first_task(client: Any, probe: Any, address: str, limit: float) -> dict:
    """Submit the probe as a task and wait (bounded) for a worker to run it: the cluster may scale for it.

    A probe whose future was cancelled under it (the scheduler let its key go: a worker left while it was
    handed out) says nothing of the workers: it is submitted again, within the same bound, at most
    :data:`PROBE_ATTEMPTS` times in all.
    """
    deadline = time.monotonic() + limit
    for attempt in range(1, PROBE_ATTEMPTS + 1):
        try:
            return _probe_once(client, probe, address, limit, max(deadline - time.monotonic(), 1.0))
        except _Cancelled as cancelled:
            if attempt == PROBE_ATTEMPTS:
                raise ClusterError(f"pickscale's first task was cancelled on the Dask scheduler at {address} "
                                   f"{PROBE_ATTEMPTS} times ({cancelled}); check the scheduler's and the "
                                   "workers' logs.") from None
    raise AssertionError("unreachable")  # pragma: no cover


class _Cancelled(Exception):
    """The probe's future was cancelled under it (see :func:`_first_task`)."""


def _probe_once(client: Any, probe: Any, address: str, limit: float, wait_s: float) -> dict:
    """One probe submitted and waited for ``wait_s`` seconds (``limit``: the bound the messages name)."""
    future = client.submit(probe, key=f"pickscale-probe-{uuid.uuid4().hex}", pure=False, retries=0)
    try:
        return future.result(timeout=wait_s)
    except (TimeoutError, OSError) as exc:
        if not isinstance(exc, TimeoutError) and "timed out" not in str(exc).lower():
            raise ClusterError(f"lost the Dask scheduler at {address} while waiting for workers: "
                               f"{type(exc).__name__}: {exc}.") from None
        try:
            busy = _n_workers(client)
        except Exception:  # noqa: BLE001 - the scheduler is gone too: say there was no worker
            busy = 0
        if busy:
            raise ClusterError(
                f"the {busy} Dask worker(s) at {address} did not run pickscale's first task within {limit:g} s "
                f"(they may be busy with other work, or unreachable from the scheduler); check them, or wait "
                f"longer: {TIMEOUT_ENV}=SECONDS.") from None
        raise _no_worker(client, address, limit) from None
    except (UnboundLocalError, asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
        # (distributed's FutureCancelledError is a concurrent.futures.CancelledError; UnboundLocalError is its
        # sync() when the awaited coroutine raised asyncio's CancelledError, which its ``except Exception`` does
        # not catch. The probe itself raises neither: it catches everything.)
        raise _Cancelled(f"{type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - e.g. the worker died running it (KilledWorker)
        raise ClusterError(f"pickscale's first task failed on the Dask workers at {address}: "
                           f"{type(exc).__name__}: {exc}; check the workers' logs.") from None
    finally:
        try:
            future.cancel()
        except Exception:  # noqa: BLE001 - the scheduler may be gone; nothing to release then
            pass


def check_workers(client: Any, *, timeout: float | None = None) -> int:
    """Run a probe as the first task, wait (bounded) for it, check every worker can run pickscale; return how many.

    The probe is submitted before any worker is waited for, so a cluster that starts with no workers and
    scales on demand (``cluster.adapt(minimum=0, …)``) starts one for it; the worker that runs it, and then
    every worker connected by then, must import ``pickscale.engine.parts`` at this client's version.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client connected to the scheduler.
    timeout : float, optional
        Seconds to wait for the first worker, and again for the workers' answers.  Default:
        ``$PICKSCALE_WORKER_TIMEOUT``, else 600 when the client has a cluster object (it starts its own
        workers: queued batch jobs, pods, adaptive scaling; :func:`scales_itself`), else 30.

    Raises
    ------
    ClusterError
        No worker ran the probe within ``timeout`` (the message says how to start or scale workers); or
        some workers cannot import ``pickscale.engine.parts``, run another pickscale version, or did not
        answer within ``timeout`` (their addresses are listed).
    OptionsError
        ``timeout`` (or the environment variable) is not a number > 0.
    """
    limit = worker_timeout(timeout, scaling=scales_itself(client))
    address = _address(client)
    probe = _make_probe()
    first = _first_task(client, probe, address, limit)
    try:
        replies = client.sync(client._run, probe, on_error="return", callback_timeout=limit)
    except TimeoutError:
        raise ClusterError(
            f"the Dask workers at {address} did not answer within {limit:g} s (they may be busy or "
            f"unreachable from the scheduler); check them, or wait longer: {TIMEOUT_ENV}=SECONDS.") from None
    # A worker whose connection closed while it was asked has left (killed, lost, scaled down): it is no
    # worker of this run, and saying it "cannot import pickscale" would send its user the wrong way.
    replies = {worker: reply for worker, reply in replies.items() if not isinstance(reply, OSError)}
    if not replies:  # the worker that ran the probe has left already (an adaptive cluster scaling down)
        replies = {"the worker that ran pickscale's first task": first}
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
