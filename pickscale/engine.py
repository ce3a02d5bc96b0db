"""The main job: read, scope, partition by station on Dask, score, combine.

Stages (each a Dask graph; nothing but small summaries and results reaches
the client):

1. **Read and normalise** every input part (one file, or one partition of a
   frame) in its own task; the normalised parts are persisted.
2. **Summarise** each part (per (dataset, station, model): pick counts and
   time span at or above the floor) and decide the scope of SPEC §2 on the
   client from those summaries and the reference, which is small.
3. **Partition**: every scored (dataset, station) is assigned to a work
   partition (balanced by pick count, deterministic); picks are encoded to
   integer codes and moved with ``set_index("part", divisions=…)``, whose
   explicit divisions guarantee that partition *i* holds exactly the stations
   assigned to it, whatever the input files looked like.
4. **Score**: one task per partition runs :func:`pickscale.kernel.score_station`
   per station and returns small additive results, never picks.
5. **Combine and finalize** on the client in canonical station order
   (:mod:`pickscale.results`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr
from dask import delayed

from . import __version__
from .errors import InputError
from .kernel import StationResult, merge_results, score_station
from .units import UnitPlan, plan_units
from .options import PHASES, Options
from .parquet import read_projected
from .readers import Normalised, normalise, read_raw, resolve_sources
from .results import DatasetCounts, assemble, combine
from .scope import Scope, scope_from_summary, summarise_picks

__all__ = ["score", "local_cluster", "load"]

_PHASE_CODE = {p: i for i, p in enumerate(PHASES)}


# --------------------------------------------------------------------- loading

@dataclass
class Source:
    """Where one input came from, for messages and the store's attributes."""

    role: str
    description: str
    parts: list  # delayed Normalised, one per file or frame partition
    files: list[str]
    bytes: int


def _read_and_normalise(path: str, role: str, drop_invalid: bool) -> Normalised:
    # Parquet: only the columns pickscale uses, plus hive folder values (station=…/).
    raw = read_projected(path, role=role) if _is_parquet(path) else read_raw(path)
    return _compact(normalise(raw, role=role, source=path, drop_invalid=drop_invalid))


def _compact(part: Normalised) -> Normalised:
    """Text columns of picks as categoricals: parts stay in worker memory between stages,
    and a station name repeated a million times should cost a million small codes, not
    a million Python strings (about 20 instead of 250 bytes a row)."""
    if part.role != "picks":
        return part
    frame = part.frame
    for column in ("dataset", "model", "station", "phase"):
        frame[column] = frame[column].astype("category")
    return part


def _is_parquet(path: str) -> bool:
    import fsspec

    try:
        with fsspec.open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except (OSError, ValueError):
        return False  # read_raw says what is wrong with it


def _normalise_frame(frame: pd.DataFrame, role: str, source: str, drop_invalid: bool, offset: int) -> Normalised:
    return _compact(normalise(frame, role=role, source=source, drop_invalid=drop_invalid, row_offset=offset))


def load(source: Any, *, role: str, drop_invalid: bool = False) -> Source:
    """Describe an input as a list of lazy normalisation tasks.

    ``source`` is a path, folder, glob or fsspec URL (or a list of them), a
    pandas DataFrame, or a Dask DataFrame.
    """
    if isinstance(source, pd.DataFrame):
        name = f"<pandas DataFrame, {len(source):,} rows>"
        part = delayed(_normalise_frame)(source, role, f"the {role} DataFrame", drop_invalid, 0)
        return Source(role, name, [part], [], int(source.memory_usage(deep=False).sum()))
    if isinstance(source, dd.DataFrame):
        name = f"<dask DataFrame, {source.npartitions} partitions>"
        parts = [
            delayed(_normalise_frame)(p, role, f"partition {i} of the {role} DataFrame", drop_invalid, 0)
            for i, p in enumerate(source.to_delayed())
        ]
        return Source(role, name, parts, [], 0)
    files = resolve_sources(source)
    size = 0
    for f in files:
        with contextlib.suppress(OSError, ValueError):
            size += os.path.getsize(f)
    parts = [delayed(_read_and_normalise)(f, role, drop_invalid) for f in files]
    desc = str(source) if not isinstance(source, (list, tuple)) else ", ".join(map(str, source))
    return Source(role, desc, parts, files, size)


# ----------------------------------------------------------------- summaries

def _report(part: Normalised) -> Normalised:
    """What normalising did, without the rows (small enough to send to the client)."""
    return dataclasses.replace(part, frame=part.frame.iloc[:0])


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


def _summarise_picks(part: Normalised, floor: float) -> dict[str, Any]:
    """Small per-part facts for SPEC §2, computed where the part lives."""
    frame = part.frame
    above = frame[frame["conf"].to_numpy(np.float64) >= floor]
    below = frame["dataset"].value_counts().sub(above["dataset"].value_counts(), fill_value=0)
    return {
        "summary": summarise_picks(above),
        "below_floor": {str(k): int(v) for k, v in below.items() if v},
        "report": _report(part),
    }


def _combine_summaries(summaries: list[dict[str, Any]]) -> tuple[pd.DataFrame, dict[str, int]]:
    frame = pd.concat([s["summary"] for s in summaries], ignore_index=True)
    summary = (frame.groupby(["dataset", "station", "model"], sort=True, observed=True)
               .agg(n_picks=("n_picks", "sum"), t_min=("t_min", "min"), t_max=("t_max", "max"))
               .reset_index())
    below: dict[str, int] = {}
    for s in summaries:
        for d, n in s["below_floor"].items():
            below[d] = below.get(d, 0) + n
    return summary, below


def _encode(part: Normalised, plan: "UnitPlan", floor: float) -> pd.DataFrame:
    """Picks of one part as integer codes with their work unit and partition; others dropped."""
    frame = part.frame
    frame = frame[frame["conf"].to_numpy(np.float64) >= floor]
    by = ["dataset", "station", "model"]
    # Join the few distinct (dataset, station, model) of the part, not every row.
    groups = frame.groupby(by, observed=True, sort=False)
    combos = groups.size().reset_index()[by].astype(object)
    codes = combos.merge(plan.keys, on=by, how="left", sort=False)
    row_combo = groups.ngroup().to_numpy(np.int64)
    skey = codes["skey"].to_numpy(np.float64)[row_combo]
    keep = ~np.isnan(skey)  # rows at stations or datasets that are not scored
    skey = skey[keep].astype(np.int64)
    time_ns = frame["time"].to_numpy(np.int64)[keep]
    unit = plan.units_of(skey, time_ns)
    phase = frame["phase"].map(_PHASE_CODE).astype(np.int8).to_numpy()[keep]
    return pd.DataFrame({
        "part": plan.unit_part[unit],
        "unit": unit,
        "model": codes["mcode"].to_numpy(np.float64)[row_combo][keep].astype(np.int32),
        "phase": phase,
        "time": time_ns,
        "conf": frame["conf"].to_numpy(np.float64)[keep],
    })


_ENCODED_META = pd.DataFrame({
    "part": np.zeros(0, np.int64), "unit": np.zeros(0, np.int64), "model": np.zeros(0, np.int32),
    "phase": np.zeros(0, np.int8), "time": np.zeros(0, np.int64), "conf": np.zeros(0, np.float64),
})


def _score_partition(
    picks: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    number: int,
    units: np.ndarray,
    unit_station: np.ndarray,
    n_models: np.ndarray,
    dataset_of: np.ndarray,
    options: Options,
) -> dict[str, Any]:
    """Score the work units (station time blocks) of one partition; return additive results only."""
    if len(picks) and not (picks.index.to_numpy() == number).all():
        raise RuntimeError(f"internal error: work partition {number} holds rows of another partition")
    p_unit = picks["unit"].to_numpy(np.int64)
    p_order = np.argsort(p_unit, kind="stable")
    p_unit = p_unit[p_order]
    p_model = picks["model"].to_numpy(np.int32)[p_order]
    p_phase = picks["phase"].to_numpy(np.int8)[p_order]
    p_time = picks["time"].to_numpy(np.int64)[p_order]
    p_conf = picks["conf"].to_numpy(np.float64)[p_order]
    r_unit = reference["unit"].to_numpy(np.int64)
    r_order = np.argsort(r_unit, kind="stable")
    r_unit = r_unit[r_order]
    r_phase = reference["phase"].to_numpy(np.int8)[r_order]
    r_time = reference["time"].to_numpy(np.int64)[r_order]

    results: list[tuple[int, StationResult]] = []
    fine: dict[int, list[np.ndarray]] = {}
    for unit in units:
        plo, phi = np.searchsorted(p_unit, [unit, unit + 1])
        rlo, rhi = np.searchsorted(r_unit, [unit, unit + 1])
        key = int(unit_station[unit])
        result = score_station(
            r_phase[rlo:rhi], r_time[rlo:rhi],
            p_model[plo:phi], p_phase[plo:phi], p_time[plo:phi], p_conf[plo:phi],
            n_models=int(n_models[key]), options=options,
        )
        d = int(dataset_of[key])
        # The fine curve is kept only in total: sum it here rather than ship it per unit.
        if d in fine:
            fine[d][0] += result.fine_emitted
            fine[d][1] += result.fine_matched
        else:
            fine[d] = [result.fine_emitted.copy(), result.fine_matched.copy()]
        result.fine_emitted = result.fine_matched = np.zeros(0, dtype=np.int64)
        results.append((key, result))
    return {"stations": results, "fine": fine}


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


def _compute(tasks: Sequence[Any], client: Any, *, label: str, progress: bool) -> list[Any]:
    """Compute delayed objects on the client (with retries) or on Dask's local scheduler."""
    if not tasks:
        return []
    if client is None:
        if progress:
            from dask.diagnostics import ProgressBar

            with ProgressBar(minimum=3.0, dt=0.5, out=sys.stderr):
                return list(dask.compute(*tasks))
        return list(dask.compute(*tasks))
    futures = client.compute(list(tasks), retries=3)
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

def _ensure_pairs(frame: pd.DataFrame, role: str) -> None:
    if frame.empty:
        raise InputError(f"the {role} input holds no rows that can be scored.")


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
    pick_src = load(picks, role="picks", drop_invalid=drop_invalid)

    # 1–2. Normalise (persisted where the data live), summarise, decide the scope.
    ref_parts: list[Normalised] = _compute(ref_src.parts, client, label="reading reference", progress=False)
    pick_parts = _persist(pick_src.parts, client)
    summaries = _compute([delayed(_summarise_picks)(p, options.floor) for p in pick_parts], client,
                         label="summarising picks", progress=progress)
    ref_all = Normalised.combine(ref_parts)
    pick_report = Normalised.combine([s["report"] for s in summaries])
    pick_summary, below_floor = _combine_summaries(summaries)
    scope: Scope = scope_from_summary(
        ref_all.frame, pick_summary, below_by_ds=below_floor, floor=options.floor,
        residual_tol_ns=options.residual_tol_ns, ref_source=ref_src.description, picks_source=pick_src.description,
        ref_rows=_rows(ref_all), picks_rows=_rows(pick_report),
    )
    ref_report = _report(ref_all)

    # 3. Work units (station time blocks), partitions and integer codes.
    plan = plan_units(scope, options, block_picks=block_picks, n_workers=_n_workers(client))
    encoded = [delayed(_encode)(p, plan, options.floor) for p in pick_parts]
    frame = dd.from_delayed(encoded, meta=_ENCODED_META, verify_meta=False)
    n_parts = plan.n_parts
    by_part = frame.set_index("part", divisions=list(range(n_parts)) + [n_parts - 1])
    partitions = by_part.to_delayed()
    if len(partitions) != n_parts:
        raise RuntimeError("internal error: the station partitioning changed shape")

    # 4. Score each partition.
    ref_codes = plan.encode_reference(scope.reference)
    ref_by_part = {int(k): g.drop(columns="part") for k, g in ref_codes.groupby("part", sort=True)}
    empty_ref = ref_codes.drop(columns="part").iloc[:0]
    tasks = []
    for i, part in enumerate(partitions):
        tasks.append(delayed(_score_partition)(
            part, ref_by_part.get(i, empty_ref), number=i,
            units=np.flatnonzero(plan.unit_part == i),
            unit_station=plan.unit_station,
            n_models=plan.stations["n_models"].to_numpy(np.int64),
            dataset_of=plan.stations["dcode"].to_numpy(np.int64),
            options=options,
        ))
    outputs = _compute(tasks, client, label="scoring", progress=progress)

    # 5. Combine in canonical order and finalize.
    per_dataset = _combine_outputs(outputs, scope, plan.stations, options)
    attrs = _attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started)
    return assemble(per_dataset, options=options, attrs=attrs)


def _combine_outputs(outputs, scope: Scope, skey_table: pd.DataFrame, options: Options) -> dict[str, DatasetCounts]:
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


@contextlib.contextmanager
def cluster_client(*, workers: int | None = None, scheduler: str | None = None) -> Iterator[Any]:
    """The client the CLI runs on: an existing scheduler, or a LocalCluster it owns."""
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
    try:
        yield client
    finally:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()
