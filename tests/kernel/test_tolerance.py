"""SPEC §13 in the kernel: ``matched_at_tol``, one detection matching per extra tolerance, read at the shared
threshold — by hand, against the kernel run with that tolerance as its ``tol`` and the brute force, and through
time blocks and the reduction tree."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.errors import OptionsError
from pickscale.kernel import merge_results, score_station
from pickscale.kernel.blocks import block_of, cut_points
from pickscale.options import Options
from tests.helpers import brute
from tests.helpers.examples import examples
from tests.helpers.strategies import stations

S = 1_000_000_000


def test_recall_changes_between_tolerances_by_hand():
    # SPEC §13's worked example: P arrivals at 10 s and 30 s; picks 0.05 s and 0.30 s late (conf 0.9, 0.8),
    # and one pick below the shared threshold (conf 0.2) right on the second arrival: it takes part in the
    # matching (>= floor) but is not counted at 0.3.  The 0.8 pick is the more confident one, so it keeps the
    # arrival at 0.5 s and the 0.2 pick goes unmatched there; at 0.1 s only the 0.2 pick reaches it.
    options = Options(tols=[0.1, 0.25, 0.5, 1.0])
    r = score_station([0, 0], [10 * S, 30 * S], [0, 0, 0], [0, 0, 0], [10 * S + S // 20, 30 * S + 3 * S // 10,
                      30 * S], [0.9, 0.8, 0.2], n_models=1, options=options)
    assert r.matched_at_tol.shape == (1, 2, 4)
    assert r.matched_at_tol[0, 0].tolist() == [1, 1, 2, 2]
    assert r.matched_at_tol[0, 1].tolist() == [0, 0, 0, 0]  # no S pick
    assert r.matched[0, 0, options.threshold_index] == 2  # the run's own tol (0.5)


def test_without_tols_the_axis_is_empty_and_nothing_else_changes():
    args = ([0, 1], [10 * S, 12 * S], [0, 1, 1], [0, 1, 0], [10 * S, 12 * S + S // 5, 10 * S + S], [0.9, 0.5, 0.4])
    plain = score_station(*args, n_models=2, options=Options())
    assert plain.matched_at_tol.shape == (2, 2, 0) and plain.matched_at_tol.dtype == np.int64
    with_tols = score_station(*args, n_models=2, options=Options(tols=[0.1, 2.0]))
    for f in dataclasses.fields(plain):
        if f.name != "matched_at_tol":
            a, b = getattr(plain, f.name), getattr(with_tols, f.name)
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), f.name


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(case=stations(), data=st.data())
def test_each_tolerance_equals_the_run_with_it_as_tol(case, data):
    rtol = case.options.residual_tol
    choices = [t for t in (0.1, 0.25, 0.5, 1.0, 2.0, case.options.tol) if 0 < t <= rtol]
    tols = sorted(set(data.draw(st.lists(st.sampled_from(choices), min_size=1, max_size=4))))
    o = case.options
    options = Options(threshold=o.threshold, thresholds=o.thresholds, tol=o.tol, residual_tol=rtol, tols=tols)
    got = score_station(*case.arrays, n_models=case.n_models, options=options)
    k = options.threshold_index
    for i, tol in enumerate(tols):
        alone = Options(threshold=o.threshold, thresholds=o.thresholds, tol=tol, residual_tol=rtol)
        own = score_station(*case.arrays, n_models=case.n_models, options=alone)
        assert np.array_equal(got.matched_at_tol[..., i], own.matched[..., k]), tol
        walk = brute.score_station_with(alone, *case.arrays, n_models=case.n_models)
        assert np.array_equal(got.matched_at_tol[..., i], np.asarray(walk.matched)[..., k]), tol
    if o.tol in tols:  # the row at the run's own tol is the run's matched, exactly
        assert np.array_equal(got.matched_at_tol[..., tols.index(o.tol)], got.matched[..., k])


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(data=st.data(), n_models=st.integers(1, 2))
def test_blocks_add_up_to_the_whole_station(data, n_models):
    options = Options(tol=0.5, residual_tol=1.0, thresholds=[0.1, 0.3, 0.5], tols=[0.25, 0.5, 1.0])
    step = S // 4
    n_arr, n_pick = data.draw(st.integers(1, 15)), data.draw(st.integers(0, 30))
    ints = lambda lo, hi, n: np.array(data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)),  # noqa: E731
                                      dtype=np.int64)
    a_t, a_p = ints(0, 200, n_arr) * step, ints(0, 1, n_arr)
    p_t, p_p, p_m, p_c = ints(-4, 204, n_pick) * step, ints(0, 1, n_pick), ints(0, n_models - 1, n_pick), \
        ints(0, 10, n_pick) / 10.0
    whole = score_station(a_p, a_t, p_m, p_p, p_t, p_c, n_models=n_models, options=options)
    cuts = cut_points(a_t, residual_tol_ns=options.residual_tol_ns,
                      span=(int(p_t.min(initial=0)), int(p_t.max(initial=1))), n_blocks=data.draw(st.integers(2, 6)))
    a_b, p_b = block_of(a_t, cuts), block_of(p_t, cuts)
    parts = [score_station(a_p[a_b == b], a_t[a_b == b], p_m[p_b == b], p_p[p_b == b], p_t[p_b == b],
                           p_c[p_b == b], n_models=n_models, options=options) for b in range(cuts.size + 1)]
    assert merge_results(parts).equals(whole)


@pytest.mark.parametrize("tols, message", [
    ([0.5, 0.1], "strictly ascending"),
    ([0.1, 0.1], "strictly ascending"),
    ([0.0, 0.5], "> 0"),
    ([float("nan")], "> 0"),
    ([0.1, 3.0], "residual_tol"),
    ([], "empty"),
    ("0.1,0.5", "list"),
    (["a"], "numbers"),
])
def test_bad_tols_are_refused(tols, message):
    with pytest.raises(OptionsError, match=message) as err:
        Options(tols=tols)
    assert "tols" in err.value.options


def test_tols_round_trip_through_attrs_and_are_absent_by_default():
    assert "tols" not in Options().to_attrs()
    o = Options(tols=[0.1, 1])
    assert o.to_attrs()["tols"] == [0.1, 1.0]
    assert Options.from_attrs(o.to_attrs()) == o and Options.from_attrs(Options().to_attrs()).tols is None
