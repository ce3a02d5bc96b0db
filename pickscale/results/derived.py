"""Every SPEC metric derived from the counts, with plain xarray arithmetic.

Detection rates (§4), onset-time statistics (§5), calibration (§6) and the
curve readings (§7): the numpy kernels of :mod:`pickscale.metrics`, applied
to station totals (``.sum("station")``, in canonical station order) through
``xarray.apply_ufunc``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..metrics import calibration, curves, detection, timing
from ..options import Options
from .variables import describe, metric_name
from .variables import residual_ns as residual_ns_of

__all__ = ["derive", "edge_warnings", "concentration_warnings", "pair_statistics_of", "stored_statistics"]


def _ufunc(func, *args):
    return xr.apply_ufunc(func, *args)


def derive(ds: xr.Dataset, *, options: Options,
           statistics: dict[str, dict[str, np.ndarray]] | None = None) -> xr.Dataset:
    """Add every SPEC metric, derived from the counts in ``ds``.

    Detection rates (§4), onset-time statistics (§5), calibration (§6) and the
    curve readings (§7), with ``best_on_edge`` (a boolean: the best threshold at
    an end of the grid).  Results of a run (``ds.attrs`` holding the run's
    ``warnings``) get a warning per model whose best is on an edge
    (:func:`edge_warnings`), added to that list and issued.  Metrics of a model absent from a dataset are NaN, and
    so is every metric that reads the reference in a (dataset, phase) without
    reference arrivals (SPEC §4): ``n_ref`` is passed to each kernel whose
    denominator does not already say so (precision, calibration); recall, f1,
    the rates over n_reference, timing (no pairs) and the §7 readings are NaN
    there by their own definitions.

    ``statistics``: the pairs' statistics (as :func:`pair_statistics_of` gives them) when computed
    where the pairs are (the engine's); by default computed from ``ds``'s pairs.  Results of a run also
    get a warning per model whose residuals are concentrated on one value (SPEC §5,
    :func:`concentration_warnings`).
    """
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    present = ds.model_present
    tot = {k: ds[k].sum("station") for k in ("emitted", "matched", "duplicates", "swapped")}
    n_ref = ds.n_reference.sum("station")
    out: dict[str, xr.DataArray] = {}

    out["recall"] = _ufunc(detection.recall, tot["matched"], n_ref)
    out[lb("precision_lb")] = _ufunc(detection.precision, tot["matched"], tot["emitted"], n_ref)
    out[lb("f1_lb")] = _ufunc(detection.f1, tot["matched"], n_ref, tot["emitted"])
    out["extra_rate"] = _ufunc(detection.extra_rate, tot["emitted"], tot["matched"], n_ref)
    out["duplicate_rate"] = _ufunc(detection.duplicate_rate, tot["duplicates"], tot["matched"])
    out["swap_rate"] = _ufunc(
        detection.swap_rate,
        tot["swapped"].sel(phase="P", drop=True), tot["swapped"].sel(phase="S", drop=True),
        n_ref.sel(phase="P", drop=True), n_ref.sel(phase="S", drop=True),
    )

    stats = statistics if statistics is not None else pair_statistics_of(ds, options)
    out.update(_timing(stats["sweep"]))

    cal_n, cal_conf, cal_hits = (ds[k].sum("station") for k in ("cal_n", "cal_conf", "cal_hits"))
    bins = [["bin"]] * 3
    # mean_conf is the model's own (kept without arrivals); observed_lb, ece_lb and brier_lb read the hits.
    _, out["mean_conf"], out[lb("observed_lb")] = xr.apply_ufunc(
        calibration.reliability, cal_n, cal_conf, cal_hits, n_ref,
        input_core_dims=[*bins, []], output_core_dims=bins,
    )
    out[lb("ece_lb")] = xr.apply_ufunc(calibration.ece, cal_n, cal_conf, cal_hits, n_ref,
                                       input_core_dims=[*bins, []])
    out[lb("brier_lb")] = _ufunc(calibration.brier, ds.brier_sum.sum("station"), cal_n.sum("bin"), n_ref)

    out.update(_readings(ds, options, tot, n_ref, out))
    if "matched_over_time" in ds:
        # SPEC §10: at the shared threshold, per time bin, over all stations.
        matched_t = ds.matched_over_time.sum("station")
        out["recall_over_time"] = _ufunc(detection.recall, matched_t, ds.n_reference_over_time.sum("station"))
        # The dataset's n_reference, not the bin's: in a phase the reference marks, a bin's picks that find
        # no arrival are extra picks as anywhere else; a phase it never marks has nothing to bound (SPEC §4).
        out[lb("precision_lb_over_time")] = _ufunc(detection.precision, matched_t,
                                                   ds.emitted_over_time.sum("station"), n_ref)
    if "matched_at_tol" in ds:
        out.update(_at_tols(ds, tot, n_ref, options, lb))

    if "matched_by_group" in ds:
        out.update(_by_group(ds, stats["by_group"]))
    if "event_levels" in ds:  # SPEC §19
        from .events import derive_events

        out.update(derive_events(ds, options))

    derived = xr.Dataset(out)
    for name in derived.data_vars:
        # Integer counts stay integers (0 for an absent model; model_present says so); flags stay booleans
        # (best_on_edge is False for an absent model: its best_threshold is NaN).
        if "model" in derived[name].dims and derived[name].dtype.kind == "f":
            derived[name] = derived[name].where(present)
    result = describe(ds.assign(derived.data_vars), options)
    if "warnings" in ds.attrs:
        # A run's results (assembly sets the run's warnings before deriving): the edges join its warnings, the
        # list the CLI prints and the store keeps.  Messages already there (the store's own, derived again on
        # opening or extending) are not said twice.
        said = list(ds.attrs["warnings"])
        found = edge_warnings(result, options) + concentration_warnings(result, stats["mode"])
        if "grid" in stats:  # SPEC §5, "Residuals on a grid" (results.quality); the verdict reads the records
            from .quality import grid_warnings, quality_flags

            # With windows, where the picks and arrivals sit in them decides (scope.placement).
            placement = dict(result.attrs.get("coverage") or {}).get("placement")
            found += grid_warnings(result, stats["grid"], placement)
            result.attrs["data_quality"] = quality_flags(result, stats["mode"], stats["grid"], placement)
        new = [w for w in found if w not in said]
        if new:
            from ..errors import emit_warnings

            result.attrs["warnings"] = [*said, *new]
            emit_warnings(new)
    return result


def edge_warnings(ds: xr.Dataset, options: Options) -> list[str]:
    """SPEC §7: one message per model whose own best threshold is on the edge of the search somewhere.

    Each (dataset, phase) where ``best_on_edge`` is set is named with the
    threshold and why it is on the edge -- the highest searched (with the
    fine curve's f1 above it, which the grid did not search), below the lowest
    confidence the model emitted, the lowest searched while the model emits
    picks down to it, or no pick matched at all -- and what to do about it.

    Parameters
    ----------
    ds : xarray.Dataset
        Results with the SPEC §7 readings (what :func:`derive` returns).
    options : Options
        The run's options (the grid and the fine curve).

    Returns
    -------
    list of str
        The messages, models in coordinate order.
    """
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    grid, fine = options.grid, options.fine
    flag = ds["best_on_edge"].transpose("dataset", "model", "phase").values
    if not flag.any():
        return []
    best = ds["best_threshold"].transpose("dataset", "model", "phase").values
    at_best = ds[lb("f1_lb_at_best")].transpose("dataset", "model", "phase").values
    emitted = ds["emitted"].sum("station").transpose("dataset", "model", "phase", "threshold").values
    n_ref = ds["n_reference"].sum("station").transpose("dataset", "phase").values
    fe, fm = ds.fine_emitted.values, ds.fine_matched.values
    datasets, models, phases = (list(map(str, ds[c].values)) for c in ("dataset", "model", "phase"))
    f1 = lb("f1_lb")
    messages = []
    for m, model in enumerate(models):
        kinds: dict[str, list[str]] = {"top": [], "flat": [], "below": [], "bottom": [], "none": []}
        for d, p in zip(*np.nonzero(flag[:, m, :])):
            where, b = f"{datasets[d]} {phases[p]}", float(best[d, m, p])
            lowest = curves.lowest_conf_bound(grid, emitted[d, m, p], fine, fe[d, m, p])
            if at_best[d, m, p] == 0:  # f1 0 everywhere: every threshold ties, the lowest is taken
                kinds["none"].append(where)
            elif b == grid[-1] and b != grid[0]:
                # The fine curve reaches where the grid did not: its best f1 at or above the top of the grid.
                above = fine >= b
                fine_f1 = detection.f1(fm[d, m, p][above], n_ref[d, p], fe[d, m, p][above])
                k = int(np.argmax(fine_f1))
                if fine[above][k] > b and fine_f1[k] > at_best[d, m, p]:
                    kinds["top"].append(f"{where} (on the fine curve {f1} is {fine_f1[k]:.3f} at "
                                        f"{fine[above][k]:g}, against {at_best[d, m, p]:.3f} at {b:g})")
                else:
                    kinds["flat"].append(where)
            elif lowest > b:
                kinds["below"].append(f"{where} (every pick has conf >= {lowest:g})")
            else:
                kinds["bottom"].append(where)
        said = []
        if kinds["top"]:
            hint = ("search higher thresholds (--thresholds up to 0.99)" if grid[-1] < 0.99 else
                    "its most confident picks alone score best")
            said.append(f"{grid[-1]:g}, the highest threshold searched, in {', '.join(kinds['top'])}: {hint}")
        if kinds["flat"]:
            said.append(f"{grid[-1]:g}, the highest threshold searched, in {', '.join(kinds['flat'])}, where the "
                        f"fine curve's {f1} does not rise above it: no higher threshold scores better")
        if kinds["below"]:
            said.append(f"{grid[0]:g}, below the lowest confidence the model emitted, in "
                        f"{', '.join(kinds['below'])}: keeping every pick scores best, and every threshold up to "
                        "that confidence is the same one (the model never emits below it)")
        if kinds["bottom"]:
            said.append(f"{grid[0]:g}, the lowest threshold searched, in {', '.join(kinds['bottom'])}, where the "
                        "model emits picks down to it: a lower threshold may score higher (picks emitted at a "
                        "lower floor, scored with --thresholds starting lower)")
        if kinds["none"]:
            said.append(f"{grid[0]:g} in {', '.join(kinds['none'])}, where no pick matched at any threshold "
                        f"({f1} 0 everywhere): there is no best threshold to choose")
        if said:
            messages.append(f"{model}: best_threshold on the edge of the thresholds searched (best_on_edge in "
                            f"detection.csv, SPEC §7): {'; '.join(said)}.")
    return messages


def concentration_warnings(ds: xr.Dataset, mode: dict[str, np.ndarray]) -> list[str]:
    """SPEC §5, "Concentrated residuals": one message per model whose residuals at the shared threshold sit
    on one value somewhere (:func:`pickscale.metrics.timing.concentrated`), naming where, the value and
    its share.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (their coordinates name the datasets, models and phases).
    mode : dict
        The most common residual per (dataset, model, phase): ``n``, ``residual_ns``, ``count`` and
        ``second`` arrays (:func:`pair_statistics_of`'s ``"mode"``).

    Returns
    -------
    list of str
        The messages, models in coordinate order.
    """
    datasets, models, phases = (list(map(str, ds[c].values)) for c in ("dataset", "model", "phase"))
    messages = []
    for m, model in enumerate(models):
        where = []
        for d, p in np.ndindex(len(datasets), len(phases)):
            one = {name: int(values[d, m, p]) for name, values in mode.items()}
            if timing.concentrated(one):
                where.append(f"{datasets[d]} {phases[p]} ({one['count'] / one['n']:.0%} of {one['n']} at "
                             f"{one['residual_ns'] / 1e9:+.3f} s)")
        if where:
            messages.append(f"{model}: residuals concentrated on one value at the shared threshold in "
                            f"{', '.join(where)}: its pick times and the reference's meet on a grid (labels at a "
                            "fixed offset into windows, picks on a coarse time step), so medae, bias, p10/p90 "
                            "and within_0.1 read that grid rather than the picker's timing (SPEC §5).")
    return messages


def _at_tols(ds: xr.Dataset, tot: dict[str, xr.DataArray], n_ref: xr.DataArray, options: Options,
             lb) -> dict[str, xr.DataArray]:
    """SPEC §13: recall and precision at the shared threshold for each tolerance of ``tols``, over all stations."""
    matched_l = ds.matched_at_tol.sum("station")
    emitted = options.at_shared(tot["emitted"], drop=True)
    return {"recall_at_tol": _ufunc(detection.recall, matched_l, n_ref),
            lb("precision_lb_at_tol"): _ufunc(detection.precision, matched_l, emitted, n_ref)}


def pair_statistics_of(ds: xr.Dataset, options: Options) -> dict[str, dict[str, np.ndarray]]:
    """SPEC §5 and §14 statistics of the pairs ``ds`` holds, per stream (dataset, model, phase).

    What the engine computes on the cluster (:mod:`pickscale.engine.pairs`), here from a Dataset's own
    pairs (a stored or extended one), as :func:`pickscale.metrics.timing.lay_out` gives them: the sweep
    (dataset, model, phase, threshold), the most common residual at the shared threshold and, with
    groups, the statistics per group at the shared threshold (dataset, model, phase, group).
    """
    nm = ds.sizes["model"]
    grouped = "pair_group" in ds  # SPEC §14
    ng = ds.sizes.get("group", 0) if grouped else 0
    residual_ns = residual_ns_of(ds.residual.values)
    key = (np.asarray(ds.pair_dataset.values).astype(np.int64) * nm + ds.pair_model.values) * 2 + ds.pair_phase.values
    conf = np.asarray(ds.pair_conf.values)
    group = np.asarray(ds.pair_group.values) if grouped else np.zeros(key.size, np.int32)
    # Pairs are sorted by (dataset, model, phase, …): each stream is one contiguous run.
    bounds = np.flatnonzero(np.diff(key)) + 1
    streams = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, key.size]):
        if hi <= lo:
            continue
        g = int(key[lo])
        streams[(g // (nm * 2), (g // 2) % nm, g % 2)] = timing.pair_statistics(
            residual_ns[lo:hi], conf[lo:hi], group[lo:hi], thresholds=options.grid, tol=options.tol,
            threshold=options.threshold_of(g % 2), n_groups=ng)
    return timing.lay_out(streams, shape=(ds.sizes["dataset"], nm), n_thresholds=ds.sizes["threshold"],
                          n_groups=ng, grouped=grouped)


def stored_statistics(ds: xr.Dataset, options: Options) -> dict[str, dict[str, np.ndarray]]:
    """The statistics of the pairs as ``ds`` states them (its timing readings), in the form
    :func:`pair_statistics_of` gives: what :func:`derive` is given where the pairs are not read (a store
    opened lazily, :func:`pickscale.store.open_results`), so that every other reading is derived again."""
    grouped = "pair_group" in ds or "n_by_group" in ds  # SPEC §14
    out = timing.lay_out({}, shape=(ds.sizes["dataset"], ds.sizes["model"]), n_thresholds=options.grid.size,
                         n_groups=ds.sizes.get("group", 0) if grouped else 0, grouped=grouped)
    for name in out["sweep"]:
        if name in ds:
            out["sweep"][name] = np.asarray(ds[name].transpose("dataset", "model", "phase", "threshold").values)
    for name in out["by_group"]:
        if f"{name}_by_group" in ds:
            out["by_group"][name] = np.asarray(ds[f"{name}_by_group"].transpose("dataset", "model", "phase",
                                                                                "group").values)
    return out


def _timing(sweep: dict[str, np.ndarray]) -> dict[str, xr.DataArray]:
    dims = ("dataset", "model", "phase", "threshold")
    return {name: xr.DataArray(values, dims=dims) for name, values in sweep.items()}


def _by_group(ds: xr.Dataset, by_group: dict[str, np.ndarray]) -> dict[str, xr.DataArray]:
    """SPEC §14: recall per group of arrivals, and the §5 statistics over each group's pairs, at the shared threshold.

    No precision per group: emitted picks have no group.
    """
    out = {"recall_by_group": _ufunc(detection.recall, ds.matched_by_group.sum("station"),
                                     ds.n_reference_by_group.sum("station"))}
    dims = ("dataset", "model", "phase", "group")
    out.update({f"{name}_by_group": xr.DataArray(values, dims=dims) for name, values in by_group.items()})
    return out


def _readings(ds, options, tot, n_ref, out) -> dict[str, xr.DataArray]:
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    nd, nm = ds.sizes["dataset"], ds.sizes["model"]
    present = ds.model_present.values
    emitted_floor = tot["emitted"].isel(threshold=0).values  # (d, m, p)
    n_ref_v = n_ref.values  # (d, p)
    budget = np.zeros((nd, 2), dtype=np.int64)
    for d in range(nd):
        for p in range(2):
            if options.budgets:  # several: the first is the detection table's budget
                budget[d, p] = options.budgets[0]
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
    # SPEC §7: the best threshold at an end of the grid says only that the grid stopped there.
    result["best_on_edge"] = xr.DataArray(curves.best_on_edge(options.grid, values["best_threshold"]),
                                          dims=("dataset", "model", "phase"))
    result["budget"] = xr.DataArray(budget, dims=("dataset", "phase"))
    if len(options.budgets) > 1:
        # Several budgets (SPEC §7): recall_at_budget at each, dim ``budgets`` (ascending).
        several = sorted(options.budgets)
        at = np.full((nd, nm, 2, len(several)), np.nan)
        for d in range(nd):
            for m in range(nm):
                if present[d, m]:
                    for p in range(2):
                        for k, b in enumerate(several):
                            at[d, m, p, k] = curves.recall_at_budget(fe[d, m, p], fm[d, m, p], n_ref_v[d, p], b)
        result["recall_at_budgets"] = xr.DataArray(
            at, dims=("dataset", "model", "phase", "budgets"),
            coords={"budgets": np.asarray(several, dtype=np.int64)})
    result[lb("ap_lb")] = xr.DataArray(
        curves.average_precision(fe, fm, n_ref_v[:, None, :]), dims=("dataset", "model", "phase")
    )
    return result


