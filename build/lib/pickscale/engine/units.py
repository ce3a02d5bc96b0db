"""The work plan: scored stations, their time blocks (work units), and the partitions that run them.

A *work unit* is one (dataset, station, time block); a *partition* is one Dask
task's worth of units, packed to about ``block_picks`` picks.  The plan is a
pure function of the scope, the options and the block size, so it is the same
on every run; and since units add up exactly (:mod:`pickscale.kernel.blocks`), the
plan decides only speed and memory, never a number.  Whether a worker can take the largest unit:
:mod:`pickscale.engine.unit_size`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..kernel.blocks import block_of, cut_points
from ..options import PHASES, Options
from ..scope import Scope, text_codes

__all__ = ["UnitPlan", "plan_units", "DEFAULT_BLOCK_PICKS", "busy_cuts"]

#: Default target of picks per work unit and per partition.
DEFAULT_BLOCK_PICKS = 2_000_000
_PHASE_CODE = {p: i for i, p in enumerate(PHASES)}
_MAX_PARTITIONS = 20_000


@dataclass
class UnitPlan:
    """Where every scored station's picks go.

    Attributes
    ----------
    stations
        One row per scored (dataset, station), indexed by its key ``skey``:
        ``dataset, station, dcode, n_models, picks, n_units, first_unit``.
    keys
        (dataset, station, model) → (skey, mcode): the join that encodes picks.
    cuts
        skey → the station's cut times (int64 ns), for stations split in blocks.
    unit_station, unit_part
        Per unit: its station key and its partition.
    unit_rank, unit_of_rank, part_rank_bounds
        Units numbered in (partition, unit) order, the inverse, and where each
        partition's numbers start (derived).
    """

    stations: pd.DataFrame
    keys: pd.DataFrame
    cuts: dict[int, np.ndarray]
    unit_station: np.ndarray
    unit_part: np.ndarray

    def __post_init__(self) -> None:
        # Units numbered in (partition, unit) order, so that one integer sort groups a
        # part's picks by partition and, within it, by unit.
        self.unit_of_rank = np.lexsort((np.arange(self.unit_part.size), self.unit_part))
        self.unit_rank = np.empty_like(self.unit_of_rank)
        self.unit_rank[self.unit_of_rank] = np.arange(self.unit_of_rank.size)
        self.part_rank_bounds = np.searchsorted(self.unit_part[self.unit_of_rank], np.arange(self.n_parts + 1))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_key_rows", None)  # (built where it is used, once per process: :meth:`codes_of`)
        return state

    def codes_of(self, combos: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(skey, mcode) of each (dataset, station, model) row of ``combos`` (a part's distinct rows), both int64;
        -1 for a row whose station is not scored.

        One dictionary lookup per distinct row (the dictionary of :attr:`keys` made once per process that
        encodes parts): a pandas merge on three text columns cost ~5 ms a part whatever its size (issue 27).
        """
        rows = self.__dict__.get("_key_rows")
        if rows is None:
            keys = self.keys
            rows = {k: i for i, k in enumerate(zip(keys["dataset"].tolist(), keys["station"].tolist(),
                                                   keys["model"].tolist()))}
            self.__dict__["_key_rows"] = rows
        found = np.fromiter((rows.get(k, -1) for k in zip(combos["dataset"].tolist(), combos["station"].tolist(),
                                                            combos["model"].tolist())),
                            dtype=np.int64, count=len(combos))
        scored = found >= 0
        skey = np.where(scored, self.keys["skey"].to_numpy(np.int64)[found], -1)
        mcode = np.where(scored, self.keys["mcode"].to_numpy(np.int64)[found], -1)
        return skey, mcode

    @property
    def stream_dtype(self) -> type:
        """The narrowest integer dtype for a pick's stream code (model index * 2 + phase) under this plan."""
        most = int(self.stations["n_models"].max()) if len(self.stations) else 1
        for dtype in (np.int8, np.int16):
            if 2 * most < np.iinfo(dtype).max:
                return dtype
        return np.int32

    @property
    def n_parts(self) -> int:
        return int(self.unit_part.max()) + 1 if self.unit_part.size else 1

    def units_of(self, skey: np.ndarray, time_ns: np.ndarray) -> np.ndarray:
        """The unit of each row: the station's first unit plus its block (by time)."""
        unit = self.stations["first_unit"].to_numpy(np.int64)[skey]
        if not self.cuts:
            return unit
        split = np.zeros(len(self.stations), dtype=bool)
        split[list(self.cuts)] = True
        rows = np.flatnonzero(split[skey])
        if rows.size:
            order = rows[np.argsort(skey[rows], kind="stable")]
            keys = skey[order]
            for key in np.unique(keys):
                lo, hi = np.searchsorted(keys, [key, key + 1])
                sel = order[lo:hi]
                unit[sel] += block_of(time_ns[sel], self.cuts[int(key)])
        return unit

    def encode_reference(self, reference: pd.DataFrame, group: np.ndarray | None = None,
                         event: np.ndarray | None = None) -> pd.DataFrame:
        """Scored arrivals as (part, unit, phase, time) codes (rows at other stations left out, order kept).

        Works on the text columns' codes (``Categorical`` or factorized): no
        per-row string, no merge.  ``group`` (one int32 code per reference row: its group of arrivals,
        SPEC §14) adds an ``arrival_group`` column, ``event`` (one int32 event code per row, −1 for none;
        SPEC §19) an ``event`` column (the exchange's columns of those names, :mod:`pickscale.engine.exchange`).
        """
        rows, skey = _station_rows(self.stations, reference)
        # The scope's reference is at scored stations only: every row, taken as it is (no copies per arrival).
        every = rows.size == len(reference)
        time_ns = reference["time"].to_numpy(np.int64) if every else reference["time"].to_numpy(np.int64)[rows]
        unit = self.units_of(skey, time_ns)
        del skey
        p_codes, p_names = text_codes(reference["phase"])
        phase_of = np.array([_PHASE_CODE.get(str(p), -1) for p in p_names], dtype=np.int8)
        phase = phase_of[p_codes if every else p_codes[rows]]
        del p_codes
        if (phase < 0).any():
            raise ValueError("encode_reference: a phase other than P or S")
        codes = pd.DataFrame({
            "part": self.unit_part[unit],
            "unit": unit,
            "phase": phase,
            "time": time_ns,
        })
        if group is not None:
            codes["arrival_group"] = (np.asarray(group, dtype=np.int32) if every
                                      else np.asarray(group, dtype=np.int32)[rows])
        if event is not None:
            codes["event"] = np.asarray(event, dtype=np.int32) if every else np.asarray(event, dtype=np.int32)[rows]
        return codes


def _station_rows(stations: pd.DataFrame, reference: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(rows of ``reference`` at a station of ``stations``, ascending; their station key ``skey``).

    Matched on integer codes: ``stations``' (dataset, station) pairs are looked
    up among the reference's distinct values once, then each row's pair code
    is found by one ``searchsorted``.
    """
    d_codes, d_names = text_codes(reference["dataset"])
    s_codes, s_names = text_codes(reference["station"])
    ns = max(len(s_names), 1)
    d_at = pd.Index(d_names, dtype=object).get_indexer(stations["dataset"].to_numpy(object))
    s_at = pd.Index(s_names, dtype=object).get_indexer(stations["station"].to_numpy(object))
    known = np.flatnonzero((d_at >= 0) & (s_at >= 0))
    table = d_at[known].astype(np.int64) * ns + s_at[known]
    order = np.argsort(table)
    table, skeys = table[order], known[order].astype(np.int64)  # the skey is the row of ``stations``
    pair = d_codes * ns + s_codes
    del d_codes, s_codes
    if table.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    space = max(len(d_names), 1) * ns
    if space <= 4 * pair.size + (1 << 16):  # a lookup table over every (dataset, station) code
        lut = np.full(space, -1, dtype=np.int64)
        lut[table] = skeys
        skey = lut[pair]
        rows = np.flatnonzero(skey >= 0)
        return rows, skey[rows]
    pos = np.minimum(np.searchsorted(table, pair), table.size - 1)
    rows = np.flatnonzero(table[pos] == pair)
    return rows, skeys[pos[rows]]


def plan_units(scope: Scope, options: Options, *, block_picks: int | None = None, n_workers: int = 1) -> UnitPlan:
    """Cut busy stations into time blocks and pack all units into partitions.

    A station with more than ``block_picks`` picks gets ``ceil(picks /
    block_picks)`` blocks, cut at the quiet gaps nearest an even split of its
    pick span.  Units are packed into partitions largest first (ties by
    unit number), each partition holding about ``block_picks`` picks, and at
    least ``2 · n_workers`` partitions when there are enough units.
    """
    target = int(block_picks or DEFAULT_BLOCK_PICKS)
    if target < 1:
        raise ValueError("block_picks must be >= 1")
    summary = scope.pick_summary
    rows = []
    for dcode, dataset in enumerate(scope.datasets):
        for station in scope.stations[dataset]:
            rows.append((dataset, station, dcode, len(scope.models[dataset])))
    stations = pd.DataFrame(rows, columns=["dataset", "station", "dcode", "n_models"])
    del rows
    assert summary is not None, "a scope made by scope_from_summary holds its pick summary"
    per_station = summary.groupby(["dataset", "station"], sort=True).agg(
        picks=("n_picks", "sum"), t_min=("t_min", "min"), t_max=("t_max", "max"))
    index = pd.MultiIndex.from_frame(stations[["dataset", "station"]])
    facts = per_station.reindex(index)
    stations["picks"] = facts["picks"].fillna(0).to_numpy(np.int64)
    stations["t_min"] = facts["t_min"].fillna(0).to_numpy(np.int64)  # (the unit-size check names the span)
    stations["t_max"] = facts["t_max"].fillna(0).to_numpy(np.int64)

    cuts: dict[int, np.ndarray] = {}
    n_units = np.ones(len(stations), dtype=np.int64)
    busy = np.flatnonzero(stations["picks"].to_numpy() > target)
    if busy.size:
        # The busy stations' cuts, made where their arrivals are (each bucket holds all of a station's).
        table = pd.DataFrame({"dataset": stations["dataset"].to_numpy(object)[busy],
                              "station": stations["station"].to_numpy(object)[busy], "key": busy.astype(np.int64),
                              "blocks": -(-stations["picks"].to_numpy(np.int64)[busy] // target),
                              "lo": facts["t_min"].to_numpy()[busy].astype(np.int64),
                              "hi": facts["t_max"].to_numpy()[busy].astype(np.int64)})
        for found in scope.arrivals.map(busy_cuts, table, int(options.residual_tol_ns)):
            for key, c in found.items():
                cuts[int(key)] = c
                n_units[key] = c.size + 1
        cuts = dict(sorted(cuts.items()))
    stations["n_units"] = n_units
    stations["first_unit"] = np.concatenate([[0], np.cumsum(n_units)[:-1]]).astype(np.int64)
    unit_station = np.repeat(np.arange(len(stations), dtype=np.int64), n_units)
    # Picks per unit, estimated as an even share of the station's (only the packing uses it).
    unit_picks = (stations["picks"].to_numpy(np.int64) // n_units)[unit_station] + 1

    total = int(unit_picks.sum())
    n_parts = -(-total // target)
    n_parts = max(n_parts, 2 * max(1, int(n_workers)))
    n_parts = int(max(1, min(n_parts, unit_station.size, _MAX_PARTITIONS)))
    unit_part = _pack(unit_picks, n_parts)

    models = pd.DataFrame(
        [(dataset, model, mcode) for dataset in scope.datasets for mcode, model in enumerate(scope.models[dataset])],
        columns=["dataset", "model", "mcode"],
    )
    keys = stations.reset_index(names="skey")[["dataset", "station", "skey"]].merge(models, on="dataset")
    return UnitPlan(stations=stations, keys=keys, cuts=cuts, unit_station=unit_station, unit_part=unit_part)


def busy_cuts(bucket: Any, busy: pd.DataFrame, residual_tol_ns: int) -> dict[int, np.ndarray]:
    """The cuts of the busy stations (``busy``: ``dataset, station, key, blocks, lo, hi`` — the span of their
    picks) whose arrivals this bucket holds: :func:`pickscale.kernel.blocks.cut_points` of each station's arrivals."""
    frame = bucket.frame
    rows, skey = _station_rows(busy[["dataset", "station"]], frame)
    if not rows.size:
        return {}
    order = np.argsort(skey, kind="stable")  # row order kept within a station
    keys, times = skey[order], frame["time"].to_numpy(np.int64)[rows[order]]
    out = {}
    for i in np.unique(keys).tolist():
        lo, hi = np.searchsorted(keys, [i, i + 1])
        c = cut_points(times[lo:hi], residual_tol_ns=residual_tol_ns,
                       span=(int(busy["lo"].iat[i]), int(busy["hi"].iat[i])), n_blocks=int(busy["blocks"].iat[i]))
        if c.size:
            out[int(busy["key"].iat[i])] = c
    return out


def _pack(weights: np.ndarray, n_parts: int) -> np.ndarray:
    """Greedy longest-first packing into ``n_parts`` bins; deterministic (ties by index)."""
    order = np.lexsort((np.arange(weights.size), -weights))
    load = np.zeros(n_parts, dtype=np.int64)
    part = np.zeros(weights.size, dtype=np.int64)
    for i in order:  # one step per work unit, not per pick
        j = int(np.argmin(load))
        part[i] = j
        load[j] += weights[i]
    return part
