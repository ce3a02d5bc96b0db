"""Every SPEC metric derived from the counts, as :mod:`pickscale.results.registry` declares it.

Detection rates (§4), onset-time statistics (§5), calibration (§6) and the
curve readings (§7): the numpy kernels of :mod:`pickscale.metrics`, applied
to station totals (``.sum("station")``, in canonical station order) on numpy
arrays laid out as ``xarray.apply_ufunc`` would lay them, and the Dataset
built in one ``assign`` (one alignment, not one per variable).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ..errors import emit_warnings
from ..metrics import curves, detection, timing
from ..metrics.flags import FLAG_NAMES, flag_facts, keeps_flags, rule_inputs
from ..options import Options
from .events import derive_events
from .quality import grid_warnings, quality_flags
from .rates import derive_rates
from .registry import FAMILIES, REGISTRY, Derived, Input, lay_out
from .variables import describe, metric_name, text
from .variables import residual_ns as residual_ns_of

__all__ = ["derive", "edge_warnings", "concentration_warnings", "pair_statistics_of", "stored_statistics"]


def derive(ds: xr.Dataset, *, options: Options,
           statistics: dict[str, dict[str, np.ndarray]] | None = None) -> xr.Dataset:
    """Add every SPEC metric, derived from the counts in ``ds``.

    Detection rates (§4), onset-time statistics (§5), calibration (§6) and the
    curve readings (§7), with ``best_on_edge`` (a boolean: the best threshold at
    an end of the grid), and the families of the options (§10, §13, §14, §19): each
    variable as :data:`~pickscale.results.registry.REGISTRY` (or a family of
    :data:`~pickscale.results.registry.FAMILIES`) declares it, evaluated on numpy arrays of
    the station totals, and the Dataset built in one call.  Results of a run (``ds.attrs`` holding the run's
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
    stats = statistics if statistics is not None else pair_statistics_of(ds, options)
    totals = _Totals(ds, options)
    laid: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}  # canonical name -> (dims, values)
    for name, entry in REGISTRY.items():
        if entry.requires is None or entry.requires in ds:
            laid[name] = _evaluate(entry, totals, laid, ds.sizes)
    families = {"timing": _on_statistics(stats["sweep"], ("dataset", "model", "phase", "threshold"))}
    families["readings"], budgets = _readings(ds, options, totals, laid)
    families["flags"] = {name: (("dataset", "model", "phase"), values)  # SPEC §5's rules where they fire
                         for name, values in flag_facts(stats["mode"], stats["grid"]).items()}
    if "sums" in stats:  # (the statistics of a store written before they were kept have none)
        families["residual_sums"] = {"residual_sums": (("dataset", "model", "phase", "level", "residual_term"),
                                                       stats["sums"]["residual_sums"])}
    if FAMILIES["timing_by_group"].requires in ds:  # SPEC §14
        families["timing_by_group"] = {f"{name}_by_group": laid_out for name, laid_out in _on_statistics(
            stats["by_group"], ("dataset", "model", "phase", "group")).items()}
    if FAMILIES["events"].requires in ds:  # SPEC §19
        families["events"] = {name: (tuple(map(str, a.dims)), a.values)
                              for name, a in derive_events(ds, options).items()}
    if FAMILIES["rates"].requires in ds:  # SPEC §20
        families["rates"] = {name: (tuple(map(str, a.dims)), a.values) for name, a in derive_rates(ds).items()}
    # The Dataset's order: each family after the variable it follows (FAMILIES), as the metrics were always laid.
    ordered: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    for name, laid_out in laid.items():
        ordered[name] = laid_out
        for family_name, family in FAMILIES.items():
            if family.after == name and family_name in families:
                ordered.update(families[family_name])
    for family_name, family in FAMILIES.items():
        if family.after is None and family_name in families:
            ordered.update(families[family_name])
    present = np.asarray(ds.model_present.transpose("dataset", "model").values)
    variables: dict[str, Any] = {}
    for name, (dims, values) in ordered.items():
        if "model" in dims and values.dtype.kind == "f":
            # Integer counts stay integers (0 for an absent model; model_present says so); flags stay booleans
            # (best_on_edge is False for an absent model: its best_threshold is NaN).
            values = np.where(lay_out(present, ("dataset", "model"), dims), values, np.nan)
        variables[lb(name)] = xr.Variable(dims, values)
    if budgets is not None:  # several (SPEC §7): their own coordinate
        variables["recall_at_budgets"] = xr.DataArray(variables["recall_at_budgets"], coords={"budget": budgets})
    # The labels of the statistics' own axes (SPEC §5: fraction_within's bounds, in s).
    along: dict[str, Any] = {dim: np.asarray(labels, dtype=np.float64) for dim, labels in timing.ALONG.values()}
    if "residual_sums" in families:
        along["residual_term"] = text(timing.SUM_TERMS)
    result = describe(ds.assign(variables).assign_coords(along), options)
    if "warnings" in ds.attrs:
        # A run's results (assembly sets the run's warnings before deriving): the edges join its warnings, the
        # list the CLI prints and the store keeps.  Messages already there (the store's own, derived again on
        # opening or extending) are not said twice.
        said = list(ds.attrs["warnings"])
        found = edge_warnings(result, options) + concentration_warnings(result, stats["mode"])
        if "grid" in stats:  # SPEC §5, "Residuals on a grid" (results.quality); the verdict reads the records
            # With windows, where the picks and arrivals sit in them decides (scope.placement).
            placement = dict(result.attrs.get("coverage") or {}).get("placement")
            found += grid_warnings(result, stats["grid"], placement)
            result.attrs["data_quality"] = quality_flags(result, stats["mode"], stats["grid"], placement)
        known = set(said)  # a set: one test per message, not a scan of the list (16,000 models: 32,000 lines)
        new = [w for w in found if w not in known]
        if new:
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
                            "and fraction_within_0.1 read that grid rather than the picker's timing (SPEC §5).")
    return messages


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
    # Each segment's pairs are sorted by (dataset, model, phase, …) (an extended store has several, SPEC §11):
    # a stable sort on the stream makes each stream one run (its statistics do not depend on the order).
    if key.size and (np.diff(key) < 0).any():
        order = np.argsort(key, kind="stable")
        key, residual_ns, conf, group = key[order], residual_ns[order], conf[order], group[order]
    bounds = np.flatnonzero(np.diff(key)) + 1
    streams = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, key.size]):
        if hi <= lo:
            continue
        k = int(key[lo])  # the stream: (dataset * models + model) * 2 + phase
        streams[(k // (nm * 2), (k // 2) % nm, k % 2)] = timing.pair_statistics(
            residual_ns[lo:hi], conf[lo:hi], group[lo:hi], thresholds=options.grid, tol=options.tol,
            threshold=options.threshold_of(k % 2), n_groups=ng)
    return timing.lay_out(streams, shape=(ds.sizes["dataset"], nm), n_thresholds=ds.sizes["threshold"],
                          n_groups=ng, grouped=grouped)


def stored_statistics(ds: xr.Dataset, options: Options) -> dict[str, dict[str, np.ndarray]]:
    """The statistics of the pairs as ``ds`` states them (its timing readings), in the form
    :func:`pair_statistics_of` gives: what :func:`derive` is given where the pairs are not read (a store
    opened lazily, :func:`pickscale.store.open_results`), so that every other reading is derived again."""
    grouped = "pair_group" in ds or "n_pairs_by_group" in ds  # SPEC §14
    out = timing.lay_out({}, shape=(ds.sizes["dataset"], ds.sizes["model"]), n_thresholds=options.grid.size,
                         n_groups=ds.sizes.get("group", 0) if grouped else 0, grouped=grouped)
    for name in out["sweep"]:
        if name in ds:
            out["sweep"][name] = np.asarray(ds[name].transpose("dataset", "model", "phase", "threshold",
                                                               *_along(name)).values)
    for name in out["by_group"]:
        if f"{name}_by_group" in ds:
            out["by_group"][name] = np.asarray(ds[f"{name}_by_group"].transpose("dataset", "model", "phase",
                                                                                "group", *_along(name)).values)
    if "residual_sums" in ds:  # (stores written before they were kept have none)
        out["sums"]["residual_sums"] = np.asarray(ds["residual_sums"].transpose(
            "dataset", "model", "phase", "level", "residual_term").values)
    else:
        del out["sums"]
    if keeps_flags(ds):  # (stores written before they were kept have none: no rule fires)
        n = np.stack([out["sweep"]["n_pairs"][:, :, p, j] for p, j in enumerate(options.threshold_indices)], axis=-1)
        kept = {name: np.asarray(ds[name].transpose("dataset", "model", "phase").values) for name in FLAG_NAMES}
        out["mode"], out["grid"] = rule_inputs(kept, n)
    return out


class _Totals:
    """The counts of ``ds`` summed over stations, as (dims, numpy values), each made once when first read.

    The sums are xarray's (``.sum("station")``, in canonical station order), as the metrics were always
    derived from; everything after them is numpy.
    """

    def __init__(self, ds: xr.Dataset, options: Options) -> None:
        self.ds, self.options = ds, options
        self._sums: dict[str, xr.DataArray] = {}
        self._phases = [str(p) for p in ds["phase"].values]

    def total(self, name: str) -> xr.DataArray:
        if name not in self._sums:
            self._sums[name] = self.ds[name].sum("station")
        return self._sums[name]

    def read(self, given: Input) -> tuple[tuple[str, ...], np.ndarray]:
        """One kernel input (:class:`~pickscale.results.registry.Input`) as (dims, values)."""
        total = self.total(given.name)
        if given.shared:  # each phase at its own shared threshold (SPEC §2)
            total = self.options.at_shared(total, drop=True)
        if given.over is not None:
            total = total.sum(given.over)
        dims, values = tuple(map(str, total.dims)), np.asarray(total.values)
        if given.phase is not None:
            axis = dims.index("phase")
            values = np.take(values, self._phases.index(given.phase), axis=axis)
            dims = dims[:axis] + dims[axis + 1:]
        return dims, values


def _evaluate(entry: Derived, totals: _Totals, laid: dict[str, tuple[tuple[str, ...], np.ndarray]],
              sizes: Any) -> tuple[tuple[str, ...], np.ndarray]:
    """One :class:`~pickscale.results.registry.Derived` variable: its kernel on its inputs laid out on its dims.

    The inputs get the axes ``xarray.apply_ufunc`` would give them (the variable's dims, size 1 where an input
    lacks one, the core dim last), so every number is the kernel's on the same values, bit for bit.
    """
    dims = entry.variable.dims
    outer = tuple(d for d in dims if d != entry.core)
    args = []
    for given in entry.inputs:
        in_dims, values = laid[given.name] if given.name in laid else totals.read(given)
        target = outer + (entry.core,) if entry.core is not None and entry.core in in_dims else outer
        args.append(lay_out(values, in_dims, target))
    out = entry.func(*args)
    values = np.asarray(out if entry.output is None else out[entry.output])
    shape = tuple(sizes[d] for d in dims)
    if values.shape != shape:  # an axis no input had at its full size (none today): as xarray would hold it
        values = np.array(np.broadcast_to(values, shape))
    return dims, values


def _on(arrays: dict[str, np.ndarray], dims: tuple[str, ...]) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    return {name: (dims, np.asarray(values)) for name, values in arrays.items()}


def _along(name: str) -> tuple[str, ...]:
    """The dim of a statistic's own axis (``within`` of ``fraction_within``: SPEC §5), after the others; or none."""
    return (timing.ALONG[name][0],) if name in timing.ALONG else ()


def _on_statistics(arrays: dict[str, np.ndarray], dims: tuple[str, ...]
                   ) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """The pairs' statistics on ``dims``, each with its own axis (:func:`_along`) last."""
    return {name: ((*dims, *_along(name)), np.asarray(values)) for name, values in arrays.items()}


def _readings(ds: xr.Dataset, options: Options, totals: _Totals,
              laid: dict[str, tuple[tuple[str, ...], np.ndarray]],
              ) -> tuple[dict[str, tuple[tuple[str, ...], np.ndarray]], np.ndarray | None]:
    """SPEC §7's readings (the ``readings`` family): of the fine curve and of the grid's f1, recall and
    precision, per (dataset, model, phase) present; with several budgets also the ``budget`` coordinate."""
    nd = ds.sizes["dataset"]
    present = ds.model_present.values
    dmpt = ("dataset", "model", "phase", "threshold")
    emitted_floor = totals.total("emitted").transpose(*dmpt).values[..., 0]  # (d, m, p)
    n_ref_v = totals.total("n_reference").transpose("dataset", "phase").values  # (d, p)
    budget = np.zeros((nd, 2), dtype=np.int64)
    for d in range(nd):
        for p in range(2):
            if options.budgets:  # several: the first is the detection table's budget
                budget[d, p] = options.budgets[0]
            else:
                budget[d, p] = curves.default_budget(n_ref_v[d, p], emitted_floor[d, present[d], p])
    names = ("recall_at_budget", "best_threshold", "f1_lb_at_best", "recall_at_best", "precision_lb_at_best")
    fe, fm = ds.fine_emitted.values, ds.fine_matched.values
    f1v, recv, precv = (lay_out(laid[n][1], laid[n][0], dmpt) for n in ("f1_lb", "recall", "precision_lb"))
    # Every (dataset, model, phase) at once (numpy, not a Python step per model: 16,000 models were seconds);
    # a model absent from a dataset reads NaN.
    absent = ~present[:, :, None]
    read = (curves.recall_at_budget_along(fe, fm, n_ref_v[:, None, :], budget[:, None, :]),
            *curves.best_threshold_along(options.grid, f1v, recv, precv))
    values = {name: np.where(absent, np.nan, v) for name, v in zip(names, read)}
    dmp = ("dataset", "model", "phase")
    result = _on(values, dmp)
    # SPEC §7: the best threshold at an end of the grid says only that the grid stopped there.
    result["best_on_edge"] = (dmp, curves.best_on_edge(options.grid, values["best_threshold"]))
    result["matched_budget"] = (("dataset", "phase"), budget)
    several = None
    if len(options.budgets) > 1:
        # Several budgets (SPEC §7): recall_at_budget at each, dim ``budget`` (ascending).
        several = np.asarray(sorted(options.budgets), dtype=np.int64)
        at = np.stack([curves.recall_at_budget_along(fe, fm, n_ref_v[:, None, :], b) for b in several], axis=-1)
        result["recall_at_budgets"] = ((*dmp, "budget"), np.where(absent[..., None], np.nan, at))
    result["ap_lb"] = (dmp, curves.average_precision(fe, fm, n_ref_v[:, None, :]))
    return result, several
