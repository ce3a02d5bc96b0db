"""Property tests: the kernel and the metrics equal the brute force of ``tests/helpers/brute.py``.

Cases come from :mod:`tests.helpers.strategies` (small, quantised stations where
exact ties are common) and are compared by :mod:`tests.helpers.against_brute`;
here also: the matching alone against the walk, the empty sides, a wide time
span, and bit-for-bit invariance under any permutation of input rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import greedy_match
from pickscale.options import Options
from tests.helpers import brute
from tests.helpers.against_brute import (
    FIELDS_ALL,
    check_against_brute,
    check_counts,
    check_metrics,
    check_pairs,
    run_kernel,
)
from tests.helpers.examples import examples
from tests.helpers.strategies import JITTER_NS, OFFSETS_NS, RESIDUAL_TOLS, SMALL_GRID, STEPS_NS, TOLS, Case, stations

# ------------------------------------------------------------------ matching


@pytest.mark.slow
@settings(max_examples=300)
@given(data=st.data())
def test_greedy_match_equals_the_walk(data):
    # Arrivals sorted with repeats allowed (the function's contract), picks in
    # any order.  Identical picks (same time and conf) are interchangeable, so
    # compare the multiset of (time, conf, arrival) rather than per row.
    step = data.draw(st.sampled_from(STEPS_NS))
    offset = data.draw(st.sampled_from(OFFSETS_NS))
    arrivals = sorted(
        offset + s * step + j
        for s, j in data.draw(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(JITTER_NS)), max_size=8))
    )
    picks = data.draw(
        st.lists(st.tuples(st.integers(0, 20), st.sampled_from(JITTER_NS), st.integers(0, 20)), max_size=12)
    )
    tol_ns = round(data.draw(st.sampled_from(TOLS + RESIDUAL_TOLS)) * 1e9)
    times = np.array([offset + s * step + j for s, j, _ in picks], dtype=np.int64)
    conf = np.array([c / 20 for _, _, c in picks], dtype=np.float64)

    got = greedy_match(np.array(arrivals, dtype=np.int64), times, conf, tol_ns=tol_ns)
    ref = brute.walk(arrivals, list(zip(times.tolist(), conf.tolist())), tol_ns)

    assert got.shape == (len(picks),) and got.dtype == np.int64
    assert sorted(zip(times.tolist(), conf.tolist(), got.tolist())) == sorted(
        zip(times.tolist(), conf.tolist(), ref)
    )
    # No arrival taken twice; every pair within tol.
    taken = [i for i in got.tolist() if i != -1]
    assert len(taken) == len(set(taken))
    for q, i in zip(times.tolist(), got.tolist()):
        if i != -1:
            assert abs(q - arrivals[i]) <= tol_ns


@pytest.mark.slow
@settings(max_examples=examples(100))
@given(case=stations())
def test_kernel_and_metrics_equal_brute_force(case):
    check_against_brute(case)


def _empty_cases():
    # The strategy always draws at least one arrival and one pick; the empty
    # sides are pinned here instead, through the same comparisons.
    s = 10**9
    i8, i32, i64, f64 = np.int8, np.int32, np.int64, np.float64
    no = dict(arrival_phase=np.zeros(0, i8), arrival_time=np.zeros(0, i64))
    some = dict(arrival_phase=np.array([0, 1], i8), arrival_time=np.array([10 * s, 12 * s], i64))
    none = dict(pick_model=np.zeros(0, i32), pick_phase=np.zeros(0, i8), pick_time=np.zeros(0, i64),
                pick_conf=np.zeros(0, f64))
    picks = dict(pick_model=np.array([0, 1], i32), pick_phase=np.array([0, 0], i8),
                 pick_time=np.array([10 * s, 11 * s], i64), pick_conf=np.array([0.5, 0.05], f64))  # fmt: skip
    for opts in (Options(), Options(thresholds=SMALL_GRID)):
        yield Case(options=opts, n_models=2, **no, **none)
        yield Case(options=opts, n_models=2, **no, **picks)
        yield Case(options=opts, n_models=2, **some, **none)
        yield Case(options=opts, n_models=2, **some, **picks)


@pytest.mark.slow
def test_empty_sides_equal_brute_force():
    for case in _empty_cases():
        check_against_brute(case)


def test_wide_time_span_equals_brute_force():
    # One station with rows in 1970 and in 2043 (2**61 ns apart) and 3 models:
    # the kernel cannot put all six (model, phase) streams on one int64 axis and
    # must split them; the answer must not change.
    s = 10**9
    far = 2**61
    arrival_time = np.array([10 * s, 12 * s, far + 10 * s, far + 12 * s], np.int64)
    arrival_phase = np.array([0, 1, 0, 1], np.int8)
    pick_model, pick_phase, pick_time, pick_conf = [], [], [], []
    for m in range(3):
        for base in (0, far):
            for phase, dt, c in ((0, 10.2, 0.9), (0, 10.4, 0.6), (1, 12.5, 0.7), (0, 12.3, 0.8), (1, 9.9, 0.4)):
                pick_model.append(m)
                pick_phase.append(phase)
                pick_time.append(base + round(dt * s) + m)
                pick_conf.append(c)
    case = Case(
        options=Options(thresholds=SMALL_GRID),
        n_models=3,
        arrival_phase=arrival_phase,
        arrival_time=arrival_time,
        pick_model=np.array(pick_model, np.int32),
        pick_phase=np.array(pick_phase, np.int8),
        pick_time=np.array(pick_time, np.int64),
        pick_conf=np.array(pick_conf, np.float64),
    )
    r = run_kernel(case)
    b = brute.score_station_with(case.options, *case.arrays, n_models=case.n_models)
    check_counts(r, b, case)
    check_pairs(r, b, case)
    check_metrics(r, b, case)
    assert r.matched.sum() > 0 and r.swapped.sum() > 0 and r.duplicates.sum() > 0


# ------------------------------------------------------------------ determinism (SPEC §9)


@pytest.mark.slow
@settings(max_examples=examples(75))
@given(data=st.data())
def test_row_order_does_not_change_a_bit(data):
    case = data.draw(stations())
    a_perm = np.array(data.draw(st.permutations(range(case.arrival_time.size))), dtype=np.int64)
    p_perm = np.array(data.draw(st.permutations(range(case.pick_time.size))), dtype=np.int64)
    shuffled = Case(
        options=case.options,
        n_models=case.n_models,
        arrival_phase=case.arrival_phase[a_perm],
        arrival_time=case.arrival_time[a_perm],
        pick_model=case.pick_model[p_perm],
        pick_phase=case.pick_phase[p_perm],
        pick_time=case.pick_time[p_perm],
        pick_conf=case.pick_conf[p_perm],
    )
    r1, r2 = run_kernel(case), run_kernel(shuffled)
    for name in FIELDS_ALL:
        x, y = np.asarray(getattr(r1, name)), np.asarray(getattr(r2, name))
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"{name} changed under a row permutation"


def test_brute_grids_match_options():
    # brute.py's grids are written from SPEC §2/§7 independently of options.py.
    for threshold in (0.3, 0.25, 0.02, 0.95):
        np.testing.assert_array_equal(Options(threshold=threshold).grid, brute.default_grid(threshold))
    for floor in (0.0, 0.02, 0.1, 0.123, 1.0):
        np.testing.assert_array_equal(Options(thresholds=[floor], threshold=floor).fine, brute.fine_grid(floor))
    assert len(brute.fine_grid(0.02)) == 981
    assert not math.isnan(brute.ece([1] + [0] * 9, [0.05] + [0.0] * 9, [0] * 10, n_reference=1))
