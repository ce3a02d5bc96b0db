"""Station results stacked as arrays, and how two stacks combine (the tree reduction of the engine).

A scoring task returns a :class:`Partial`: for each dataset, the
:class:`~pickscale.kernel.StationResult` of every station it scored, stacked
along a leading station axis (:class:`StationStack`), and the dataset's fine
curve summed.  Partials combine on the workers (:func:`combine_partials`, a
tree of fan-in :data:`FAN_IN`), so the client receives one partial of plain
arrays — never one Python object per station, never anything per pick.

How each field combines is declared once, in :mod:`pickscale.kernel.combine`:
the fields kept per station (:data:`~pickscale.kernel.combine.PER_STATION`) get
a leading station axis, the residual pairs are concatenated, the fine curve is
summed per dataset.  A station seen in several stacks (its time blocks) is
merged by :func:`~pickscale.kernel.merge_results`, bit for bit as if scored
whole; other stations are disjoint across partitions and simply concatenated.

Examples
--------
>>> from pickscale.kernel import score_station
>>> from pickscale.options import Options
>>> o = Options(thresholds=[0.5])
>>> r = score_station([0], [0], [0], [0], [1], [0.9], n_models=1, options=o)
>>> a = Partial.of([(0, 7, r)], fine={})
>>> b = Partial.of([(0, 3, r), (0, 7, r)], fine={})
>>> ab = combine_partials(a, b)
>>> ab.stacks[0].keys.tolist(), ab.stacks[0].fields["matched"][:, 0, 0, 0].tolist()
([3, 7], [1, 2])
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field

import numpy as np

from .combine import BINNED_ROWS, CANONICAL, FIELDS, PAIR_KEY, PER_STATION, Kind, add_fine, finalize, of_kind
from .events import EVENT_ROWS, empty_rows, merge_events
from .station import StationResult, merge_results

__all__ = ["StationStack", "Partial", "combine_partials", "summed_fine", "merged_events", "concat_binned", "FAN_IN"]

#: Partials combined per reduction task.
FAN_IN = 8

_PAIRS = of_kind(Kind.PAIRS)


@dataclass
class StationStack:
    """Results of several stations of one dataset.

    Attributes
    ----------
    keys
        (S,) int64 station keys (rows of the work plan's station table), ascending and unique.
    fields
        Every :class:`StationResult` count, with a leading station axis (S, ...).
    pair_key
        (K,) int64: the station key of each residual pair; pairs are grouped by
        station in ``keys`` order, each station's in the kernel's canonical order.
    pairs
        ``pair_model``, ``pair_phase``, ``pair_residual_ns``, ``pair_conf`` (K,).
    bin_key, binned
        Time bins (SPEC §10), sparse as in :class:`StationResult`: (E,) int64 the station key of each
        row, and the :data:`~pickscale.kernel.combine.BINNED_ROWS` (E, ...), grouped by station in
        ``keys`` order, each station's by bin.  A stack costs the bins its stations occupy, never
        stations × the run's bins.
    n_time_bins
        The run's bin count (the dense axis's length); 0 without time bins.
    """

    keys: np.ndarray
    fields: MutableMapping[str, np.ndarray]
    pair_key: np.ndarray
    pairs: dict[str, np.ndarray]
    bin_key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    binned: dict[str, np.ndarray] = field(default_factory=dict)
    n_time_bins: int = 0

    @classmethod
    def of(cls, items: list[tuple[int, StationResult]]) -> StationStack:
        """Stack station results (distinct keys, any order)."""
        items = sorted(items, key=lambda kr: kr[0])
        results = [r for _, r in items]
        keys = np.array([k for k, _ in items], dtype=np.int64)
        return cls(
            keys=keys,
            fields={name: np.stack([getattr(r, name) for r in results]) for name in PER_STATION},
            pair_key=np.repeat(keys, [r.pair_model.size for r in results]),
            pairs={name: np.concatenate([getattr(r, name) for r in results]) for name in _PAIRS},
            bin_key=np.repeat(keys, [r.binned_bin.size for r in results]),
            binned={name: np.concatenate([getattr(r, name) for r in results]) for name in BINNED_ROWS},
            n_time_bins=int(results[0].n_time_bins) if results else 0,
        )

    def result(self, i: int, *, with_pairs: bool = True) -> StationResult:
        """The :class:`StationResult` of row ``i`` (its fine curve empty).

        The pairs are looked up by key: every pair of that station, or none.
        """
        lo, hi = np.searchsorted(self.pair_key, [self.keys[i], self.keys[i] + 1]) if with_pairs else (0, 0)
        # The binned rows too: all with the pairs, or none (a station's rows are looked up once, like its pairs).
        blo, bhi = np.searchsorted(self.bin_key, [self.keys[i], self.keys[i] + 1]) if with_pairs else (0, 0)
        empty = np.zeros(0, dtype=np.int64)
        # Event rows are kept per dataset (Partial.events), not per station: none here.
        return StationResult(**{name: empty for name in of_kind(Kind.FINE)}, **empty_rows(),
                             **{name: values[i] for name, values in self.fields.items()},
                             **{name: values[lo:hi] for name, values in self.pairs.items()},
                             **{name: values[blo:bhi] for name, values in self.binned.items()},
                             n_time_bins=np.array(self.n_time_bins, np.int64))

    @classmethod
    def empty(cls, zero: StationResult) -> StationStack:
        """No station: every field with zero rows, shaped like ``zero``'s."""
        return cls(keys=np.zeros(0, np.int64),
                   fields={n: np.zeros((0,) + getattr(zero, n).shape, getattr(zero, n).dtype) for n in PER_STATION},
                   pair_key=np.zeros(0, np.int64),
                   pairs={n: np.zeros(0, getattr(zero, n).dtype) for n in _PAIRS},
                   bin_key=np.zeros(0, np.int64), binned={n: getattr(zero, n)[:0] for n in BINNED_ROWS},
                   n_time_bins=int(zero.n_time_bins))

    @classmethod
    def concat(cls, stacks: list[StationStack]) -> StationStack:
        """One stack of all stations; a station in several stacks (time blocks) is merged."""
        if len(stacks) == 1:
            return stacks[0]
        keys = np.concatenate([s.keys for s in stacks])
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        # Pairs follow their station: a stable sort by key keeps each station's canonical order.
        pair_key = np.concatenate([s.pair_key for s in stacks])
        p_order = np.argsort(pair_key, kind="stable")
        bin_key, binned = concat_binned(stacks)
        out = cls(keys=keys,
                  fields={n: np.concatenate([s.fields[n] for s in stacks])[order] for n in PER_STATION},
                  pair_key=pair_key[p_order],
                  pairs={n: np.concatenate([s.pairs[n] for s in stacks])[p_order] for n in _PAIRS},
                  bin_key=bin_key, binned=binned, n_time_bins=max(s.n_time_bins for s in stacks))
        repeated = np.flatnonzero(keys[1:] == keys[:-1])
        return out if not repeated.size else out._merge_repeated(np.unique(keys[repeated]))

    def _merge_repeated(self, repeated: np.ndarray) -> StationStack:
        """The stations of ``repeated`` (in several rows: time blocks, or both sides of an extension) merged,
        all at once, by :data:`~pickscale.kernel.combine.FIELDS` -- what :func:`merge_results` gives each of them
        (``tests/kernel/test_stacks.py``)."""
        rows = np.isin(self.keys, repeated)
        at = np.flatnonzero(rows)
        keys = self.keys[at]  # (ascending: self.keys is sorted)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        fields: dict[str, np.ndarray] = {}
        for name in PER_STATION:
            kind = FIELDS[name]
            if kind is Kind.DERIVED:
                continue
            summed = np.add.reduceat(self.fields[name][at], starts, axis=0)
            fields[name] = CANONICAL[kind](summed) if kind in CANONICAL else summed
        fields.update(finalize(fields))
        # Pairs: each station's all in canonical order; binned rows: one per (station, bin), summed.
        p_at = np.isin(self.pair_key, repeated)
        pair_key = self.pair_key[p_at]
        pairs = {name: v[p_at] for name, v in self.pairs.items()}
        p_order = np.lexsort(tuple(pairs[name] for name in reversed(PAIR_KEY)) + (pair_key,))
        b_at = np.isin(self.bin_key, repeated)
        bin_key = self.bin_key[b_at]
        binned = {name: v[b_at] for name, v in self.binned.items()}
        b_order = np.lexsort((binned["binned_bin"], bin_key)) if bin_key.size else np.zeros(0, np.int64)
        bin_key, binned = bin_key[b_order], {name: v[b_order] for name, v in binned.items()}
        if bin_key.size:
            first = np.flatnonzero(np.r_[True, (bin_key[1:] != bin_key[:-1])
                                         | (binned["binned_bin"][1:] != binned["binned_bin"][:-1])])
            binned = {name: v[first] if name == "binned_bin" else np.add.reduceat(v, first, axis=0)
                      for name, v in binned.items()}
            bin_key = bin_key[first]
        merged = StationStack(keys=keys[starts], fields={name: fields[name] for name in PER_STATION},
                              pair_key=pair_key[p_order], pairs={name: v[p_order] for name, v in pairs.items()},
                              bin_key=bin_key, binned=binned, n_time_bins=self.n_time_bins)
        rest = self.take(np.flatnonzero(~rows))
        return StationStack.concat([rest, merged])

    def take(self, rows: np.ndarray) -> StationStack:
        """The stack of rows ``rows`` (ascending): their fields and every pair of their stations."""
        keep = np.isin(self.pair_key, self.keys[rows])
        b_keep = np.isin(self.bin_key, self.keys[rows])
        return StationStack(keys=self.keys[rows], fields={n: v[rows] for n, v in self.fields.items()},
                            pair_key=self.pair_key[keep], pairs={n: v[keep] for n, v in self.pairs.items()},
                            bin_key=self.bin_key[b_keep], binned={n: v[b_keep] for n, v in self.binned.items()},
                            n_time_bins=self.n_time_bins)

    def binned_nbytes(self) -> int:
        """Bytes of the stack's time-bin counts (rows and their keys): what the bins cost per task."""
        return int(self.bin_key.nbytes + sum(v.nbytes for v in self.binned.values()))


def concat_binned(stacks: list[StationStack]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The stacks' binned rows in one, grouped by station key (stable: each station's kept by bin).

    A station in several stacks (its time blocks) has its rows side by side here; they are summed per
    bin where its results are merged (:func:`~pickscale.kernel.merge_results`).
    """
    bin_key = np.concatenate([s.bin_key for s in stacks])
    order = np.argsort(bin_key, kind="stable")
    names = [n for n in BINNED_ROWS if any(n in s.binned for s in stacks)]
    return bin_key[order], {n: np.concatenate([s.binned[n] for s in stacks if n in s.binned])[order]
                            for n in names}


@dataclass
class Partial:
    """What scoring tasks return and reduction tasks combine: per dataset code, a stack and its fine curve."""

    stacks: dict[int, StationStack]
    fine: dict[int, tuple[np.ndarray, np.ndarray]]
    #: Per dataset code, its event rows (SPEC §19, :mod:`pickscale.kernel.events`); none without events.
    events: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[tuple[int, int, StationResult]],
           fine: dict[int, tuple[np.ndarray, np.ndarray]]) -> Partial:
        """From ``(dataset code, station key, result)`` triples; blocks of one station are merged."""
        by_dataset: dict[int, dict[int, list[StationResult]]] = {}
        for d, key, result in items:
            by_dataset.setdefault(d, {}).setdefault(key, []).append(result)
        merged = {d: [(k, merge_results(rs)) for k, rs in sorted(per.items())] for d, per in by_dataset.items()}
        stacks = {d: StationStack.of(rows) for d, rows in merged.items()}
        events = {d: merge_events([{n: getattr(r, n) for n in EVENT_ROWS} for _, r in rows])
                  for d, rows in merged.items()}
        return cls(stacks=stacks, fine=fine, events={d: e for d, e in events.items() if e["event_code"].size})


def combine_partials(*partials: Partial) -> Partial:
    """Combine partials (one node of the reduction tree): stations stacked, blocks merged, fine curves summed."""
    stacks: dict[int, list[StationStack]] = {}
    for p in partials:
        for d, s in p.stacks.items():
            stacks.setdefault(d, []).append(s)
    return Partial(stacks={d: StationStack.concat(ss) for d, ss in sorted(stacks.items())},
                   fine=summed_fine(partials), events=merged_events(partials))


def merged_events(partials: Iterable[Partial]) -> dict[int, dict[str, np.ndarray]]:
    """Per dataset code, the partials' event rows merged (SPEC §19: the K highest levels of the union)."""
    per: dict[int, list[dict[str, np.ndarray]]] = {}
    for p in partials:
        for d, rows in p.events.items():
            per.setdefault(d, []).append(rows)
    return {d: merge_events(rows) for d, rows in sorted(per.items())}


def summed_fine(partials: Iterable[Partial]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per dataset code, the partials' fine curves summed."""
    fine: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for p in partials:
        for d, (fe, fm) in p.fine.items():
            fine[d] = add_fine(fine[d], (fe, fm)) if d in fine else (fe, fm)
    return fine
