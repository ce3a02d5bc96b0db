"""SPEC §2's station- and dataset-level decisions, taken on summaries: :func:`plan_scope` -> :class:`ScopePlan`.

Decisions where SPEC §2 is silent
---------------------------------
- A dataset with reference arrivals but no pick at or above the floor (or
  picks but no reference) is excluded with a warning and counted, as long as
  at least one dataset is scored; if none is, it is fatal.
- A dataset present on both sides that shares no station is always fatal.
- A scored station keeps its status (and its picks) even when the span
  removes all its arrivals: stations are decided before the span.
- Picks are never removed by the span: the span is defined by them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from .hints import dataset_hint, show_names, station_hint
from .summaries import scored_stations

__all__ = ["ScopePlan", "plan_scope"]


@dataclass
class ScopePlan:
    """Station- and dataset-level decisions, taken on summaries.

    Attributes
    ----------
    stations
        Dataset -> scored stations (sorted); only scored datasets appear.
    models
        Dataset -> models with ≥1 pick at or above the floor at a scored station.
    spans
        Dataset -> inclusive scored span ``(first pick − tol, last pick + tol)``.
    reference_spans
        Dataset -> ``(first, last)`` arrival at the scored stations.
    pick_spans
        Dataset -> ``(first, last)`` pick at the scored stations.
    counts
        Dataset -> station- and dataset-level exclusion counts.
    warnings
        Lines for the exclusions decided here.
    """

    stations: dict[str, list[str]]
    models: dict[str, list[str]]
    spans: dict[str, tuple[int, int]]
    reference_spans: dict[str, tuple[int, int]]
    pick_spans: dict[str, tuple[int, int]]
    counts: dict[str, dict[str, int]]
    warnings: list[str]

    def _scored_pairs(self) -> pd.MultiIndex:
        pairs = [(d, s) for d, sts in self.stations.items() for s in sts]
        return pd.MultiIndex.from_tuples(pairs, names=["dataset", "station"])

    def station_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """True for rows at a scored station of a scored dataset."""
        if frame.empty or not self.stations:
            return np.zeros(len(frame), dtype=bool)
        idx = pd.MultiIndex.from_arrays([frame["dataset"], frame["station"]])
        return np.asarray(idx.isin(self._scored_pairs()), dtype=bool)

    def span_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """True for rows whose time lies in their dataset's span (inclusive)."""
        lo = frame["dataset"].map({d: s[0] for d, s in self.spans.items()})
        hi = frame["dataset"].map({d: s[1] for d, s in self.spans.items()})
        t = frame["time"].to_numpy()
        ok = lo.notna().to_numpy() & hi.notna().to_numpy()
        lo_v = lo.fillna(0).to_numpy(dtype=np.int64)
        hi_v = hi.fillna(0).to_numpy(dtype=np.int64)
        return ok & (t >= lo_v) & (t <= hi_v)

    def reference_mask(self, ref: pd.DataFrame) -> np.ndarray:
        """Rows of the (deduplicated) reference that are scored."""
        return self.station_mask(ref) & self.span_mask(ref)

    def picks_mask(self, picks: pd.DataFrame) -> np.ndarray:
        """Rows of the picks (at or above the floor) that are scored."""
        return self.station_mask(picks)


def plan_scope(
    ref_summary: pd.DataFrame,
    pick_summary: pd.DataFrame,
    *,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
) -> ScopePlan:
    """Decide scored datasets, stations, models and spans from summaries.

    Parameters
    ----------
    ref_summary
        :func:`summarise_reference` of the deduplicated reference.
    pick_summary
        :func:`summarise_picks` of the picks at or above the floor.
    residual_tol_ns
        Half-width added on both sides of the picks' span (int ns).
    ref_source, picks_source
        Names used in messages.

    Raises
    ------
    InputError
        No dataset on both sides; a dataset on both sides without a shared
        station (up to five spellings from each side and a hint).
    """
    ref_ds = sorted(ref_summary["dataset"].unique().tolist())
    pick_ds = sorted(pick_summary["dataset"].unique().tolist())
    both = sorted(set(ref_ds) & set(pick_ds))
    if not both:
        raise InputError(
            f"No dataset appears in both inputs: {ref_source} has {show_names(ref_ds)}, "
            f"{picks_source} has {show_names(pick_ds)} (picks at or above the floor)."
            + dataset_hint(ref_ds, pick_ds, ref_source, picks_source)
        )
    counts: dict[str, dict[str, int]] = {d: {} for d in sorted(set(ref_ds) | set(pick_ds))}
    warnings = _one_sided_datasets(ref_summary, pick_summary, counts, ref_source=ref_source,
                                   picks_source=picks_source)
    table = scored_stations(ref_summary[ref_summary["dataset"].isin(both)],
                            pick_summary[pick_summary["dataset"].isin(both)])
    stations = _scored_stations(table, counts, warnings, ref_source=ref_source, picks_source=picks_source)
    plan = ScopePlan(stations=stations, models={}, spans={}, reference_spans={}, pick_spans={}, counts=counts,
                     warnings=warnings)
    _set_spans(plan, ref_summary, pick_summary, residual_tol_ns)
    return plan


def _one_sided_datasets(ref_summary: pd.DataFrame, pick_summary: pd.DataFrame, counts: dict[str, dict[str, int]],
                        *, ref_source: str, picks_source: str) -> list[str]:
    """Count (in ``counts``) and word the exclusion of the datasets present on one side only."""
    ref_ds, pick_ds = set(ref_summary["dataset"]), set(pick_summary["dataset"])
    n_ref_by_ds = ref_summary.groupby("dataset")["n_reference"].sum()
    n_pick_by_ds = pick_summary.groupby("dataset")["n_picks"].sum()
    warnings = []
    for d in sorted(ref_ds - pick_ds):
        n = int(n_ref_by_ds[d])
        counts[d]["reference_in_datasets_without_picks"] = n
        warnings.append(f"dataset {d!r}: {n} reference arrival(s) excluded — {picks_source} has "
                        f"no pick at or above the floor in this dataset.")
    for d in sorted(pick_ds - ref_ds):
        n = int(n_pick_by_ds[d])
        counts[d]["picks_in_datasets_without_reference"] = n
        warnings.append(f"dataset {d!r}: {n} pick(s) excluded — {ref_source} has no arrival in "
                        f"this dataset.")
    return warnings


def _scored_stations(table: pd.DataFrame, counts: dict[str, dict[str, int]], warnings: list[str], *,
                     ref_source: str, picks_source: str) -> dict[str, list[str]]:
    """Per dataset on both sides, its scored stations (sorted); the others counted and worded.

    Fatal when a dataset shares no station.
    """
    stations: dict[str, list[str]] = {}
    fatal: list[str] = []
    for d, t in table.groupby("dataset", sort=True):
        scored = t[t["scored"]]
        ref_only = t[(t["n_reference"] > 0) & (t["n_picks"] == 0)]
        pick_only = t[(t["n_picks"] > 0) & (t["n_reference"] == 0)]
        if scored.empty:
            ref_st = t.loc[t["n_reference"] > 0, "station"].tolist()
            pick_st = t.loc[t["n_picks"] > 0, "station"].tolist()
            hint = station_hint(ref_st, pick_st, ref_source, picks_source)
            fatal.append(
                f"dataset {d!r}: {ref_source} and {picks_source} share no station.\n"
                f"  {ref_source} stations: {show_names(ref_st)}\n"
                f"  {picks_source} stations: {show_names(pick_st)}"
                + (f"\n  {hint}" if hint else "")
            )
            continue
        stations[d] = sorted(scored["station"].tolist())
        n_ref_out = int(ref_only["n_reference"].sum())
        n_pick_out = int(pick_only["n_picks"].sum())
        counts[d]["reference_at_unpicked_stations"] = n_ref_out
        counts[d]["picks_at_unreferenced_stations"] = n_pick_out
        if n_ref_out:
            # A partial mismatch that NET.STA would mend gets the same hint as a total one.
            hint = station_hint(ref_only["station"].tolist(), pick_only["station"].tolist(), ref_source,
                                picks_source) if len(pick_only) else ""
            warnings.append(
                f"dataset {d!r}: {n_ref_out} reference arrival(s) at {len(ref_only)} station(s) "
                f"without any pick at or above the floor excluded "
                f"(e.g. {show_names(ref_only['station'])})."
                + (f" {hint}" if hint.startswith("Hint: the same NET.STA") else ""))
        if n_pick_out:
            warnings.append(
                f"dataset {d!r}: {n_pick_out} pick(s) at {len(pick_only)} station(s) without "
                f"reference arrivals excluded (e.g. {show_names(pick_only['station'])}).")
    if fatal:
        raise InputError(
            "\n".join(fatal)
            + "\nStations are compared as text after removing surrounding white space and "
              "trailing '.'."
        )
    return stations


def _set_spans(plan: ScopePlan, ref_summary: pd.DataFrame, pick_summary: pd.DataFrame, residual_tol_ns: int) -> None:
    """Each scored dataset's models, pick and reference spans, and scored span, over its scored stations."""
    for d, sts in plan.stations.items():
        ps = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(sts)]
        rs = ref_summary[(ref_summary["dataset"] == d) & ref_summary["station"].isin(sts)]
        plan.models[d] = sorted(ps["model"].unique().tolist())
        first, last = int(ps["t_min"].min()), int(ps["t_max"].max())
        plan.pick_spans[d] = (first, last)
        # Clipped to the instants a time can hold (pandas' range): nothing lies beyond, and int64 must not wrap.
        plan.spans[d] = (max(first - int(residual_tol_ns), pd.Timestamp.min.value),
                         min(last + int(residual_tol_ns), pd.Timestamp.max.value))
        plan.reference_spans[d] = (int(rs["t_min"].min()), int(rs["t_max"].max()))
