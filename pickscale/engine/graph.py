"""Running task graphs: the client to use, computing with retries, and reduction trees.

Every stage of :func:`pickscale.engine.score` goes through :func:`compute`
(or :func:`persist`): on a ``distributed`` client with retries for lost
workers, else on Dask's local scheduler.  :func:`tree_reduce` combines many
delayed results on the workers, so the client receives one.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import dask
from dask import delayed

from ..kernel import FAN_IN

__all__ = ["scheduler", "n_workers", "compute", "persist", "tree_reduce"]

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
    if client is None:
        return os.cpu_count() or 1
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # an old or unusual client: partitioning is only a performance choice
        return os.cpu_count() or 1


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
    level = list(items)
    if not level:
        return delayed(combine)()
    while len(level) > 1:
        level = [delayed(combine)(*level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    return level[0]


def _local() -> str:
    """Dask's configured local scheduler (threads by default), named: left unnamed, dask imports
    ``distributed`` (~0.15 s) only to look for a client that :func:`scheduler` already found absent."""
    return str(dask.config.get("scheduler", None) or "threads")
