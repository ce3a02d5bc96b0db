"""Where a command runs, and how it behaves while it does: its Dask client, signals, and quiet logs.

Ctrl-C and SIGTERM unwind a command cleanly (temporary stores removed, the cluster closed); the worker
processes it starts ignore Ctrl-C and do not log a user's input error as a crash."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import OptionsError
from .state import Terminated

__all__ = ["command_client", "sigterm_as_interrupt"]

class _QuietUserErrors(logging.Filter):
    """Drop a worker's "Compute Failed" log of a pickscale input error.

    The error reaches the command, which prints it once, as a message; the
    worker's own log of it (with a remote traceback, once per retry) is noise
    that looks like a crash.
    """

    _NAMES = ("InputError(", "OptionsError(", "StoreError(", "PickscaleError(")

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is not ours to judge
            return True
        if not text.startswith("Compute Failed"):
            return True
        return not any(f"Exception: {quote}{name}" in text for name in self._NAMES for quote in ("'", '"'))


def _quiet_worker(dask_worker=None) -> None:
    """Set up a worker process the command started: quiet user errors, leave Ctrl-C to the command."""
    logging.getLogger("distributed.worker").addFilter(_QuietUserErrors())
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C in a terminal reaches every process of the group; the command
        # closes its workers itself, so they must not die with a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


#: The thread that imports, in each worker the command starts, what the save's tasks need (:func:`_warm`).
WARM_THREAD = "pickscale-warm-imports"


def _warm() -> None:
    """Import ``dask.array`` in a worker, off its task thread.

    The pair variables' chunks (the save fetches them) are the first tasks of a run whose functions come from
    ``dask.array``, and unpickling them imports it -- with SciPy, ~0.35 s of CPU -- on the run's critical path,
    every worker at once.  Imported in the background as the worker starts, it takes CPU the worker leaves idle
    (the client planning, another worker reading).  Only a speed-up: any failure leaves the import to the task.
    """
    try:
        import dask.array  # noqa: F401
    except Exception:  # noqa: BLE001 - the task that needs it will say what is wrong
        pass


class _QuietInterruptedGather(logging.Filter):
    """Drop asyncio's "Task exception was never retrieved" for a gather that Ctrl-C abandoned."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "AllExit")


@contextlib.contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Start worker processes that Ctrl-C does not reach; this command still gets it.

    Ctrl-C in a terminal reaches every process of the group.  The command
    closes its workers itself; a worker that got the SIGINT too would die
    with a traceback of its own.  While the cluster starts, SIGINT is blocked
    in this thread, so the Dask threads started meanwhile, and every worker
    process they spawn, inherit the block; a Ctrl-C pressed meanwhile is kept
    and raised here as soon as the cluster is up.  (The multiprocessing
    resource tracker is started first: starting it later would unblock
    SIGINT in the thread that starts it.)
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    except Exception:  # no tracker on this platform: nothing to start early
        pass
    pending: list[int] = []
    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)  # delivers a pending Ctrl-C ...
        signal.signal(signal.SIGINT, previous_handler)
    if pending:  # ... which is raised now, with the cluster up (and closed by the caller)
        raise KeyboardInterrupt


@contextlib.contextmanager
def command_client(workers: int | None, scheduler: str | None, closing: list | None = None, *,
                   in_process: bool = False, scheduler_file: str | None = None) -> Iterator[Any]:
    """The Dask client of a command: an existing scheduler, or a LocalCluster the command owns.

    The scheduler is ``scheduler`` (``--scheduler``) or ``scheduler_file`` (``--scheduler-file``) if given,
    else the one Dask's configuration names (``DASK_SCHEDULER_ADDRESS`` / ``scheduler-address``, then
    ``DASK_SCHEDULER_FILE`` / ``scheduler-file``: what ``distributed.Client()`` would connect to), which is
    said on stderr.  ``workers`` (``--workers N``) with a scheduler only from Dask's configuration starts a
    local cluster of N workers (the flag wins over the configuration), and says so too.  ``in_process``: a
    small job with no scheduler named anywhere runs in this process on Dask's local scheduler (``None`` is
    yielded): starting worker processes would cost more than the job.
    """
    # lazy: engine.cluster brings Dask (distributed when a cluster starts); `import pickscale.cli` imports this module
    from ..engine.cluster import cluster_client, scheduler_address, scheduler_target

    target = scheduler_target(scheduler, scheduler_file)
    if target is not None and target.configured and workers is not None:
        print(f"pickscale: --workers {workers}: starting a local cluster of {workers} worker(s), not the "
              f"scheduler named by {target.source} ({target.describe()})", file=sys.stderr)
        target = None
    owned = target is None
    if owned and in_process:
        yield None
        return
    aio = logging.getLogger("asyncio")
    if not any(isinstance(f, _QuietInterruptedGather) for f in aio.filters):
        aio.addFilter(_QuietInterruptedGather())
    stack = contextlib.ExitStack()
    with stack:
        if target is None:
            with _workers_ignore_sigint():
                client = stack.enter_context(cluster_client(workers=workers, closing=closing, local=True))
        else:
            address = scheduler_address(target)  # a scheduler file: waited for, then read (OptionsError)
            if target.configured:
                via = f" (from {target.scheduler_file})" if target.scheduler_file else ""
                print(f"pickscale: connecting to the scheduler named by {target.source}: {address}{via}",
                      file=sys.stderr)
            try:
                client = stack.enter_context(cluster_client(target=dataclasses.replace(target, address=address)))
            except (OSError, TimeoutError, TypeError, ValueError) as exc:
                tls = ("; a tls:// scheduler needs the client's certificate and CA "
                       "(DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT, "
                       "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY; see docs/security.md)"
                       if str(address).startswith("tls://") or "TLS" in str(exc) else "")
                named = (f" (named by {target.source} {target.scheduler_file}: a file left by a scheduler that "
                         "has stopped?)" if target.scheduler_file
                         else f" (named by {target.source})" if target.configured else "")
                raise OptionsError(f"cannot connect to the Dask scheduler at {address}{named}: "
                                   f"{type(exc).__name__}: {exc}{tls}.") from None
            # Its workers are checked by `score` (pickscale.engine.workers.check_workers).
        if owned:
            try:
                from distributed.diagnostics.plugin import WorkerPlugin

                class _Setup(WorkerPlugin):
                    name = "pickscale-cli-setup"

                    def setup(self, worker) -> None:  # noqa: D401 - runs in each worker, also after a restart
                        _quiet_worker()
                        threading.Thread(target=_warm, name=WARM_THREAD, daemon=True).start()

                client.register_plugin(_Setup())
            except Exception:  # cosmetic only: never fail a run for it
                pass
        yield client


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM unwinds like Ctrl-C (temporary stores removed, cluster closed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
