"""From per-station counts to the results Dataset: combine, then finalize.

``combine`` stacks the additive per-station results of one dataset along a
``station`` axis (sorted by name) and sums what is kept only in total (the
fine curve); ``assemble`` lays every dataset out on shared coordinates; and
``derive`` computes every SPEC metric from the counts with plain array
arithmetic (the numpy kernels of :mod:`pickscale.metrics`, applied through
``xarray.apply_ufunc``).

Counts keep the ``station`` dimension, so per-station views are a ``.sel``
away and totals are ``.sum("station")`` in canonical (sorted) order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from .kernel import StationResult
from .metrics import calibration, curves, detection, timing
from .options import N_BINS, PHASES, Options

__all__ = ["DatasetCounts", "combine", "counts_from_stack", "assemble", "derive", "metric_name", "STATION_FIELDS"]

# Per-station additive counts: field -> dims before the trailing station axis.
STATION_FIELDS: dict[str, tuple[str, ...]] = {
    "emitted": ("model", "phase", "threshold"),
    "matched": ("model", "phase", "threshold"),
    "duplicates": ("model", "phase", "threshold"),
    "swapped": ("model", "phase", "threshold"),
    "cal_n": ("model", "phase", "bin"),
    "cal_hits": ("model", "phase", "bin"),
    "cal_conf": ("model", "phase", "bin"),
    "brier_sum": ("model", "phase"),
}


@dataclass
class DatasetCounts:
    """Everything additive for one dataset, after its stations are combined.

    ``counts[name]`` has the dataset's models on the model axis and stations
    (sorted) on the last axis; pair arrays hold dataset-local model indices.
    """

    stations: list[str]
    models: list[str]
    n_reference: np.ndarray  # (2, S)
    counts: dict[str, np.ndarray]
    fine_emitted: np.ndarray  # (M, 2, F)
    fine_matched: np.ndarray
    pairs: dict[str, np.ndarray] = field(default_factory=dict)  # model, phase, station, residual_ns, conf


def combine(
    stations: Iterable[tuple[str, StationResult]],
    *,
    models: list[str],
    options: Options,
    with_fine: bool = True,
) -> DatasetCounts:
    """Stack one dataset's station results (any order) along a sorted station axis.

    With ``with_fine=False`` the stations' fine curves are not summed (the
    caller summed them where they were computed and sets them afterwards).

    Examples
    --------
    >>> from pickscale.kernel import score_station
    >>> o = Options(thresholds=[0.5])
    >>> r = score_station([0], [0], [0], [0], [1], [0.9], n_models=1, options=o)
    >>> c = combine([("B", r), ("A", r)], models=["m"], options=o)
    >>> c.stations, c.counts["matched"].shape, c.fine_matched.sum()
    (['A', 'B'], (1, 2, 1, 2), 1002)
    """
    items = sorted(stations, key=lambda item: item[0])
    names = [name for name, _ in items]
    if len(set(names)) != len(names):
        raise RuntimeError("internal error: a station was scored twice; the partitioning is wrong")
    n_models, n_fine = len(models), options.fine.size
    results = [r for _, r in items]
    if results:
        counts = {name: np.stack([getattr(r, name) for r in results], axis=-1) for name in STATION_FIELDS}
        n_reference = np.stack([r.n_reference for r in results], axis=-1)
        if with_fine:
            fine_emitted = np.sum([r.fine_emitted for r in results], axis=0)
            fine_matched = np.sum([r.fine_matched for r in results], axis=0)
        else:
            fine_emitted = fine_matched = np.zeros((n_models, 2, n_fine), dtype=np.int64)
        station_of_pair = np.concatenate(
            [np.full(r.pair_model.size, i, dtype=np.int32) for i, r in enumerate(results)]
        )
        pairs = {
            "model": np.concatenate([r.pair_model for r in results]),
            "phase": np.concatenate([r.pair_phase for r in results]),
            "station": station_of_pair,
            "residual_ns": np.concatenate([r.pair_residual_ns for r in results]),
            "conf": np.concatenate([r.pair_conf for r in results]),
        }
    else:
        counts, n_reference = {}, np.zeros((2, 0), dtype=np.int64)
        fine_emitted = fine_matched = np.zeros((n_models, 2, n_fine), dtype=np.int64)
        pairs = {}
    return DatasetCounts(names, list(models), n_reference, counts, fine_emitted.astype(np.int64),
                         fine_matched.astype(np.int64), pairs)


def counts_from_stack(
    stack: Any,
    *,
    names: np.ndarray,
    models: list[str],
    options: Options,
    fine: tuple[np.ndarray, np.ndarray] | None,
) -> DatasetCounts:
    """One dataset's counts from a :class:`pickscale.stacks.StationStack` (``names[i]`` = row i's station).

    The same layout as :func:`combine` (stations sorted by name on the last
    axis), built from arrays without one object per station.
    """
    names = np.asarray(names, dtype=object)
    if len(set(names.tolist())) != names.size:
        raise RuntimeError("internal error: a station was scored twice; the partitioning is wrong")
    order = np.argsort(names, kind="stable")
    position = np.empty(order.size, dtype=np.int32)
    position[order] = np.arange(order.size, dtype=np.int32)
    counts = {name: np.moveaxis(stack.fields[name][order], 0, -1) for name in STATION_FIELDS}
    n_reference = np.moveaxis(stack.fields["n_reference"][order], 0, -1)
    # Pairs grouped by station in key order: regroup them in name order, each station's order kept.
    row_of_pair = np.searchsorted(stack.keys, stack.pair_key)
    pair_station = position[row_of_pair]
    p_order = np.argsort(pair_station, kind="stable")
    pairs = {
        "model": stack.pairs["pair_model"][p_order],
        "phase": stack.pairs["pair_phase"][p_order],
        "station": pair_station[p_order],
        "residual_ns": stack.pairs["pair_residual_ns"][p_order],
        "conf": stack.pairs["pair_conf"][p_order],
    } if names.size else {}
    shape = (len(models), 2, options.fine.size)
    fe, fm = fine if fine is not None else (np.zeros(shape, np.int64), np.zeros(shape, np.int64))
    return DatasetCounts([str(n) for n in names[order]], list(models), n_reference, counts,
                         np.asarray(fe, dtype=np.int64), np.asarray(fm, dtype=np.int64), pairs)


def metric_name(name: str, exhaustive: bool) -> str:
    """SPEC §4: with an exhaustive reference the ``_lb`` suffix is dropped everywhere.

    Examples
    --------
    >>> metric_name("f1_lb_at_best", True), metric_name("precision_lb", False)
    ('f1_at_best', 'precision_lb')
    """
    return name.replace("_lb", "") if exhaustive else name


def assemble(
    per_dataset: Mapping[str, DatasetCounts],
    *,
    options: Options,
    attrs: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Lay every dataset's counts on shared coordinates and derive the metrics.

    Coordinates are sorted in code-point order.  Counts of a (dataset, model)
    or (dataset, station) that does not exist are 0, and the coverage
    variables ``model_present`` and ``station_scored`` say so, so "no data" is
    never mistaken for 0.
    """
    datasets = sorted(per_dataset)
    models = sorted({m for c in per_dataset.values() for m in c.models})
    stations = sorted({s for c in per_dataset.values() for s in c.stations})
    nd, nm, ns, nt, nf = len(datasets), len(models), len(stations), options.grid.size, options.fine.size
    m_index = {m: i for i, m in enumerate(models)}
    s_index = {s: i for i, s in enumerate(stations)}

    data: dict[str, np.ndarray] = {
        name: np.zeros((nd,) + tuple({"model": nm, "phase": 2, "threshold": nt, "bin": N_BINS}[d] for d in dims) + (ns,),
                       dtype=np.float64 if name in ("cal_conf", "brier_sum") else np.int64)
        for name, dims in STATION_FIELDS.items()
    }
    n_reference = np.zeros((nd, 2, ns), dtype=np.int64)
    fine_emitted = np.zeros((nd, nm, 2, nf), dtype=np.int64)
    fine_matched = np.zeros((nd, nm, 2, nf), dtype=np.int64)
    model_present = np.zeros((nd, nm), dtype=bool)
    station_scored = np.zeros((nd, ns), dtype=bool)
    pair_parts: list[dict[str, np.ndarray]] = []

    for d, name in enumerate(datasets):
        c = per_dataset[name]
        mi = np.array([m_index[m] for m in c.models], dtype=np.int64)
        si = np.array([s_index[s] for s in c.stations], dtype=np.int64)
        model_present[d, mi] = True
        station_scored[d, si] = True
        if si.size:
            n_reference[d][:, si] = c.n_reference
            for key in STATION_FIELDS:
                data[key][d][np.ix_(mi, *[np.arange(n) for n in c.counts[key].shape[1:-1]], si)] = c.counts[key]
        if mi.size:
            fine_emitted[d, mi] = c.fine_emitted
            fine_matched[d, mi] = c.fine_matched
        if c.pairs and c.pairs["model"].size:
            pair_parts.append({
                "dataset": np.full(c.pairs["model"].size, d, dtype=np.int32),
                "model": mi[c.pairs["model"]].astype(np.int32),
                "phase": c.pairs["phase"].astype(np.int8),
                "station": si[c.pairs["station"]].astype(np.int32),
                "residual_ns": c.pairs["residual_ns"],
                "conf": c.pairs["conf"],
            })

    pairs = _canonical_pairs(pair_parts)
    coords = {
        "dataset": np.array(datasets, dtype=object),
        "model": np.array(models, dtype=object),
        "phase": np.array(PHASES, dtype=object),
        "threshold": options.grid.copy(),
        "fine_threshold": options.fine.copy(),
        "station": np.array(stations, dtype=object),
        "bin": np.arange(N_BINS, dtype=np.int64),
    }
    variables: dict[str, tuple] = {
        "n_reference": (("dataset", "phase", "station"), n_reference),
        "model_present": (("dataset", "model"), model_present),
        "station_scored": (("dataset", "station"), station_scored),
        "fine_emitted": (("dataset", "model", "phase", "fine_threshold"), fine_emitted),
        "fine_matched": (("dataset", "model", "phase", "fine_threshold"), fine_matched),
        "pair_dataset": (("pair",), pairs["dataset"]),
        "pair_model": (("pair",), pairs["model"]),
        "pair_phase": (("pair",), pairs["phase"]),
        "pair_station": (("pair",), pairs["station"]),
        "residual": (("pair",), pairs["residual_ns"] / 1e9),
        "pair_conf": (("pair",), pairs["conf"]),
    }
    for key, dims in STATION_FIELDS.items():
        variables[key] = (("dataset",) + dims + ("station",), data[key])
    ds = xr.Dataset(variables, coords=coords)
    ds.attrs.update(dict(attrs or {}))
    ds.attrs["options"] = options.to_attrs()
    return derive(ds, options=options, residual_ns=pairs["residual_ns"])


def _canonical_pairs(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    keys = ("dataset", "model", "phase", "station", "residual_ns", "conf")
    dtypes = (np.int32, np.int32, np.int8, np.int32, np.int64, np.float64)
    if not parts:
        return {k: np.zeros(0, dtype=t) for k, t in zip(keys, dtypes)}
    cat = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    # The parts come in (dataset, station) order, each sorted by (model, phase, residual, conf):
    # a stable sort on the small (dataset, model, phase) key is then the whole canonical order
    # (a radix sort when the key fits 16 bits).  Checked, with the full sort as the fallback.
    n_models = int(cat["model"].max()) + 1 if cat["model"].size else 1
    group = (cat["dataset"].astype(np.int64) * n_models + cat["model"]) * 2 + cat["phase"]
    if group.size and group.max() < np.iinfo(np.int16).max:
        group = group.astype(np.int16)
    order = np.argsort(group, kind="stable")
    out = {k: cat[k][order] for k in keys}
    if not _lex_sorted([out[k] for k in keys]):
        order = np.lexsort(tuple(cat[k] for k in reversed(keys)))
        out = {k: cat[k][order] for k in keys}
    return out


def _lex_sorted(columns: list[np.ndarray]) -> bool:
    """True when the rows (one value per column) are in ascending lexicographic order."""
    if columns[0].size < 2:
        return True
    undecided = np.ones(columns[0].size - 1, dtype=bool)  # rows equal on every column so far
    for c in columns:
        if (undecided & (c[:-1] > c[1:])).any():
            return False
        undecided &= c[:-1] == c[1:]
    return True


# --------------------------------------------------------------------- derive

def _ufunc(func, *args):
    return xr.apply_ufunc(func, *args)


def derive(ds: xr.Dataset, *, options: Options, residual_ns: np.ndarray | None = None) -> xr.Dataset:
    """Add every SPEC metric, derived from the counts in ``ds``.

    Detection rates (§4), onset-time statistics (§5), calibration (§6) and the
    curve readings (§7).  Metrics of a model absent from a dataset are NaN.
    """
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    present = ds.model_present
    tot = {k: ds[k].sum("station") for k in ("emitted", "matched", "duplicates", "swapped")}
    n_ref = ds.n_reference.sum("station")
    out: dict[str, xr.DataArray] = {}

    out["recall"] = _ufunc(detection.recall, tot["matched"], n_ref)
    out[lb("precision_lb")] = _ufunc(detection.precision, tot["matched"], tot["emitted"])
    out[lb("f1_lb")] = _ufunc(detection.f1, tot["matched"], n_ref, tot["emitted"])
    out["extra_rate"] = _ufunc(detection.extra_rate, tot["emitted"], tot["matched"], n_ref)
    out["duplicate_rate"] = _ufunc(detection.duplicate_rate, tot["duplicates"], tot["matched"])
    out["swap_rate"] = _ufunc(
        detection.swap_rate,
        tot["swapped"].sel(phase="P", drop=True), tot["swapped"].sel(phase="S", drop=True),
        n_ref.sel(phase="P", drop=True), n_ref.sel(phase="S", drop=True),
    )

    out.update(_timing(ds, options, residual_ns))

    cal_n = ds.cal_n.sum("station")
    n_cal, mean_conf, observed = calibration.reliability(
        cal_n.values, ds.cal_conf.sum("station").values, ds.cal_hits.sum("station").values
    )
    out["mean_conf"] = xr.DataArray(mean_conf, dims=cal_n.dims)
    out[lb("observed_lb")] = xr.DataArray(observed, dims=cal_n.dims)
    out[lb("ece_lb")] = xr.apply_ufunc(
        calibration.ece, cal_n, ds.cal_conf.sum("station"), ds.cal_hits.sum("station"),
        input_core_dims=[["bin"]] * 3,
    )
    out[lb("brier_lb")] = _ufunc(calibration.brier, ds.brier_sum.sum("station"), cal_n.sum("bin"))

    out.update(_readings(ds, options, tot, n_ref, out))

    derived = xr.Dataset(out)
    for name in derived.data_vars:
        # Integer counts stay integers (0 for an absent model; model_present says so).
        if "model" in derived[name].dims and derived[name].dtype.kind == "f":
            derived[name] = derived[name].where(present)
    result = ds.assign(derived.data_vars)
    return _describe(result, options)


def _timing(ds: xr.Dataset, options: Options, residual_ns: np.ndarray | None) -> dict[str, xr.DataArray]:
    nd, nm, nt = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["threshold"]
    if residual_ns is None:
        residual_ns = np.round(ds.residual.values * 1e9).astype(np.int64)
    stats = {name: np.full((nd, nm, 2, nt), np.nan) for name in timing.TIMING_NAMES}
    stats["n"] = np.zeros((nd, nm, 2, nt), dtype=np.int64)
    key = (ds.pair_dataset.values.astype(np.int64) * nm + ds.pair_model.values) * 2 + ds.pair_phase.values
    conf = ds.pair_conf.values
    # Pairs are sorted by (dataset, model, phase, …): each group is one contiguous run.
    bounds = np.flatnonzero(np.diff(key)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, key.size]):
        if hi <= lo:
            continue
        g = int(key[lo])
        d, m, p = g // (nm * 2), (g // 2) % nm, g % 2
        sweep = timing.timing_sweep(residual_ns[lo:hi], conf[lo:hi], options.grid, tol=options.tol)
        for name in timing.TIMING_NAMES:
            stats[name][d, m, p] = sweep[name]
    dims = ("dataset", "model", "phase", "threshold")
    return {name: xr.DataArray(values, dims=dims) for name, values in stats.items()}


def _readings(ds, options, tot, n_ref, out) -> dict[str, xr.DataArray]:
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    nd, nm = ds.sizes["dataset"], ds.sizes["model"]
    present = ds.model_present.values
    emitted_floor = tot["emitted"].isel(threshold=0).values  # (d, m, p)
    n_ref_v = n_ref.values  # (d, p)
    budget = np.zeros((nd, 2), dtype=np.int64)
    for d in range(nd):
        for p in range(2):
            if options.budget is not None:
                budget[d, p] = options.budget
            else:
                budget[d, p] = curves.default_budget(n_ref_v[d, p], emitted_floor[d, present[d], p])
    names = ("recall_at_budget", "best_threshold", lb("f1_lb_at_best"), "recall_at_best", lb("precision_lb_at_best"))
    values = {name: np.full((nd, nm, 2), np.nan) for name in names}
    fe, fm = ds.fine_emitted.values, ds.fine_matched.values
    f1v = out[lb("f1_lb")].transpose("dataset", "model", "phase", "threshold").values
    recv = out["recall"].transpose("dataset", "model", "phase", "threshold").values
    precv = out[lb("precision_lb")].transpose("dataset", "model", "phase", "threshold").values
    for d in range(nd):
        for m in range(nm):
            if not present[d, m]:
                continue
            for p in range(2):
                values["recall_at_budget"][d, m, p] = curves.recall_at_budget(
                    fe[d, m, p], fm[d, m, p], n_ref_v[d, p], budget[d, p]
                )
                best = curves.best_threshold(options.grid, f1v[d, m, p], recv[d, m, p], precv[d, m, p])
                for name, v in zip(names[1:], best):
                    values[name][d, m, p] = v
    result = {name: xr.DataArray(v, dims=("dataset", "model", "phase")) for name, v in values.items()}
    result["budget"] = xr.DataArray(budget, dims=("dataset", "phase"))
    result[lb("ap_lb")] = xr.DataArray(
        curves.average_precision(fe, fm, n_ref_v[:, None, :]), dims=("dataset", "model", "phase")
    )
    return result


# ------------------------------------------------------------- descriptions

_TH = "at each threshold of the sweep grid (picks with conf >= threshold)"
_DESCRIPTIONS: dict[str, tuple[str, str, str]] = {
    # name: (long_name, units, description)
    "n_reference": ("reference arrivals", "1", "Scored reference arrivals per station and phase (SPEC §2)."),
    "model_present": ("model ran on dataset", "1", "True when the model has a pick at or above the floor at a scored station of the dataset; counts of absent models are 0 and their metrics NaN."),
    "station_scored": ("station scored", "1", "True when the station has reference arrivals and picks in the dataset (SPEC §2)."),
    "emitted": ("picks emitted", "1", f"Picks of the model and phase, per station, {_TH}."),
    "matched": ("picks matched", "1", f"Picks in a pair of the detection matching (tol), per station, {_TH}."),
    "duplicates": ("duplicate picks", "1", f"Unmatched picks within tol of an arrival of their phase, per station, {_TH}."),
    "swapped": ("swapped arrivals", "1", f"Arrivals unmatched by their own phase but within tol of a pick of the other phase, per station, {_TH}."),
    "cal_n": ("picks per calibration bin", "1", "Picks at or above the floor in bin min(floor(conf*10), 9), per station."),
    "cal_hits": ("matched picks per calibration bin", "1", "Of cal_n, the picks in a pair of the detection matching."),
    "cal_conf": ("sum of confidence per calibration bin", "1", "Sum of conf over the picks of cal_n."),
    "brier_sum": ("sum of squared calibration error", "1", "Sum of (conf - hit)^2 over picks at or above the floor, per station."),
    "fine_emitted": ("picks emitted (fine curve)", "1", "Picks with conf >= k/1000, summed over stations (SPEC §7)."),
    "fine_matched": ("picks matched (fine curve)", "1", "Matched picks with conf >= k/1000, summed over stations (SPEC §7)."),
    "pair_dataset": ("dataset of pair", "1", "Index into the dataset coordinate of each residual pair."),
    "pair_model": ("model of pair", "1", "Index into the model coordinate of each residual pair."),
    "pair_phase": ("phase of pair", "1", "Index into the phase coordinate (0 = P, 1 = S) of each residual pair."),
    "pair_station": ("station of pair", "1", "Index into the station coordinate of each residual pair."),
    "residual": ("onset residual", "s", "Pick minus arrival of every pair of the residual_tol matching (integer ns difference, then seconds)."),
    "pair_conf": ("confidence of paired pick", "1", "Conf of the pick of each residual pair: the pair counts at every threshold <= pair_conf."),
    "recall": ("recall", "1", "matched / n_reference (SPEC §4); exact against a bulletin."),
    "precision_lb": ("precision (lower bound)", "1", "matched / emitted; a lower bound unless the reference is exhaustive."),
    "f1_lb": ("F1 (lower bound)", "1", "2 matched / (n_reference + emitted); 0 when nothing matched, NaN when n_reference = 0."),
    "extra_rate": ("extra picks per arrival", "1", "(emitted - matched) / n_reference."),
    "duplicate_rate": ("duplicate rate", "1", "duplicates / matched."),
    "swap_rate": ("phase swap rate", "1", "(swapped_P + swapped_S) / (n_reference_P + n_reference_S)."),
    "n": ("residual pairs", "1", "Pairs of the residual_tol matching with conf >= threshold (SPEC §5)."),
    "mae": ("mean absolute onset error", "s", "mean |residual|."),
    "rmse": ("root-mean-square onset error", "s", "sqrt(mean residual^2)."),
    "medae": ("median absolute onset error", "s", "median |residual| (exact)."),
    "bias": ("median onset residual", "s", "median residual: early < 0 < late (exact)."),
    "mean": ("mean onset residual", "s", "mean residual."),
    "std": ("standard deviation of onset residual", "s", "sample standard deviation, ddof = 1; NaN when n < 2."),
    "gross_error_rate": ("gross error rate", "1", "fraction of residuals with |residual| > tol."),
    "within_0.1": ("fraction within 0.1 s", "1", "fraction of residuals with |residual| <= 0.1 s."),
    "within_0.25": ("fraction within 0.25 s", "1", "fraction of residuals with |residual| <= 0.25 s."),
    "within_0.5": ("fraction within 0.5 s", "1", "fraction of residuals with |residual| <= 0.5 s."),
    "mean_conf": ("mean confidence per bin", "1", "mean conf of the picks in the calibration bin (SPEC §6)."),
    "observed_lb": ("observed frequency per bin (lower bound)", "1", "fraction of the bin's picks in a detection pair."),
    "ece_lb": ("expected calibration error (lower bound)", "1", "sum over non-empty bins of n_b/N |mean_conf_b - observed_b|."),
    "brier_lb": ("Brier score (lower bound)", "1", "mean (conf - hit)^2 over picks at or above the floor."),
    "budget": ("matched pick budget", "1", "Picks at which every model is read (SPEC §7): min(n_reference, smallest emitted at the floor) unless set."),
    "recall_at_budget": ("recall at the matched budget", "1", "Recall interpolated on the fine curve at `budget` picks; NaN outside the model's emitted range."),
    "best_threshold": ("own best threshold", "1", "Grid threshold with the highest f1 (lowest on ties)."),
    "f1_lb_at_best": ("F1 at own best threshold (lower bound)", "1", "f1 at best_threshold."),
    "recall_at_best": ("recall at own best threshold", "1", "recall at best_threshold."),
    "precision_lb_at_best": ("precision at own best threshold (lower bound)", "1", "precision at best_threshold."),
    "ap_lb": ("average precision (lower bound)", "1", "sum_k (recall_k - recall_k+1) precision_k over the fine curve."),
}


def _describe(ds: xr.Dataset, options: Options) -> xr.Dataset:
    for canonical, (long_name, units, description) in _DESCRIPTIONS.items():
        name = metric_name(canonical, options.exhaustive)
        if name in ds.variables:
            if options.exhaustive:
                long_name = long_name.replace(" (lower bound)", "")
            ds[name].attrs.update({"long_name": long_name, "units": units, "description": description})
    ds["threshold"].attrs.update({"long_name": "confidence threshold", "units": "1",
                                  "description": "A pick survives threshold θ when conf >= θ (SPEC §2)."})
    ds["fine_threshold"].attrs.update({"long_name": "confidence threshold (fine curve)", "units": "1",
                                       "description": "k/1000 for floor <= k/1000 <= 1 (SPEC §7)."})
    ds["bin"].attrs.update({"long_name": "calibration bin", "units": "1",
                            "description": "min(floor(conf*10), 9) (SPEC §6)."})
    return ds
