"""A stream held in ranked runs (pickscale/metrics/ranked_runs.py) answers what split_stream answers of all its
pairs, reading only the blocks its queries reach.

* by hand: two runs in blocks of 2 rows, ties of one value across three blocks and both runs; the answers and
  exactly which blocks are read;
* hypothesis: any runs (ties, grids, spikes, residuals at the bound), any levels, any block size: every method
  equals split_stream's function on ``facts_of`` of all the pairs (values, dtypes, order), each block is read
  on its boundaries and at most once;
* one run of 200,000 pairs: count_below and heavy_values read a small share of its blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import ArrayLike

from pickscale.metrics import split_stream
from pickscale.metrics.grid import GRID_SHARE, GRID_STEPS_NS
from pickscale.metrics.ranked_runs import BLOCK, RankedStream, block_table
from pickscale.metrics.timing import CONCENTRATED_RATIO, CONCENTRATED_SHARE
from tests.helpers.examples import examples

#: ns in 0.1 s
TENTH = 100_000_000


class _Store:
    """Runs of pairs ranked as the store ranks them, their block tables, and a reader that checks each read."""

    def __init__(self, runs: Sequence[tuple[ArrayLike, ArrayLike]], n_levels: int, block: int = BLOCK,
                 narrow: bool = False):
        self.n_levels, self.block = n_levels, block
        self.data = []
        for e, level in runs:
            e, level = np.asarray(e, np.int64), np.asarray(level, np.int64)
            order = np.lexsort((level, e))  # e ascending, ties by level ascending
            self.data.append((e[order], level[order]))
        self.tables = [block_table(e, level, n_levels, block=block) for e, level in self.data]
        if narrow:  # (a store may keep its counts as int32)
            self.tables = [(first, counts.astype(np.int32)) for first, counts in self.tables]
        self.reads: list[tuple[int, int]] = []

    def read(self, run: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.data[run][0].size
        assert lo % self.block == 0 and hi == min(lo + self.block, n), (run, lo, hi)
        assert (run, lo // self.block) not in self.reads, "a block read twice"
        self.reads.append((run, lo // self.block))
        e, level = self.data[run]
        return e[lo:hi].copy(), level[lo:hi].astype(np.int16)

    def stream(self, shared: int, bound: int) -> RankedStream:
        return RankedStream(self.tables, self.read, shared=shared, bound=bound, block=self.block)

    def facts(self, shared: int) -> split_stream.PartFacts:
        """split_stream's facts of all the pairs (confidences that put each pair at its level)."""
        grid = np.round(0.1 * np.arange(1, self.n_levels + 1), 3)
        e = np.concatenate([d[0] for d in self.data] or [np.zeros(0, np.int64)])
        level = np.concatenate([d[1] for d in self.data] or [np.zeros(0, np.int64)])
        conf = np.where(level == 0, 0.0, grid[np.maximum(level - 1, 0)])
        return split_stream.facts_of(e, conf, None, thresholds=grid, threshold=grid[shared], tol=0.5,
                                     n_groups=0)


def _same_array(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (got, want)


def _same_facts(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key in want:
        assert got[key][0] == want[key][0] and isinstance(got[key][0], int), key
        _same_array(got[key][1], want[key][1])


# -- by hand --------------------------------------------------------------------------------------------------------

# T = 2, shared = 0 (the pairs at the shared threshold: level 1 and 2), blocks of 2 rows.
#   run A: e  -3  1 | 1  1 | 1  5 | 5        run B: e  1  1 | 2
#          lv  2  0 | 1  1 | 2  1 | 2               lv  1  2 | 0
# The value 1 runs over A's blocks 0, 1, 2 (block 1 all of it) and B's block 0.
_A = ([-3, 1, 1, 1, 1, 5, 5], [2, 0, 1, 1, 2, 1, 2])
_B = ([1, 1, 2], [1, 2, 0])


def _by_hand() -> _Store:
    return _Store([_A, _B], n_levels=2, block=2)


def test_block_tables_by_hand():
    store = _by_hand()
    (first_a, counts_a), (first_b, counts_b) = store.tables
    assert first_a.tolist() == [-3, 1, 1, 5] and first_a.dtype == np.int64
    assert counts_a.tolist() == [[1, 0, 1], [0, 2, 0], [0, 1, 1], [0, 0, 1]] and counts_a.dtype == np.int64
    assert first_b.tolist() == [1, 2] and counts_b.tolist() == [[0, 1, 1], [1, 0, 0]]
    with pytest.raises(ValueError, match="ranked"):
        block_table(np.array([1, 1]), np.array([2, 1]), 2)  # ties by level descending
    with pytest.raises(ValueError, match="levels"):
        block_table(np.array([1, 2]), np.array([0, 3]), 2)


def test_count_below_by_hand():
    store = _by_hand()
    s = store.stream(shared=0, bound=10)
    assert s.n_shared == 8  # level > 0: A's -3, 1, 1, 1, 5, 5 and B's 1, 1
    q = np.array([[0, 1, -1],    # level > 0, e <= 1: -3 and five 1s                    -> 6
                  [1, 0, -1],    # level > 1, e <= 0: -3                                 -> 1
                  [0, 4, -1],    # as e <= 1 (B's 2 is of level 0)                      -> 6
                  [0, 5, -1],    # all 8
                  [1, -4, -1]])  # none
    got = s.count_below(q)
    assert got.tolist() == [6, 1, 6, 8, 0] and got.dtype == np.int64
    _same_array(got, split_stream.count_below(store.facts(0), q))
    # v = 1: A's blocks 0, 1 are whole by the table (block 2 starts at 1 too), block 2 is scanned; B's block 0.
    # v = 0: A's block 0.  v = 4: A's block 2 again, B's block 1 holds no pair of level > 0 (not read).
    # v = 5: A's block 3.  A's block 1 -- all 1s -- is never read.
    assert sorted(store.reads) == [(0, 0), (0, 2), (0, 3), (1, 0)]
    assert s.blocks_read == 4


def test_heavy_values_and_counts_by_hand():
    store = _by_hand()
    s = store.stream(shared=0, bound=10)
    # 1 holds 5 of the 8 (>= 0.5 · 8); 5 holds 2, -3 one.  From the tables alone, only 1 and 2 could hold 4
    # (1: A's blocks 0, 1, 2 and B's block 0 hold 7 such pairs; 2: A's block 2 and B's block 0 hold 4): the
    # blocks meeting them are read, but for A's block 1 (all 1s: counted from its table), and A's block 3 not.
    got = s.heavy_values(0.5)
    assert got.tolist() == [1] and got.dtype == np.int64
    assert sorted(store.reads) == [(0, 0), (0, 2), (1, 0)]
    assert s.heavy_values(0.7).tolist() == []  # 5 < 5.6
    assert s.heavy_values(0.25).tolist() == [1, 5]
    _same_array(s.heavy_values(0.25), split_stream.heavy_values(store.facts(0), 0.25))
    counts = s.value_counts(np.array([[1, 5], [2, -3]]))
    assert counts.tolist() == [[5, 2], [0, 1]] and counts.dtype == np.int64
    assert s.value_counts(np.array([11, -11, 10])).tolist() == [0, 0, 0]  # beyond the bound: none


def test_residues_by_hand():
    store = _by_hand()
    s = store.stream(shared=0, bound=10)
    # Every step is far above the bound (10 ns): each residue is one value; 1's residue holds 5 of 8.
    assert s.heavy_residues(0.5) == {step: [1] for step in GRID_STEPS_NS}
    assert sorted(store.reads) == [(0, 0), (0, 2), (1, 0)]
    assert s.heavy_residues(0.2) == {step: [1, 5] for step in GRID_STEPS_NS}  # 5 holds 2 of 8: 0.25
    facts = s.residue_facts({TENTH: [1, 5, TENTH - 3, 3, TENTH + 1, -1]})
    assert {k: (c, d.tolist()) for k, (c, d) in facts.items()} == {
        (TENTH, 1): (5, [1]), (TENTH, 5): (2, [5]), (TENTH, TENTH - 3): (1, [-3]), (TENTH, 3): (0, []),
        (TENTH, TENTH + 1): (0, []), (TENTH, -1): (0, [])}
    _same_facts(facts, split_stream.residue_facts(store.facts(0), {TENTH: [1, 5, TENTH - 3, 3, TENTH + 1, -1]}))


def test_empty_streams():
    empty: list[list[tuple[list[int], list[int]]]] = [[], [([], [])], [([], []), ([], [])]]
    for runs in empty:
        store = _Store(runs, n_levels=3, block=2)
        s = store.stream(shared=1, bound=10)
        facts = store.facts(1)
        assert s.n_shared == facts.n_shared == 0
        q = np.array([[0, 5, -1], [2, -5, -1]])
        _same_array(s.count_below(q), split_stream.count_below(facts, q))
        _same_array(s.count_below(np.zeros((0, 3), np.int64)), split_stream.count_below(facts, np.zeros((0, 3))))
        _same_array(s.heavy_values(0.1), split_stream.heavy_values(facts, 0.1))
        _same_array(s.value_counts(np.array([0, 3])), split_stream.value_counts(facts, np.array([0, 3])))
        assert s.heavy_residues(0.9) == split_stream.heavy_residues(facts, 0.9)
        _same_facts(s.residue_facts({TENTH: [0, 7]}), split_stream.residue_facts(facts, {TENTH: [0, 7]}))
        assert s.blocks_read == 0
    # Pairs, none at the shared threshold.
    store = _Store([([1, 2, 3], [0, 1, 1])], n_levels=2, block=2)
    s, facts = store.stream(shared=1, bound=10), store.facts(1)
    _same_array(s.heavy_values(0.0), split_stream.heavy_values(facts, 0.0))
    assert s.heavy_residues(0.0) == split_stream.heavy_residues(facts, 0.0)
    assert s.blocks_read == 0


def test_bad_input_fails_loudly():
    store = _by_hand()
    s = store.stream(shared=0, bound=10)
    with pytest.raises(ValueError, match="groups"):
        s.count_below(np.array([[0, 1, 0]]))
    with pytest.raises(ValueError, match="thresholds"):
        s.count_below(np.array([[2, 1, -1]]))
    liar = RankedStream(store.tables, lambda r, lo, hi: (store.data[r][0][lo:hi] + 1, store.data[r][1][lo:hi]),
                        shared=0, bound=10, block=2)
    with pytest.raises(ValueError, match="block table"):
        liar.count_below(np.array([[0, 1, -1]]))
    with pytest.raises(ValueError, match="levels"):
        RankedStream([store.tables[0], (np.zeros(1, np.int64), np.ones((1, 2), np.int64))], store.read,
                     shared=0, bound=10, block=2)


# -- against split_stream ----------------------------------------------------------------------------------------

#: Shares asked of heavy_values and heavy_residues: the engine's (the most common residual's candidates, the grid's)
#: among others, those that name every value and those that name none.
_SHARES = [-0.5, 0.0, 1e-9, 0.01, 0.05, CONCENTRATED_SHARE / (CONCENTRATED_RATIO + 1), 0.1, 0.2, 1 / 3, 0.5,
           GRID_SHARE, 1.0, 1.5]


def _residuals(rng: np.random.Generator, kind: str, n: int, bound: int, offset: int) -> np.ndarray:
    tenths = bound // TENTH
    if kind == "tenths":  # on a 0.1 s grid: few values, many ties
        return rng.integers(-tenths, tenths + 1, n) * TENTH
    if kind == "offset grid":  # a 0.1 s grid off zero, a few pairs anywhere
        e = np.clip(rng.integers(-5, 6, n) * TENTH + offset, -bound, bound)
        anywhere = rng.random(n) < 0.05
        e[anywhere] = rng.integers(-bound, bound + 1, int(anywhere.sum()))
        return e
    if kind == "spike":  # mostly one value
        return np.where(rng.random(n) < 0.7, offset, rng.choice([0, 10_000_000, -10_000_000, bound, -bound], n))
    if kind == "few":  # three values, the bound's edges among them
        return rng.choice(np.array([-bound, offset, bound]), n)
    if kind == "dense":  # a handful of neighbouring nanoseconds
        return rng.integers(-3, 4, n) + offset
    return rng.integers(-bound, bound + 1, n)  # anywhere


def _levels(rng: np.random.Generator, how: str, n: int, n_levels: int) -> np.ndarray:
    if how == "top":
        return np.full(n, n_levels)
    if how == "zero":
        return np.zeros(n, np.int64)
    if how == "low":
        return np.minimum(rng.geometric(0.6, n) - 1, n_levels)
    return rng.integers(0, n_levels + 1, n)


def _compare(store: _Store, shared: int, bound: int, rng: np.random.Generator) -> None:
    """Every method of a RankedStream against split_stream's function, on one stream object (its cache shared
    by the calls), in a random order."""
    s, facts = store.stream(shared, bound), store.facts(shared)
    assert s.n_shared == facts.n_shared
    e = facts.e
    present = np.unique(e)
    around = np.concatenate([present, present - 1, present + 1, [-bound, bound, -bound - 1, bound + 1, 0]])
    values = np.concatenate([rng.choice(around, 30), rng.integers(-bound - 3, bound + 4, 10)]).astype(np.int64)
    queries = np.stack([rng.integers(0, store.n_levels, values.size), values, np.full(values.size, -1)], axis=1)
    candidates: dict[int, list[int]] = {}
    for step in (*GRID_STEPS_NS, 30_000_000, 7):
        mods = np.mod(rng.choice(around, 6), step)
        extra = rng.integers(-step, 2 * step, 3)
        candidates[step] = sorted({int(x) for x in np.concatenate([mods, extra, [0, step - 1]])})
    checks: list[Callable[[], None]] = [
        lambda: _same_array(s.count_below(queries), split_stream.count_below(facts, queries)),
        lambda: _same_array(s.value_counts(values), split_stream.value_counts(facts, values)),
        lambda: _same_array(s.value_counts(values.reshape(-1, 4)),
                            split_stream.value_counts(facts, values.reshape(-1, 4))),
        lambda: _same_facts(s.residue_facts(candidates), split_stream.residue_facts(facts, candidates)),
    ]
    for share in rng.choice(_SHARES, 4, replace=False).tolist():
        checks.append(partial(_check_values, s, facts, share))
    for share in rng.choice(_SHARES, 3, replace=False).tolist():
        checks.append(partial(_check_residues, s, facts, share))
    for i in rng.permutation(len(checks)):
        checks[i]()
    assert s.blocks_read == len(store.reads) == len(set(store.reads))
    # The combination of parts (engine/ranged.py) asks each part for its residue facts of the candidates.
    named = s.heavy_residues(GRID_SHARE)
    _same_facts(s.residue_facts(named), split_stream.residue_facts(facts, named))


def _check_values(s: RankedStream, facts: split_stream.PartFacts, share: float) -> None:
    _same_array(s.heavy_values(share), split_stream.heavy_values(facts, share))


def _check_residues(s: RankedStream, facts: split_stream.PartFacts, share: float) -> None:
    got, want = s.heavy_residues(share), split_stream.heavy_residues(facts, share)
    assert got == want and list(got) == list(want), (share, got, want)
    assert all(isinstance(r, int) for rs in got.values() for r in rs)


_KINDS = ["tenths", "offset grid", "spike", "few", "dense", "anywhere"]


@settings(max_examples=examples(150), deadline=None)
@given(n_levels=st.integers(1, 4), shared=st.integers(0, 3), block=st.sampled_from([1, 2, 3, 8, BLOCK]),
       bound=st.sampled_from([2 * 10**9, 10**9, 300_000_000, 10**15]),
       offset=st.sampled_from([0, 30_000_000, -20_000_000, 1]),
       runs=st.lists(st.tuples(st.integers(0, 300), st.lists(st.sampled_from(_KINDS), min_size=1, max_size=2),
                               st.sampled_from(["any", "top", "zero", "low"])), max_size=4),
       narrow=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_ranked_runs_answer_as_split_stream(n_levels, shared, block, bound, offset, runs, narrow, seed):
    rng = np.random.default_rng(seed)
    shared = min(shared, n_levels - 1)
    pairs = []
    for n, kinds, how in runs:
        # (a run mixing kinds: its residuals drawn from each, pair by pair)
        drawn = np.stack([_residuals(rng, kind, n, bound, offset) for kind in kinds])
        e = drawn[rng.integers(0, len(kinds), n), np.arange(n)]
        pairs.append((e, _levels(rng, how, n, n_levels)))
    _compare(_Store(pairs, n_levels, block, narrow), shared, bound, rng)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([-7, -1, 0, 0, 0, 1, 2, 5, 9, 10, -10]), st.integers(0, 2)),
                         max_size=25), max_size=4),
       st.sampled_from([1, 2, 3, 8]), st.integers(0, 1), st.integers(0, 2**32 - 1))
def test_small_runs_of_ties_answer_as_split_stream(runs, block, shared, seed):
    pairs = [(np.array([p[0] for p in run], np.int64), np.array([p[1] for p in run], np.int64)) for run in runs]
    _compare(_Store(pairs, 2, block), shared, 10, np.random.default_rng(seed))


# -- reading is bounded ------------------------------------------------------------------------------------------

def test_a_large_run_is_read_only_where_asked():
    rng = np.random.default_rng(22)
    n, n_levels, shared, bound = 200_000, 9, 3, 2 * 10**9
    e = np.clip(rng.normal(0, 3e8, n), -bound, bound).astype(np.int64)
    e[rng.random(n) < 0.1] = 0  # a spike: 10 % at exactly 0
    store = _Store([(e, rng.integers(0, n_levels + 1, n))], n_levels)
    blocks = store.tables[0][0].size
    assert blocks == 196
    s, facts = store.stream(shared, bound), store.facts(shared)
    q = np.stack([rng.integers(0, n_levels, 10), rng.integers(-bound, bound, 10), np.full(10, -1)], axis=1)
    _same_array(s.count_below(q), split_stream.count_below(facts, q))
    assert s.blocks_read <= 10  # one block a query at most
    got = s.heavy_values(0.05)
    _same_array(got, split_stream.heavy_values(facts, 0.05))
    assert got.tolist() == [0]
    assert s.blocks_read < 0.25 * blocks
    assert s.heavy_residues(GRID_SHARE) == split_stream.heavy_residues(facts, GRID_SHARE)
    assert s.blocks_read < 0.25 * blocks


def test_a_large_gridded_stream_in_runs_is_read_only_where_asked():
    # GPD-like: residuals on a 0.1 s grid 30 ms off zero, 5 % anywhere; in two runs.
    rng = np.random.default_rng(7)
    bound, runs = 2 * 10**9, []
    for n in (150_000, 50_000):
        e = rng.integers(-5, 6, n) * TENTH + 30_000_000
        anywhere = rng.random(n) < 0.05
        e[anywhere] = rng.integers(-bound, bound + 1, int(anywhere.sum()))
        runs.append((e, rng.integers(0, 4, n)))
    store = _Store(runs, 3)
    blocks = sum(first.size for first, _ in store.tables)
    s, facts = store.stream(1, bound), store.facts(1)
    got = s.heavy_residues(GRID_SHARE)
    assert got == split_stream.heavy_residues(facts, GRID_SHARE)
    assert got[TENTH] == [30_000_000] and got[GRID_STEPS_NS[0]] == []
    _same_facts(s.residue_facts(got), split_stream.residue_facts(facts, got))
    _same_array(s.heavy_values(0.05), split_stream.heavy_values(facts, 0.05))
    assert s.blocks_read < 0.25 * blocks
