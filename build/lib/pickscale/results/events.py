"""Event detection in the results (SPEC §19): the events' counts laid out, and the readings derived from them.

Stored per (dataset, event): ``event_n_reference`` (per phase), ``event_levels`` (per model and phase, the
K highest detection levels) and, with ``group_by``, ``event_group``.  Derived: ``n_events``,
``events_detected`` and ``event_detection_rate`` at every grid threshold, and ``events_detected_at_threshold``
and ``event_detection_rate_at_threshold`` at the shared threshold (each arrival at its phase's).  Only an
event with a scored arrival counts.

Examples
--------
>>> import pickscale, pandas as pd
>>> s = [f"2024-01-01T00:00:{t:02d}Z" for t in (10, 20, 30)]
>>> ref = pd.DataFrame({"station": ["A", "B", "C"], "phase": "P", "time": s, "event": ["e1"] * 3})
>>> picks = pd.DataFrame({"station": ["A", "B", "C"], "phase": "P", "time": s, "conf": [0.9, 0.5, 0.2]})
>>> ds = pickscale.score(ref, picks, thresholds=[0.1, 0.3, 0.6], event_min_arrivals=2)
>>> ds.events_detected.sel(dataset="all", model="model").values.tolist(), int(ds.n_events.sel(dataset="all"))
([1, 1, 0], 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..kernel.events import LEVEL_DTYPE, merge_events, rows_of
from ..metrics import events as metrics
from ..options import Options
from .variables import text

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["EventCounts", "event_counts", "lay_out_events", "derive_events", "events_of", "merge_event_counts"]


@dataclass
class EventCounts:
    """One dataset's events: ids (code-point order), arrivals per phase, levels, groups (or None)."""

    names: list[str]
    n_reference: np.ndarray  # (E, 2) int64
    levels: np.ndarray  # (E, M, 2, K) int16
    groups: list[int] | None = None


def event_counts(rows: dict[str, np.ndarray] | None, names: list[str], groups: list[int] | None, *,
                 n_models: int, k: int) -> EventCounts:
    """A dataset's :class:`EventCounts` from its merged event rows (codes index ``names``); an event without a
    row (no scored arrival reached a scoring task) has no arrivals and no levels."""
    n_ref = np.zeros((len(names), 2), np.int64)
    levels = np.zeros((len(names), n_models, 2, k), LEVEL_DTYPE)
    if rows is not None and rows["event_code"].size:
        codes = rows["event_code"]
        n_ref[codes] = rows["event_n_reference"]
        levels[codes] = rows["event_levels"]
    return EventCounts(list(names), n_ref, levels, None if groups is None else list(groups))


def lay_out_events(counts: list[EventCounts | None], models: list[list[str]], all_models: list[str],
                   options: Options) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The stored event variables on the shared coordinates, and those coordinates (``event``, ``event_rank``).

    ``counts[d]``, ``models[d]``: dataset ``d``'s events (None: it has none) and models.
    """
    # Each dataset's ids are in code-point order already: their union by numpy, no dict of every id (the
    # events grow with the bulletin).
    have = [np.asarray(c.names, dtype=object) for c in counts if c is not None and c.names]
    names = have[0] if len(have) == 1 else np.unique(np.concatenate(have)) if have else np.zeros(0, object)
    k = options.n_event_levels
    m_index = {m: i for i, m in enumerate(all_models)}
    n_ref = np.zeros((len(counts), len(names), 2), np.int64)
    levels = np.zeros((len(counts), len(names), len(all_models), 2, k), LEVEL_DTYPE)
    group = np.full((len(counts), len(names)), -1, np.int64)
    for d, c in enumerate(counts):
        if c is None or not c.names:
            continue
        rows = np.searchsorted(names, np.asarray(c.names, dtype=object)).astype(np.int64)
        mi = np.array([m_index[m] for m in models[d]], dtype=np.int64)
        n_ref[d, rows] = c.n_reference
        levels[d][np.ix_(rows, mi)] = c.levels
        if c.groups is not None:
            group[d, rows] = c.groups
    data: dict[str, np.ndarray] = {"event_n_reference": n_ref, "event_levels": levels}
    if options.group_by is not None:
        data["event_group"] = group
    coords = {"event": text(list(names)), "event_rank": np.arange(k, dtype=np.int64)}
    return data, coords


def derive_events(ds: xr.Dataset, options: Options) -> dict[str, xr.DataArray]:
    """SPEC §19's readings from the stored event counts (NaN rates where a dataset has no event)."""
    import xarray as xr

    k = int(options.event_min_arrivals)
    levels = np.asarray(ds.event_levels.transpose("dataset", "event", "model", "phase", "event_rank").values)
    scored = np.asarray(ds.event_n_reference.sum("phase").transpose("dataset", "event").values) > 0
    grouped = "event_group" in ds
    group = np.asarray(ds.event_group.transpose("dataset", "event").values) if grouped else None
    n_groups = ds.sizes.get("group", 0) if grouped else 0
    tail = ("group",) if grouped else ()
    ones = np.ones(scored.shape + (1,), bool)
    n_events = metrics.count_detected(ones, scored, group, n_groups)[:, 0]
    curve = metrics.count_curve(levels, k, options.grid.size, scored, group, n_groups)
    shared = metrics.count_detected(metrics.detected_shared(levels, k, [int(i) for i in options.threshold_indices]),
                                    scored, group, n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = np.where(n_events > 0, n_events, np.nan).astype(np.float64)
        per_model = denominator[:, None] if not grouped else denominator[:, None, :]
        rate = curve / (per_model[:, :, None] if not grouped else per_model[:, :, None, :])
        rate_shared = shared / per_model
    dims = ("dataset", "model", "threshold", *tail)
    return {
        "n_events": xr.DataArray(n_events, dims=("dataset", *tail)),
        "events_detected": xr.DataArray(curve, dims=dims),
        "event_detection_rate": xr.DataArray(rate, dims=dims),
        "events_detected_at_threshold": xr.DataArray(shared, dims=("dataset", "model", *tail)),
        "event_detection_rate_at_threshold": xr.DataArray(rate_shared, dims=("dataset", "model", *tail)),
    }


def events_of(ds: xr.Dataset, dataset: str, *, drop_models: tuple[str, ...] = ()) -> EventCounts | None:
    """One dataset's events rebuilt from a results Dataset (a store's, or a run's; for :func:`pickscale.extend`):
    the events with a scored arrival there, the levels of its present models (less ``drop_models``); None
    when the Dataset has no events."""
    if "event_levels" not in ds or dataset not in [str(d) for d in ds["dataset"].values]:
        return None
    one = ds.sel(dataset=dataset)
    n_ref = np.asarray(one["event_n_reference"].transpose("event", "phase").values, dtype=np.int64)
    rows = np.flatnonzero(n_ref.sum(axis=1) > 0)
    models = [str(m) for m, p in zip(ds["model"].values, one["model_present"].values) if p and m not in drop_models]
    levels = np.asarray(one["event_levels"].sel(model=models).transpose("event", "model", "phase", "event_rank")
                        .values, dtype=LEVEL_DTYPE)
    groups = None
    if "event_group" in ds:
        groups = [int(g) for g in np.asarray(one["event_group"].values)[rows]]
    names = [str(e) for e in np.asarray(ds["event"].values)[rows]]
    return EventCounts(names, n_ref[rows], levels[rows], groups)


def merge_event_counts(a: EventCounts | None, b: EventCounts | None, *, models_a: list[str], models_b: list[str],
                       models: list[str], k: int, same_arrivals: bool) -> EventCounts | None:
    """Two sides' events of one dataset merged (SPEC §19 under §11), by event id.

    The levels of each (event, model, phase): the K highest of both sides' K highest (exact, as every merge of
    event rows).  Arrivals add up, or, when both sides scored the same arrivals (new models), the larger count
    of each phase is taken (the sides' counts are equal wherever they scored the same stations).  Stores with
    groups are not extended, so there is no event group here.
    """
    sides = [(c, ms) for c, ms in ((a, models_a), (b, models_b)) if c is not None and c.names]
    if not sides:
        return None
    names = sorted({e for c, _ in sides for e in c.names})
    index = {e: i for i, e in enumerate(names)}
    m_index = {m: i for i, m in enumerate(models)}
    rows = []
    for c, ms in sides:
        levels = np.zeros((len(c.names), len(models), 2, k), LEVEL_DTYPE)
        levels[:, [m_index[m] for m in ms]] = c.levels
        rows.append(rows_of(np.array([index[e] for e in c.names], np.int64), c.n_reference, levels))
    merged = merge_events(rows)
    n_ref = merged["event_n_reference"]
    if same_arrivals and len(rows) == 2:
        n_ref = np.zeros((len(names), 2), np.int64)
        for r in rows:
            n_ref[r["event_code"]] = np.maximum(n_ref[r["event_code"]], r["event_n_reference"])
    return event_counts(rows_of(merged["event_code"], n_ref, merged["event_levels"]), names, None,
                        n_models=len(models), k=k)
