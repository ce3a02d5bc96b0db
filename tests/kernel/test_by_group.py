"""SPEC §14 in the kernel: counts per group of arrivals at the shared threshold, and each pair's group."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import merge_results, score_station
from pickscale.kernel.blocks import block_of, cut_points
from pickscale.options import Options
from tests.helpers import brute
from tests.helpers.examples import examples
from tests.helpers.strategies import stations

S = 1_000_000_000
GROUPED = ("n_reference_by_group", "matched_by_group", "pair_group")


def _grouped(options: Options, n_groups: int) -> Options:
    o = Options(threshold=options.threshold, thresholds=options.thresholds, tol=options.tol,
                residual_tol=options.residual_tol, group_by="g")
    return o.with_group_labels([f"g{i}" for i in range(n_groups)])


def test_spec_worked_example():
    # SPEC §14: arrivals at 10, 20, 30, 40 s in groups <1, [1,2), >=2, missing; picks at 10.1, 20.3, 31.0, 55 s.
    options = Options(group_by="magnitude:1,2").with_group_labels(["<1", "[1,2)", ">=2", "missing"])
    r = score_station([0, 0, 0, 0], [10 * S, 20 * S, 30 * S, 40 * S], [0, 0, 0, 0], [0, 0, 0, 0],
                      [10 * S + S // 10, 20 * S + 3 * S // 10, 31 * S, 55 * S], [0.9, 0.8, 0.7, 0.9],
                      n_models=1, options=options, arrival_group=[0, 1, 2, 3])
    k = options.threshold_index
    assert r.n_reference_by_group.tolist() == [[1, 1, 1, 1], [0, 0, 0, 0]]
    assert r.matched_by_group[0].tolist() == [[1, 1, 0, 0], [0, 0, 0, 0]]
    assert int(r.matched[0, 0, k]) == 2 and int(r.emitted[0, 0, k]) == 4  # the pick at 55 s has no group
    assert sorted(zip(r.pair_residual_ns.tolist(), r.pair_group.tolist())) == [
        (S // 10, 0), (3 * S // 10, 1), (S, 2)]


def test_without_groups_the_axes_are_empty_and_nothing_else_changes():
    args = ([0, 1, 0], [10 * S, 12 * S, 30 * S], [0, 1, 1], [0, 1, 0], [10 * S, 12 * S + S // 5, 10 * S + S],
            [0.9, 0.5, 0.4])
    plain = score_station(*args, n_models=2, options=Options())
    assert plain.n_reference_by_group.shape == (2, 0) and plain.matched_by_group.shape == (2, 2, 0)
    assert plain.pair_group.dtype == np.int32 and not plain.pair_group.any()
    grouped = score_station(*args, n_models=2, options=_grouped(Options(), 3), arrival_group=[2, 1, 0])
    for f in dataclasses.fields(plain):
        if f.name not in GROUPED:
            a, b = getattr(plain, f.name), getattr(grouped, f.name)
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), f.name


def _brute_by_group(case, options: Options, groups: np.ndarray, n_groups: int):
    """SPEC §14 literally: the §3 walk per (model, phase), then each matched pick counted in its arrival's group."""
    floor, theta = options.floor, options.threshold
    matched = np.zeros((case.n_models, 2, n_groups), np.int64)
    pairs: Counter = Counter()
    for m in range(case.n_models):
        for p in range(2):
            idx = [i for i in range(case.arrival_time.size) if int(case.arrival_phase[i]) == p]
            idx.sort(key=lambda i: int(case.arrival_time[i]))
            times = [int(case.arrival_time[i]) for i in idx]
            picks = [(int(t), float(c)) for mm, pp, t, c in zip(case.pick_model, case.pick_phase, case.pick_time,
                                                                  case.pick_conf)
                     if int(mm) == m and int(pp) == p and float(c) >= floor]
            for (_, c), a in zip(picks, brute.walk(times, picks, options.tol_ns)):
                if a >= 0 and c >= theta:
                    matched[m, p, groups[idx[a]]] += 1
            for (t, c), a in zip(picks, brute.walk(times, picks, options.residual_tol_ns)):
                if a >= 0:
                    pairs[(m, p, t - times[a], c, int(groups[idx[a]]))] += 1
    n_reference = np.zeros((2, n_groups), np.int64)
    np.add.at(n_reference, (np.asarray(case.arrival_phase, np.int64), groups), 1)
    return n_reference, matched, pairs


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(case=stations(), data=st.data())
def test_groups_against_the_walk_and_sums_over_groups_equal_the_ungrouped_counts(case, data):
    n_groups = data.draw(st.integers(1, 4))
    groups = np.array(data.draw(st.lists(st.integers(0, n_groups - 1), min_size=case.arrival_time.size,
                                         max_size=case.arrival_time.size)), dtype=np.int64)
    options = _grouped(case.options, n_groups)
    got = score_station(*case.arrays, n_models=case.n_models, options=options, arrival_group=groups)
    plain = score_station(*case.arrays, n_models=case.n_models, options=case.options)
    k = options.threshold_index
    # Sums over the groups are the ungrouped counts, exactly.
    assert np.array_equal(got.n_reference_by_group.sum(axis=-1), plain.n_reference)
    assert np.array_equal(got.matched_by_group.sum(axis=-1), plain.matched[..., k])
    # And each group's count is the walk's.
    n_reference, matched, pairs = _brute_by_group(case, options, groups, n_groups)
    assert np.array_equal(got.n_reference_by_group, n_reference)
    assert np.array_equal(got.matched_by_group, matched)
    mine = Counter(zip(got.pair_model.tolist(), got.pair_phase.tolist(), got.pair_residual_ns.tolist(),
                       got.pair_conf.tolist(), got.pair_group.tolist()))
    assert mine == pairs
    # The pairs without their group are the ungrouped run's, in the same order.
    for name in ("pair_model", "pair_phase", "pair_residual_ns", "pair_conf"):
        assert np.array_equal(getattr(got, name), getattr(plain, name)), name


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(data=st.data(), n_models=st.integers(1, 2))
def test_blocks_add_up_to_the_whole_station_with_groups(data, n_models):
    options = Options(tol=0.5, residual_tol=1.0, thresholds=[0.1, 0.3, 0.5], group_by="g").with_group_labels(
        ["a", "b", "c"])
    step = S // 4
    n_arr, n_pick = data.draw(st.integers(1, 15)), data.draw(st.integers(0, 30))
    ints = lambda lo, hi, n: np.array(data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)),  # noqa: E731
                                      dtype=np.int64)
    a_t, a_p, a_g = ints(0, 200, n_arr) * step, ints(0, 1, n_arr), ints(0, 2, n_arr)
    p_t, p_p, p_m, p_c = ints(-4, 204, n_pick) * step, ints(0, 1, n_pick), ints(0, n_models - 1, n_pick), \
        ints(0, 10, n_pick) / 10.0
    whole = score_station(a_p, a_t, p_m, p_p, p_t, p_c, n_models=n_models, options=options, arrival_group=a_g)
    cuts = cut_points(a_t, residual_tol_ns=options.residual_tol_ns,
                      span=(int(p_t.min(initial=0)), int(p_t.max(initial=1))), n_blocks=data.draw(st.integers(2, 6)))
    a_b, p_b = block_of(a_t, cuts), block_of(p_t, cuts)
    parts = [score_station(a_p[a_b == b], a_t[a_b == b], p_m[p_b == b], p_p[p_b == b], p_t[p_b == b],
                           p_c[p_b == b], n_models=n_models, options=options, arrival_group=a_g[a_b == b])
             for b in range(cuts.size + 1)]
    assert merge_results(parts).equals(whole)
