"""The one declaration of how per-station fields combine (pickscale.kernel.combine) covers every field and is obeyed."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from pickscale.kernel import (
    FIELDS,
    PER_STATION,
    Kind,
    Partial,
    StationResult,
    StationStack,
    combine_partials,
    merge_results,
    score_station,
)
from pickscale.options import Options

S = 10**9


def test_every_field_is_declared_once_in_field_order():
    assert list(FIELDS) == [f.name for f in fields(StationResult)]
    assert set(FIELDS.values()) == set(Kind)


def _score(arrivals, picks, options):
    """One model; arrivals as (phase, time), picks as (phase, time, conf)."""
    (a_phase, a_time), (p_phase, p_time, p_conf) = zip(*arrivals), zip(*picks)
    return score_station(a_phase, a_time, [0] * len(p_time), p_phase, p_time, p_conf, n_models=1, options=options)


def test_stacks_keep_the_per_station_fields_and_pairs_only():
    o = Options(thresholds=[0.5])
    stack = StationStack.of([(3, _score([(0, 10 * S)], [(0, 10 * S, 0.9)], o)),
                             (1, _score([(0, 10 * S)], [(0, 11 * S, 0.6)], o))])
    assert tuple(stack.fields) == PER_STATION
    assert set(stack.pairs) == {n for n, k in FIELDS.items() if k is Kind.PAIRS}
    assert stack.keys.tolist() == [1, 3]


def test_blocks_partitions_and_whole_station_agree_bit_for_bit():
    # Two blocks cut at 15 s (no arrival within residual_tol = 2 s of it): they never interact.
    o = Options(thresholds=[0.3, 0.5, 0.7])
    block_a = ([(0, 10 * S)], [(0, 10 * S + 1, 0.9), (0, 10 * S + 2, 0.35)])
    block_b = ([(1, 20 * S)], [(0, 20 * S, 0.61), (1, 20 * S + S // 2, 0.35), (1, 30 * S, 0.7)])
    whole = _score(block_a[0] + block_b[0], block_a[1] + block_b[1], o)
    a, b = _score(*block_a, o), _score(*block_b, o)
    assert merge_results([a, b]).equals(whole)
    # The same two blocks in two partitions, combined on the reduction tree.
    pa = Partial.of([(0, 5, a)], fine={0: (a.fine_emitted, a.fine_matched)})
    pb = Partial.of([(0, 5, b)], fine={0: (b.fine_emitted, b.fine_matched)})
    total = combine_partials(pa, pb)
    got = total.stacks[0].result(0)
    for name in PER_STATION + tuple(n for n, k in FIELDS.items() if k is Kind.PAIRS):
        x, y = getattr(got, name), getattr(whole, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    fe, fm = total.fine[0]
    assert (fe == whole.fine_emitted).all() and (fm == whole.fine_matched).all()
    assert whole.duplicates.sum() > 0 and whole.swapped.sum() > 0 and whole.pair_conf.size == 2


def test_a_station_with_nothing_to_score_is_zero_in_every_field():
    # The results leave the columns of such stations at zero instead of stacking a zero result for each.
    none = np.zeros(0, dtype=np.int64)
    for o in (Options(), Options(thresholds=[0.5], tols=[0.1, 0.5, 2.0])):
        zero = score_station(none, none, none, none, none, none.astype(np.float64), n_models=3, options=o)
        for name in PER_STATION:
            assert not np.any(getattr(zero, name)), name
