"""How each per-station quantity combines: declared once, field by field.

A station's counts are put together from pieces in three places: the time
blocks of one busy station (:func:`~pickscale.kernel.merge_results`), the
partitions of a run on the engine's reduction tree
(:class:`~pickscale.kernel.StationStack`, :func:`~pickscale.kernel.combine_partials`)
and the stations of a dataset (:func:`pickscale.results.combine`,
:func:`pickscale.results.counts_from_stack`).  None of them lists fields of its
own: each reads :data:`FIELDS`, which gives every field of
:class:`~pickscale.kernel.StationResult` one :class:`Kind` (as flox's
``Aggregation`` declares chunk, combine and finalize once).

Examples
--------
>>> FIELDS["matched"], FIELDS["cal_conf"]
(<Kind.COUNT: 'integer counts: summed'>, <Kind.DERIVED: 'float sums: never added, derived from the combined limbs'>)
>>> PAIR_KEY
('pair_model', 'pair_phase', 'pair_residual_ns', 'pair_conf', 'pair_group')

Numpy only: the workers import this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

import numpy as np

from . import exact
from .events import EVENT_ROWS, merge_events

__all__ = ["Kind", "FIELDS", "PER_STATION", "PAIR_KEY", "BINNED_ROWS", "DENSE_BINNED", "LAID_OUT", "CANONICAL",
           "of_kind", "merge", "merge_binned", "finalize", "pair_order", "add_fine"]


class Kind(Enum):
    """How a field combines; the value says it in words."""

    COUNT = "integer counts: summed"
    LIMBS = "exact fixed-point sums of conf (16-bit limbs): summed, then re-canonicalised"
    SQUARES = "exact fixed-point sums of conf² (limb products): summed, then re-canonicalised"
    DERIVED = "float sums: never added, derived from the combined limbs"
    PAIRS = "residual pairs: concatenated, then put in canonical order"
    FINE = "fine curve: summed per dataset, not kept per station"
    BINNED = "counts per time bin: one row per bin a station occupies, rows of the same bin summed"
    EVENTS = ("levels per event (SPEC §19): one row per event, kept per dataset, not per station; rows of one "
              "event merged: arrivals summed, the K highest levels of each (model, phase) of their union kept")


#: The declaration: every field of :class:`~pickscale.kernel.StationResult`, in field order, with its kind.
FIELDS: dict[str, Kind] = {
    "n_reference": Kind.COUNT,
    "emitted": Kind.COUNT,
    "matched": Kind.COUNT,
    "duplicates": Kind.COUNT,
    "swapped": Kind.COUNT,
    "fine_emitted": Kind.FINE,
    "fine_matched": Kind.FINE,
    "cal_n": Kind.COUNT,
    "cal_hits": Kind.COUNT,
    "cal_conf": Kind.DERIVED,  # from cal_conf_limbs
    "brier_sum": Kind.DERIVED,  # from conf_sq_sums, hit_conf_limbs and cal_hits
    "pair_model": Kind.PAIRS,
    "pair_phase": Kind.PAIRS,
    "pair_residual_ns": Kind.PAIRS,
    "pair_conf": Kind.PAIRS,
    "cal_conf_limbs": Kind.LIMBS,
    "conf_sq_sums": Kind.SQUARES,
    "hit_conf_limbs": Kind.LIMBS,
    # Time bins (SPEC §10): counts at the shared threshold per bin, sparse in the bin axis (issue 22): one row
    # per bin where the station has a nonzero count, never a row per bin of the run (10^4-10^5 bins). Rows of
    # the same bin are summed; ``n_time_bins`` (the run's bin count) only says how long the dense axis is.
    "n_time_bins": Kind.BINNED,
    "binned_bin": Kind.BINNED,
    "binned_n_reference": Kind.BINNED,
    "binned_emitted": Kind.BINNED,
    "binned_matched": Kind.BINNED,
    # Groups of arrivals (SPEC §14): counts at the shared threshold per group of the arrival, summed (an empty
    # last axis without groups); each residual pair carries its arrival's group (0 without groups).
    "n_reference_by_group": Kind.COUNT,
    "matched_by_group": Kind.COUNT,
    "pair_group": Kind.PAIRS,
    # Tolerance sensitivity (SPEC §13): matched at the shared threshold per extra tolerance; summed like every
    # count (an empty last axis without tols).
    "matched_at_tol": Kind.COUNT,
    # Event detection (SPEC §19): per event with an arrival here, its arrivals and the K highest detection levels
    # of each (model, phase) (kernel/events.py); zero rows without events.
    "event_code": Kind.EVENTS,
    "event_n_reference": Kind.EVENTS,
    "event_levels": Kind.EVENTS,
}

#: The canonical order of residual pairs: sorted by these fields, first to last.
PAIR_KEY = ("pair_model", "pair_phase", "pair_residual_ns", "pair_conf", "pair_group")

#: How the exact sums of each kind are put back in canonical form once summed.
CANONICAL = {Kind.LIMBS: exact.canonical_limbs, Kind.SQUARES: exact.canonical_squares}


def of_kind(*kinds: Kind) -> tuple[str, ...]:
    """The fields of the given kinds, in field order.

    Examples
    --------
    >>> of_kind(Kind.LIMBS, Kind.SQUARES)
    ('cal_conf_limbs', 'conf_sq_sums', 'hit_conf_limbs')
    """
    return tuple(name for name, kind in FIELDS.items() if kind in kinds)


#: The fields kept per station (a station axis when stations are stacked): all but the pairs and the fine curve.
#: A station with nothing to score has every one of them zero (so results leave such stations' columns at zero).
PER_STATION = of_kind(Kind.COUNT, Kind.LIMBS, Kind.SQUARES, Kind.DERIVED)

#: The :attr:`Kind.BINNED` fields with one row per occupied bin (``binned_bin`` first): ragged across stations,
#: so a stack keeps them as rows with a station key, as it keeps the residual pairs.
BINNED_ROWS = tuple(name for name in of_kind(Kind.BINNED) if name != "n_time_bins")

#: Each dense time-binned count of the results Dataset (and :class:`~pickscale.kernel.StationResult`'s dense
#: views) and the sparse rows it is made from (where the Dataset is laid out, :mod:`pickscale.results.assembly`).
DENSE_BINNED = {"n_reference_over_time": "binned_n_reference", "emitted_over_time": "binned_emitted",
                "matched_over_time": "binned_matched"}

#: The per-station counts as the results Dataset holds them, in field order: :data:`PER_STATION` with the
#: binned counts, dense, where their rows are declared.
LAID_OUT = tuple(name for field, kind in FIELDS.items() if kind not in (Kind.PAIRS, Kind.FINE, Kind.EVENTS)
                 for name in ((field,) if kind is not Kind.BINNED else
                              [dense for dense, rows in DENSE_BINNED.items() if rows == field]))


def merge(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The fields of one station from those of its pieces (its time blocks), by :data:`FIELDS`.

    Counts, limbs and fine curves are summed, limbs re-canonicalised; pairs are
    concatenated and put in canonical order; the float sums are derived from
    the combined limbs (:func:`finalize`), so no float is ever added.  Bit for
    bit the result of the whole station.
    """
    out: dict[str, np.ndarray] = {}
    for name, kind in FIELDS.items():
        values = [p[name] for p in parts]
        if kind is Kind.PAIRS:
            out[name] = np.concatenate(values)
        elif kind in (Kind.BINNED, Kind.EVENTS):
            continue  # below, all rows at once
        elif kind is not Kind.DERIVED:
            out[name] = sum(values[1:], start=values[0])
        if kind in CANONICAL:
            # Sums of canonical forms are not canonical: make them so, as one block would have them.
            out[name] = CANONICAL[kind](out[name])
    order = pair_order(out)
    out.update({name: out[name][order] for name in PAIR_KEY})
    out.update(finalize(out))
    out.update(merge_binned([{name: p[name] for name in BINNED_ROWS} for p in parts]))
    out["n_time_bins"] = parts[0]["n_time_bins"]
    out.update(merge_events([{name: p[name] for name in EVENT_ROWS} for p in parts]))
    return {name: out[name] for name in FIELDS}


def merge_binned(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """:attr:`Kind.BINNED` rows of one station's pieces: one row per bin, ascending, rows of a bin summed.

    Integer sums in any order are exact, so the result is the whole station's, whatever the pieces.

    Examples
    --------
    >>> a = {"binned_bin": np.array([2, 5]), "binned_n_reference": np.array([[1, 0], [0, 1]])}
    >>> b = {"binned_bin": np.array([5]), "binned_n_reference": np.array([[2, 0]])}
    >>> out = merge_binned([a, b])
    >>> out["binned_bin"].tolist(), out["binned_n_reference"].tolist()
    ([2, 5], [[1, 0], [2, 1]])
    """
    names = list(parts[0])
    if len(parts) == 1:
        return dict(parts[0])
    bins = np.concatenate([p["binned_bin"] for p in parts])
    order = np.argsort(bins, kind="stable")
    bins = bins[order]
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]]) if bins.size else np.zeros(0, np.int64)
    out = {"binned_bin": bins[starts]}
    for name in names:
        if name == "binned_bin":
            continue
        values = np.concatenate([p[name] for p in parts])[order]
        out[name] = np.add.reduceat(values, starts, axis=0) if bins.size else values
    return out


def finalize(f: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The :attr:`Kind.DERIVED` fields from the exact ones, each rounded once.

    Works on any leading axes (one station, or stations stacked).

    Examples
    --------
    >>> limbs, squares, hits = exact.sums(np.array([0.9, 0.5]), np.array([True, False]),
    ...                                   np.zeros(2, int), np.array([9, 5]), 1)
    >>> cal_hits = np.zeros((1, 10), np.int64); cal_hits[0, 9] = 1
    >>> out = finalize({"cal_conf_limbs": limbs, "conf_sq_sums": squares, "hit_conf_limbs": hits,
    ...                 "cal_hits": cal_hits})
    >>> out["cal_conf"][[5, 9]].tolist(), out["brier_sum"].round(12).tolist()
    ([0.5, 0.9], [0.26])
    """
    return {
        "cal_conf": exact.conf_sum(f["cal_conf_limbs"]),
        "brier_sum": exact.brier_sum(f["conf_sq_sums"], f["hit_conf_limbs"], f["cal_hits"].sum(axis=-1)),
    }


def pair_order(pairs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The permutation that puts residual pairs in canonical order (:data:`PAIR_KEY`)."""
    return np.lexsort(tuple(pairs[name] for name in reversed(PAIR_KEY)))


def add_fine(*curves: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`Kind.FINE`: ``(fine_emitted, fine_matched)`` of several stations or partitions, summed.

    Examples
    --------
    >>> a = (np.array([2, 1]), np.array([1, 0]))
    >>> [x.tolist() for x in add_fine(a, a, a)]
    [[6, 3], [3, 0]]
    """
    emitted, matched = curves[0]
    for e, m in curves[1:]:
        emitted, matched = emitted + e, matched + m
    return emitted, matched
