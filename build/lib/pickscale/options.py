"""Scoring options and the threshold grids of SPEC §2 and §7.

:class:`Options` is validated once, at construction, so that every later stage
can trust it.  Tolerances are held both in seconds (for the user) and in
integer nanoseconds (for the kernel, which compares times as int64).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import OptionsError
from .settings import SETTINGS, scoring_names

__all__ = ["Options", "SharedThreshold", "PhaseThresholds", "default_grid", "fine_grid", "PHASES", "N_BINS",
           "MAX_TOL_S", "MAX_BUDGET", "MAX_THRESHOLDS"]

#: The two first-arrival phases scored, in the order of the ``phase`` dimension.
PHASES: tuple[str, str] = ("P", "S")
#: Number of equal-width calibration bins (SPEC §6).
N_BINS = 10
#: The shared threshold as :class:`Options` holds it (SPEC §2): one value for both phases, or ``{"P": …, "S": …}``.
SharedThreshold = float | Mapping[str, float]


def default_grid(threshold: float | Sequence[float] = 0.3) -> np.ndarray:
    """The default sweep grid of SPEC §2.

    ``round(0.02 * k, 3)`` for k = 1…47, plus the shared ``threshold`` (or each
    phase's, a sequence) when it is not already on the grid, sorted ascending.

    Examples
    --------
    >>> g = default_grid(0.3)
    >>> float(g[0]), float(g[-1]), len(g)
    (0.02, 0.94, 47)
    >>> len(default_grid(0.25)), len(default_grid((0.25, 0.35)))
    (48, 49)
    """
    grid = {round(0.02 * k, 3) for k in range(1, 48)}
    grid.update(float(t) for t in (threshold if isinstance(threshold, Sequence) else (threshold,)))
    return np.array(sorted(grid), dtype=np.float64)


def fine_grid(floor: float) -> np.ndarray:
    """The fine curve's thresholds of SPEC §7: ``k / 1000`` for ``floor <= k/1000 <= 1``.

    Examples
    --------
    >>> len(fine_grid(0.02))
    981
    """
    k = np.arange(0, 1001, dtype=np.int64)
    theta = k / 1000.0
    return theta[theta >= floor]


#: Largest ``tol`` / ``residual_tol`` in seconds (~11.6 days): far beyond any phase pick's error,
#: and small enough (1e15 ns < 2**50) that a time ± a tolerance stays far inside int64 arithmetic.
MAX_TOL_S = 1e6
#: Largest ``budget``: 2**53 picks, the largest whole number float64 holds exactly (the budget is
#: an interpolation point of SPEC §7's fine curve).
MAX_BUDGET = 2**53


def _seconds_to_ns(value: float) -> int:
    # Round, do not truncate: 0.3 s is 299999999.99999994 ns in float64.
    return int(round(float(value) * 1e9))


@dataclass(frozen=True)
class Options:
    """Everything that changes a number pickscale reports.

    Parameters
    ----------
    threshold
        The shared threshold at which tables are read (default 0.3): one value for
        both phases, or one per phase, ``{"P": 0.5, "S": 0.3}`` (SPEC §2; the rows
        of a phase are read at its own, :meth:`threshold_of`).  Two equal values
        are one value.
    tol
        Detection tolerance in seconds (inclusive), default 0.5; in
        ``[0, 1e6]`` (``tol = 0``: exact-time matches only).
    residual_tol
        Tolerance in seconds of the matching that defines onset residuals,
        default 2.0; must be >= ``tol`` and at most 1e6 s (``MAX_TOL_S``, about
        11.6 days: a bound far beyond any pick error that keeps every
        ``time ± tolerance`` well inside int64 nanoseconds).
    thresholds
        The sweep grid; default :func:`default_grid`.  The shared threshold is
        added if missing.  Its lowest value is the floor.
    budget
        Matched pick budget (SPEC §7), a whole number in ``[0, 2**53]``;
        ``None`` for the default.  Several distinct numbers (a list) read
        ``recall_at_budget`` at each (``recall_at_budgets``, ``budgets.csv``);
        the first is the ``budget`` of the detection table.
    exhaustive
        The reference marks every arrival: drop the ``_lb`` suffix.
    time_bin
        A pandas offset alias (``"1D"``, ``"7D"``, ``"MS"`` …): per-station
        counts at the shared threshold are also kept per time bin (SPEC §10);
        ``None`` (default) for none.
    tols
        Extra detection tolerances in seconds (SPEC §13), strictly ascending,
        each in ``(0, residual_tol]``: detection is matched once more at each
        and counted at the shared threshold (``matched_at_tol``, dim ``tol``;
        ``tolerance.csv``).  ``None`` (default) for none.
    group_by
        Groups of arrivals (SPEC §14): ``"COLUMN:E0,E1,..."`` (a numeric
        reference or station column cut at those edges, open end bins) or
        ``"COLUMN"`` (a text column): the counts of an arrival at the shared
        threshold are also kept per group (``*_by_group``, dim ``group``;
        ``by_group.csv``).  ``None`` (default) for none.
    event_min_arrivals
        Event detection (SPEC §19): with an ``event`` column in the reference,
        an event is detected at θ when at least this many of its scored
        arrivals are matched (``events.csv``); a whole number >= 0, default 4
        (what an associator needs); 0 turns event detection off.
    rate_thresholds
        Pick rates (SPEC §20): ``pick_rates.csv`` is read at each phase's
        shared threshold and also at these (strictly ascending, in
        ``[0, 1]``); like the shared threshold they join the grid (SPEC §2).
        ``None`` (default) for none.

    Examples
    --------
    >>> o = Options(tol=0.25)
    >>> o.tol_ns, o.floor, len(o.fine)
    (250000000, 0.02, 981)
    """

    threshold: SharedThreshold = 0.3
    tol: float = 0.5
    residual_tol: float = 2.0
    thresholds: Sequence[float] | None = None
    budget: int | Sequence[int] | None = None
    exhaustive: bool = False
    time_bin: str | None = None
    tols: Sequence[float] | None = None
    group_by: str | None = None
    event_min_arrivals: int = 4
    rate_thresholds: Sequence[float] | None = None
    grid: np.ndarray = field(init=False, repr=False, compare=False)
    fine: np.ndarray = field(init=False, repr=False, compare=False)
    #: The run's time-bin edges (int64 ns), set by the engine once the scored span is known
    #: (:meth:`with_bin_edges`); ``None`` without time bins.
    bin_edges: np.ndarray | None = field(init=False, repr=False, compare=False, default=None)
    #: The run's group labels (SPEC §14), set by the engine from the reference (:meth:`with_group_labels`);
    #: ``None`` without ``group_by``.
    group_labels: tuple[str, ...] | None = field(init=False, repr=False, compare=False, default=None)
    #: Whether the run's reference has events to detect (SPEC §19), set by the engine (:meth:`with_events`).
    events: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        threshold = _checked_threshold(self.threshold)
        per_phase = _per_phase(threshold)
        tol = _finite("tol", self.tol)
        rtol = _finite("residual_tol", self.residual_tol)
        if tol < 0:
            raise OptionsError(f"tol must be >= 0 seconds; got {tol!r}.", options=("tol",))
        if tol > MAX_TOL_S:
            raise OptionsError(f"tol must be at most 1e6 seconds (about 11.6 days); got {tol!r}.", options=("tol",))
        if rtol > MAX_TOL_S:
            raise OptionsError(
                f"residual_tol must be at most 1e6 seconds (about 11.6 days); got {rtol!r}.", options=("residual_tol",)
            )
        if rtol < tol:
            raise OptionsError(
                f"residual_tol ({rtol!r} s) must be >= tol ({tol!r} s): residuals are "
                "matched at least as wide as detections, or the gross-error rate is undefined.",
                options=("residual_tol", "tol"),
            )
        rates = None if self.rate_thresholds is None else _checked_rate_thresholds(self.rate_thresholds)
        # SPEC §2, §20: the shared thresholds and the rate thresholds join the grid.
        joined = tuple(sorted({*per_phase, *(rates or ())}))
        if self.thresholds is None:
            grid = default_grid(joined)
        else:
            grid = _checked_grid(self.thresholds, joined)
        budget = _checked_budget(self.budget)
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "tol", tol)
        object.__setattr__(self, "residual_tol", rtol)
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "exhaustive", bool(self.exhaustive))
        if self.time_bin is not None:
            # lazy: cycle options -> kernel (its __init__ imports kernel.station) -> options; and kernel/ brings
            # pandas and pyarrow, which `pickscale --help` (its defaults are read from Options) must not load
            from .kernel.bins import check_time_bin

            object.__setattr__(self, "time_bin", check_time_bin(self.time_bin))
        if self.tols is not None:
            object.__setattr__(self, "tols", _checked_tols(self.tols, rtol))
        if self.group_by is not None:
            # lazy: cycle options -> scope (its __init__ imports scope.placement) -> options; and scope/ brings io/
            from .scope.grouping import parse_group_by

            object.__setattr__(self, "group_by", str(parse_group_by(self.group_by)))
        object.__setattr__(self, "event_min_arrivals", _checked_min_arrivals(self.event_min_arrivals))
        object.__setattr__(self, "rate_thresholds", rates)
        object.__setattr__(self, "thresholds", tuple(float(x) for x in grid))
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "fine", fine_grid(float(grid[0])))

    @property
    def floor(self) -> float:
        """The lowest grid value: picks below it take part in nothing."""
        return float(self.grid[0])

    @property
    def budgets(self) -> tuple[int, ...]:
        """The budgets asked for, in the order given: ``()`` for the default, one or several.

        Examples
        --------
        >>> Options().budgets, Options(budget=100).budgets, Options(budget=[200, 50]).budgets
        ((), (100,), (200, 50))
        """
        budget = self.budget
        if budget is None:
            return ()
        if isinstance(budget, int):
            return (budget,)
        return tuple(int(b) for b in budget)

    @property
    def tols_ns(self) -> tuple[int, ...]:
        """The extra detection tolerances (SPEC §13) in integer nanoseconds; ``()`` without ``tols``.

        Examples
        --------
        >>> Options(tols=[0.1, 0.5]).tols_ns, Options().tols_ns
        ((100000000, 500000000), ())
        """
        return tuple(_seconds_to_ns(t) for t in (self.tols or ()))

    @property
    def tol_ns(self) -> int:
        """Detection tolerance in integer nanoseconds."""
        return _seconds_to_ns(self.tol)

    @property
    def residual_tol_ns(self) -> int:
        """Residual tolerance in integer nanoseconds."""
        return _seconds_to_ns(self.residual_tol)

    @property
    def per_phase(self) -> bool:
        """Whether P and S are read at different shared thresholds (SPEC §2)."""
        return isinstance(self.threshold, Mapping)

    @property
    def phase_thresholds(self) -> tuple[float, float]:
        """The shared threshold of each phase, in :data:`PHASES` order (P, S).

        Examples
        --------
        >>> Options().phase_thresholds, Options(threshold={"P": 0.5, "S": 0.3}).phase_thresholds
        ((0.3, 0.3), (0.5, 0.3))
        """
        return _per_phase(self.threshold)

    def threshold_of(self, phase: str | int) -> float:
        """The shared threshold of ``phase`` (``"P"``/``"S"``, or its code 0/1): where its rows are read.

        Examples
        --------
        >>> o = Options(threshold={"P": 0.5, "S": 0.3})
        >>> o.threshold_of("P"), o.threshold_of(1)
        (0.5, 0.3)
        """
        return self.phase_thresholds[phase if isinstance(phase, int) else PHASES.index(phase)]

    @property
    def threshold_indices(self) -> np.ndarray:
        """Position of each phase's shared threshold on the grid (int64, P then S)."""
        return np.array([int(np.flatnonzero(self.grid == t)[0]) for t in self.phase_thresholds], dtype=np.int64)

    @property
    def threshold_index(self) -> int:
        """Position of the shared threshold on the grid (one for both phases; see :attr:`threshold_indices`)."""
        if self.per_phase:
            raise ValueError("the phases have their own shared thresholds: use threshold_indices / threshold_of")
        return int(np.flatnonzero(self.grid == self.threshold)[0])

    def at_shared(self, obj: Any, *, drop: bool = False) -> Any:
        """An xarray object with ``threshold`` and ``phase`` dims read at the shared threshold: each phase at
        its own where they differ (the ``threshold`` coordinate then runs along ``phase``); ``drop``: without
        the ``threshold`` coordinate."""
        if not self.per_phase:
            return obj.sel(threshold=self.threshold, drop=drop)
        import xarray as xr

        at = xr.DataArray(list(self.phase_thresholds), dims="phase", coords={"phase": list(PHASES)})
        out = obj.sel(threshold=at)
        return out.drop_vars("threshold") if drop else out

    def with_bin_edges(self, edges: np.ndarray | None) -> Options:
        """A copy carrying the run's time-bin edges (int64 ns) for the kernel.

        Examples
        --------
        >>> o = Options(time_bin="1D").with_bin_edges(np.array([0, 86_400 * 10**9]))
        >>> o.bin_edges.tolist(), o == Options(time_bin="1D")
        ([0, 86400000000000], True)
        """
        out = copy.copy(self)
        object.__setattr__(out, "bin_edges", None if edges is None else np.asarray(edges, dtype=np.int64))
        return out

    @property
    def n_groups(self) -> int:
        """Number of arrival groups of the kernel's ``*_by_group`` counts (SPEC §14): 0 without ``group_by``."""
        return 0 if self.group_by is None or self.group_labels is None else len(self.group_labels)

    def with_group_labels(self, labels: Sequence[str] | None) -> Options:
        """A copy carrying the run's group labels (SPEC §14) for the kernel and the results.

        Examples
        --------
        >>> o = Options(group_by="magnitude:1,2").with_group_labels(["<1", "[1,2)", ">=2", "missing"])
        >>> o.n_groups, o.group_by, o == Options(group_by="magnitude:1,2")
        (4, 'magnitude:1,2', True)
        """
        out = copy.copy(self)
        object.__setattr__(out, "group_labels", None if labels is None else tuple(str(x) for x in labels))
        return out

    @property
    def n_event_levels(self) -> int:
        """K of event detection (SPEC §19) when the run detects events; 0 otherwise (no event rows kept)."""
        return self.event_min_arrivals if self.events else 0

    def with_events(self, events: bool) -> Options:
        """A copy that detects events (SPEC §19) when ``events`` and ``event_min_arrivals`` > 0.

        Examples
        --------
        >>> o = Options(event_min_arrivals=3).with_events(True)
        >>> o.n_event_levels, Options(event_min_arrivals=0).with_events(True).n_event_levels
        (3, 0)
        """
        out = copy.copy(self)
        object.__setattr__(out, "events", bool(events) and self.event_min_arrivals > 0)
        return out

    def to_attrs(self) -> dict[str, Any]:
        """Plain-JSON description, stored in the results' attributes: every scoring setting of
        :mod:`pickscale.settings` in declared order (those stored ``"when_set"`` only when set, so that a run
        without them has the attributes of one before they existed), the grid as searched.

        Examples
        --------
        >>> Options(tol=0.25, budget=[50, 100]).to_attrs()["budget"], "tols" in Options().to_attrs()
        ([50, 100], False)
        >>> Options.from_attrs(Options(threshold={"P": 0.5, "S": 0.3}).to_attrs()).threshold_of("P")
        0.5
        """
        out: dict[str, Any] = {}
        for name in scoring_names():
            value = self.grid if name == "thresholds" else getattr(self, name)
            if value is None and SETTINGS[name].stored == "when_set":
                continue
            out[name] = _plain(value)
        # SPEC §19: event_min_arrivals is stored when set or used, and "events" says the run detected events; a run
        # at the default without events has the attributes of one before event detection existed.
        default = type(self).__dataclass_fields__["event_min_arrivals"].default
        if not self.events and self.event_min_arrivals == default:
            out.pop("event_min_arrivals", None)
        if self.events:
            out["events"] = True
        if self.group_by is not None and self.group_labels is not None:
            out["group_labels"] = list(self.group_labels)
        return out

    @classmethod
    def from_attrs(cls, attrs: dict[str, Any]) -> Options:
        """Inverse of :meth:`to_attrs` (an option a store does not name takes its default)."""
        return cls(**{name: attrs[name] for name in scoring_names() if name in attrs}).with_group_labels(
            attrs.get("group_labels")).with_events(bool(attrs.get("events")))  # SPEC §19


def _plain(value: Any) -> Any:
    """An option's value as plain JSON: mappings as dicts, sequences (and arrays) as lists of Python scalars."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def _whole_budget(value: Any, given: Any) -> int:
    try:
        whole = not isinstance(value, bool) and int(value) == value
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or int(value) < 0:
        raise OptionsError(f"budget must be a whole number of picks >= 0; got {given!r}.", options=("budget",))
    if int(value) > MAX_BUDGET:
        raise OptionsError(f"budget must be at most 2**53 = {MAX_BUDGET} picks; got {given!r}.", options=("budget",))
    return int(value)


def _checked_budget(budget: Any) -> int | tuple[int, ...] | None:
    """``None``, one whole number, or several distinct ones (a one-element list is the number itself)."""
    if budget is None:
        return None
    if not isinstance(budget, (list, tuple, np.ndarray)) or np.ndim(budget) != 1:
        return _whole_budget(budget, budget)
    values = tuple(_whole_budget(v, budget) for v in budget)
    if not values:
        raise OptionsError("budget is an empty list: give one or more whole numbers of picks.", options=("budget",))
    if len(set(values)) < len(values):
        raise OptionsError(f"budget lists a number twice: {list(values)!r}.", options=("budget",))
    return values[0] if len(values) == 1 else values


def _checked_min_arrivals(value: Any) -> int:
    """``event_min_arrivals`` (SPEC §19): a whole number in [0, 10000] (0: no event detection).

    Examples
    --------
    >>> _checked_min_arrivals(4)
    4
    >>> _checked_min_arrivals(1.5)
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: event_min_arrivals must be a whole number >= 0 (0: no event detection); got 1.5.
    """
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not whole and isinstance(value, float) and value.is_integer():
        value, whole = int(value), True
    # At most 10,000: each (event, model, phase) keeps this many levels (SPEC §19).
    if not whole or not 0 <= int(value) <= 10_000:
        raise OptionsError(f"event_min_arrivals must be a whole number >= 0 (0: no event detection); got {value!r}.",
                           options=("event_min_arrivals",))
    return int(value)


def _checked_rate_thresholds(values: Any) -> tuple[float, ...]:
    """``rate_thresholds`` (SPEC §20): strictly ascending confidences in ``[0, 1]``.

    Examples
    --------
    >>> _checked_rate_thresholds([0.5, "0.7"])
    (0.5, 0.7)
    >>> _checked_rate_thresholds([1.5])
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: rate_thresholds must be confidences in [0, 1], strictly ascending; got [1.5].
    """
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1:
        values = [values]
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        out = ()
        ok = False
    else:
        ok = bool(out) and all(np.isfinite(v) and 0 <= v <= 1 for v in out) and all(
            a < b for a, b in zip(out, out[1:]))
    if not ok:
        shown = [v if isinstance(v, (int, float, str)) else str(v) for v in list(values)[:10]]
        raise OptionsError(f"rate_thresholds must be confidences in [0, 1], strictly ascending; got {shown!r}.",
                           options=("rate_thresholds",))
    return out


def _checked_tols(values: Any, residual_tol: float) -> tuple[float, ...]:
    """SPEC §13: strictly ascending tolerances (s), each in ``(0, residual_tol]``.

    Each is at most ``residual_tol`` because time blocks are cut only at gaps of
    ``residual_tol`` (every interaction of a pick and an arrival is within it):
    a wider detection matching would reach across blocks.

    Examples
    --------
    >>> _checked_tols([0.1, "0.25", 1], 2.0)
    (0.1, 0.25, 1.0)
    >>> _checked_tols([0.5, 0.1], 2.0)
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: tols must be strictly ascending (sorted, no repeats); got [0.5, 0.1].
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, np.ndarray)) or np.ndim(values) != 1:
        raise OptionsError(f"tols must be a list of tolerances in seconds; got {values!r}.", options=("tols",))
    try:
        tols = [float(v) for v in values]
    except (TypeError, ValueError):
        raise OptionsError(f"tols must be numbers (seconds); got {list(values)!r}.", options=("tols",)) from None
    if not tols:
        raise OptionsError("tols is empty: give one or more tolerances in seconds.", options=("tols",))
    bad = [t for t in tols if not (np.isfinite(t) and t > 0)]
    if bad:
        raise OptionsError(f"tols must each be a finite number of seconds > 0; found {bad[:5]}.", options=("tols",))
    bad = [t for t in tols if t > residual_tol]
    if bad:
        raise OptionsError(
            f"tols must each lie in (0, residual_tol = {residual_tol!r}] seconds; found {bad[:5]}: a detection "
            "matching wider than residual_tol would reach across the time blocks a station is cut into.",
            options=("tols", "residual_tol"),
        )
    if any(b <= a for a, b in zip(tols, tols[1:])):
        raise OptionsError(f"tols must be strictly ascending (sorted, no repeats); got {tols}.", options=("tols",))
    return tuple(tols)


def _checked_threshold(value: Any) -> float | PhaseThresholds:
    """SPEC §2: one shared threshold in [0, 1], or one per phase (a mapping with exactly the keys P and S).

    Two equal values are one value: every output is then that of the single threshold.

    Examples
    --------
    >>> _checked_threshold(0.3), _checked_threshold({"S": 0.3, "P": 0.5}), _checked_threshold({"P": 0.3, "S": 0.3})
    (0.3, {'P': 0.5, 'S': 0.3}, 0.3)
    >>> _checked_threshold({"P": 0.5, "X": 0.3})
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: threshold names an unknown phase 'X': give one per phase, P and S ...
    """
    if not isinstance(value, Mapping):
        threshold = _finite("threshold", value)
        if not 0.0 <= threshold <= 1.0:
            raise OptionsError(f"threshold must lie in [0, 1]; got {threshold!r}.", options=("threshold",))
        return threshold
    how = "give one per phase, P and S (P=0.5,S=0.3), or one value for both"
    unknown = [k for k in value if k not in PHASES]
    if unknown:
        raise OptionsError(f"threshold names an unknown phase {str(unknown[0])!r}: {how}.", options=("threshold",))
    out = {}
    for phase in (p for p in PHASES if p in value):  # the values given first, then what is missing
        try:
            one = _finite(f"threshold {phase}", value[phase])
        except OptionsError as exc:  # named as the option it is: --threshold on the command line
            raise OptionsError(str(exc), options=("threshold",)) from None
        if not 0.0 <= one <= 1.0:
            raise OptionsError(f"threshold {phase} must lie in [0, 1]; got {one!r}.", options=("threshold",))
        out[phase] = one
    missing = [p for p in PHASES if p not in value]
    if missing:
        raise OptionsError(f"threshold gives no value for {missing[0]}: {how}.", options=("threshold",))
    return out["P"] if out["P"] == out["S"] else PhaseThresholds(out)


class PhaseThresholds(dict):
    """``{"P": θ_P, "S": θ_S}`` as :class:`Options` holds it: a plain dict to read (and to JSON), but read-only
    and hashable, as the frozen :class:`Options` is.

    Examples
    --------
    >>> t = PhaseThresholds({"P": 0.5, "S": 0.3})
    >>> t == {"P": 0.5, "S": 0.3}, hash(t) == hash(PhaseThresholds({"P": 0.5, "S": 0.3}))
    (True, True)
    """

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (to Dask workers) as the dict it is built from
        return (PhaseThresholds, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the per-phase thresholds of Options are read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only


def _per_phase(threshold: float | Mapping[str, float]) -> tuple[float, float]:
    """A checked threshold as one value per phase, in :data:`PHASES` order."""
    if isinstance(threshold, Mapping):
        return (float(threshold["P"]), float(threshold["S"]))
    return (float(threshold), float(threshold))


def _finite(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise OptionsError(f"{name} must be a number; got {value!r}.", options=(name,)) from None
    if not np.isfinite(out):
        raise OptionsError(f"{name} must be finite; got {value!r}.", options=(name,))
    return out


#: The most thresholds a grid may have (SPEC §2): every station keeps counts at each of them (the store grows
#: with it), and a step of 1e-4 in confidence is already finer than any picker's calibration.
MAX_THRESHOLDS = 10_000


def _checked_grid(values: Sequence[float], thresholds: tuple[float, ...]) -> np.ndarray:
    try:
        n = len(values)
    except TypeError:
        values = list(values)
        n = len(values)
    if n > MAX_THRESHOLDS:
        raise OptionsError(f"thresholds has {n:,} values; a grid may have at most {MAX_THRESHOLDS:,} "
                           "(a step of 1e-4 is finer than any picker's calibration).", options=("thresholds",))
    try:
        grid = np.asarray([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        from .io.text import quote_values  # lazy: io/ brings pandas and pyarrow (not for `pickscale --help`)

        raise OptionsError(f"thresholds must be numbers; got [{quote_values(values)}].",
                           options=("thresholds",)) from None
    if grid.size == 0:
        raise OptionsError("thresholds is empty: give at least one confidence threshold in [0, 1].",
                           options=("thresholds",))
    if not np.all(np.isfinite(grid)) or grid.min() < 0 or grid.max() > 1:
        bad = [float(v) for v in grid if not (np.isfinite(v) and 0 <= v <= 1)]
        raise OptionsError(f"thresholds must lie in [0, 1]; found {bad[:5]}.", options=("thresholds",))
    if np.any(np.diff(grid) <= 0):
        raise OptionsError(
            "thresholds must be strictly ascending (sorted, no repeats); got "
            f"{[float(v) for v in grid[:10]]}{' …' if grid.size > 10 else ''}.",
            options=("thresholds",),
        )
    missing = sorted(set(thresholds) - set(grid.tolist()))
    if missing:
        # SPEC §2: the shared threshold (each phase's) joins the grid (it may become the floor).
        grid = np.sort(np.append(grid, missing))
    return grid
