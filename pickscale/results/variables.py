"""Every variable of the results Dataset: its dims, long_name, units and description, in one place.

:data:`VARIABLES` is keyed by canonical name (with the ``_lb`` suffix of a
lower bound); :func:`metric_name` gives the name a run uses.  The assembly
lays the counts out on these dims, and :func:`describe` sets these attributes.

Examples
--------
>>> VARIABLES["recall"].dims, VARIABLES["residual"].units
(('dataset', 'model', 'phase', 'threshold'), 's')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..kernel.combine import LAID_OUT
from ..metrics.timing import GROUP_NAMES
from ..options import Options

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["text", "Variable", "VARIABLES", "COORDINATES", "OPTIONAL_VARIABLES", "OPTIONAL_COORDINATES",
           "STATION_FIELDS", "TIME_BINNED", "TIME_BIN_ATTRS", "TOLERANCED", "metric_name",
           "describe", "GROUPED", "GROUP_TIMING", "GROUPED_VARIABLES", "residual_ns", "EVENTS", "EVENT_COUNTS",
           "EVENT_VARIABLES", "RATE_VARIABLES", "RATE_COUNTS", "RATE_ATTRS", "RANKED_VARIABLES", "RANKED", "RUNS",
           "declared_dims"]


def residual_ns(seconds: Any) -> np.ndarray:
    """The residuals a Dataset holds (seconds, converted once from integer ns: SPEC §5) back as int64 ns.

    Exact for ``|residual| <= 1e6`` s: ×1e9 rounded gives the nanoseconds back.

    Examples
    --------
    >>> residual_ns(np.array([-0.2, 0.1, 1.000000001])).tolist()
    [-200000000, 100000000, 1000000001]
    """
    return np.round(np.asarray(seconds) * 1e9).astype(np.int64)


def text(values: Any) -> np.ndarray:
    """Labels (datasets, models, phases, stations, groups) as a text coordinate: NumPy ``StringDType``.

    The type Zarr v3 gives text back as, so results have one type whether they come from
    :func:`pickscale.score`, :func:`pickscale.open_results` or a plain ``xr.open_zarr``.

    >>> text(["PhaseNet", "EQT"]).dtype
    StringDType()
    """
    return np.asarray([str(v) for v in values], dtype=np.dtypes.StringDType())


@dataclass(frozen=True)
class Variable:
    """What a variable (or coordinate) of the results is: its dims and its CF-style attributes."""

    dims: tuple[str, ...]
    long_name: str
    units: str
    description: str

    @property
    def attrs(self) -> dict[str, str]:
        return {"long_name": self.long_name, "units": self.units, "description": self.description}


_TH = "at each threshold of the sweep grid (picks with conf >= threshold)"
_DMPT = ("dataset", "model", "phase", "threshold")
_DMP = ("dataset", "model", "phase")

#: Every data variable, by canonical name: the counts, then the metrics derived from them.
VARIABLES: dict[str, Variable] = {
    "n_reference": Variable(("dataset", "phase", "station"), "reference arrivals", "1",
             "Scored reference arrivals per station and phase (SPEC §2)."),
    "model_present": Variable(("dataset", "model"), "model ran on dataset", "1",
             "True when the model has a pick at or above the floor at a scored station of the dataset; counts of "
             "absent models are 0 and their metrics NaN."),
    "station_scored": Variable(("dataset", "station"), "station scored", "1",
             "True when the station has reference arrivals and picks in the dataset (SPEC §2)."),
    "emitted": Variable(("dataset", "model", "phase", "threshold", "station"), "picks emitted", "1",
             f"Picks of the model and phase, per station, {_TH}."),
    "matched": Variable(("dataset", "model", "phase", "threshold", "station"), "picks matched", "1",
             f"Picks in a pair of the detection matching (tol), per station, {_TH}."),
    "duplicates": Variable(("dataset", "model", "phase", "threshold", "station"), "duplicate picks", "1",
             f"Unmatched picks within tol of an arrival of their phase, per station, {_TH}."),
    "swapped": Variable(("dataset", "model", "phase", "threshold", "station"), "swapped arrivals", "1",
             "Arrivals unmatched by their own phase but within tol of a pick of the other phase, per station, "
             f"{_TH}."),
    "cal_n": Variable(("dataset", "model", "phase", "bin", "station"), "picks per calibration bin", "1",
             "Picks at or above the floor in bin min(floor(conf*10), 9), per station."),
    "cal_hits": Variable(("dataset", "model", "phase", "bin", "station"), "matched picks per calibration bin", "1",
             "Of cal_n, the picks in a pair of the detection matching."),
    "cal_conf": Variable(("dataset", "model", "phase", "bin", "station"), "sum of confidence per calibration bin", "1",
             "Sum of conf over the picks of cal_n."),
    "brier_sum": Variable(("dataset", "model", "phase", "station"), "sum of squared calibration error", "1",
             "Sum of (conf - hit)^2 over picks at or above the floor, per station."),
    "cal_conf_limbs": Variable(("dataset", "model", "phase", "bin", "limb", "station"),
             "exact sum of confidence per calibration bin (limbs)", "1",
             "Sum of round(conf * 2^62) over the picks of cal_n, as four 16-bit limb sums in canonical form "
             "(kernel/exact.py): cal_conf is derived from it. Kept so that stores extend exactly (pickscale "
             "extend)."),
    "conf_sq_sums": Variable(("dataset", "model", "phase", "product", "station"),
             "exact sum of squared confidence (limb products)", "1",
             "Sum of round(conf * 2^62)^2 over picks at or above the floor, as ten limb-product sums in canonical "
             "form (kernel/exact.py); with hit_conf_limbs and cal_hits it gives brier_sum."),
    "hit_conf_limbs": Variable(("dataset", "model", "phase", "limb", "station"),
             "exact sum of confidence of matched picks (limbs)", "1",
             "Sum of round(conf * 2^62) over the picks in a detection pair, as four 16-bit limb sums in canonical "
             "form (kernel/exact.py)."),
    "n_reference_over_time": Variable(("dataset", "phase", "time_bin", "station"), "reference arrivals per time bin",
             "1", "Scored reference arrivals per station, phase and bin of their time (SPEC §10)."),
    "emitted_over_time": Variable(("dataset", "model", "phase", "time_bin", "station"), "picks emitted per time bin",
             "1", "Picks with conf >= the shared threshold per station and bin of their time (SPEC §10)."),
    "matched_over_time": Variable(("dataset", "model", "phase", "time_bin", "station"), "picks matched per time bin",
             "1", "Of emitted_over_time, the picks in a detection pair, per bin of their arrival's time (SPEC §10)."),
    "recall_over_time": Variable(("dataset", "model", "phase", "time_bin"), "recall per time bin", "1",
             "matched_over_time / n_reference_over_time at the shared threshold, summed over stations."),
    "precision_lb_over_time": Variable(("dataset", "model", "phase", "time_bin"),
             "precision per time bin (lower bound)", "1",
             "matched_over_time / emitted_over_time at the shared threshold, summed over stations."),
    "matched_at_tol": Variable(("dataset", "model", "phase", "tol", "station"), "picks matched at each tolerance",
             "1", "Picks with conf >= the shared threshold in a detection pair of the matching at each tolerance of "
             "the run's tols option (SPEC §13); at tol itself it equals matched at the shared threshold."),
    "recall_at_tol": Variable(("dataset", "model", "phase", "tol"), "recall at each tolerance", "1",
             "matched_at_tol / n_reference at the shared threshold, summed over stations (SPEC §13)."),
    "precision_lb_at_tol": Variable(("dataset", "model", "phase", "tol"), "precision at each tolerance (lower bound)",
             "1", "matched_at_tol / emitted at the shared threshold, summed over stations (SPEC §13)."),
    "fine_emitted": Variable(("dataset", "model", "phase", "fine_threshold"), "picks emitted (fine curve)", "1",
             "Picks with conf >= k/1000, summed over stations (SPEC §7)."),
    "fine_matched": Variable(("dataset", "model", "phase", "fine_threshold"), "picks matched (fine curve)", "1",
             "Matched picks with conf >= k/1000, summed over stations (SPEC §7)."),
    "pair_dataset": Variable(("pair",), "dataset of pair", "1",
             "Index into the dataset coordinate of each residual pair."),
    "pair_model": Variable(("pair",), "model of pair", "1", "Index into the model coordinate of each residual pair."),
    "pair_phase": Variable(("pair",), "phase of pair", "1",
             "Index into the phase coordinate (0 = P, 1 = S) of each residual pair."),
    "pair_station": Variable(("pair",), "station of pair", "1",
             "Index into the station coordinate of each residual pair."),
    "residual": Variable(("pair",), "onset residual", "s",
             "Pick minus arrival of every pair of the residual_tol matching (integer ns difference, then seconds)."),
    "pair_conf": Variable(("pair",), "confidence of paired pick", "1",
             "Conf of the pick of each residual pair: the pair counts at every threshold <= pair_conf."),
    "recall": Variable(_DMPT, "recall", "1", "matched / n_reference (SPEC §4); exact against a bulletin."),
    "precision_lb": Variable(_DMPT, "precision (lower bound)", "1",
             "matched / emitted; a lower bound unless the reference is exhaustive; "
             "NaN when n_reference = 0 (SPEC §4)."),
    "f1_lb": Variable(_DMPT, "F1 (lower bound)", "1",
             "2 matched / (n_reference + emitted); 0 when nothing matched, NaN when n_reference = 0."),
    "extra_rate": Variable(_DMPT, "extra picks per arrival", "1", "(emitted - matched) / n_reference."),
    "duplicate_rate": Variable(_DMPT, "duplicate rate", "1", "duplicates / matched."),
    "swap_rate": Variable(("dataset", "model", "threshold"), "phase swap rate", "1",
             "(swapped_P + swapped_S) / (n_reference_P + n_reference_S)."),
    "n_pairs": Variable(_DMPT, "residual pairs", "1",
             "Pairs of the residual_tol matching with conf >= threshold (SPEC §5)."),
    "mae": Variable(_DMPT, "mean absolute onset error", "s", "mean |residual|."),
    "rmse": Variable(_DMPT, "root-mean-square onset error", "s", "sqrt(mean residual^2)."),
    "medae": Variable(_DMPT, "median absolute onset error", "s", "median |residual| (exact)."),
    "bias": Variable(_DMPT, "median onset residual", "s", "median residual: early < 0 < late (exact)."),
    "residual_mean": Variable(_DMPT, "mean onset residual", "s", "mean residual."),
    "residual_std": Variable(_DMPT, "standard deviation of onset residual", "s",
             "sample standard deviation of the residuals, ddof = 1; NaN when n_pairs < 2."),
    "gross_error_rate": Variable(_DMPT, "gross error rate", "1", "fraction of residuals with |residual| > tol."),
    "fraction_within": Variable((*_DMPT, "within"), "fraction of residuals within a bound", "1",
             "fraction of residuals with |residual| <= within (the coordinate, in s: 0.1, 0.25, 0.5)."),
    "p10": Variable(_DMPT, "10th percentile of onset residual", "s",
             "residual quantile at 0.10, linear between order statistics at h = (n_pairs - 1) 0.10 (SPEC §5)."),
    "p90": Variable(_DMPT, "90th percentile of onset residual", "s",
             "residual quantile at 0.90, linear between order statistics at h = (n_pairs - 1) 0.90 (SPEC §5)."),
    "iqr": Variable(_DMPT, "interquartile range of onset residual", "s",
             "p75 - p25 of the residuals, each quantile as p10 (SPEC §5)."),
    "mean_conf": Variable(("dataset", "model", "phase", "bin"), "mean confidence per bin", "1",
             "mean conf of the picks in the calibration bin (SPEC §6)."),
    "observed_lb": Variable(("dataset", "model", "phase", "bin"), "observed frequency per bin (lower bound)", "1",
             "fraction of the bin's picks in a detection pair; NaN when n_reference = 0 (SPEC §4)."),
    "ece_lb": Variable(_DMP, "expected calibration error (lower bound)", "1",
             "sum over non-empty bins of n_b/N |mean_conf_b - observed_b| (n_b: cal_n of bin b); NaN when "
             "n_reference = 0 (SPEC §4)."),
    "brier_lb": Variable(_DMP, "Brier score (lower bound)", "1",
             "mean (conf - hit)^2 over picks at or above the floor; NaN when n_reference = 0 (SPEC §4)."),
    "matched_budget": Variable(("dataset", "phase"), "matched pick budget", "1",
             "Picks at which every model is read (SPEC §7): min(n_reference, smallest emitted at the floor) unless"
             " set (option budget; the first of several)."),
    "recall_at_budget": Variable(_DMP, "recall at the matched budget", "1",
             "Recall interpolated on the fine curve at matched_budget picks; NaN outside the model's emitted "
             "range."),
    "best_threshold": Variable(_DMP, "own best threshold", "1", "Grid threshold with the highest f1 (lowest on ties)."),
    "best_on_edge": Variable(_DMP, "own best threshold on the edge of the grid", "1",
             "True where best_threshold is the lowest or the highest grid threshold (which includes a best below "
             "the lowest confidence the model emitted): the grid, not the model, set it (SPEC §7). False where "
             "best_threshold is NaN."),
    "f1_lb_at_best": Variable(_DMP, "F1 at own best threshold (lower bound)", "1", "f1 at best_threshold."),
    "recall_at_best": Variable(_DMP, "recall at own best threshold", "1", "recall at best_threshold."),
    "precision_lb_at_best": Variable(_DMP, "precision at own best threshold (lower bound)", "1",
             "precision at best_threshold."),
    "ap_lb": Variable(_DMP, "average precision (lower bound)", "1",
             "sum_k (recall_k - recall_k+1) precision_k over the fine curve."),
    # SPEC §5's rules on the residuals at the shared threshold, where they fire (0 elsewhere): metrics/flags.py.
    "concentrated_residual": Variable(_DMP, "value the residuals are concentrated on", "ns",
             "Where the residuals at the shared threshold are concentrated on one value (SPEC §5): that value, in "
             "integer ns; 0 elsewhere."),
    "concentrated_count": Variable(_DMP, "residuals on the concentrated value", "1",
             "Where the residuals at the shared threshold are concentrated on one value (SPEC §5): how many equal "
             "it; 0 elsewhere."),
    "grid_step": Variable(_DMP, "step of the residuals' grid", "ns",
             "Where the residuals at the shared threshold lie on a grid (SPEC §5): its step, in integer ns; 0 "
             "elsewhere."),
    "grid_offset": Variable(_DMP, "offset of the residuals' grid", "ns",
             "Where the residuals lie on a grid (SPEC §5): the common residue modulo the step, in (-step/2, step/2] "
             "ns; 0 elsewhere."),
    "grid_count": Variable(_DMP, "residuals on the grid", "1",
             "Where the residuals lie on a grid (SPEC §5): how many have its residue; 0 elsewhere."),
    "grid_values": Variable(_DMP, "distinct residuals on the grid", "1",
             "Where the residuals lie on a grid (SPEC §5): how many distinct values those take; 0 elsewhere."),
    # The pairs' exact sums per level (metrics/level_sums.py): what an extension merges a stream's statistics
    # from without reading its stored pairs (SPEC §5, §11).
    "residual_sums": Variable((*_DMP, "level", "residual_term"), "exact sums of the residual pairs", "1",
             "Per level (the pairs whose conf clears exactly that many thresholds of the grid): the pairs, those "
             "with |e| > tol, those with |e| <= each bound of within, then Σ|e|, Σ|e| over e < 0 and Σe² in integer "
             "ns, each as four base-2^31 digits, least first (SPEC §5)."),
}

#: The coordinates that carry attributes.
COORDINATES: dict[str, Variable] = {
    "threshold": Variable(("threshold",), "confidence threshold", "1",
                          "A pick survives threshold θ when conf >= θ (SPEC §2)."),
    "fine_threshold": Variable(("fine_threshold",), "confidence threshold (fine curve)", "1",
                               "k/1000 for floor <= k/1000 <= 1 (SPEC §7)."),
    "bin": Variable(("bin",), "calibration bin", "1", "min(floor(conf*10), 9) (SPEC §6)."),
    "within": Variable(("within",), "bound on the absolute residual", "s",
                       "The bounds of fraction_within: |residual| <= within (SPEC §5)."),
}

#: Coordinates of optional variables: ``budget`` with several budgets, ``model_b`` with intervals.
OPTIONAL_COORDINATES: dict[str, Variable] = {
    "budget": Variable(("budget",), "pick budget", "1",
                       "The budgets of recall_at_budgets: the run's budget option, ascending (SPEC §7); only with "
                       "several budgets."),
    "tol": Variable(("tol",), "detection tolerance", "s",
                    "The extra detection tolerances of the run's tols option, ascending (SPEC §13); only with tols."),
    "model_b": Variable(("model_b",), "model compared with", "1",
                        "The second model of each paired difference (model minus model_b; SPEC §12)."),
}

#: The ``time_bin`` coordinate's attributes (no ``units``: it is a datetime, encoded by xarray).
TIME_BIN_ATTRS = {"long_name": "start of time bin",
                  "description": "Start (UTC) of each bin of the run's time_bin option (SPEC §10); a bin holds the "
                                 "times t with start <= t < the next start."}

_DMMP = ("dataset", "model", "model_b", "phase")
_INTERVAL_OF = {"recall": _DMP, "precision_lb": _DMP, "f1_lb": _DMP, "recall_at_budget": _DMP, "mae": _DMP,
                "ece_lb": _DMP, "recall_at_budgets": ("dataset", "model", "phase", "budget")}
_SHARED = "at the shared threshold, "

#: Variables that exist only with several budgets (SPEC §7) or after :func:`pickscale.bootstrap` (SPEC §12).
OPTIONAL_VARIABLES: dict[str, Variable] = {
    "recall_at_budgets": Variable(("dataset", "model", "phase", "budget"), "recall at each pick budget", "1",
             "recall_at_budget read at each of several budgets (option budget as a list; SPEC §7)."),
    **{f"{metric}_{end}": Variable(
        dims, f"{'lower' if end == 'lo' else 'upper'} end of the interval of {metric}",
        "s" if metric == "mae" else "1",
        f"Bootstrap over stations (SPEC §12), {_SHARED if metric in ('recall', 'precision_lb', 'f1_lb', 'mae') else ''}"
        f"{'symmetric bootstrap-t' if metric in ('recall', 'precision_lb', 'f1_lb', 'mae') else 'percentile'} "
        "interval; level, draws and seed in attrs['bootstrap'].")
       for metric, dims in _INTERVAL_OF.items() for end in ("lo", "hi")},
    **{f"{metric}_diff{end}": Variable(
        _DMMP, f"{metric} of model minus model_b{'' if not end else ' (' + end[1:] + ' end of interval)'}", "1",
        f"Paired difference on the same resampled stations (SPEC §12)"
        f"{'' if not end else ', symmetric bootstrap-t interval' if metric == 'recall' else ', percentile interval'}.")
       for metric in ("recall", "recall_at_budget") for end in ("", "_lo", "_hi")},
}

#: The variables (and the coordinate) that exist only in results scored with ``time_bin``.
TIME_BINNED: tuple[str, ...] = ("n_reference_over_time", "emitted_over_time", "matched_over_time",
                                "recall_over_time", "precision_lb_over_time")

#: The variables (and the coordinate ``tol``) that exist only in results scored with ``tols`` (SPEC §13).
TOLERANCED: tuple[str, ...] = ("matched_at_tol", "recall_at_tol", "precision_lb_at_tol")

#: Groups of arrivals (SPEC §14): what belongs to an arrival, per group; only in results scored with ``group_by``.
#: Picks emitted (and extra picks) have no group: there is no precision per group.
_DMPG = ("dataset", "model", "phase", "group")
_GROUP_TIMING = GROUP_NAMES  # the statistics per group of arrivals: declared with the kernel
GROUPED_VARIABLES: dict[str, Variable] = {
    "n_reference_by_group": Variable(("dataset", "phase", "group", "station"), "reference arrivals per group",
             "1", "Scored reference arrivals per station, phase and group of the arrival (SPEC §14)."),
    "matched_by_group": Variable(("dataset", "model", "phase", "group", "station"), "arrivals matched per group",
             "1", "Picks with conf >= the shared threshold in a detection pair, per group of their arrival "
             "(SPEC §14)."),
    "pair_group": Variable(("pair",), "group of pair", "1",
             "Index into the group coordinate of each residual pair's arrival (SPEC §14)."),
    "recall_by_group": Variable(_DMPG, "recall per group", "1",
             "matched_by_group / n_reference_by_group at the shared threshold, summed over stations (SPEC §14)."),
    **{f"{name}_by_group": Variable((*_DMPG, *VARIABLES[name].dims[4:]), f"{VARIABLES[name].long_name} per group",
                                    VARIABLES[name].units,
                                    f"As {name} (SPEC §5), at the shared threshold, over the residual pairs of the "
                                    "arrivals of each group (SPEC §14).")
       for name in _GROUP_TIMING},
}
VARIABLES.update(GROUPED_VARIABLES)
#: The variables (and the coordinate ``group``) that exist only in results scored with ``group_by`` (SPEC §14).
GROUPED: tuple[str, ...] = tuple(GROUPED_VARIABLES)
#: The timing statistics per group (SPEC §14), as ``<name>_by_group``.
GROUP_TIMING: tuple[str, ...] = _GROUP_TIMING
#: The ``group`` coordinate's attributes.
GROUP_ATTRS = {"long_name": "group of arrivals",
               "description": "The groups of the run's group_by option (SPEC §14): bins [a,b) of a numeric column "
                              "with open ends <first and >=last, or the values of a text column; then missing."}

#: Event detection (SPEC §19): only in results whose reference has events (``options.events``).
_DMT = ("dataset", "model", "threshold")
_EVENT_DETECTED = ("an event is detected when at least event_min_arrivals of its scored arrivals are matched "
                   "(detection matching, tol)")
EVENT_VARIABLES: dict[str, Variable] = {
    "event_n_reference": Variable(("dataset", "event", "phase"), "scored arrivals of the event", "1",
             "Scored reference arrivals of each event, per phase (SPEC §19); 0 where the event is not the "
             "dataset's or has no scored arrival."),
    "event_levels": Variable(("dataset", "event", "model", "phase", "event_rank"), "detection levels of the event",
             "1", "Per model and phase, the event_min_arrivals highest detection levels of the event's arrivals, "
             "descending (an arrival's level: how many grid thresholds are at or below the conf of the pick that "
             "took it, 0 if none; matched at threshold k exactly when its level is > k; SPEC §19). Kept so that "
             "events detect at every threshold and stores extend exactly."),
    "event_group": Variable(("dataset", "event"), "group of the event", "1",
             "Index into the group coordinate: the group of the event's earliest scored arrival (SPEC §19); -1 "
             "where the event is not the dataset's. Only with group_by."),
    "n_events": Variable(("dataset",), "events", "1", "Events with at least one scored arrival (SPEC §19)."),
    "events_detected": Variable(_DMT, "events detected", "1",
             f"Events for which, {_TH}, {_EVENT_DETECTED} (SPEC §19)."),
    "event_detection_rate": Variable(_DMT, "event detection rate", "1", "events_detected / n_events (SPEC §19)."),
    "events_detected_at_threshold": Variable(("dataset", "model"), "events detected at the shared threshold", "1",
             f"Events for which, {_SHARED}each arrival at its own phase's, {_EVENT_DETECTED} (SPEC §19)."),
    "event_detection_rate_at_threshold": Variable(("dataset", "model"), "event detection rate at the shared "
             "threshold", "1", "events_detected_at_threshold / n_events (SPEC §19)."),
}
# Not in VARIABLES (the variables of every run, with its optional families by option) nor in OPTIONAL_VARIABLES
# (what bootstrap draws again): declared apart, and looked up with declared_dims.
#: The variables (and the coordinates ``event``, ``event_rank``) that exist only in results with events (SPEC §19).
EVENTS: tuple[str, ...] = tuple(EVENT_VARIABLES)
#: The event counts stored (what the derived event readings are made from).
EVENT_COUNTS: tuple[str, ...] = ("event_n_reference", "event_levels", "event_group")
#: The ``event`` and ``event_rank`` coordinates' attributes.
EVENT_ATTRS = {"event": {"long_name": "event", "description": "The reference's event ids (SPEC §19), of every "
                         "dataset, in code-point order."},
               "event_rank": {"long_name": "rank of detection level", "description": "0 for the highest of an "
                              "event's detection levels, up to event_min_arrivals - 1 (SPEC §19)."}}

#: Pick rates (SPEC §20).
_BY_RATE_STATION = ("dataset", "model", "phase", "threshold", "rate_station")
#: The pick-rate variables (SPEC §20), declared apart from :data:`VARIABLES`: only results that counted pick
#: rates have them (every run since they exist; a store written before: none).
RATE_VARIABLES: dict[str, Variable] = {
    "rate_picks": Variable(_BY_RATE_STATION, "picks at the station", "1",
                           "Picks of the model at the station with conf >= threshold: every pick read at or above "
                           "the floor, whatever the scope (SPEC §20); 0 where the model has none there."),
    # The days picked, as runs: one row per maximal run of consecutive UTC days with a pick of a (dataset,
    # model, rate_station), never a stations × days table (a station picking every day is one run).
    "rate_run_dataset": Variable(("rate_run",), "dataset of rate run", "1",
                                 "Index into the dataset coordinate of each rate run: one row per maximal run of "
                                 "consecutive UTC days on each of which the model has a pick (any phase, at or "
                                 "above the floor) at the station; runs sorted by (dataset, model, station, first "
                                 "day), neither overlapping nor touching (SPEC §20)."),
    "rate_run_model": Variable(("rate_run",), "model of rate run", "1",
                               "Index into the model coordinate of each rate run (SPEC §20)."),
    "rate_run_station": Variable(("rate_run",), "station of rate run", "1",
                                 "Index into the rate_station coordinate of each rate run (SPEC §20)."),
    "rate_run_first": Variable(("rate_run",), "first UTC day of rate run", "",
                               "The first UTC day (its midnight) of each rate run (SPEC §20)."),
    "rate_run_last": Variable(("rate_run",), "last UTC day of rate run", "",
                              "The last UTC day (its midnight) of each rate run, included: the run is every day "
                              "from rate_run_first to rate_run_last (SPEC §20)."),
    "rate_days": Variable(("dataset", "model", "rate_station"), "days with picks", "d",
                          "UTC days on which the model has a pick at the station, any phase: the days of its rate "
                          "runs, summed (SPEC §20)."),
    "picks_per_day": Variable(_BY_RATE_STATION, "picks per day", "1/d",
                              "rate_picks / rate_days (SPEC §20); NaN where the model has no pick at the station."),
}
#: The stored pick-rate counts (what ``rate_days`` and ``picks_per_day`` are derived from).
RATE_COUNTS: tuple[str, ...] = ("rate_picks", "rate_run_dataset", "rate_run_model", "rate_run_station",
                                 "rate_run_first", "rate_run_last")
#: The ``rate_station`` coordinate's attributes.
RATE_ATTRS = {"rate_station": {"long_name": "station with picks", "description": "Every station with a pick of a "
                               "dataset and model of the results, scored or not (SPEC §20), in code-point order."}}

#: The ranked runs of the residual pairs (SPEC §9): each run's pairs (a stream's in a segment, or a range of its
#: stations) again in the same rows, ranked by residual, with a table of their blocks -- what an extension reads
#: of a stored stream, a block at a time (:class:`pickscale.metrics.ranked_runs.RankedStream`), instead of
#: every pair.  The runs themselves are listed in ``attrs["pair_runs"]``.  A store written before has none.
RANKED_VARIABLES: dict[str, Variable] = {
    "ranked_residual": Variable(("pair",), "ranked residual", "ns",
                                "The residuals (integer ns) of each ranked run's pairs, ascending, ties by "
                                "ranked_level ascending; the run's rows are its canonical pairs' (SPEC §9)."),
    "ranked_level": Variable(("pair",), "level of ranked residual", "1",
                             "How many thresholds of the grid the conf of each ranked residual's pair clears."),
    "ranked_first": Variable(("ranked_block",), "first residual of block", "ns",
                             "Each ranked run cut into blocks of 1024 rows, run after run: the block's first "
                             "ranked_residual (SPEC §9)."),
    "ranked_counts": Variable(("ranked_block", "level"), "pairs of block per level", "1",
                              "How many of the block's ranked residuals have each level (SPEC §9)."),
}
#: The ranked runs' variables, in the Dataset's order.
RANKED: tuple[str, ...] = tuple(RANKED_VARIABLES)
#: The root attribute listing the ranked runs in row order: ``[dataset, model, phase, pairs]`` each (SPEC §9).
RUNS = "pair_runs"

#: The per-station counts of the Dataset: the kernel's per-station fields (less ``n_reference``, which has no
#: model axis), with the dims between ``dataset`` and ``station``.  ``n_reference_over_time`` is one of them
#: although it has no model axis.  The exact sums (``cal_conf_limbs``, ``conf_sq_sums``, ``hit_conf_limbs``;
#: dims ``limb`` and ``product``) are stored too, so that a store extends exactly (:func:`pickscale.extend`).
STATION_FIELDS: dict[str, tuple[str, ...]] = {
    name: VARIABLES[name].dims[1:-1] for name in LAID_OUT if name in VARIABLES and name != "n_reference"
}


def declared_dims(name: str) -> tuple[str, ...]:
    """The declared dims of a variable of :data:`VARIABLES`, :data:`EVENT_VARIABLES` (SPEC §19) or
    :data:`RATE_VARIABLES` (SPEC §20).

    Examples
    --------
    >>> declared_dims("event_levels"), declared_dims("n_reference")
    (('dataset', 'event', 'model', 'phase', 'event_rank'), ('dataset', 'phase', 'station'))
    """
    for declared in (EVENT_VARIABLES, RATE_VARIABLES, RANKED_VARIABLES):
        if name in declared:
            return declared[name].dims
    return VARIABLES[name].dims


def metric_name(name: str, exhaustive: bool) -> str:
    """SPEC §4: with an exhaustive reference the ``_lb`` suffix is dropped everywhere.

    Examples
    --------
    >>> metric_name("f1_lb_at_best", True), metric_name("precision_lb", False)
    ('f1_at_best', 'precision_lb')
    """
    return name.replace("_lb", "") if exhaustive else name


def describe(ds: xr.Dataset, options: Options) -> xr.Dataset:
    """Set every variable's and coordinate's ``long_name``, ``units`` and ``description`` (in place).

    On ``ds.variables`` (the variables themselves, whose ``attrs`` ``ds[name].attrs`` are): no DataArray is
    made per name.
    """
    variables = ds.variables
    for canonical, variable in {**VARIABLES, **OPTIONAL_VARIABLES}.items():
        name = metric_name(canonical, options.exhaustive)
        if name in ds.variables:
            attrs = variable.attrs
            if options.exhaustive:
                attrs["long_name"] = attrs["long_name"].replace(" (lower bound)", "")
            variables[name].attrs.update(attrs)
    for name, coordinate in COORDINATES.items():
        variables[name].attrs.update(coordinate.attrs)
    for name, coordinate in OPTIONAL_COORDINATES.items():
        if name in ds.coords:
            variables[name].attrs.update(coordinate.attrs)
    if "time_bin" in ds.coords:
        variables["time_bin"].attrs.update(TIME_BIN_ATTRS)
    if "group" in ds.coords:
        variables["group"].attrs.update(GROUP_ATTRS)
    for name, variable in {**EVENT_VARIABLES, **RANKED_VARIABLES}.items():  # SPEC §19, §9
        if name in ds.variables:
            variables[name].attrs.update(variable.attrs)
    for name, variable in RATE_VARIABLES.items():  # SPEC §20
        if name in ds.variables:
            # (no ``units`` on a datetime, rate_run_first and rate_run_last: xarray's encoding writes them)
            variables[name].attrs.update({k: v for k, v in variable.attrs.items()
                                          if k != "units" or variables[name].dtype.kind != "M"})
    for name, attrs in {**EVENT_ATTRS, **RATE_ATTRS}.items():  # SPEC §19, §20
        if name in ds.coords:
            variables[name].attrs.update(attrs)
    return ds
