"""The main job: read, scope, plan, split by work partition, score, combine.

Stages (each a Dask graph of :mod:`pickscale.tasks`; nothing but small
summaries and results reaches the client):

1. **Read** every picks part (one file, a run of row groups of a large
   Parquet file, or one partition of a frame) in its own task: normalised
   per distinct value and encoded as integer arrays (about 19 bytes a pick),
   kept on the worker that read it.  The reference (small) is read in tasks
   too and gathered.
2. **Outline**: each part's summary (per (dataset, station, model): pick
   counts and time span at or above the floor) goes to the client, which
   decides the scope of SPEC §2 and the work plan: scored stations, their
   time blocks (work units) and the partitions that run them
   (:mod:`pickscale.units`, deterministic).
3. **Split**: each part is cut into one piece per work partition — a
   many-to-many exchange of plain arrays that needs no dataframe shuffle and
   no assumption about which stations a file holds.
4. **Score**: one task per partition concatenates its pieces and runs
   :func:`pickscale.kernel.score_station` per unit; it returns small additive
   results, never picks.
5. **Combine and finalize** on the client in canonical station order
   (:mod:`pickscale.results`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import dask
import numpy as np
import pandas as pd
from dask import delayed

from . import __version__
from .errors import InputError
from .kernel import StationResult, merge_results
from .options import Options
from .readers import Normalised, normalise, resolve_sources
from .scope import Scope, scope_from_summary
from .tasks import (Failure, PickPart, outline, read_files, read_frame, read_part, read_reference, report_of,
                    score_partition, split_part)
from .units import plan_units

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["score", "local_cluster", "load"]

#: Rows per read task: a larger Parquet file is read as runs of row groups of about this many rows
#: (several tasks per worker even for a few large files, so that the read stage ends evenly).
READ_ROWS = 1_000_000
# Files at least this large are opened on the client to look for row groups (~1 M picks of Parquet);
# smaller ones are read together, up to this many bytes or files per task.
_SPLIT_BYTES = 12 * 2**20
_BATCH_BYTES = 12 * 2**20
_BATCH_FILES = 512


# --------------------------------------------------------------------- loading

@dataclass
class Source:
    """Where one input came from, for messages and the store's attributes."""

    role: str
    description: str
    parts: list  # delayed PickPart (picks) or Normalised (reference), one per read task
    files: list[str]
    bytes: int


def _reference_frame(frame: pd.DataFrame, source: str, drop_invalid: bool, offset: int) -> Normalised | Failure:
    try:
        return normalise(frame, role="reference", source=source, drop_invalid=drop_invalid, row_offset=offset)
    except InputError as exc:
        return Failure(str(exc))


def _is_dask_frame(source: Any) -> bool:
    # dask.dataframe is imported only if the caller has imported it: it costs ~0.5 s.
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(source, dd.DataFrame)


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except (OSError, ValueError):
        return None  # a URL: read on its own


def _batches(files: list[str]) -> list[list[str]]:
    """Consecutive small files grouped into batches of about ``_BATCH_BYTES`` (one read task each).

    A hive layout by station (``station=…/part-0.parquet``) holds one small
    file per station and month or year: read one by one, Dask's bookkeeping
    would cost more than the reading.
    """
    out: list[list[str]] = []
    size = 0
    for f in files:
        n = _size(f)
        if n is None or n >= _BATCH_BYTES:
            out.append([f])
            size = _BATCH_BYTES
            continue
        if out and size + n <= _BATCH_BYTES and len(out[-1]) < _BATCH_FILES:
            out[-1].append(f)
            size += n
        else:
            out.append([f])
            size = n
    return out


def _read_tasks(files: list[str], role: str, drop_invalid: bool, floor: float) -> list[Any]:
    if role == "reference":
        return [delayed(read_reference, pure=True)(batch, drop_invalid=drop_invalid) for batch in _batches(files)]
    from .parquet import row_group_ranges

    tasks = []
    for batch in _batches(files):
        if len(batch) > 1:
            tasks.append(delayed(read_files, pure=True)(batch, drop_invalid=drop_invalid, floor=floor))
            continue
        f = batch[0]
        runs: list = [(None, 0)]
        if (_size(f) or 0) >= _SPLIT_BYTES:
            runs = row_group_ranges(f, target_rows=READ_ROWS)
        for groups, first in runs:
            tasks.append(delayed(read_part, pure=True)(f, drop_invalid=drop_invalid, floor=floor,
                                                       row_groups=groups, row_offset=first))
    return tasks


def _frame_tasks(frame: pd.DataFrame, role: str, source: str, drop_invalid: bool, floor: float) -> list[Any]:
    tasks = []
    for lo in range(0, max(len(frame), 1), READ_ROWS):
        chunk = frame.iloc[lo:lo + READ_ROWS]
        if role == "reference":
            tasks.append(delayed(_reference_frame)(chunk, source, drop_invalid, lo))
        else:
            tasks.append(delayed(read_frame)(chunk, source=source, drop_invalid=drop_invalid, floor=floor,
                                             row_offset=lo))
    return tasks


def load(source: Any, *, role: str, drop_invalid: bool = False, floor: float = 0.0) -> Source:
    """Describe an input as a list of lazy read tasks.

    ``source`` is a path, folder, glob or fsspec URL (or a list of them), a
    pandas DataFrame, or a Dask DataFrame.  Picks are read as
    :class:`pickscale.tasks.PickPart` (only picks at or above ``floor`` are
    kept), the reference as :class:`pickscale.readers.Normalised`.
    """
    if isinstance(source, pd.DataFrame):
        name = f"<pandas DataFrame, {len(source):,} rows>"
        tasks = _frame_tasks(source, role, f"the {role} DataFrame", drop_invalid, floor)
        return Source(role, name, tasks, [], int(source.memory_usage(deep=False).sum()))
    if _is_dask_frame(source):
        name = f"<dask DataFrame, {source.npartitions} partitions>"
        tasks = []
        for i, p in enumerate(source.to_delayed()):
            where = f"partition {i} of the {role} DataFrame"
            tasks.append(delayed(_reference_frame)(p, where, drop_invalid, 0) if role == "reference"
                         else delayed(read_frame)(p, source=where, drop_invalid=drop_invalid, floor=floor))
        return Source(role, name, tasks, [], 0)
    files = resolve_sources(source)
    size = 0
    for f in files:
        with contextlib.suppress(OSError, ValueError):
            size += os.path.getsize(f)
    desc = str(source) if not isinstance(source, (list, tuple)) else ", ".join(map(str, source))
    return Source(role, desc, _read_tasks(files, role, drop_invalid, floor), files, size)


# ----------------------------------------------------------------- summaries

def _report_attrs(report: Normalised) -> dict[str, Any]:
    return {
        "rows_read": int(report.n_rows_read),
        "rows_invalid_dropped": int(report.n_invalid),
        "columns_used": {k: v for k, v in report.columns.items()},
        "phases_dropped": {str(k): int(v) for k, v in sorted(report.dropped_phases.items())},
        "phases_mapped": {str(k): str(v) for k, v in sorted(report.mapped_phases.items())},
        "columns_ignored": [str(c) for c in report.ignored_columns],
    }


def _rows(report: Normalised) -> dict[str, Any]:
    """What reading did, for the message when nothing is left to score."""
    return {"rows_read": int(report.n_rows_read), "invalid_dropped": int(report.n_invalid),
            "dropped_phases": dict(report.dropped_phases)}


def _raise_failures(parts: Sequence[Any]) -> None:
    """Raise the input errors found by the read tasks, in input order (all of them, up to five)."""
    failures = [p.message for p in parts if isinstance(p, Failure)]
    if failures:
        more = len(failures) - 5
        raise InputError("\n".join(failures[:5]) + (f"\n(and {more} more input error(s))" if more > 0 else ""))


def _combine_outlines(outlines: list[PickPart]) -> tuple[pd.DataFrame, dict[str, int], Normalised]:
    frame = pd.concat([o.combos for o in outlines], ignore_index=True)
    summary = (frame.groupby(["dataset", "station", "model"], sort=True, observed=True)
               .agg(n_picks=("n_picks", "sum"), t_min=("t_min", "min"), t_max=("t_max", "max"))
               .reset_index())
    summary = summary.astype({"dataset": object, "station": object, "model": object,
                              "n_picks": np.int64, "t_min": np.int64, "t_max": np.int64})
    below: dict[str, int] = {}
    for o in outlines:
        for d, n in o.below_floor.items():
            below[d] = below.get(d, 0) + n
    return summary, below, Normalised.combine([o.report for o in outlines])


# ------------------------------------------------------------------ scheduler

def _scheduler(client: Any) -> Any:
    """The Client to use: the one given, else the current one, else None (Dask's local default)."""
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _n_workers(client: Any) -> int:
    if client is None:
        return os.cpu_count() or 1
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # an old or unusual client: partitioning is only a performance choice
        return os.cpu_count() or 1


def _compute(tasks: list[Any], client: Any, *, label: str, progress: bool, release: bool = False) -> list[Any]:
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
                return list(dask.compute(*tasks))
        return list(dask.compute(*tasks))
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


def _persist(tasks: Sequence[Any], client: Any) -> list[Any]:
    if not tasks:
        return []
    if client is None:
        return list(dask.persist(*tasks))
    return client.persist(list(tasks), retries=3)


# -------------------------------------------------------------------- score

def score(
    reference: Any,
    picks: Any,
    *,
    threshold: float = 0.3,
    tol: float = 0.5,
    residual_tol: float = 2.0,
    thresholds: Sequence[float] | None = None,
    budget: int | None = None,
    exhaustive: bool = False,
    drop_invalid: bool = False,
    client: Any = None,
    progress: bool | None = None,
    block_picks: int | None = None,
) -> xr.Dataset:
    """Score picks against reference arrivals; every SPEC metric in one Dataset.

    Parameters
    ----------
    reference, picks
        A path, folder, glob or fsspec URL of CSV/Parquet files (or a list of
        them), a pandas DataFrame or a Dask DataFrame.  Columns and aliases as
        in SPEC §1.
    threshold, tol, residual_tol, thresholds, budget, exhaustive
        Options; see :class:`pickscale.options.Options`.
    drop_invalid
        Drop invalid rows with a warning instead of stopping.
    client
        A ``distributed.Client``.  Default: the current client if there is one,
        else Dask's local scheduler (no cluster is started here; see
        :func:`local_cluster`).
    progress
        Show a progress bar (default: when stderr is a terminal).
    block_picks
        Target number of picks per work unit: a busier station is cut into
        time blocks at quiet gaps (no arrival within ``residual_tol``), which
        bounds a worker's memory and changes no number.  Default: 2,000,000.

    Returns
    -------
    xarray.Dataset
        Dims ``dataset, model, phase, threshold, station, bin, fine_threshold,
        pair``: per-station counts, and every SPEC metric over (dataset, model,
        phase[, threshold]).

    Raises
    ------
    pickscale.errors.InputError, pickscale.errors.OptionsError
        Bad input or options; nothing is written.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = pd.DataFrame({"station": ["CI.CLC"], "phase": ["P"], "time": ["2019-07-06T03:19:53.04"]})
    >>> picks = pd.DataFrame({"station": ["CI.CLC."], "phase": ["P"],
    ...                       "time": ["2019-07-06T03:19:53.10Z"], "conf": [0.8]})
    >>> ds = score(ref, picks)
    >>> float(ds.recall.sel(dataset="all", model="model", phase="P", threshold=0.3))
    1.0
    """
    options = Options(threshold=threshold, tol=tol, residual_tol=residual_tol, thresholds=thresholds,
                      budget=budget, exhaustive=exhaustive)
    if progress is None:
        progress = sys.stderr.isatty()
    client = _scheduler(client)
    started = time.time()

    ref_src = load(reference, role="reference", drop_invalid=drop_invalid)
    pick_src = load(picks, role="picks", drop_invalid=drop_invalid, floor=options.floor)

    # 1–2. Read (picks stay where they were read), outline, decide the scope.
    pick_parts = _persist(pick_src.parts, client)
    ref_parts = _compute(ref_src.parts, client, label="reading reference", progress=False)
    outlines = _compute([delayed(outline)(p) for p in pick_parts], client, label="reading picks",
                        progress=progress)
    _raise_failures(ref_parts + outlines)
    ref_all = Normalised.combine(ref_parts)
    pick_summary, below_floor, pick_report = _combine_outlines(outlines)
    scope: Scope = scope_from_summary(
        ref_all.frame, pick_summary, below_by_ds=below_floor, floor=options.floor,
        residual_tol_ns=options.residual_tol_ns, ref_source=ref_src.description, picks_source=pick_src.description,
        ref_rows=_rows(ref_all), picks_rows=_rows(pick_report),
    )
    ref_report = report_of(ref_all)

    # 3. Work units (station time blocks) and partitions; each part cut into one piece per partition.
    plan = plan_units(scope, options, block_picks=block_picks, n_workers=_n_workers(client))
    shared_plan = delayed(plan, pure=True)  # one copy in the graph, not one per task
    n_parts = plan.n_parts
    pieces = [delayed(split_part)(p, shared_plan) for p in pick_parts]

    # 4. Score each partition.
    ref_codes = plan.encode_reference(scope.reference)
    tasks = []
    for i in range(n_parts):
        mine = ref_codes[ref_codes["part"].to_numpy() == i]
        arrivals = {"unit": mine["unit"].to_numpy(np.int64), "phase": mine["phase"].to_numpy(np.int8),
                    "time": mine["time"].to_numpy(np.int64)}
        tasks.append(delayed(score_partition)(i, arrivals, shared_plan, options, *[p[i] for p in pieces]))
    # Drop the client's handles on the read parts: each is freed once it has been split.
    del pick_parts, pieces
    outputs = _compute(tasks, client, label="scoring", progress=progress, release=True)

    # 5. Combine in canonical order and finalize.
    from .results import assemble

    per_dataset = _combine_outputs(outputs, scope, plan.stations, options)
    attrs = _attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started)
    return assemble(per_dataset, options=options, attrs=attrs)


def _combine_outputs(outputs, scope: Scope, skey_table: pd.DataFrame, options: Options) -> dict[str, Any]:
    from .results import combine

    by_station: dict[int, list[StationResult]] = {}
    fine: dict[int, list[np.ndarray]] = {}
    for out in outputs:
        for key, result in out["stations"]:
            by_station.setdefault(key, []).append(result)
        for d, (fe, fm) in out["fine"].items():
            if d in fine:
                fine[d][0] = fine[d][0] + fe
                fine[d][1] = fine[d][1] + fm
            else:
                fine[d] = [fe, fm]
    by_dataset: dict[int, list[tuple[str, StationResult]]] = {d: [] for d in range(len(scope.datasets))}
    for key, parts in sorted(by_station.items()):
        row = skey_table.iloc[key]
        # Time blocks of one station add up to the whole station, bit for bit.
        by_dataset[int(row["dcode"])].append((row["station"], merge_results(parts)))
    per_dataset = {}
    for d, dataset in enumerate(scope.datasets):
        models = scope.models[dataset]
        counts = combine(by_dataset[d], models=models, options=options, with_fine=False)
        if d in fine:
            counts.fine_emitted, counts.fine_matched = fine[d]
        per_dataset[dataset] = counts
    return per_dataset


def _attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started) -> dict[str, Any]:
    return {
        "title": "pickscale results",
        "pickscale_version": __version__,
        "created": pd.Timestamp.now(tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": {
            "reference": {"source": ref_src.description, "files": len(ref_src.files), "bytes": ref_src.bytes,
                          **_report_attrs(ref_report)},
            "picks": {"source": pick_src.description, "files": len(pick_src.files), "bytes": pick_src.bytes,
                      **_report_attrs(pick_report)},
        },
        "exclusions": dict(scope.exclusions),
        "exclusions_by_dataset": {d: dict(c) for d, c in scope.exclusions_by_dataset.items()},
        "warnings": ref_report.warnings() + pick_report.warnings() + list(scope.warnings),
        "lower_bound_note": (
            "_lb marks a lower bound: an unmatched pick may be a real arrival the analyst never marked."
            if not options.exhaustive else "exhaustive reference: precision, f1, ap, ece are exact."
        ),
    }


# ------------------------------------------------------------------- cluster

def local_cluster(
    n_workers: int | None = None,
    *,
    threads_per_worker: int = 1,
    dashboard_address: str = "127.0.0.1:0",
    **kwargs,
):
    """Start a ``distributed.LocalCluster`` with worker processes and return a Client.

    For notebooks: ``client = pickscale.local_cluster()``; ``pickscale.score``
    then uses it.  Workers default to the number of cores.  The scheduler and
    its dashboard listen on 127.0.0.1 only (the dashboard on a free port; see
    ``client.dashboard_link``) unless ``dashboard_address`` says otherwise.

    Examples
    --------
    >>> client = local_cluster(1)  # doctest: +SKIP
    >>> client.close()  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}):
        cluster = LocalCluster(
            n_workers=n_workers or os.cpu_count() or 1,
            threads_per_worker=threads_per_worker,
            processes=True,
            host="127.0.0.1",
            # Never 0.0.0.0, and never the fixed 8787 another cluster may hold.
            dashboard_address=dashboard_address,
            **kwargs,
        )
    return Client(cluster)


def _worker_environ() -> dict[str, Any]:
    """Dask's environment for new worker processes, without its fixed ``MALLOC_TRIM_THRESHOLD_``.

    A fixed trim threshold turns off glibc's adaptive mmap threshold, so every
    numpy temporary above 128 kB is a fresh mapping whose pages fault in one by
    one: on 10 M picks, ~1.8 M page faults and ~5 s of system time, a third of
    the run.  pickscale's tasks bound their memory by design (time blocks), so
    its own workers keep glibc's defaults; a user's setting in the environment
    is inherited as usual.
    """
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


@contextlib.contextmanager
def cluster_client(*, workers: int | None = None, scheduler: str | None = None,
                   closing: list[threading.Thread] | None = None) -> Iterator[Any]:
    """The client the CLI runs on: an existing scheduler, or a LocalCluster it owns.

    With a list as ``closing``, an owned cluster is shut down in a thread
    appended to it (the caller joins it), so that writing the results
    overlaps the ~0.4 s the worker processes take to stop.
    """
    from distributed import Client

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        client = Client(address, timeout="30s")
        try:
            yield client
        finally:
            client.close()
        return
    client = local_cluster(workers, silence_logs=40)

    def close() -> None:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()

    try:
        yield client
    finally:
        if closing is None:
            close()
        else:
            thread = threading.Thread(target=close, name="pickscale-cluster-close")
            thread.start()
            closing.append(thread)
