"""Scoring one work partition on a worker: every unit present through the station kernel, stacked results out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..kernel import Partial, StationResult, add_fine, score_station
from ..options import Options

__all__ = ["Piece", "score_partition", "score_shuffled", "score_units", "unpack_shuffled"]


@dataclass
class Piece:
    """The picks of one part that belong to one work partition, as integer codes, sorted by unit.

    Rows of unit ``units[i]`` are the ``counts[i]`` rows after those of the
    units before it; so a pick costs 13–15 bytes here (no per-row unit).
    """

    units: np.ndarray  # int64: the work units present, ascending
    counts: np.ndarray  # int64: rows per unit
    stream: np.ndarray  # int8, int16 or int32 (UnitPlan.stream_dtype): model index * 2 + phase code
    time: np.ndarray  # int64 ns
    conf: np.ndarray  # float32 or float64

    def __len__(self) -> int:
        return int(self.time.size)


def score_partition(reference: dict[str, np.ndarray] | list[dict[str, np.ndarray]], plan: Any, options: Options,
                    *pieces: Piece) -> Partial:
    """Score the pieces of one work partition (the direct exchange); ``reference`` holds its arrivals (or a
    list of such, one per bucket of the reference: joined here)."""
    if isinstance(reference, list):
        shares = [r for r in reference if r["time"].size] or reference[:1]
        reference = ({name: np.concatenate([r[name] for r in shares]) for name in shares[0]} if len(shares) > 1
                     else shares[0])
    pieces = tuple(p for p in pieces if len(p))
    # (unit, phase, time, group or None, event or None): SPEC §14's group and §19's event ride along when present.
    arrivals = (reference["unit"], reference["phase"], reference["time"], reference.get("arrival_group"),
                reference.get("event"))
    if not pieces:
        return score_units([np.zeros(0, np.int64)] * 3 + [np.zeros(0, np.float64)], arrivals, plan, options)
    unit = np.concatenate([np.repeat(p.units, p.counts) for p in pieces])
    order = np.argsort(unit, kind="stable")
    # Built inside the call: score_units owns the only references and frees each column when done with it.
    return score_units(_sorted_picks(order, unit, lambda: np.concatenate([p.stream for p in pieces]),
                                     lambda: np.concatenate([p.time for p in pieces]),
                                     lambda: np.concatenate([p.conf.astype(np.float64, copy=False) for p in pieces])),
                       arrivals, plan, options)


def score_shuffled(frame: pd.DataFrame, plan: Any, codes: Any, options: Options, part: int) -> Partial:
    """Score output partition ``part`` of the shuffle exchange (:func:`unpack_shuffled`, then :func:`score_units`)."""
    picks, arrivals = unpack_shuffled(frame, plan, codes, part)
    return score_units(picks, arrivals, plan, options)


def unpack_shuffled(frame: pd.DataFrame, plan: Any, codes: Any,
                    part: int) -> tuple[list[np.ndarray], tuple[np.ndarray | None, ...]]:
    """Output partition ``part`` of the shuffle exchange as :func:`score_units` takes it: (picks, arrivals).

    Picks and arrivals arrive together, each row's (work unit, stream) as one code (``codes``:
    :class:`pickscale.engine.shuffle_codes.Codes`), its time as the frame's index.  Raises RuntimeError if a row
    arrived at another partition than its unit's: keyed codes are placed by Dask's hash partitioning
    (:func:`pickscale.engine.shuffle_codes.codes_for`), and a unit is scored whole or not at all.
    """
    unit, stream = codes.decode(frame["code"].to_numpy())
    if codes.keyed and unit.size and bool((plan.unit_part[unit] != part).any()):
        raise RuntimeError(f"internal error: the shuffle sent rows to work partition {part} that the plan puts "
                           "elsewhere (has Dask's hash partitioning changed?)")
    pick = stream >= 0
    time_ns = frame.index.to_numpy(np.int64)
    arrivals: tuple[np.ndarray | None, ...] = (unit[~pick], (-1 - stream[~pick]).astype(np.int8), time_ns[~pick])
    # SPEC §14's group of arrivals and §19's event ride in their own columns, there only when the run has them
    # (exchange.optional_columns); an arrival's conf is 0.
    for name, dtype in (("arrival_group", np.int32), ("event", np.int64)):
        if name == "event" and codes.events_in_conf:  # (shuffle_codes.carried: exact in the conf's dtype)
            arrivals += (frame["conf"].to_numpy()[~pick].astype(dtype),)
        else:
            arrivals += (frame[name].to_numpy()[~pick].astype(dtype) if name in frame else None,)
    rows = np.flatnonzero(pick)
    order = rows[np.argsort(unit[rows], kind="stable")]
    picks = _sorted_picks(order, unit, lambda: stream, lambda: time_ns,
                          lambda: frame["conf"].to_numpy().astype(np.float64, copy=False))
    return picks, arrivals


def _sorted_picks(order: np.ndarray, unit: np.ndarray, *columns: Any) -> list[np.ndarray]:
    """[unit, stream, time, conf] taken in ``order``; each column is built (by its callable) only when taken,
    so that one unsorted column at a time is alive beside the sorted ones (worker memory)."""
    out = [unit[order]]
    for make in columns:
        out.append(make()[order])
    out[1] = out[1].astype(np.int64, copy=False)
    return out


def score_units(picks: list[np.ndarray], arrivals: tuple[np.ndarray | None, ...], plan: Any,
                options: Options) -> Partial:
    """Score every work unit present among ``picks`` and ``arrivals``.

    ``picks`` = [unit, stream, time, conf], sorted by unit (stably), emptied here so that
    each column is freed when no longer needed; ``arrivals`` =
    (unit, phase, time[, group[, event]]), any order (group: each arrival's group of arrivals, SPEC §14,
    with ``options.n_groups``; event: SPEC §19, with ``options.n_event_levels``; either None when absent).
    Within a unit, row order does not matter: the kernel puts each unit's rows in its canonical
    order.  The fine curve is summed per dataset here rather than shipped per unit.
    """
    p_unit, p_stream, p_time, p_conf = picks
    picks.clear()
    p_model, p_phase = p_stream >> 1, p_stream & 1
    del p_stream
    r_unit, r_phase, r_time = (np.asarray(a) for a in arrivals[:3])  # (never None: only group and event may be)
    r_order = np.argsort(r_unit, kind="stable")
    r_unit, r_phase, r_time = r_unit[r_order], r_phase[r_order], r_time[r_order]
    grp, evt = (tuple(arrivals[3:]) + (None, None))[:2]
    r_grp = grp[r_order] if grp is not None else None
    r_evt = evt[r_order] if evt is not None else None
    n_models = plan.stations["n_models"].to_numpy(np.int64)
    dataset_of = plan.stations["dcode"].to_numpy(np.int64)

    items: list[tuple[int, int, StationResult]] = []
    fine: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for u in np.union1d(p_unit, r_unit):  # one step per work unit present
        plo, phi = np.searchsorted(p_unit, [u, u + 1])
        rlo, rhi = np.searchsorted(r_unit, [u, u + 1])
        key = int(plan.unit_station[u])
        result = score_station(
            r_phase[rlo:rhi], r_time[rlo:rhi],
            p_model[plo:phi], p_phase[plo:phi], p_time[plo:phi], p_conf[plo:phi],
            n_models=int(n_models[key]), options=options,
            arrival_group=None if r_grp is None else r_grp[rlo:rhi],
            arrival_event=None if r_evt is None else r_evt[rlo:rhi],
        )
        d = int(dataset_of[key])
        curve = (result.fine_emitted, result.fine_matched)
        fine[d] = add_fine(fine[d], curve) if d in fine else curve
        # Summed above: the station's own copy (M × 2 × F int64, twice; ~94 kB with 3 models) is not kept
        # while the partition's other stations are scored (issue 15: 75,000 stations, 5 GB per worker).
        empty = np.zeros(result.fine_emitted.shape[:-1] + (0,), dtype=np.int64)  # (not a view: that keeps it)
        result.fine_emitted, result.fine_matched = empty, empty
        items.append((d, key, result))
    return Partial.of(items, fine=fine)
