"""A figure process started with the command, loading matplotlib while the command scores (issue 27).

A command that draws figures spends ~0.3 s of one CPU loading matplotlib and its fonts before the first
figure, after the results are written, and a small study's scoring runs in one process: the other CPU is
idle meanwhile.  :func:`helper_started` forks a process as the command starts (before pandas, xarray or Dask
are loaded: one thread, nothing to inherit but the parsed arguments) that loads matplotlib and the figures'
code on that idle CPU, then waits.  Once the results are ready, :func:`hand_over` sends it the Dataset
(pickled: the same values) and the way to draw it (:func:`pickscale.report.figures.build.helper_job`); it then
draws as one of :func:`~pickscale.report.figures.processes.draw_all`'s processes, taking the next figure from the
same counter and sending its bytes back, while this process writes the tables and loads matplotlib itself.
Each figure is still drawn once, by one process, with the same code: the same bytes.

Where it would not pay or is not safe, nothing is started (:func:`helper_started`'s ``enabled``, and the rules of
:func:`~pickscale.report.figures.processes.figure_processes` that can be told before the results exist); where
the results turn out not to qualify (a Dataset not in memory, or larger than :data:`HANDOVER_BYTES`), it is let
go unused (:func:`let_go`).  A helper that dies, or never gets to its job, leaves its figures to this process, as
a forked child does.  It never outlives the command: it is stopped when :func:`helper_started` exits, and,
forked as a daemon, at this process's exit; it ignores Ctrl-C (the command handles it).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import gc
import importlib
import os
import queue
import signal
import threading
from collections.abc import Iterator
from typing import Any

from .processes import _child, may_fork, wanted_processes

__all__ = ["Helper", "helper_started", "hand_over", "let_go", "take_handed", "current", "HANDOVER_BYTES", "may_start"]

#: A Dataset to draw of more bytes than this is not sent to the helper (pickling it both ways would cost about
#: what loading matplotlib does): the figures are drawn by processes forked then, as without one.
HANDOVER_BYTES = 64 * 2**20

#: The signals held back while the helper is forked (:func:`_start`).
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}

#: The helper of the command running in this context (:func:`helper_started`).
_HELPER: contextvars.ContextVar[Helper | None] = contextvars.ContextVar("pickscale_figure_helper", default=None)


@dataclasses.dataclass
class Helper:
    """A started helper: its process, the pipe its job is sent on, the pipe its figures come back on, the
    counter the next figure is taken from (shared with every process drawing: it was made before the fork), and
    whether it has loaded what it draws with (``ready``, shared too); whether it was handed its job, and whether
    a drawing took it (:func:`take_handed`)."""

    process: Any
    jobs: Any
    results: Any
    counter: Any
    ready: Any
    sender: threading.Thread | None = None
    handed: bool = False
    taken: bool = False

    def is_ready(self) -> bool:
        """Whether it has loaded matplotlib and drawn its warm-up figure (it would draw its share at once)."""
        return bool(self.ready.value)


def may_start() -> bool:
    """Whether a helper may be started here: where figures may be drawn by forked processes
    (:func:`~pickscale.report.figures.processes.may_fork`), with two CPUs or more for this process (its
    affinity: what can be told before Dask is loaded) unless ``PICKSCALE_FIGURE_PROCESSES`` says how many
    processes draw (:func:`~pickscale.report.figures.processes.wanted_processes`): two or more.

    Examples
    --------
    >>> import os
    >>> os.environ["PICKSCALE_FIGURE_PROCESSES"] = "1"; may_start()
    False
    >>> del os.environ["PICKSCALE_FIGURE_PROCESSES"]
    """
    if not may_fork():
        return False
    wanted = wanted_processes()
    return len(os.sched_getaffinity(0)) >= 2 if wanted is None else wanted >= 2


@contextlib.contextmanager
def helper_started(*, enabled: bool) -> Iterator[Helper | None]:
    """A helper for the block (None unless ``enabled`` and :func:`may_start`), stopped when the block exits."""
    helper = _start() if enabled and may_start() else None
    token = _HELPER.set(helper)
    try:
        yield helper
    finally:
        _HELPER.reset(token)
        if helper is not None:
            _stop(helper)


def hand_over(factory: str, *args: Any) -> bool:
    """Send the context's helper its job: ``factory`` (``"module:function"``), called there with ``args``,
    returns ``(render, order)`` -- how to draw figure ``i`` and the order they are handed out in (the same as
    this process's).  ``args`` are pickled here, as they are now; the bytes are sent by a thread (the helper may
    still be loading matplotlib).  Returns whether it was handed (not without a helper, nor twice)."""
    helper = _HELPER.get()
    if helper is None or helper.handed:
        return False
    from multiprocessing.reduction import ForkingPickler

    job = bytes(ForkingPickler.dumps((factory, args)))
    helper.handed = True

    def send() -> None:
        try:
            helper.jobs.send_bytes(job)
        except OSError:  # it is gone (or stopped): its figures are drawn by the others
            pass

    helper.sender = threading.Thread(target=send, name="pickscale-figure-handover", daemon=True)
    helper.sender.start()
    return True


def let_go() -> None:
    """Stop the context's helper now, unused (the results do not qualify): its memory and CPU are freed."""
    helper = _HELPER.get()
    if helper is not None and not helper.handed:
        _HELPER.set(None)
        _stop(helper)


def current() -> Helper | None:
    """The context's helper (None: none was started, or it was let go)."""
    return _HELPER.get()


def take_handed() -> Helper | None:
    """The context's helper once it was handed its job, for the one drawing that shares its counter (then
    None again)."""
    helper = _HELPER.get()
    if helper is None or not helper.handed or helper.taken:
        return None
    helper.taken = True
    return helper


def _start() -> Helper | None:
    """Fork the helper (None if that fails: the figures are drawn as without one)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    try:
        counter = ctx.Value("i", 0)
        ready = ctx.RawValue("b", 0)
        job_in, job_out = ctx.Pipe(duplex=False)
        results_in, results_out = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_main, args=(job_in, results_out, counter, ready, job_out, results_in),
                              daemon=True, name="pickscale-figure-helper")
        # Ctrl-C and SIGTERM held back across the fork: the helper sets its own handling before it takes them
        # (between the fork and that, the command's handlers would raise in there); here they come after it.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    except OSError:  # no process to spare (a limit on processes, or memory): nothing is lost without one
        return None
    job_in.close()
    results_out.close()
    return Helper(process=process, jobs=job_out, results=results_in, counter=counter, ready=ready)


def _stop(helper: Helper) -> None:
    """Let the helper go (whatever it is doing by then: loading, waiting, or drawing what nobody waits for any
    more, nobody else takes a figure by then); nothing of it is left."""
    process = helper.process
    if process.is_alive():
        process.terminate()
    process.join(timeout=5.0)
    if process.is_alive():
        process.kill()
        process.join()
    if helper.sender is not None:  # (a job still on its way fails once the helper is gone: the pipe is broken)
        helper.sender.join()
    for end in (helper.jobs, helper.results):  # (closed last: never under the thread that sends)
        with contextlib.suppress(OSError):
            end.close()


def _main(jobs: Any, results: Any, counter: Any, ready: Any, *inherited: Any) -> None:
    """The helper: load matplotlib and the figures' code, wait for the job, draw its share, stop."""
    for end in inherited:  # (this process's copies of the command's ends: closed, so each pipe can end)
        end.close()
    # The least priority: it loads what it draws with on a CPU the command leaves idle (a small study scored in
    # one process), and takes next to nothing from a command that keeps every CPU busy (workers scoring).
    with contextlib.suppress(OSError):
        os.nice(19)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the command handles Ctrl-C, and closes the pipe)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the command's handler would raise in here)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)  # (held back since the fork: _start)
    try:
        # (as the command loads its own: the collector off meanwhile, and what was loaded frozen; pickscale.cli)
        gc.disable()
        import matplotlib

        matplotlib.use("Agg")
        build = importlib.import_module("pickscale.report.figures.build")
        # What its first figure would load besides: xarray's check for Dask arrays made without dask.array (as
        # the command makes it, pickscale.engine.lazy_dask), and the fonts and the image writer.
        importlib.import_module("pickscale.engine.lazy_dask").install()
        build.warm_up()
        gc.freeze()
        gc.enable()
        ready.value = 1
        try:
            job = jobs.recv()
        except EOFError:  # let go unused
            return
        module, _, name = job[0].partition(":")
        render, order = getattr(importlib.import_module(module), name)(*job[1])
    except BaseException:  # noqa: BLE001 (nothing taken: its figures are drawn by the others)
        results.close()
        return
    # The figures are sent by a thread: this process draws the next while the command is still writing the
    # store and the tables (a figure is more than a pipe holds: sending it here would wait for the command).
    outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def post() -> None:
        while True:
            message = outbox.get()
            try:
                results.send(message)
            except (OSError, ValueError):  # the command has stopped listening
                return
            if message is None:
                return

    poster = threading.Thread(target=post, name="pickscale-figure-post")
    poster.start()
    _child(render, order, counter, _Outbox(outbox))
    poster.join()
    results.close()


class _Outbox:
    """A helper's end of its results pipe as its drawing sees it: messages queued for the thread that sends them."""

    def __init__(self, outbox: queue.SimpleQueue[Any]) -> None:
        self.outbox = outbox

    def send(self, message: Any) -> None:
        self.outbox.put(message)

    def close(self) -> None:
        """(the thread closes the pipe once it has sent the last message)"""
