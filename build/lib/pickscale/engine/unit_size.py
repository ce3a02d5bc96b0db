"""How large a work unit a worker can take: its peak bytes, a worker thread's memory, and the check before any work.

A unit too large for a worker (a station with no quiet gap to cut at, :mod:`pickscale.engine.units`) would
kill the worker that scores it; :func:`check_units` stops the run first, with a message naming the station.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import InputError, OptionsError
from ..options import Options
from ..scope.hints import iso
from .cluster import process_cpus, process_memory
from .exchange import _plan_codes
from .graph import compute, tree_reduce
from .parts import Failure
from .units import UnitPlan

__all__ = ["check_units", "check_unit_sizes", "worker_budget", "unit_bytes", "count_unit_picks", "add_counts",
           "BYTES_PER_PICK", "UNIT_SHARE", "MEMORY_ENV"]

#: Peak bytes one pick of a work unit costs on the worker that scores it: the kernel's temporaries
#: (``score_station``: 87 bytes a pick on the kernel benchmark's station, 156–166 in a dense burst of
#: 1–4 M picks in ten minutes, growing slowly with the density; tracemalloc, see benchmarks/README.md,
#: "Worker memory per pick") plus the partition's columns handed to it (unit, model, phase, time, conf:
#: 40) and what the exchange delivered (13–22), rounded up.
BYTES_PER_PICK = 256
#: The share of a worker thread's memory one unit may take: the rest holds the read parts, Dask's
#: buffers, and stays below the limits where Dask pauses (80 %) and restarts (95 %) a worker.
UNIT_SHARE = 0.5
#: Environment variable: memory per worker thread, in bytes or as Dask writes sizes ("4 GB", "512MiB");
#: overrides what the cluster says (and lets tests try the check without millions of picks).
MEMORY_ENV = "PICKSCALE_WORKER_MEMORY"


def unit_bytes(picks: np.ndarray | int, n_models: np.ndarray | int, options: Options) -> np.ndarray:
    """Peak bytes to score one unit of ``picks`` picks of ``n_models`` models (an estimate, on the high side).

    Besides the picks, each (model, phase) stream carries its counts at every
    grid and fine threshold, in the result and once more as temporaries.

    Examples
    --------
    >>> int(unit_bytes(1_000_000, 3, Options())) // 2**20
    244
    """
    per_stream = (4 * len(options.grid) + 2 * len(options.fine) + 120) * 8 * 3
    return (np.asarray(picks, dtype=np.int64) * BYTES_PER_PICK
            + np.asarray(n_models, dtype=np.int64) * 2 * per_stream)


def worker_budget(client: Any) -> tuple[int, str]:
    """(bytes one worker thread may use, where that figure comes from).

    ``PICKSCALE_WORKER_MEMORY`` if set; else, on a distributed client, the
    smallest ``memory_limit / nthreads`` of its workers (a worker without a
    limit counts as the memory this process may use); on Dask's local scheduler,
    the memory this process may use (cgroup limits) divided by its CPUs (affinity, cgroups).

    Examples
    --------
    >>> import os; os.environ[MEMORY_ENV] = "2 GiB"
    >>> worker_budget(None)
    (2147483648, 'PICKSCALE_WORKER_MEMORY=2 GiB')
    >>> del os.environ[MEMORY_ENV]
    """
    setting = os.environ.get(MEMORY_ENV, "").strip()
    if setting:
        from dask.utils import parse_bytes

        try:
            return int(parse_bytes(setting)), f"{MEMORY_ENV}={setting}"
        except (ValueError, TypeError):
            # An environment variable, not an option: the command says it as it is.
            raise OptionsError(f"{MEMORY_ENV} must be a size such as 4GB or 4294967296; got {setting!r}.") from None
    machine = _machine_memory()
    if client is not None:
        try:
            workers = client.scheduler_info().get("workers", {}).values()
            per_thread = [((w.get("memory_limit") or machine) / max(1, int(w.get("nthreads") or 1)),
                           w.get("memory_limit") or machine, int(w.get("nthreads") or 1)) for w in workers]
        except Exception:  # an unusual client: no figure to go by
            per_thread = []
        if per_thread:
            budget, limit, threads = min(per_thread)
            return int(budget), f"memory_limit {_size(limit)} / {threads} thread(s) of the smallest worker"

    threads = process_cpus()
    return int(machine / threads), f"this process's {_size(machine)} / {threads} core(s)"


def _machine_memory() -> int:
    """The memory this process may use (cgroup limits respected: a batch job's, not the node's)."""
    return process_memory()


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def check_unit_sizes(plan: UnitPlan, options: Options, *, budget: int, source: str,
                     unit_picks: np.ndarray | None = None) -> np.ndarray:
    """Raise :class:`~pickscale.errors.InputError` when a work unit is too large for a worker, before scoring.

    A station with no quiet gap (no stretch of ``2 · residual_tol`` without an
    arrival) cannot be cut into time blocks, so all its picks are one unit,
    scored by one task: past what a worker thread holds, the worker would die
    (Dask's ``KilledWorker`` after several restarts).  ``unit_picks``: the
    exact picks of each unit, when known; else a station's picks are its one
    unit's, and only split stations' units are estimated (even shares).

    Returns the units (indices) whose size is only estimated and could be too
    large: stations split in blocks whose picks all together exceed the limit
    (the caller counts them exactly and calls again).
    """
    stations = plan.stations
    n_models = stations["n_models"].to_numpy(np.int64)[plan.unit_station]
    allowed = int(budget * UNIT_SHARE)
    if unit_picks is None:
        picks = stations["picks"].to_numpy(np.int64)
        whole = stations["n_units"].to_numpy(np.int64) == 1
        unit_picks = np.where(whole, picks, 0)[plan.unit_station]
        unsure = np.flatnonzero(~whole[plan.unit_station]
                                & (unit_bytes(picks[plan.unit_station], n_models, options) > allowed))
    else:
        unsure = np.zeros(0, dtype=np.int64)
    need = unit_bytes(unit_picks, n_models, options)
    too_big = np.flatnonzero(need > allowed)
    if too_big.size:
        worst = int(too_big[np.argmax(need[too_big])])
        key = int(plan.unit_station[worst])
        row = stations.iloc[key]
        lo, hi = _unit_span(plan, key, worst - int(row["first_unit"]))
        others = f" (and {too_big.size - 1} more such unit(s))" if too_big.size > 1 else ""
        raise InputError(
            f"station {row['station']} (dataset {row['dataset']}): {int(unit_picks[worst]):,} picks of "
            f"{int(row['n_models'])} model(s) between {iso(lo)} and {iso(hi)} form one work unit (a station is cut "
            f"in time blocks only at quiet gaps: stretches of 2 × residual_tol without an arrival); scoring it "
            f"needs about "
            f"{_size(int(need[worst]))} on one worker thread, more than the {_size(allowed)} it may take "
            f"({UNIT_SHARE:.0%} of {_size(budget)}: {source}){others}.  Nothing was scored.  Raise the floor "
            f"(the lowest of `thresholds`: fewer low-confidence picks are kept), score fewer models per run, or "
            f"use workers with more memory per thread (fewer threads per worker, a larger memory_limit; "
            f"{MEMORY_ENV} sets the figure used here).")
    return unsure


def _unit_span(plan: UnitPlan, key: int, block: int) -> tuple[int, int]:
    """The time span of one unit: the station's picks' span, cut at its block's edges."""
    lo = int(plan.stations["t_min"].iat[key])
    hi = int(plan.stations["t_max"].iat[key])
    cuts = plan.cuts.get(key)
    if cuts is not None and cuts.size:
        edges = [lo, *cuts.tolist(), hi]
        lo, hi = max(lo, edges[block]), min(hi, edges[block + 1])
    return lo, hi


def count_unit_picks(part: Any, plan: UnitPlan) -> np.ndarray:
    """Picks per work unit in one read part (a task on the worker that holds it)."""
    n = int(plan.unit_station.size)
    if isinstance(part, Failure):
        return np.zeros(n, dtype=np.int64)
    _, unit, _ = _plan_codes(part, plan)
    return np.bincount(unit, minlength=n).astype(np.int64)


def add_counts(*counts: np.ndarray) -> np.ndarray:
    """Sum of per-unit counts (a node of the reduction tree)."""
    return np.sum(counts, axis=0)


def check_units(plan: UnitPlan, options: Options, *, client: Any, pick_parts: list[Any]) -> None:
    """:func:`check_unit_sizes` for a run, on the client after the plan and before any scoring.

    Units of split stations are counted exactly (one small task per read part,
    summed on the workers) only when their station, whole, would be too large.
    """
    budget, source = worker_budget(client)
    unsure = check_unit_sizes(plan, options, budget=budget, source=source)
    if unsure.size:
        from dask import delayed

        shared = delayed(plan, pure=True)
        counted = compute([tree_reduce([delayed(count_unit_picks)(p, shared) for p in pick_parts], add_counts)],
                          client, label="counting picks per unit", progress=False)[0]
        exact = np.where(plan.stations["n_units"].to_numpy(np.int64)[plan.unit_station] == 1,
                         plan.stations["picks"].to_numpy(np.int64)[plan.unit_station], counted)
        check_unit_sizes(plan, options, budget=budget, source=source, unit_picks=exact)
