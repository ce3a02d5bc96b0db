"""The derived variables of the results, one declaration each: from the combined counts to the metric.

As flox's ``Aggregation`` declares chunk, combine and finalize once, :mod:`pickscale.kernel.combine`
declares how each count combines (:data:`~pickscale.kernel.combine.FIELDS`) and this module how each metric
is finalized from the combined counts: :data:`REGISTRY` gives every derived variable its name, the
:class:`~pickscale.kernel.combine.Kind` of the counts it reads, its numpy kernel (:mod:`pickscale.metrics`)
and the kernel's inputs, and the count whose presence says the variable exists (an option's family: time
bins, tolerances, groups).  Its dims and attributes are its entry of
:data:`~pickscale.results.variables.VARIABLES` (:attr:`Derived.variable`); the tables that show it name it
(:data:`pickscale.report.tables.TABLES`; :func:`pickscale.report.tables.shown_in` lists each table and
column).  :func:`pickscale.results.derived.derive` evaluates the declarations on numpy arrays and builds the
Dataset in one go.

The readings that are not one kernel call on totals -- the §5 statistics of the residual pairs (computed
where the pairs are), the §7 readings of the fine curve, the §19 event readings and the §20 pick rates -- are
declared as :data:`FAMILIES`: the variables each family makes, and the kind they come from.

Examples
--------
>>> entry = REGISTRY["recall"]
>>> entry.kind, [i.name for i in entry.inputs], entry.variable.dims
(<Kind.COUNT: 'integer counts: summed'>, ['matched', 'n_reference'], ('dataset', 'model', 'phase', 'threshold'))
>>> [name for name, d in REGISTRY.items() if d.requires == "matched_at_tol"]
['recall_at_tol', 'precision_lb_at_tol']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernel.combine import Kind
from ..metrics import calibration, detection
from ..metrics.flags import FLAG_NAMES
from ..metrics.timing import GROUP_NAMES, QUANTILE_NAMES, TIMING_NAMES
from .variables import VARIABLES, Variable

__all__ = ["Input", "Derived", "REGISTRY", "Family", "FAMILIES", "derived_names", "lay_out"]


@dataclass(frozen=True)
class Input:
    """One input of a kernel: a count of the Dataset summed over stations, or a variable derived before.

    Parameters
    ----------
    name : str
        A count (``matched``, ``cal_n`` …: summed over ``station``) or a derived variable of
        :data:`REGISTRY` declared before (by canonical name).
    phase : str, optional
        Read at this phase only (the ``phase`` dim dropped): the swap rate takes each phase apart.
    shared : bool
        Read at the shared threshold (each phase at its own, SPEC §2; the ``threshold`` dim dropped).
    over : str, optional
        Summed over this dim too (``cal_n`` over ``bin``: the picks at or above the floor).
    """

    name: str
    phase: str | None = None
    shared: bool = False
    over: str | None = None


@dataclass(frozen=True)
class Derived:
    """A derived variable: which counts it reads, how (its numpy kernel), and when it exists.

    Parameters
    ----------
    name : str
        The canonical name (with the ``_lb`` of a lower bound; :func:`~pickscale.results.metric_name`
        gives the run's).
    kind : Kind
        How the counts it reads combined (:data:`pickscale.kernel.combine.FIELDS`): what makes it
        derivable from station totals alone.
    func : callable
        The numpy kernel, called with the inputs' arrays laid out on the variable's dims (size-1 axes where
        an input lacks one; ``core`` last), in order.
    inputs : tuple of Input
        The kernel's arguments.
    requires : str, optional
        The count whose presence in the Dataset says the variable exists (an option's family); None: always.
    core : str, optional
        A dim the kernel works along (the last axis of the inputs that have it): reduced away
        (``ece_lb``) or kept (``mean_conf``).
    output : int, optional
        Which of the kernel's outputs, when it returns several (:func:`~pickscale.metrics.calibration.reliability`).
    """

    name: str
    kind: Kind
    func: Callable[..., Any]
    inputs: tuple[Input, ...]
    requires: str | None = None
    core: str | None = None
    output: int | None = None

    @property
    def variable(self) -> Variable:
        """Its dims and attributes (:data:`~pickscale.results.variables.VARIABLES`)."""
        return VARIABLES[self.name]


def _derived(*entries: Derived) -> dict[str, Derived]:
    return {entry.name: entry for entry in entries}


_C = Kind.COUNT
_B = Kind.BINNED
_M, _E, _D, _S, _N = (Input("matched"), Input("emitted"), Input("duplicates"), Input("swapped"),
                      Input("n_reference"))
_BIN = ("cal_n", "cal_conf", "cal_hits")

#: Every derived variable that is one kernel call on station totals, in the order the Dataset holds them
#: (the §5 timing sweep, from the pairs, comes between ``swap_rate`` and ``mean_conf``: :data:`FAMILIES`).
REGISTRY: dict[str, Derived] = _derived(
    # SPEC §4, at every threshold of the grid.
    Derived("recall", _C, detection.recall, (_M, _N)),
    Derived("precision_lb", _C, detection.precision, (_M, _E, _N)),
    Derived("f1_lb", _C, detection.f1, (_M, _N, _E)),
    Derived("extra_rate", _C, detection.extra_rate, (_E, _M, _N)),
    Derived("duplicate_rate", _C, detection.duplicate_rate, (_D, _M)),
    Derived("swap_rate", _C, detection.swap_rate, (Input("swapped", phase="P"), Input("swapped", phase="S"),
                                                   Input("n_reference", phase="P"), Input("n_reference", phase="S"))),
    # SPEC §6: per calibration bin (mean_conf is the model's own, kept without arrivals; the rest read hits).
    Derived("mean_conf", Kind.DERIVED, calibration.reliability, (*map(Input, _BIN), _N), core="bin", output=1),
    Derived("observed_lb", Kind.DERIVED, calibration.reliability, (*map(Input, _BIN), _N), core="bin", output=2),
    Derived("ece_lb", Kind.DERIVED, calibration.ece, (*map(Input, _BIN), _N), core="bin"),
    Derived("brier_lb", Kind.DERIVED, calibration.brier, (Input("brier_sum"), Input("cal_n", over="bin"), _N)),
    # SPEC §10: at the shared threshold, per time bin, over all stations.  Precision over the dataset's
    # n_reference, not the bin's: in a phase the reference marks, a bin's picks that find no arrival are extra
    # picks as anywhere else; a phase it never marks has nothing to bound (SPEC §4).
    Derived("recall_over_time", _B, detection.recall, (Input("matched_over_time"), Input("n_reference_over_time")),
            requires="matched_over_time"),
    Derived("precision_lb_over_time", _B, detection.precision,
            (Input("matched_over_time"), Input("emitted_over_time"), _N), requires="matched_over_time"),
    # SPEC §13: at the shared threshold, per extra tolerance (emitted does not depend on it).
    Derived("recall_at_tol", _C, detection.recall, (Input("matched_at_tol"), _N), requires="matched_at_tol"),
    Derived("precision_lb_at_tol", _C, detection.precision,
            (Input("matched_at_tol"), Input("emitted", shared=True), _N), requires="matched_at_tol"),
    # SPEC §14: per group of arrivals at the shared threshold.  No precision per group: emitted picks have no
    # group.
    Derived("recall_by_group", _C, detection.recall, (Input("matched_by_group"), Input("n_reference_by_group")),
            requires="matched_by_group"),
)


@dataclass(frozen=True)
class Family:
    """Derived variables made together by one function, not one kernel call on totals each.

    Parameters
    ----------
    names : tuple of str
        The canonical names it makes (in the Dataset's order).
    kind : Kind
        What they come from: the residual pairs (``PAIRS``: their statistics, computed where the pairs are),
        the fine curve (``FINE``), the events (``EVENTS``).
    requires : str, optional
        As :attr:`Derived.requires`.
    after : str, optional
        The :data:`REGISTRY` variable the family follows in the Dataset; None: at the end.
    """

    names: tuple[str, ...]
    kind: Kind
    requires: str | None = None
    after: str | None = None


#: The families; each sits in the Dataset after the variable it names (``timing`` after the §4 rates,
#: ``readings`` after calibration, the §14 statistics after ``recall_by_group``, the events and the pick rates at
#: the end).
FAMILIES: dict[str, Family] = {
    "timing": Family(TIMING_NAMES + QUANTILE_NAMES, Kind.PAIRS, after="swap_rate"),  # SPEC §5, every threshold
    "readings": Family(("recall_at_budget", "best_threshold", "f1_lb_at_best", "recall_at_best",
                        "precision_lb_at_best", "best_on_edge", "matched_budget", "recall_at_budgets", "ap_lb"),
                       Kind.FINE, after="brier_lb"),  # SPEC §7 (recall_at_budgets with several budgets)
    "timing_by_group": Family(tuple(f"{name}_by_group" for name in GROUP_NAMES), Kind.PAIRS,
                              requires="matched_by_group", after="recall_by_group"),  # SPEC §14
    # SPEC §5's rules on the residuals, what they found where they fire (metrics/flags.py)
    "flags": Family(FLAG_NAMES, Kind.PAIRS),
    "residual_sums": Family(("residual_sums",), Kind.PAIRS),  # SPEC §5: what a stream's statistics merge from
    "events": Family(("n_events", "events_detected", "event_detection_rate", "events_detected_at_threshold",
                      "event_detection_rate_at_threshold"), Kind.EVENTS, requires="event_levels"),  # SPEC §19
    # SPEC §20: from the pick-rate counts (picks summed, days united: kernel/rates.py), not the per-station fields.
    "rates": Family(("rate_days", "picks_per_day"), Kind.COUNT, requires="rate_picks"),
}


def derived_names() -> tuple[str, ...]:
    """Every derived variable's canonical name: :data:`REGISTRY`'s, then each family's.

    Examples
    --------
    >>> names = derived_names()
    >>> names[:3], "mae" in names, "n_events" in names
    (('recall', 'precision_lb', 'f1_lb'), True, True)
    """
    return (*REGISTRY, *(name for family in FAMILIES.values() for name in family.names))


def lay_out(values: np.ndarray, dims: tuple[str, ...], target: tuple[str, ...]) -> np.ndarray:
    """``values`` (on ``dims``) on ``target``'s axes: transposed, with size-1 axes where ``dims`` lacks one.

    What ``xarray.apply_ufunc`` hands a kernel, without the xarray objects.

    Examples
    --------
    >>> lay_out(np.zeros((2, 3)), ("dataset", "phase"), ("dataset", "model", "phase")).shape
    (2, 1, 3)
    """
    missing = [d for d in dims if d not in target]
    if missing:
        raise ValueError(f"dims {missing} are not among {target}")
    order = sorted(range(len(dims)), key=lambda i: target.index(dims[i]))
    moved = np.transpose(values, order)
    present = [dims[i] for i in order]
    return moved.reshape(tuple(moved.shape[present.index(d)] if d in present else 1 for d in target))
