"""Drawing a report's figures in more than one process (issue 27): where it pays, and how.

Figures are most of a small study's time (six figures, ~1.5 CPU s of drawing and PNG encoding, nearly all
Python), and matplotlib draws one figure at a time per process: threads would not run two at once.  The
figures are independent, so :func:`draw_all` forks worker processes (``fork``: the Dataset, matplotlib and
its fonts are inherited, nothing is pickled or imported again) which take the next figure from a shared
counter, the longest first, as the command's own process does; each figure is still built and drawn once,
by one process, with the same code, so every file is the same bytes as drawn in one process.

:func:`figure_processes` decides how many: one (everything in this process, as before) unless this is Linux
(``fork``), at least two CPUs are this process's (:func:`pickscale.engine.cluster.process_cpus`), there are
at least two figures, this process may have children (not a daemon, such as a Dask worker), and the Dataset is
in memory — no variable read lazily from a store or Dask-backed (a run on a cluster, and ``pickscale report``,
read the residual pairs from the store when used, through Zarr's event-loop thread, which a forked child would
not have; nothing is loaded to decide).  Then one process per CPU, at most one per
figure and at most :data:`MAX_PROCESSES`; ``PICKSCALE_FIGURE_PROCESSES=N`` sets the number where a fork
is safe (1: never fork).

A child that fails or dies leaves its figures undone: this process draws them again itself, so an error
(a full disk) is raised here, as without children.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["figure_processes", "figure_costs", "handout_order", "draw_all", "in_memory", "as_drawn", "PAIRS_READ",
           "MAX_PROCESSES", "COSTS", "OTHER_COST"]

#: At most this many processes draw figures (two CPUs are the common case; more rarely pay for six figures).
MAX_PROCESSES = 4

#: What each figure takes to draw, in seconds of one process of the machine ``benchmarks/small_study.py`` and
#: ``benchmarks/floor_ratio.py`` ran on (warm): a fixed part, and a part that grows with what the figure shows
#: (measured on the 140-pick study and on 10^7 picks: ``residuals`` 0.14 → 0.47 s with the pairs, ``stations``
#: 0.09 → 0.29 s with the stations).  Only their order counts: the longest is handed out first, so that the
#: processes finish together.  A figure not listed counts :data:`OTHER_COST`.
COSTS: dict[str, Callable[[Any], float]] = {
    "operating_curves": lambda ds: 0.2 * 2 * ds.sizes.get("dataset", 1),  # (one row per dataset and phase)
    "residuals": lambda ds: 0.1 + 1.1e-6 * ds.sizes.get("pair", 0),
    "pick_rates": lambda ds: 0.35,
    "stations": lambda ds: 0.04 + 0.0013 * ds.sizes.get("station", 0),
    "reliability": lambda ds: 0.17,
    "timing": lambda ds: 0.15,
    "recall_treatments": lambda ds: 0.12,
    "event_detection": lambda ds: 0.08,
}
OTHER_COST = 0.15


def figure_costs(ds: Any, names: Sequence[str]) -> list[float]:
    """The drawing cost of each figure of ``names`` for ``ds`` (:data:`COSTS`), reading only sizes.

    Examples
    --------
    >>> import xarray as xr
    >>> small, large = xr.Dataset(coords={"pair": range(100)}), xr.Dataset(coords={"pair": range(400_000)})
    >>> [round(c, 2) for c in figure_costs(small, ["residuals", "timing", "not listed"])]
    [0.1, 0.15, 0.15]
    >>> round(figure_costs(large, ["residuals"])[0], 2)  # (the pairs of ~10^7 picks: the longest figure)
    0.54
    """
    return [float(COSTS[name](ds)) if name in COSTS else OTHER_COST for name in names]


def figure_processes(ds: Any, names: Sequence[str]) -> int:
    """How many processes draw the figures ``names`` of ``ds`` (see the module); 1 means this one alone.

    Examples
    --------
    >>> import xarray as xr
    >>> figure_processes(xr.Dataset(), ["timing"])  # one figure: nothing to share
    1
    """
    if len(names) < 2 or not may_fork():
        return 1
    if not all(in_memory(var) for var in ds.variables.values()):
        return 1
    wanted = wanted_processes()
    if wanted is not None:
        return max(1, min(wanted, len(names)))
    # lazy: engine.cluster brings dask (127 modules); a report that draws in one process never needs it
    from ...engine.cluster import process_cpus

    return max(1, min(process_cpus(), len(names), MAX_PROCESSES))


def may_fork() -> bool:
    """Whether figures may be drawn by forked processes here: Linux (``fork``), and not a daemon process (a
    Dask worker's, which may have no children)."""
    if sys.platform != "linux":
        return False
    import multiprocessing

    return not multiprocessing.current_process().daemon


def wanted_processes() -> int | None:
    """``PICKSCALE_FIGURE_PROCESSES``: how many processes draw figures at most (1: never fork; not a number:
    1); None when unset.

    Examples
    --------
    >>> import os
    >>> os.environ["PICKSCALE_FIGURE_PROCESSES"] = "2"; wanted_processes()
    2
    >>> os.environ["PICKSCALE_FIGURE_PROCESSES"] = "all"; wanted_processes()
    1
    >>> del os.environ["PICKSCALE_FIGURE_PROCESSES"]; wanted_processes() is None
    True
    """
    text = os.environ.get("PICKSCALE_FIGURE_PROCESSES", "").strip()
    if not text:
        return None
    try:
        return max(1, int(text))
    except ValueError:
        return 1


def in_memory(var: Any) -> bool:
    """Whether a variable's data are in memory (NumPy, or an index), without loading it: a variable read lazily
    from a store (the pairs ``pickscale report`` reads when used) or Dask-backed is not."""
    import numpy as np

    data = getattr(var, "_data", None)
    return isinstance(data, np.ndarray) or type(data).__name__ == "PandasIndexingAdapter"


#: The residual pairs' variables each figure reads, every row of them (no other figure reads a pair variable).
PAIRS_READ: dict[str, tuple[str, ...]] = {
    "residuals": ("residual", "pair_conf", "pair_model", "pair_phase", "pair_dataset"),
}


def as_drawn(ds: Any, names: Sequence[str]) -> Any:
    """``ds`` as the figures ``names`` read it: when the only variables not in memory are residual pairs read
    from a store (a run on a cluster, ``pickscale report``), those a figure reads whole (:data:`PAIRS_READ`) are
    read here, once, and the others left out -- the figures read nothing more and hold no more memory than
    drawn from ``ds`` itself, and a Dataset now wholly in memory can be drawn by several processes
    (:func:`figure_processes`).  Otherwise ``ds`` as it is."""
    lazy = [name for name, var in ds.variables.items() if not in_memory(var)]
    if not lazy or any(ds[name].dims[:1] != ("pair",) for name in lazy):
        return ds
    read = {name for figure in names for name in PAIRS_READ.get(figure, ())}
    # (compute(), not load(): the caller's Dataset keeps reading its pairs lazily)
    return ds.drop_vars([name for name in lazy if name not in read]).assign(
        {name: ds[name].compute() for name in lazy if name in read})


#: Seconds without a word from any child after which the children are given up (their figures drawn here).
STALLED_S = 300.0


def draw_all(render: Callable[[int], bytes], names: Sequence[str], *, processes: int,
             write: Callable[[int, bytes], None], meanwhile: Callable[[], None] | None = None,
             costs: Sequence[float] | None = None, helper: Any = None) -> None:
    """Every figure of ``names`` rendered (``render(i)``: its file's bytes) and written (``write(i, data)``).

    ``render`` runs in ``processes`` processes (this one among them); ``write`` always in this one, in the
    order the figures are finished, so the files appear (and are counted) one at a time here, and an error
    writing them (a full disk) is raised here.  ``meanwhile()``: other work of this process (the tables),
    done once the other processes have started rendering and before any figure is written (first of all
    with one process).  ``costs``: each figure's (:func:`figure_costs`), the longest handed out first
    (default: in the order given).  ``helper``: a :class:`~pickscale.report.figures.helper.Helper` handed the
    same figures (:func:`~pickscale.report.figures.helper.hand_over`): one of the ``processes``, it takes
    them from its counter with the others.
    """
    if (processes <= 1 and helper is None) or len(names) < 2:
        if meanwhile is not None:
            meanwhile()
        for i in range(len(names)):
            write(i, render(i))
        return
    import multiprocessing
    from multiprocessing.connection import wait

    order = handout_order(costs if costs is not None else [1.0] * len(names))
    ctx = multiprocessing.get_context("fork")
    counter = ctx.Value("i", 0) if helper is None else helper.counter
    # (a helper still loading matplotlib -- kept from the CPUs the command's workers used -- draws what is left
    # when it is ready; the processes forked here draw meanwhile, as without it)
    forked = max(0, processes - 1 - (helper is not None and helper.is_ready()))
    # One pipe per child: a message larger than the pipe's buffer (a figure's bytes) is not written at once,
    # so two children sending on one pipe would interleave their bytes.
    pipes = [ctx.Pipe(duplex=False) for _ in range(forked)]
    children = [ctx.Process(target=_child, args=(render, order, counter, send), daemon=True,
                            name=f"pickscale-figures-{k}") for k, (_, send) in enumerate(pipes)]
    listening = ([] if helper is None else [helper.results]) + [receive for receive, _ in pipes]
    done: set[int] = set()

    def outstanding() -> bool:
        """Whether a figure another process took is not here yet (a process that took none, such as a helper
        still loading matplotlib when every figure was taken, is not waited for)."""
        with counter.get_lock():
            taken = counter.value
        return any(i not in done for i in order[:taken])

    def take(block: bool) -> None:
        """Write what the other processes have sent (with ``block``: until every figure they took is here, or
        they have stopped, or their pipe is at its end: one died without saying so)."""
        quiet = 0.0
        while listening and (not block or outstanding()):
            ready = wait(listening, timeout=1.0 if block else 0)
            if not ready:
                if not block:
                    break
                # A safety net, not a clock the result depends on: children that send nothing for
                # STALLED_S (one stuck on a lock it inherited at the fork) are given up, and what they had
                # not sent is drawn here, the same bytes.
                quiet += 1.0
                if quiet >= STALLED_S:
                    listening.clear()
                    break
                continue
            quiet = 0.0
            for receive in [r for r in listening if r in ready]:  # (in child order)
                try:
                    message = receive.recv()
                except (EOFError, OSError):
                    message = None
                if message is None:  # a child has stopped (or died)
                    listening.remove(receive)
                    continue
                i, data = message
                write(i, data)
                done.add(i)

    # Frozen (gc.freeze), the objects this process holds are left alone by the children's collections: a
    # collection writes to every object it walks, and each page so written is copied from this process's
    # (10^7 picks: half the children's page faults, ~0.15 CPU s).  Thawed again after, unless something was
    # frozen before (the console script freezes what it imported, for good: see pickscale.cli).
    thawed = gc.get_freeze_count() == 0
    if children:
        gc.freeze()
    try:
        for child in children:
            child.start()
        for _, send in pipes:
            send.close()  # (each child holds its own end: once it has stopped, its pipe is at its end)
        if meanwhile is not None:
            meanwhile()
        while True:
            take(block=False)  # what the others have finished meanwhile, written first
            mine = _next(order, counter)
            if mine is None:
                break
            write(mine, render(mine))
            done.add(mine)
        take(block=True)  # until every figure taken elsewhere is here
    finally:
        for child in children:
            if child.is_alive():  # (stopped, or given up: a child still there is told to go)
                child.terminate()
            child.join()
        for receive, _ in pipes:
            receive.close()
        if thawed and children:
            gc.unfreeze()
    for i in range(len(names)):  # what another process did not finish (it failed, or died): drawn here
        if i not in done:
            write(i, render(i))


def handout_order(costs: Sequence[float]) -> list[int]:
    """The order figures are handed out in: the costliest first (longest processing time first: the processes
    then finish close together), ties in the order given.

    Examples
    --------
    >>> handout_order([0.1, 0.54, 0.15, 0.54])
    [1, 3, 2, 0]
    """
    return sorted(range(len(costs)), key=lambda i: -costs[i])


def _next(order: Sequence[int], counter: Any) -> int | None:
    """The next figure to draw (an index of ``names``), or None when every one is taken."""
    with counter.get_lock():
        k = counter.value
        if k >= len(order):
            return None
        counter.value = k + 1
    return order[k]


def _child(render: Callable[[int], bytes], order: Sequence[int], counter: Any, send: Any) -> None:
    """A forked process: render the next figure until none is left, and send its bytes; stop at the first error."""
    # Told to go (terminate(), a child still there when the parent is done): go quietly.  The command's
    # SIGTERM handler, inherited at the fork, would raise in here — after the last figure, inside
    # multiprocessing's own exit, where it prints a traceback under a run that succeeded.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        while True:
            i = _next(order, counter)
            if i is None:
                break
            send.send((i, render(i)))
    except BaseException:  # noqa: BLE001  (rendered again by the parent, which raises it)
        pass
    finally:
        try:
            send.send(None)
        finally:
            send.close()
