"""SPEC §2's one entry point: :func:`scope_from_summary` -> :class:`Scope` (what is scored, what is excluded).

The engine gathers neither the picks nor the reference: it gives the reference as buckets of stations (held
where they were made, :mod:`pickscale.scope.arrivals`) and a summary of the picks, combined over partitions
(:func:`~pickscale.scope.summarise_picks`); every per-row rule runs on the buckets
(:mod:`pickscale.scope.rows`) and the decisions are taken on their summaries.  :func:`apply_scope` is a thin
convenience for frames in memory: it summarises the picks, calls
:func:`scope_from_summary` and filters them with the plan.

Decisions where SPEC §2 is silent (and see :mod:`pickscale.scope.plan`)
-----------------------------------------------------------------------
- A dataset whose scored stations keep no arrival inside the scored span is
  fatal (this includes spans that do not overlap at all).
- Picks are never removed by the span: the span is defined by them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputError
from . import rows
from .arrivals import ROW, Arrivals, scored_frame
from .coverage import COVERAGE_KEYS, Coverage, apply_coverage
from .hints import iso, nothing_left, shift_hint, span_error
from .plan import ScopePlan, plan_scope
from .summaries import drop_below_floor, pick_cells, summarise_picks
from .unpicked import own_spans, unpicked

__all__ = ["Scope", "EXCLUSION_KEYS", "scope_from_summary", "apply_scope"]


@dataclass
class Scope:
    """The scored rows of every dataset and what was left out.

    Attributes
    ----------
    arrivals
        The scored reference (deduplicated, at scored stations, inside the span) as buckets of stations
        (:class:`pickscale.scope.arrivals.Arrivals`), wherever they are; :attr:`reference` gathers it.
    picks
        The picks at or above the floor at scored stations (:func:`apply_scope`; empty from
        :func:`scope_from_summary`).  Index 0..n-1, rows in input order, dtypes as given.
    models
        Dataset -> its models (≥1 pick at or above the floor at a scored
        station), sorted in code-point order.
    stations
        Dataset -> its scored stations, sorted.
    spans
        Dataset -> ``(first, last)`` inclusive scored span in int64 ns
        (first pick − residual_tol, last pick + residual_tol).
    exclusions
        Totals over all datasets, plain ints: ``picks_below_floor``,
        ``reference_duplicates``, ``reference_outside_coverage``,
        ``picks_outside_coverage``, ``reference_at_unpicked_stations``,
        ``picks_at_unreferenced_stations``, ``reference_outside_span``,
        ``reference_in_datasets_without_picks``,
        ``picks_in_datasets_without_reference``.
    exclusions_by_dataset
        The same counts per dataset (datasets of either side), plain ints.
    warnings
        One human-readable line per non-zero exclusion, with its count; and,
        per model that has no pick at scored stations holding arrivals (or
        over part of the span), the arrivals it is charged with as misses.
    coverage_keep
        With a coverage: the (dataset, station, model, cell) of the picks
        kept (:mod:`pickscale.scope.coverage`), for the exchange.
    report
        JSON-ready facts: ``coverage`` (per dataset and model: arrivals
        covered and lost, picks outside) and ``unpicked`` (per dataset and
        model: scored stations without its picks, the arrivals there, and
        arrivals outside its own span).
    scored_summary
        Per (dataset, station) of the scored arrivals: ``n_reference, t_min, t_max``, sorted by both.
    """

    arrivals: Arrivals
    picks: pd.DataFrame
    models: dict[str, list[str]]
    stations: dict[str, list[str]]
    spans: dict[str, tuple[int, int]]
    exclusions: dict[str, int]
    exclusions_by_dataset: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)
    plan: ScopePlan | None = None
    pick_summary: pd.DataFrame | None = None
    coverage_keep: pd.DataFrame | None = None
    report: dict = field(default_factory=dict)
    scored_summary: pd.DataFrame | None = None

    @property
    def reference(self) -> pd.DataFrame:
        """The scored reference rows as one frame, in input order (same columns as the input; the engine's
        reference has ``Categorical`` text columns, possibly with unused categories: read them through
        :func:`text_codes` or ``astype(object)``).  Gathered from the buckets: for frames in memory."""
        return self.arrivals.frame()

    @property
    def datasets(self) -> list[str]:
        """The scored datasets, sorted."""
        return sorted(self.stations)


#: Every exclusion counted, in the order of the tables.
EXCLUSION_KEYS = (
    "picks_below_floor",
    "reference_duplicates",
    *COVERAGE_KEYS,
    "reference_in_datasets_without_picks",
    "picks_in_datasets_without_reference",
    "reference_at_unpicked_stations",
    "picks_at_unreferenced_stations",
    "reference_outside_span",
)


def scope_from_summary(
    ref: pd.DataFrame | Arrivals,
    pick_summary: pd.DataFrame,
    *,
    below_by_ds: dict[str, int],
    floor: float,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
    ref_rows: dict | None = None,
    picks_rows: dict | None = None,
    coverage: Coverage | None = None,
    event_column: str | None = None,
) -> Scope:
    """SPEC §2 — the one entry point: what is scored, from the whole (small) reference and a summary of the picks.

    In order: duplicate reference rows are kept once; with a ``coverage``,
    arrivals and picks outside the common coverage of their dataset (the
    windows every model of the dataset was run on) are excluded; datasets on one side
    only are excluded (fatal if no dataset is on both sides); scored stations
    are those with ≥1 arrival and ≥1 pick (any model, any phase) — the rest is
    excluded; arrivals outside ``[first pick − residual_tol, last pick +
    residual_tol]`` (inclusive, over the dataset's scored stations and all
    models) are excluded.

    Parameters
    ----------
    ref
        The normalised reference of every dataset.  Its text columns may be
        ``Categorical`` (as ``normalise(..., categorical=True)`` gives them) or
        object: every per-row step runs on integer codes; strings are handled
        only for the distinct values.  Or the reference as buckets of stations
        (:class:`~pickscale.scope.arrivals.Arrivals`: the engine's, on the workers).
    pick_summary
        :func:`~pickscale.scope.summarise_picks` of the picks at or above the
        floor, combined over partitions (counts summed, ``t_min``/``t_max`` as
        min/max); with a ``coverage``, per (dataset, station, model, cell)
        (``summarise_picks(picks, coverage=...)``).
    below_by_ds
        Picks below the floor, per dataset.
    floor, residual_tol_ns
        The lowest grid value; ``Options.residual_tol_ns``.
    ref_source, picks_source
        Names used in messages (e.g. the file names).
    ref_rows, picks_rows
        ``rows_read``, ``invalid_dropped``, ``dropped_phases`` (see
        :func:`~pickscale.scope.nothing_left`): they only improve the message
        when nothing is left to score; without them, ``ref.attrs`` is used.
    coverage
        The windows each model was run on (:class:`~pickscale.scope.coverage.Coverage`), or None.
    event_column
        With events (SPEC §19): the column of their ids; every row of a duplicate gets the first id of its rows
        before one is kept (:func:`~pickscale.scope.events.settle_duplicates`).

    Returns
    -------
    Scope
        With an empty ``picks`` frame: its ``plan`` filters the picks,
        partition by partition (:meth:`ScopePlan.picks_mask`).

    Raises
    ------
    InputError
        Nothing left on one side; no dataset in common; a dataset whose
        inputs share no station; a dataset whose arrivals all lie outside the
        picks' span (both spans printed as ISO UTC, with a likely cause).

    Examples
    --------
    >>> ref = pd.DataFrame({"dataset": ["d", "d"], "station": ["A", "B"], "phase": ["P", "P"],
    ...                     "time": [10**9, 10**9]})
    >>> picks = pd.DataFrame({"dataset": ["d"], "model": ["m"], "station": ["A"], "time": [10**9], "conf": [0.9]})
    >>> s = scope_from_summary(ref, summarise_picks(picks), below_by_ds={}, floor=0.02, residual_tol_ns=2 * 10**9)
    >>> len(s.reference), s.stations, s.exclusions["reference_at_unpicked_stations"]
    (1, {'d': ['A']}, 1)
    """
    arrivals = ref if isinstance(ref, Arrivals) else Arrivals.of_frame(ref)
    _check_not_empty(arrivals.n_rows, ref.attrs if isinstance(ref, pd.DataFrame) else {}, pick_summary,
                     below_by_ds, floor=floor, ref_source=ref_source, picks_source=picks_source, ref_rows=ref_rows,
                     picks_rows=picks_rows)
    # Every per-row rule runs on the buckets (on integer codes; strings only for the distinct values); what
    # comes back is per dataset or per (dataset, station).
    started = arrivals.transform(rows.start, event_column, coverage)
    del arrivals
    facts = started.map(rows.start_facts)
    dup_by_ds = _summed(f[0] for f in facts)
    covered = None
    if coverage is not None:
        if "cell" not in pick_summary:
            raise ValueError("scope_from_summary: with a coverage, the pick summary needs its cell column")
        cells = pd.concat([f[1] for f in facts if f[1] is not None], ignore_index=True)
        cells = cells.groupby(["dataset", "cell"], sort=True)["n"].sum().reset_index()
        covered = apply_coverage(coverage, cells, pick_summary)
        pick_summary = covered.pick_summary
        _check_coverage_left(coverage, covered.reference_kept > 0, pick_summary)
        if covered.common:
            started = started.transform(rows.to_common, covered.common)
    del facts
    ref_summary = _by_station(started.map(rows.considered_summary))
    plan = plan_scope(ref_summary, pick_summary, residual_tol_ns=residual_tol_ns, ref_source=ref_source,
                      picks_source=picks_source)
    decided = started.transform(rows.decide, plan.stations, plan.spans)
    del started
    facts = decided.map(rows.decided_facts, plan.stations)
    outside, kept = _summed(f[0] for f in facts), _summed(f[1] for f in facts)
    scored_summary = _by_station(f[2] for f in facts)
    del facts

    fatal = []
    for d in plan.stations:
        if kept.get(d, 0):
            continue
        at = pd.concat(decided.map(rows.at_station_rows, plan.stations, d), ignore_index=True)
        at = at.sort_values(ROW, kind="stable")
        summary = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(plan.stations[d])]
        shift = shift_hint(at["station"].to_numpy(object), at["time"].to_numpy(np.int64), summary, residual_tol_ns)
        fatal.append(span_error(d, (plan.reference_spans[d], plan.pick_spans[d], plan.spans[d]), outside.get(d, 0),
                                residual_tol_ns, ref_source, picks_source, shift))
    if fatal:
        raise InputError("\n".join(fatal))

    by_ds, warnings = _exclusions(plan, below_by_ds, dup_by_ds, outside, floor=floor,
                                  ref_source=ref_source, picks_source=picks_source,
                                  coverage_counts=covered.counts if covered else {})
    report: dict = {}
    if covered is not None:
        warnings += covered.warnings
        report["coverage"] = {"source": coverage.source if coverage else "", "windows": coverage.n_windows
                              if coverage else 0, "by_model": bool(coverage and coverage.by_model),
                              "datasets": covered.report}
        if coverage is not None:  # where the scored arrivals sit in their windows (SPEC §5, with windows)
            report["coverage"]["placement"] = {"reference": decided.reduce(rows.placement_counts,
                                                                           rows.placement_records, coverage)}
    # Recorded always; said only without a coverage (with one, the user has said where each model ran).
    spans = own_spans(plan, pick_summary, residual_tol_ns)
    n_outside = _summed_arrays(decided.map(rows.outside_own_span, spans))
    report["unpicked"], lines = unpicked(plan, _held(plan, scored_summary), spans, n_outside)
    if coverage is None:
        warnings += lines
    return Scope(
        arrivals=decided.transform(scored_frame),
        picks=pick_summary.iloc[:0],
        models=plan.models,
        stations=plan.stations,
        spans=plan.spans,
        exclusions={k: sum(c[k] for c in by_ds.values()) for k in EXCLUSION_KEYS},
        exclusions_by_dataset=by_ds,
        warnings=warnings,
        plan=plan,
        pick_summary=pick_summary,
        coverage_keep=covered.keep if covered is not None else None,
        report=report,
        scored_summary=scored_summary,
    )


def _summed(items: Iterable[dict[str, int]]) -> dict[str, int]:
    """Per-dataset counts of the buckets, added."""
    out: dict[str, int] = {}
    for item in items:
        for d, n in item.items():
            out[d] = out.get(d, 0) + int(n)
    return out


def _summed_arrays(items: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for item in items:
        for d, n in item.items():
            out[d] = out[d] + n if d in out else n.copy()
    return out


def _by_station(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The buckets' per-(dataset, station) summaries as one, sorted by (dataset, station) (the buckets hold
    other stations: no key twice)."""
    frame = pd.concat(list(frames), ignore_index=True)
    # (the keys as Python lists: a Series' ``iat`` per row cost ~14 µs, 1 s per 75,000 stations)
    datasets, stations = frame["dataset"].tolist(), frame["station"].tolist()
    order = sorted(range(len(frame)), key=lambda i: (datasets[i], stations[i]))
    frame = frame.iloc[order].reset_index(drop=True)
    return frame.astype({"dataset": object, "station": object, "n_reference": np.int64, "t_min": np.int64,
                         "t_max": np.int64})


def _held(plan: ScopePlan, scored: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per scored dataset, the scored arrivals at each of its scored stations (in the plan's order)."""
    out = {}
    for d, sts in plan.stations.items():
        rows = scored[scored["dataset"] == d]
        at = pd.Index(np.asarray(sts, dtype=object)).get_indexer(rows["station"].to_numpy(object))
        held = np.zeros(len(sts), dtype=np.int64)
        held[at[at >= 0]] = rows["n_reference"].to_numpy(np.int64)[at >= 0]
        out[d] = held
    return out


def _check_not_empty(n_ref: int, ref_attrs: dict, pick_summary: pd.DataFrame, below_by_ds: dict[str, int], *,
                     floor: float, ref_source: str, picks_source: str, ref_rows: dict | None,
                     picks_rows: dict | None) -> None:
    """Fatal when one side has nothing left to score."""
    if not n_ref:
        raise InputError(nothing_left(ref_source, "reference", ref_rows or ref_attrs.get("pickscale_rows")))
    n_below = int(sum(below_by_ds.values()))
    if pick_summary.empty:
        if n_below:
            raise InputError(f"{picks_source}: no pick has conf >= the floor {floor:g} "
                             f"(all {n_below} are below it); the floor is the lowest value of "
                             "thresholds.", options=("thresholds",))
        raise InputError(nothing_left(picks_source, "picks", picks_rows or pick_summary.attrs.get("pickscale_rows")))


def _exclusions(plan: ScopePlan, below_by_ds: dict[str, int], dup_by_ds: dict[str, int], outside: dict[str, int],
                *, floor: float, ref_source: str, picks_source: str,
                coverage_counts: dict[str, dict[str, int]]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Every exclusion per dataset (plain ints, every key), and one warning line per non-zero one."""
    warnings: list[str] = []
    n_below, n_dup = sum(below_by_ds.values()), sum(dup_by_ds.values())
    if n_below:
        warnings.append(f"{picks_source}: {n_below} pick(s) with conf below the floor {floor:g} "
                        "ignored (they take part in nothing).")
    if n_dup:
        warnings.append(f"{ref_source}: {n_dup} duplicate reference row(s) (same dataset, "
                        "station, phase and time after normalisation) kept once.")
    warnings += plan.warnings
    by_ds = {d: dict(c) for d, c in plan.counts.items()}
    for d, n in below_by_ds.items():
        by_ds.setdefault(d, {})["picks_below_floor"] = n
    for d, n in dup_by_ds.items():
        if n:
            by_ds.setdefault(d, {})["reference_duplicates"] = n
    for d, c in coverage_counts.items():
        by_ds.setdefault(d, {}).update(c)
    for d in plan.stations:
        n_out = outside.get(d, 0)
        by_ds[d]["reference_outside_span"] = n_out
        if n_out:
            lo, hi = plan.spans[d]
            warnings.append(
                f"dataset {d!r}: {n_out} reference arrival(s) outside the picks' span "
                f"{iso(lo)} … {iso(hi)} (first/last pick ± residual_tol) excluded.")
    return {d: {k: int(c.get(k, 0)) for k in EXCLUSION_KEYS} for d, c in sorted(by_ds.items())}, warnings


def _check_coverage_left(coverage: Coverage, any_arrival: bool, pick_summary: pd.DataFrame) -> None:
    """Fatal when the coverage leaves nothing on one side (its times or stations do not meet the inputs')."""
    side = ("reference arrival" if not any_arrival else "pick" if pick_summary.empty else None)
    if side:
        raise InputError(f"{coverage.source}: no {side} lies inside a window of the coverage file that every "
                         "model was run on; check that its stations are spelled as the inputs' (and station_key), "
                         "and its times are in the same time zone (UTC when no offset is given).")


def apply_scope(
    ref: pd.DataFrame,
    picks: pd.DataFrame,
    *,
    floor: float,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
    coverage: Coverage | None = None,
) -> Scope:
    """:func:`scope_from_summary` for picks in memory, which it also filters (``Scope.picks``).

    Picks below ``floor`` are dropped and counted, the rest summarised
    (:func:`~pickscale.scope.summarise_picks`); the scope is decided by
    :func:`scope_from_summary` (same parameters, same errors) and its plan
    keeps the picks at scored stations.

    Parameters
    ----------
    ref, picks
        Frames from :func:`pickscale.io.normalise` (``Normalised.frame``),
        all datasets together.
    coverage
        The windows each model was run on, or None (see :func:`scope_from_summary`).

    Examples
    --------
    >>> ref = pd.DataFrame({"dataset": ["d"] * 3, "station": ["A", "A", "B"],
    ...                     "phase": ["P"] * 3, "time": [10**9, 10**9, 10**9]})
    >>> picks = pd.DataFrame({"dataset": ["d", "d"], "model": ["m", "m"], "station": ["A", "A"],
    ...                       "phase": ["P", "P"], "time": [10**9, 2 * 10**9], "conf": [0.9, 0.01]})
    >>> s = apply_scope(ref, picks, floor=0.02, residual_tol_ns=2 * 10**9)
    >>> len(s.reference), len(s.picks), s.stations, s.models
    (1, 1, {'d': ['A']}, {'d': ['m']})
    >>> s.exclusions["reference_duplicates"], s.exclusions["reference_at_unpicked_stations"]
    (1, 1)
    """
    if picks.empty:
        raise InputError(nothing_left(picks_source, "picks", picks.attrs.get("pickscale_rows")))
    picks_all_ds = picks["dataset"].value_counts()
    picks, _ = drop_below_floor(picks, floor)
    below_by_ds = _difference(picks_all_ds, picks["dataset"].value_counts())
    scope = scope_from_summary(ref, summarise_picks(picks, coverage=coverage), below_by_ds=below_by_ds,
                               floor=floor, residual_tol_ns=residual_tol_ns, ref_source=ref_source,
                               picks_source=picks_source, coverage=coverage)
    assert scope.plan is not None  # scope_from_summary always plans
    keep = scope.plan.picks_mask(picks)
    if coverage is not None and scope.coverage_keep is not None:
        cells = picks[["dataset", "station", "model"]].astype(object).assign(cell=pick_cells(picks, coverage))
        kept = cells.merge(scope.coverage_keep.assign(_kept=True), on=["dataset", "station", "model", "cell"],
                           how="left", sort=False)["_kept"].notna().to_numpy()
        keep &= kept
    scope.picks = picks.loc[keep].reset_index(drop=True)
    return scope


def _difference(before: pd.Series, after: pd.Series) -> dict[str, int]:
    """Per-key counts removed between two ``value_counts`` (zeros left out)."""
    diff = before.sub(after, fill_value=0).astype(np.int64)
    return {str(k): int(v) for k, v in diff.items() if v}
