"""The arrivals a model is charged with though it has no pick near them (SPEC §2), for every model at once.

Two cases, read from summaries: scored stations where a model has no pick at or above the floor, and arrivals
at its other scored stations outside its own span — the signs of a model not run there.  :func:`unpicked`
counts them per (dataset, model) and words one line per model for the run's warnings;
:func:`pickscale.scope.apply.scope_from_summary` records both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .hints import N_SHOWN, iso, shown_names
from .plan import ScopePlan

__all__ = ["unpicked", "own_spans"]


def own_spans(plan: ScopePlan, pick_summary: pd.DataFrame, residual_tol_ns: int
              ) -> dict[str, tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per scored dataset: its scored stations, the (model, station) positions with picks (sorted by model, then
    station; each once) and each model's own span ``lo``, ``hi`` (its first/last pick ± residual_tol) — what
    the buckets count the arrivals outside a model's own span with (:func:`pickscale.scope.rows.outside_own_span`).

    Every model of a dataset at once, on integer positions (a pass over its summary rows, not one per model:
    with 16,000 models that was most of a run).
    """
    out = {}
    for d, sts in plan.stations.items():
        models = plan.models[d]
        ps = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(sts)]
        # Each summary row as (model, station) positions in the plan's lists: hashed, once per dataset (every
        # model of plan.models[d] has rows here: the plan took them from the same rows).
        row_m = pd.Index(models).get_indexer(ps["model"].to_numpy(object))
        row_s = pd.Index(sts).get_indexer(ps["station"].to_numpy(object))
        if (row_m < 0).any() or (row_s < 0).any():
            raise RuntimeError("internal error: a pick summary row of a scored station names no model of the plan")
        n_st = len(sts)
        pair = np.unique(row_m.astype(np.int64) * n_st + row_s)
        first = np.full(len(models), np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(len(models), np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(first, row_m, ps["t_min"].to_numpy(np.int64))
        np.maximum.at(last, row_m, ps["t_max"].to_numpy(np.int64))
        # Its own span, clipped to the instants a time can hold as Python ints would clip it (int64 must not wrap):
        # max(first − tol, min) is max(first, min + tol) − tol.
        tol = int(residual_tol_ns)
        lo = np.maximum(first, pd.Timestamp.min.value + tol) - tol
        hi = np.minimum(last, pd.Timestamp.max.value - tol) + tol
        out[d] = (list(sts), pair // max(n_st, 1), pair % max(n_st, 1), lo, hi)
    return out


def unpicked(plan: ScopePlan, held: dict[str, np.ndarray], spans: dict[str, Any], outside: dict[str, np.ndarray]
             ) -> tuple[dict, list[str]]:
    """Per dataset and model: scored arrivals it is charged with although it has no pick near them.

    Two cases, from summaries: scored stations where the model has no pick at or above the floor, and
    arrivals at its other scored stations outside its own span (its first/last pick in the dataset ±
    residual_tol) — the signs of a model not run there, which SPEC §2 still charges as misses.

    ``held``: per dataset, the scored arrivals at each of its scored stations (in the plan's order); ``spans``:
    :func:`own_spans`; ``outside``: per dataset and model, the arrivals outside its own span
    (:func:`pickscale.scope.rows.outside_own_span`, summed over the buckets).  Only the lines are written one by
    one.
    """
    record: dict[str, dict[str, dict[str, int]]] = {}
    lines = []
    for d, sts in plan.stations.items():
        n_d = int(held[d].sum())
        models = plan.models[d]
        _, pair_m, pair_s, lo_m, hi_m = spans[d]
        counts = _UnpickedCounts(len(models), held[d], pair_m, pair_s, lo_m, hi_m, outside[d])
        flagged = np.flatnonzero((counts.n_missing > 0) | (counts.n_outside > 0))
        if not flagged.size:
            continue
        n_missing, n_outside = counts.n_missing.tolist(), counts.n_outside.tolist()
        without, lo, hi = counts.without.tolist(), counts.lo.tolist(), counts.hi.tolist()
        first_missing, n_unpicked = counts.first_missing().tolist(), (len(sts) - counts.n_stations).tolist()
        # The spans' texts once per distinct instant (models run together share them).
        beyond = counts.n_outside > 0
        stamp = {t: iso(t) for t in np.unique(np.r_[counts.lo[beyond], counts.hi[beyond]]).tolist()}
        for j in flagged.tolist():
            m = models[j]
            record.setdefault(d, {})[m] = {"stations_without_picks": without[j], "reference_there": n_missing[j],
                                           "reference_outside_its_span": n_outside[j]}
            parts = []
            if n_missing[j]:
                names = [sts[i] for i in first_missing[j] if i >= 0]
                parts.append(f"no pick at {without[j]} of the {len(sts)} scored station(s) "
                             f"(e.g. {shown_names(names, n_unpicked[j])}), which hold "
                             f"{n_missing[j]} of the {n_d} scored arrival(s)")
            if n_outside[j]:
                parts.append(f"{n_outside[j]} arrival(s) at its other stations outside its own span "
                             f"{stamp[lo[j]]} … {stamp[hi[j]]} (first/last pick ± residual_tol)")
            lines.append(f"dataset {d!r}: model {m!r} has " + " and ".join(parts) + ": they count as its misses "
                         "(recall) and its fewer picks lower the matched budget of every model. If it was not run "
                         "there, give the windows each model was run on as coverage (--coverage FILE).")
    return record, lines


class _UnpickedCounts:
    """:func:`unpicked`'s counts for every model of one dataset, from its summary rows (model and station
    positions, their own spans), the scored arrivals per station (``held``) and those outside each model's span."""

    def __init__(self, n_models: int, held: np.ndarray, pair_m: np.ndarray, pair_s: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray, n_outside: np.ndarray) -> None:
        n_st = held.size
        # The (model, station) pairs with picks, sorted by model then station (each once, whatever the rows).
        self.pair_m, self.pair_s = pair_m, pair_s
        self.n_models, self.n_st = n_models, n_st
        self.n_stations = self._per_model(np.ones(pair_m.size, dtype=np.int64))
        self.n_missing = int(held.sum()) - self._per_model(held[self.pair_s])
        self.without = int((held > 0).sum()) - self._per_model((held[self.pair_s] > 0).astype(np.int64))
        self.lo, self.hi = lo, hi
        self.n_outside = n_outside

    def _per_model(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_models, dtype=np.int64)
        np.add.at(out, self.pair_m, values)
        return out

    def first_missing(self) -> np.ndarray:
        """Per model, the positions of its first :data:`~pickscale.scope.hints.N_SHOWN` stations without picks
        (-1 past the last), shape (models, N_SHOWN).

        With its stations ``p_0 < p_1 < …``, ``g_t = p_t − t`` stations lack picks before ``p_t`` (non-decreasing),
        and the r-th station without picks is ``r + #{t : g_t <= r}``: a search per r, for every model at once.
        """
        seg = np.searchsorted(self.pair_m, np.arange(self.n_models))
        gaps = self.pair_s - (np.arange(self.pair_m.size) - seg[self.pair_m])
        keys = self.pair_m * (self.n_st + 1) + gaps  # sorted: by model, then gaps (non-decreasing in each)
        base = np.arange(self.n_models, dtype=np.int64) * (self.n_st + 1)
        r = np.arange(N_SHOWN, dtype=np.int64)
        before = np.searchsorted(keys, base[:, None] + r[None, :], side="right") - seg[:, None]
        positions = r[None, :] + before
        return np.where(r[None, :] < (self.n_st - self.n_stations)[:, None], positions, -1)
