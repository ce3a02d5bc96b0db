"""SPEC §19's detection curve counted from a histogram of each event's K-th level: the events × thresholds table's
count, bit for bit (with and without groups)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.metrics.events import count_curve, count_detected, detected_curve


def test_the_hand_worked_case():
    # SPEC §19: 5, 4 and 3 of five P arrivals matched at levels 1 or 2, K = 4: at grid index 0 the first two
    # events (4 levels > 0), at index 1 none (at most 2 levels > 1).
    lv = np.zeros((1, 3, 1, 2, 4), np.int16)
    lv[0, 0, 0, 0] = [2, 2, 1, 1]
    lv[0, 1, 0, 0] = [2, 1, 1, 1]
    lv[0, 2, 0, 0] = [2, 1, 1, 0]
    assert count_curve(lv, 4, 3, np.ones((1, 3), bool), None, 0).tolist() == [[[2, 0, 0]]]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2), st.integers(0, 12), st.integers(1, 3), st.integers(0, 4), st.integers(1, 6),
       st.integers(0, 3), st.data())
def test_count_curve_equals_the_table(nd, ne, nm, k, nt, n_groups, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    levels = rng.integers(0, nt + 3, size=(nd, ne, nm, 2, max(k, 1))).astype(np.int16)
    levels = -np.sort(-levels, axis=-1)  # each phase's levels descending, as stored
    scored = rng.random((nd, ne)) < 0.8
    group = rng.integers(-1, n_groups, size=(nd, ne)) if n_groups else None
    expected = count_detected(detected_curve(levels, k, nt), scored, group, n_groups)
    got = count_curve(levels, k, nt, scored, group, n_groups)
    assert got.dtype == np.int64 and got.shape == expected.shape
    assert np.array_equal(got, expected)
