"""Running task graphs: the client to use, computing with retries, and reduction trees.

Every stage of :func:`pickscale.engine.score` goes through :func:`compute`
(or :func:`persist`): on a ``distributed`` client with retries for lost
workers, else on Dask's local scheduler.  :func:`tree_reduce` combines many
delayed results on the workers, so the client receives one.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import dask
from dask import delayed

from ..kernel import FAN_IN
from .cluster import process_cpus
from .progress import Stage
from .workers import adaptive_of

__all__ = ["scheduler", "n_workers", "compute", "persist", "tree_reduce", "persist_stage", "reduce_stage"]

def scheduler(client: Any) -> Any:
    """The Client to use: the one given, else the current one, else None (Dask's local default)."""
    if client is not None:
        return client
    if "distributed" not in sys.modules:  # no Client can exist; and importing distributed costs ~0.2 s
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def n_workers(client: Any) -> int:
    """Workers to plan for: the client's (at least 1; an adaptive cluster's ``maximum`` if finite and larger),
    or this process's CPUs (affinity, cgroups) without one."""
    if client is None:
        return process_cpus()
    try:
        present = max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # an old or unusual client: partitioning is only a performance choice
        return process_cpus()

    maximum = getattr(adaptive_of(client), "maximum", None)  # what it may scale to, not what came yet
    return max(present, int(maximum)) if isinstance(maximum, int) and not isinstance(maximum, bool) else present


def compute(tasks: list[Any], client: Any, *, label: str, progress: bool, release: bool = False) -> list[Any]:
    """Compute delayed objects on the client (with retries) or on Dask's local scheduler.

    ``release=True`` empties ``tasks`` once they are submitted, so that the
    caller holds no handle on intermediate data (persisted parts) any more.
    """
    if not tasks:
        return []
    if client is None:
        if progress:
            from dask.diagnostics import ProgressBar

            with ProgressBar(minimum=3.0, dt=0.5, out=sys.stderr):
                return list(dask.compute(*tasks, scheduler=_local()))
        return list(dask.compute(*tasks, scheduler=_local()))
    with warnings.catch_warnings():
        # The scored arrivals travel inside the graph (~17 bytes each, ~1/50 of the picks): a
        # "large graph" here is the reference itself, so Dask's advice to load it differently
        # does not apply; and data scattered instead would not survive a lost worker.
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        futures = client.compute(list(tasks), retries=3)
    if release:
        tasks.clear()
    if progress:
        from distributed import progress as show_progress

        show_progress(futures, notebook=False)
    return client.gather(futures)


def persist(tasks: Sequence[Any], client: Any) -> list[Any]:
    if not tasks:
        return []
    if client is None:
        return list(dask.persist(*tasks, scheduler=_local()))
    return client.persist(list(tasks), retries=3)


def tree_reduce(items: list[Any], combine: Any) -> Any:
    """Combine delayed ``items`` on the workers, :data:`~pickscale.kernel.stacks.FAN_IN` at a time, in order.

    The graph grows like ``len(items)`` and the client receives one result.
    """
    return tree_reduce_to(items, combine, top=1)[0]


def tree_reduce_to(items: list[Any], combine: Any, *, top: int) -> list[Any]:
    """:func:`tree_reduce` stopped once at most ``top`` results are left (the tree's top pieces, in order)."""
    level = list(items)
    if not level:
        return [delayed(combine)()]
    while len(level) > top:
        level = [delayed(combine)(*level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    return level


def _local() -> Any:
    """Dask's configured local scheduler (threads by default), as its function.

    Left unnamed, Dask imports ``distributed`` (~0.2 s with tornado) only to look for a client that
    :func:`scheduler` already found absent; named by a string, it imports it too (to look for a current
    client); given its function, it imports nothing.  A name Dask does not know as a local scheduler is
    passed on as it is.

    >>> _local() is dask.threaded.get
    True
    """
    import dask.threaded  # noqa: F401  (dask.base.named_schedulers names it)
    from dask.base import named_schedulers

    name = str(dask.config.get("scheduler", None) or "threads")
    return named_schedulers.get(name.lower(), name)


# --------------------------------------------------------------------------- stages with a progress display


class _Counting:
    """A Dask local-scheduler callback: one :class:`~pickscale.engine.progress.Stage` step per finished key."""

    def __init__(self, keys: set, stage: Any) -> None:
        from dask.callbacks import Callback

        def posttask(key, result, dsk, state, worker_id) -> None:
            if key in keys:
                keys.discard(key)
                stage.update()

        self.callback = Callback(posttask=posttask)

    def __enter__(self) -> _Counting:
        self.callback.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.callback.__exit__(*exc)


def persist_stage(tasks: Sequence[Any], client: Any, *, label: str, progress: bool) -> list[Any]:
    """:func:`persist` with a labelled count of the finished tasks (``label`` k/n) when ``progress``.

    On a cluster the count follows the persisted futures (``distributed.as_completed``) and this returns
    once every task has finished; on the local scheduler a Dask callback counts them.
    """
    if not progress or not tasks:
        return persist(tasks, client)

    with Stage(label, len(tasks)) as stage:
        if client is None:
            with _Counting({t.key for t in tasks}, stage):
                return list(dask.persist(*tasks, scheduler=_local()))
        from distributed import as_completed, futures_of

        out = client.persist(list(tasks), retries=3)
        for _ in as_completed(futures_of(out), loop=client.loop):
            stage.update()
        return out


def reduce_stage(items: list[Any], combine: Any, client: Any, *, label: str, progress: bool) -> list[Any]:
    """The top pieces of ``tree_reduce(items, combine)`` (at most ``FAN_IN``), computed; a labelled count of
    the finished ``items`` when ``progress``.

    The tree's last combination is left out: the pieces are joined where they are used
    (:mod:`~pickscale.engine.collect`), so no worker holds every result twice while combining them.
    ``items`` is emptied once submitted (the caller keeps no handle on intermediate data).  On a cluster
    the items are submitted as futures and the tree is built over them, so ``as_completed`` can count
    them; the tree and its order — hence every number — are the same.  On a cluster the pieces stay
    there: what is returned is their futures, which :mod:`~pickscale.engine.collect` brings back in batches.
    """
    if client is not None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            futures = client.compute(list(items), retries=3)
            items.clear()
            tops = client.compute(tree_reduce_to([delayed(f) for f in futures], combine, top=FAN_IN), retries=3)
        if not progress:
            for top in tops:
                wait_for(top)
            return tops
        from distributed import as_completed

        with Stage(label, len(futures)) as stage:
            counting = as_completed(futures, loop=client.loop)
            del futures  # as_completed holds each future until it is counted; the tree holds what it needs
            for _ in counting:
                stage.update()
            for top in tops:
                wait_for(top)
        return tops
    job = tree_reduce_to(items, combine, top=FAN_IN)
    keys = {t.key for t in items}
    items.clear()
    if not progress or not keys:
        return list(dask.compute(*job, scheduler=_local()))

    with Stage(label, len(keys)) as stage:
        with _Counting(keys, stage):
            return list(dask.compute(*job, scheduler=_local()))


def wait_for(future: Any) -> None:
    """Wait until ``future`` is finished, without fetching its result; raise its error if it failed."""
    if future.exception() is not None:  # waits; None when it finished well
        future.result()  # raises the task's error, with its traceback
