"""Intervals by bootstrap over stations (SPEC §12), as variables of the results Dataset.

:func:`bootstrap` (``pickscale.bootstrap``) reads the per-station counts and
residual pairs a results Dataset holds and adds ``<metric>_lo`` / ``<metric>_hi``
for recall, precision_lb, f1_lb, recall_at_budget, mae and ece_lb, and the
paired model differences ``recall_diff`` and ``recall_at_budget_diff`` with
their intervals.  The arithmetic is :mod:`pickscale.metrics.resampling`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..errors import OptionsError
from ..metrics import resampling as kernels
from ..options import Options
from ..store.pair_rules import PAIR_NAMES
from .variables import OPTIONAL_VARIABLES, describe, metric_name, text
from .variables import residual_ns as residual_ns_of

__all__ = ["bootstrap", "pair_sums", "INTERVAL_METRICS", "DIFFERENCES", "RATIO_METRICS", "PAIR_BATCH"]

#: The metrics given an interval, by canonical name (``_lb`` dropped with ``exhaustive``).
INTERVAL_METRICS: tuple[str, ...] = ("recall", "precision_lb", "f1_lb", "recall_at_budget", "mae", "ece_lb")
#: The paired differences between models.
DIFFERENCES: tuple[str, ...] = ("recall", "recall_at_budget")
#: The metrics (and differences) that are a ratio of station sums: their interval is the symmetric
#: bootstrap-t; the others' (recall_at_budget, recall_at_budgets, ece_lb) the percentile interval (SPEC §12).
RATIO_METRICS: tuple[str, ...] = ("recall", "precision_lb", "f1_lb", "mae")


def _checked(level: Any, draws: Any, seed: Any) -> tuple[float, int, int]:
    try:
        lvl = float(level)
    except (TypeError, ValueError):
        lvl = float("nan")
    if not 0.0 < lvl < 1.0:
        raise OptionsError(f"level must be a number in (0, 1), e.g. 0.95; got {level!r}.", options=("level",))
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise OptionsError(f"draws must be a whole number >= 1; got {draws!r}.", options=("draws",))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise OptionsError(f"seed must be a whole number >= 0; got {seed!r}.", options=("seed",))
    return lvl, int(draws), int(seed)


#: Residual pairs read at a time for the per-station sums the draws weigh: pairs left on a cluster or in a
#: store are never all in this process (the sums are result-sized; SPEC §12 needs no more of the pairs).
PAIR_BATCH = 2**20


def bootstrap(ds: xr.Dataset, *, level: float = 0.95, draws: int = 1000, seed: int = 0,
              pairs: Callable[[int, int], Mapping[str, np.ndarray]] | None = None) -> xr.Dataset:
    """Intervals by resampling each dataset's stations (SPEC §12): symmetric bootstrap-t, or percentile.

    Each of ``draws`` draws resamples the S scored stations of a dataset
    with replacement (multinomial counts from the dataset's own generator
    ``numpy.random.default_rng([seed, *sha256(name.encode("utf-8")).digest()])``,
    so a dataset's intervals depend on its stations, its name and the seed
    only, never on the other datasets); every metric of a draw comes from the
    weighted station totals with the same kernels as the estimate, the
    residual pairs weighted by their station's multiplicity.  The metrics
    that are a ratio of station sums (recall, precision_lb, f1_lb, mae and
    recall_diff: :data:`RATIO_METRICS`) get the symmetric bootstrap-t interval
    (Hall 1988): the ratio ± the ``level`` quantile of the draws' ``|t|`` times
    its delta-method standard error, within the station ratios' range; the
    others (ece_lb, recall_at_budget(s), recall_at_budget_diff) the percentile
    interval, numpy's ``"linear"`` quantiles of the draws at ``(1 − level)/2``
    and ``(1 + level)/2``.  Every model of a dataset is read on the same
    draws, so the differences between two models are paired.

    This is :func:`pickscale.bootstrap`.

    Parameters
    ----------
    ds
        A results Dataset (:func:`pickscale.score`, :func:`pickscale.open_results`).
    level
        Coverage of the interval, in (0, 1); default 0.95.
    draws
        Number of bootstrap draws (default 1000).
    seed
        Seed of the draws: the same seed gives the same intervals.
    pairs
        ``pairs(lo, hi)``: the residual pairs ``lo … hi − 1``, each of ``pair_dataset``, ``pair_model``,
        ``pair_phase``, ``pair_station``, ``pair_conf`` and ``residual`` (default: read from ``ds``, a batch
        of :data:`PAIR_BATCH` at a time).  The draws weigh each station's sums of them, never the pairs one by
        one, so no more of them is held at once.

    Returns
    -------
    xarray.Dataset
        ``ds`` with ``recall_lo``, ``recall_hi``, ``precision_lb_lo`` … (dims
        dataset, model, phase; at the shared threshold where the metric has a
        threshold axis), ``recall_at_budgets_lo/_hi`` with several budgets,
        ``recall_diff``, ``recall_at_budget_diff`` and their ``_lo/_hi`` (dims
        dataset, model, model_b, phase: model minus model_b), and
        ``attrs["bootstrap"]``.  Earlier intervals are replaced.

    Examples
    --------
    >>> import pickscale
    >>> b = pickscale.bootstrap(ds, draws=200)  # ds: the demo results (pickscale.score(*pickscale.demo.catalogue()))
    >>> at = b.sel(dataset="aftershocks_north", model="sharp", phase="P")
    >>> [round(float(v), 3) for v in (at.recall_lo, at.recall.sel(threshold=0.3), at.recall_hi)]
    [0.774, 0.831, 0.886]
    >>> bool((b.recall_lo <= b.recall.sel(threshold=0.3)).all()), b.attrs["bootstrap"]["draws"]
    (True, 200)
    """
    level, n_draws, seed = _checked(level, draws, seed)
    options = Options.from_attrs(ds.attrs["options"])
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    earlier = {lb(n) for n in OPTIONAL_VARIABLES if n != "recall_at_budgets"} | {"model_b"}
    ds = ds.drop_vars([n for n in ds.variables if n in earlier])
    nd, nm = ds.sizes["dataset"], ds.sizes["model"]
    several = [int(b) for b in ds["budget"].values] if "recall_at_budgets" in ds else []
    shape = (nd, nm, 2)
    out: dict[str, np.ndarray] = {}
    for metric in INTERVAL_METRICS:
        out[f"{metric}_lo"] = np.full(shape, np.nan)
        out[f"{metric}_hi"] = np.full(shape, np.nan)
    if several:
        out["recall_at_budgets_lo"] = np.full((*shape, len(several)), np.nan)
        out["recall_at_budgets_hi"] = np.full((*shape, len(several)), np.nan)
    for metric in DIFFERENCES:
        for end in ("", "_lo", "_hi"):
            out[f"{metric}_diff{end}"] = np.full((nd, nm, nm, 2), np.nan)

    estimates = {
        # At the shared threshold: each phase at its own (SPEC §2).
        "recall": options.at_shared(ds["recall"]), "precision_lb": options.at_shared(ds[lb("precision_lb")]),
        "f1_lb": options.at_shared(ds[lb("f1_lb")]), "recall_at_budget": ds["recall_at_budget"],
        "mae": options.at_shared(ds["mae"]), "ece_lb": ds[lb("ece_lb")],
    }
    est = {k: v.transpose("dataset", "model", "phase").values for k, v in estimates.items()}
    est_budgets = (ds["recall_at_budgets"].transpose("dataset", "model", "phase", "budget").values
                   if several else None)
    counts = _station_counts(ds)
    counts["pair_abs_ns"], counts["pair_n"] = pair_sums(ds, options, pairs=pairs)
    for d, name in enumerate(text(ds["dataset"].values)):
        stations = np.flatnonzero(counts["scored"][d])  # in station-coordinate (code-point) order
        models = np.flatnonzero(counts["present"][d])
        if models.size == 0 or stations.size == 0:
            continue
        # Each dataset its own generator, from the seed and its name: its intervals do not depend on
        # the other datasets, their order, or the process (SPEC §12).
        weights = kernels.station_weights(stations.size, n_draws, kernels.dataset_generator(seed, str(name)))
        ones = np.ones((1, stations.size), dtype=np.int64)
        per = _dataset_draws(ds, counts, d, stations, models, options, several)
        for w_name, w in (("draws", weights), ("full", ones)):
            per[w_name] = per["compute"](w)
        ratios = per["ratios"]
        for metric in INTERVAL_METRICS:
            e = est[metric][d][models]
            if metric in RATIO_METRICS:  # a ratio of station sums: the symmetric bootstrap-t interval
                num, den, scale = ratios[metric]
                lo, hi = kernels.studentized_interval(weights, num, den, e, level, scale=scale,
                                                      defined=~np.isnan(per["draws"][metric]))
            else:
                lo, hi = kernels.percentile_interval(per["draws"][metric], e, per["full"][metric][0], level)
            out[f"{metric}_lo"][d, models], out[f"{metric}_hi"][d, models] = lo, hi
        if several and est_budgets is not None:
            lo, hi = kernels.percentile_interval(per["draws"]["recall_at_budgets"], est_budgets[d][models],
                                                 per["full"]["recall_at_budgets"][0], level)
            out["recall_at_budgets_lo"][d, models], out["recall_at_budgets_hi"][d, models] = lo, hi
        for metric in DIFFERENCES:
            x, f, e = per["draws"][metric], per["full"][metric][0], est[metric][d][models]  # (D, M', P), (M', P)
            for i, a in enumerate(models):
                diff_est = e[i] - e
                if metric in RATIO_METRICS:  # recall: (matched of model a − matched of each model) / arrivals
                    num, den, _ = ratios[metric]
                    lo, hi = kernels.studentized_interval(weights, num[:, i:i + 1] - num, den, diff_est, level,
                                                          defined=~np.isnan(x[:, i:i + 1] - x))
                else:
                    lo, hi = kernels.percentile_interval(x[:, i:i + 1] - x, diff_est, f[i] - f, level)
                out[f"{metric}_diff"][d, a, models] = diff_est
                out[f"{metric}_diff_lo"][d, a, models] = lo
                out[f"{metric}_diff_hi"][d, a, models] = hi
            out[f"{metric}_diff"][d, models, models] = np.nan  # a model is not compared with itself
            out[f"{metric}_diff_lo"][d, models, models] = np.nan
            out[f"{metric}_diff_hi"][d, models, models] = np.nan

    new: dict[str, xr.DataArray] = {}
    for name, values in out.items():
        dims = OPTIONAL_VARIABLES[name].dims
        new[lb(name)] = xr.DataArray(values, dims=dims)
    result = ds.assign_coords(model_b=("model_b", text(ds["model"].values))).assign(new)
    result.attrs["bootstrap"] = {
        "level": level, "draws": n_draws, "seed": seed, "resampled": "stations of each dataset",
        "generator": "per dataset: numpy.random.default_rng([seed, *sha256(dataset name in UTF-8) bytes])",
        "interval": "symmetric bootstrap-t (Hall 1988) for recall, precision_lb, f1_lb, mae and recall_diff: "
                    "ratio +- the level quantile of |t| times its delta-method standard error, within the "
                    "station ratios' range; percentile (quantiles at (1 - level)/2 and (1 + level)/2) for "
                    "recall_at_budget, recall_at_budgets, ece_lb and recall_at_budget_diff",
        "recall_at_budget": "spread from the sweep grid's reading, placed at the fine curve's estimate",
    }
    return describe(result, options)


def _station_counts(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """The per-station arrays the draws weigh, station axis last, loaded once."""
    grid = ("dataset", "model", "phase", "threshold", "station")
    cal = ("dataset", "model", "phase", "bin", "station")
    return {
        "scored": ds["station_scored"].transpose("dataset", "station").values,
        "present": ds["model_present"].transpose("dataset", "model").values,
        "n_reference": ds["n_reference"].transpose("dataset", "phase", "station").values,
        "emitted": ds["emitted"].transpose(*grid).values,
        "matched": ds["matched"].transpose(*grid).values,
        "cal_n": ds["cal_n"].transpose(*cal).values,
        "cal_conf": ds["cal_conf"].transpose(*cal).values,
        "cal_hits": ds["cal_hits"].transpose(*cal).values,
    }


def pair_sums(ds: xr.Dataset, options: Options, *,
              pairs: Callable[[int, int], Mapping[str, np.ndarray]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Σ|e| (integer nanoseconds) and the number of the residual pairs at the shared threshold of their phase,
    per (dataset, station, model, phase): what the draws weigh of the pairs (SPEC §12, mae).

    The pairs are read :data:`PAIR_BATCH` at a time (``pairs(lo, hi)``, default: ``ds``'s pair variables,
    each batch's computed together -- one round trip for pairs left on a cluster); integer sums in any order
    are exact, so the batches do not change them.
    """
    shape = (ds.sizes["dataset"], ds.sizes["station"], ds.sizes["model"], 2)
    abs_sum, n_pairs = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    read = pairs if pairs is not None else functools.partial(_read_pairs, ds)
    for lo in range(0, int(ds.sizes.get("pair", 0)), PAIR_BATCH):
        batch = read(lo, min(lo + PAIR_BATCH, int(ds.sizes["pair"])))
        phase = np.asarray(batch["pair_phase"]).astype(np.int64)
        keep = np.asarray(batch["pair_conf"]) >= _pair_thresholds(phase, options)
        at = tuple(np.asarray(batch[name])[keep].astype(np.int64)
                   for name in ("pair_dataset", "pair_station", "pair_model")) + (phase[keep],)
        np.add.at(abs_sum, at, np.abs(residual_ns_of(np.asarray(batch["residual"])[keep])))
        np.add.at(n_pairs, at, 1)
    return abs_sum, n_pairs


def _read_pairs(ds: xr.Dataset, lo: int, hi: int) -> dict[str, np.ndarray]:
    """``ds``'s pair variables ``lo … hi − 1``, computed together."""
    part = ds[list(PAIR_NAMES)].isel(pair=slice(lo, hi)).compute()
    return {name: np.asarray(part[name].values) for name in PAIR_NAMES}


def _at_shared_index(counts: np.ndarray, options: Options) -> np.ndarray:
    """Counts on (…, phase, threshold) at the shared threshold of each phase (SPEC §2): (…, phase)."""
    ti = options.threshold_indices
    if not options.per_phase:
        return counts[..., int(ti[0])]
    return counts[..., [0, 1], ti]


def _pair_thresholds(pair_phase: np.ndarray, options: Options) -> Any:
    """The shared threshold each residual pair is read at: its phase's (SPEC §2)."""
    if not options.per_phase:
        return options.phase_thresholds[0]
    return np.asarray(options.phase_thresholds)[np.asarray(pair_phase, dtype=np.int64)]


def _dataset_draws(ds: xr.Dataset, counts: dict[str, np.ndarray], d: int, stations: np.ndarray,
                   models: np.ndarray, options: Options, several: list[int]) -> dict[str, Any]:
    """Station-first arrays of dataset ``d`` (its scored stations, its models) and the draw computation."""

    def station_first(a: np.ndarray) -> np.ndarray:
        return np.moveaxis(a, -1, 0)

    n_ref = station_first(counts["n_reference"][d][:, stations])  # (S, P)
    grid_e = station_first(counts["emitted"][d][models][..., stations])  # (S, M', P, T)
    grid_m = station_first(counts["matched"][d][models][..., stations])
    cal = {k: station_first(counts[k][d][models][..., stations]) for k in ("cal_n", "cal_conf", "cal_hits")}
    # Residual pairs at the shared threshold: |e| summed per (station, model, phase), exactly in int64.
    abs_sum = counts["pair_abs_ns"][d][stations][:, models]  # (S, M', P)
    n_pairs = counts["pair_n"][d][stations][:, models]
    fixed = options.budgets[0] if options.budgets else None
    m_ti, e_ti = _at_shared_index(grid_m, options), _at_shared_index(grid_e, options)  # (S, M', P)
    n_b = np.broadcast_to(n_ref[:, None, :], m_ti.shape)
    # Each ratio metric as (numerator, denominator, scale) per station (SPEC §4, §5): the studentized interval.
    ratios = {"recall": (m_ti, n_b, 1.0), "precision_lb": (m_ti, e_ti, 1.0),
              "f1_lb": (2 * m_ti, n_b + e_ti, 1.0), "mae": (abs_sum, n_pairs, 1e-9)}

    def compute(weights: np.ndarray) -> dict[str, np.ndarray]:
        det = kernels.detection_draws(weights, m_ti, e_ti, n_ref[:, None, :])
        ref_w = kernels.weighted(weights, n_ref)  # (D, P)
        out = dict(det)
        out["mae"] = kernels.mae_draws(weights, abs_sum, n_pairs)
        out["ece_lb"] = kernels.ece_draws(weights, cal["cal_n"], cal["cal_conf"], cal["cal_hits"], n_ref[:, None, :])
        # recall_at_budget on the sweep grid, one model at a time (memory: draws × phases × grid).
        floor_w = kernels.weighted(weights, grid_e[:, :, :, 0])  # (D, M', P)
        if fixed is None:  # SPEC §7's default, per draw: min(n_reference, least emitted at the floor)
            budget = np.minimum(ref_w, floor_w.min(axis=1))
        else:
            budget = np.full(ref_w.shape, float(fixed))
        at = np.full(floor_w.shape, np.nan)
        at_several = np.full((*floor_w.shape, len(several)), np.nan)
        for j in range(models.size):
            e_w, m_w = kernels.weighted(weights, grid_e[:, j]), kernels.weighted(weights, grid_m[:, j])  # (D, P, T)
            at[:, j] = kernels.grid_recall_at_budget(e_w, m_w, ref_w, budget)
            for k, b in enumerate(several):
                at_several[:, j, :, k] = kernels.grid_recall_at_budget(e_w, m_w, ref_w, float(b))
        out["recall_at_budget"] = at
        if several:
            out["recall_at_budgets"] = at_several
        return out

    return {"compute": compute, "ratios": ratios}
