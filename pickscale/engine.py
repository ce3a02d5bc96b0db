"""The main job: read, scope, plan, exchange, score, combine.

Stages (each a Dask graph of :mod:`pickscale.tasks`; nothing but small
summaries and results reaches the client):

1. **Read** every picks part (one file, a run of row groups of a large
   Parquet file, a batch of small files, or one partition of a frame) in its
   own task: normalised per distinct value and encoded as integer arrays
   (about 15 bytes a pick), kept on the worker that read it.  The reference
   (small: one row per analyst arrival) is read in tasks too and gathered.
2. **Outline**: each part's summary (per (dataset, station, model): pick
   counts and time span at or above the floor) goes to the client, which
   decides the scope of SPEC §2 and the work plan: scored stations, their
   time blocks (work units) and the partitions that run them
   (:mod:`pickscale.units`, deterministic).
3. **Exchange** (:mod:`pickscale.exchange`): picks move from the part they
   were read in to the work partition of their unit — through Dask's shuffle
   (p2p on a cluster; the graph grows like parts + partitions), or, while
   parts × partitions is small, by cutting each part into one piece per
   partition.
4. **Score**: one task per partition runs
   :func:`pickscale.kernel.score_station` per work unit and returns station
   results stacked as arrays (:mod:`pickscale.stacks`), never picks; a
   reduction tree on the workers combines them.
5. **Finalize** on the client from that one combined result, in canonical
   station order (:mod:`pickscale.results`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
import pandas as pd
from dask import delayed

from . import __version__, exchange
from .errors import InputError, OptionsError, emit_warnings
from .kernel import score_station
from .options import Options
from .readers import Normalised, normalise, resolve_sources
from .scope import Scope, scope_from_summary
from .stacks import FAN_IN, Partial, combine_partials, complete
from .tasks import (
    Failure,
    PickPart,
    merge_outlines,
    outline,
    read_files,
    read_frame,
    read_part,
    read_reference,
    report_of,
)
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
# Input errors shown at most (a glob of thousands of bad files would otherwise print them all).
_MAX_MESSAGE_LINES = 40


# --------------------------------------------------------------------- loading

@dataclass
class Source:
    """Where one input came from, for messages and the store's attributes."""

    role: str
    description: str
    parts: list  # delayed PickPart (picks) or Normalised (reference), one per read task
    files: list[str]
    bytes: int


def _reference_frame(frame: pd.DataFrame, source: str, offset: int, **reading: Any) -> Normalised | Failure:
    try:
        return normalise(frame, role="reference", source=source, row_offset=offset, categorical=True, **reading)
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


def _read_tasks(files: list[str], role: str, floor: float, reading: dict[str, Any]) -> list[Any]:
    if role == "reference":
        return [delayed(read_reference, pure=True)(batch, **reading) for batch in _batches(files)]
    from .parquet import row_group_ranges

    tasks = []
    for batch in _batches(files):
        if len(batch) > 1:
            tasks.append(delayed(read_files, pure=True)(batch, floor=floor, **reading))
            continue
        f = batch[0]
        runs: list = [(None, 0)]
        if (_size(f) or 0) >= _SPLIT_BYTES:
            runs = row_group_ranges(f, target_rows=READ_ROWS)
        for groups, first in runs:
            tasks.append(delayed(read_part, pure=True)(f, floor=floor, row_groups=groups, row_offset=first,
                                                       **reading))
    return tasks


def _frame_tasks(frame: pd.DataFrame, role: str, source: str, floor: float, reading: dict[str, Any]) -> list[Any]:
    tasks = []
    for lo in range(0, max(len(frame), 1), READ_ROWS):
        chunk = frame.iloc[lo:lo + READ_ROWS]
        if role == "reference":
            tasks.append(delayed(_reference_frame)(chunk, source, lo, **reading))
        else:
            tasks.append(delayed(read_frame)(chunk, source=source, floor=floor, row_offset=lo, **reading))
    return tasks


def load(source: Any, *, role: str, drop_invalid: bool = False, floor: float = 0.0, manual_only: bool = False,
         station_key: str = "as-is", columns: Any = None) -> Source:
    """Describe an input as a list of lazy read tasks.

    ``source`` is a path, folder, glob or fsspec URL (or a list of them), a
    pandas DataFrame, or a Dask DataFrame.  Picks are read as
    :class:`pickscale.tasks.PickPart` (only picks at or above ``floor`` are
    kept), the reference as :class:`pickscale.readers.Normalised`.
    An ObsPy ``Catalog``, a bulletin file/folder/glob (read on the client:
    bulletins are small), a SeisBench ``PickList`` (or pick-like objects) or
    a dict name → such is first made a frame (:func:`pickscale.formats.as_frame`).
    ``manual_only``, ``station_key`` and ``columns`` as in :func:`score`.
    """
    from . import formats

    reading = {"drop_invalid": drop_invalid, "station_key": station_key, "columns": columns}
    converted = formats.as_frame(source, role=role, manual_only=manual_only)
    if converted is not None:
        name = converted.attrs.get("pickscale_description") or f"<{role}: {type(source).__name__}>"
        files = list(converted.attrs.get("pickscale_files") or [])
        tasks = _frame_tasks(converted, role, name, floor, reading)
        return Source(role, name, tasks, files, int(converted.memory_usage(deep=False).sum()))
    if isinstance(source, pd.DataFrame):
        name = f"<pandas DataFrame, {len(source):,} rows>"
        tasks = _frame_tasks(source, role, f"the {role} DataFrame", floor, reading)
        return Source(role, name, tasks, [], int(source.memory_usage(deep=False).sum()))
    if _is_dask_frame(source):
        name = f"<dask DataFrame, {source.npartitions} partitions>"
        tasks = []
        for i, p in enumerate(source.to_delayed()):
            where = f"partition {i} of the {role} DataFrame"
            tasks.append(delayed(_reference_frame)(p, where, 0, **reading) if role == "reference"
                         else delayed(read_frame)(p, source=where, floor=floor, **reading))
        return Source(role, name, tasks, [], 0)
    files = resolve_sources(source)
    size = 0
    for f in files:
        with contextlib.suppress(OSError, ValueError):
            size += os.path.getsize(f)
    desc = str(source) if not isinstance(source, (list, tuple)) else ", ".join(map(str, source))
    return Source(role, desc, _read_tasks(files, role, floor, reading), files, size)


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
    from .readers import join_failures

    failures = [p.message for p in parts if isinstance(p, Failure)]
    if failures:
        # A message several files share (a glob of one layout) is said once, naming how many.
        lines = join_failures(failures).split("\n")
        if len(lines) > _MAX_MESSAGE_LINES:
            lines = lines[:_MAX_MESSAGE_LINES] + [f"(and more: {len(failures)} read task(s) found input errors)"]
        raise InputError("\n".join(lines))


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
    if "distributed" not in sys.modules:  # no Client can exist; and importing distributed costs ~0.2 s
        return None
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
    manual_only: bool = False,
    station_key: str = "as-is",
    columns: Any = None,
    client: Any = None,
    progress: bool | None = None,
    block_picks: int | None = None,
    exchange_method: str = "auto",
) -> xr.Dataset:
    """Score picks against reference arrivals; every SPEC metric in one Dataset.

    Parameters
    ----------
    reference, picks
        A path, folder, glob or fsspec URL of CSV/Parquet files (or a list of
        them), a pandas DataFrame or a Dask DataFrame.  Columns and aliases as
        in SPEC §1.  The reference may also be a bulletin ObsPy reads (QuakeML,
        NonLinLoc, hypoDD …; a file, folder or glob) or an ObsPy ``Catalog``;
        the picks a SeisBench ``PickList`` (or any pick-like objects), or a
        dict of model name → such (see README, "Input formats").
    threshold, tol, residual_tol, thresholds, budget, exhaustive
        Options; see :class:`pickscale.options.Options`.
    drop_invalid
        Drop invalid rows with a warning instead of stopping.
    manual_only
        From a bulletin, keep only the picks whose ``evaluation_mode`` is
        ``"manual"``.
    station_key
        ``"as-is"`` (default) or ``"net.sta"``: station ids reduced to
        ``NET.STA`` on both sides (PhaseNet's ``NET.STA.LOC.CHA`` against a
        bulletin's ``NET.STA``; SPEC §1).
    columns
        Column names no alias covers, e.g. ``{"model": "rid", "station":
        "tid"}`` (or ``"model=rid,station=tid"``).
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
    exchange_method
        How picks move from the parts they were read in to the partitions
        that score them (:mod:`pickscale.exchange`): ``"shuffle"`` (Dask's
        shuffle, p2p on a distributed cluster; its graph grows like parts +
        partitions), ``"direct"`` (one piece per part and partition; fastest
        while both are few) or ``"auto"`` (direct while parts × partitions
        <= 4,096).  Never changes a number.

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
    from .readers import check_columns, station_key_of

    check_columns(columns)
    station_key_of(np.zeros(0, dtype=object), station_key)  # an unknown key: OptionsError
    if exchange_method not in ("auto", "direct", "shuffle"):
        raise OptionsError(f"exchange_method must be 'auto', 'direct' or 'shuffle'; got {exchange_method!r}.")
    if progress is None:
        progress = sys.stderr.isatty()
    client = _scheduler(client)
    if client is not None:
        from .workers import check_workers

        # A scheduler without workers, or workers that cannot import pickscale, would wait forever:
        # say so within PICKSCALE_WORKER_TIMEOUT (30 s) instead.
        check_workers(client)
    started = time.time()

    reading = {"drop_invalid": drop_invalid, "station_key": station_key, "columns": columns}
    ref_src = load(reference, role="reference", manual_only=manual_only, **reading)
    pick_src = load(picks, role="picks", floor=options.floor, **reading)

    # 1–2. Read (picks stay where they were read), outline, decide the scope.
    pick_parts = _persist(pick_src.parts, client)
    ref_parts = _compute(ref_src.parts, client, label="reading reference", progress=False)
    # The parts' outlines are merged on the workers: the client receives one summary.
    merged = _compute([tree_reduce([delayed(outline)(p) for p in pick_parts], merge_outlines)], client,
                      label="reading picks", progress=progress)[0]
    outlines = merged if isinstance(merged, list) else [merged]
    _raise_failures(ref_parts + outlines)
    ref_all = Normalised.combine(ref_parts)
    pick_summary, below_floor, pick_report = _combine_outlines(outlines)
    scope: Scope = scope_from_summary(
        ref_all.frame, pick_summary, below_by_ds=below_floor, floor=options.floor,
        residual_tol_ns=options.residual_tol_ns, ref_source=ref_src.description, picks_source=pick_src.description,
        ref_rows=_rows(ref_all), picks_rows=_rows(pick_report),
    )
    ref_report = report_of(ref_all)

    # 3. Work units (station time blocks) and the partitions that run them.
    plan = plan_units(scope, options, block_picks=block_picks, n_workers=_n_workers(client))
    shared_plan = delayed(plan, pure=True)  # one copy in the graph, not one per task
    ref_codes = plan.encode_reference(scope.reference)

    # 4. Exchange (picks move to their work partition) and score; partials combined on the workers.
    way = exchange.choose(exchange_method, len(pick_parts), plan.n_parts)
    if way == "direct":
        partials = exchange.direct(pick_parts, ref_codes, plan, shared_plan, options)
    else:
        partials = exchange.shuffle(pick_parts, ref_codes, plan, shared_plan, options,
                                    conf_dtype=_conf_dtype(outlines), distributed=client is not None)
    # Drop the client's handles on the read parts: each is freed once it has been moved.
    del pick_parts
    total = _compute([tree_reduce(partials, combine_partials)], client, label="scoring", progress=progress,
                     release=True)[0]

    # 5. Finalize on the client: one partial of arrays, in canonical order.
    from .results import assemble

    per_dataset = _per_dataset(total, scope, plan, options)
    attrs = _attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started)
    # Python users see every exclusion and reading warning (the store keeps them in its attributes too).
    emit_warnings(attrs["warnings"])
    return assemble(per_dataset, options=options, attrs=attrs)


def tree_reduce(items: list[Any], combine: Any) -> Any:
    """Combine delayed ``items`` on the workers, :data:`~pickscale.stacks.FAN_IN` at a time, in order.

    The graph grows like ``len(items)`` and the client receives one result.
    """
    level = list(items)
    if not level:
        return delayed(combine)()
    while len(level) > 1:
        level = [delayed(combine)(*level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    return level[0]


def _conf_dtype(outlines: list[Any]) -> Any:
    """float32 when every part's confidences are exact float32 (as pickers write them), else float64."""
    return np.float32 if all(o.conf.dtype == np.float32 for o in outlines) else np.float64


def _per_dataset(total: Partial | None, scope: Scope, plan: Any, options: Options) -> dict[str, Any]:
    """Every scored dataset's counts (:class:`pickscale.results.DatasetCounts`) from the combined partial."""
    from .results import counts_from_stack

    stations = plan.stations
    per_dataset = {}
    for d, dataset in enumerate(scope.datasets):
        keys = np.flatnonzero(stations["dcode"].to_numpy(np.int64) == d)
        stack = total.stacks.get(d) if total is not None else None
        zero = score_station([], [], [], [], [], [], n_models=len(scope.models[dataset]), options=options)
        stack = complete(stack, keys, zero)
        fine = total.fine.get(d) if total is not None else None
        per_dataset[dataset] = counts_from_stack(
            stack, names=stations["station"].to_numpy(object)[stack.keys], models=scope.models[dataset],
            options=options, fine=fine)
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

#: Inputs of local files up to this many bytes (~2 M picks of CSV, more of Parquet) are scored in
#: the command's own process: starting worker processes would cost more than the job.
SMALL_INPUT_BYTES = 64 * 2**20


def small_local_input(*sources: Any, limit: int = SMALL_INPUT_BYTES) -> bool:
    """True when every source is local files whose sizes add up to at most ``limit`` bytes.

    Examples
    --------
    >>> small_local_input("s3://bucket/picks.parquet")
    False
    """
    total = 0
    for source in sources:
        if not isinstance(source, (str, os.PathLike, list, tuple)):
            return False
        try:
            files = resolve_sources(source)
        except Exception:  # reported by the run itself, with its own message
            return False
        for f in files:
            size = _size(f)
            if size is None or "://" in str(f):
                return False
            total += size
            if total > limit:
                return False
    return True



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
