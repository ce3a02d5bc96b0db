"""Exact sums (pickscale.kernel.exact): both integer paths against Python's exact rationals."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import exact


def _brute(conf, hit, stream, cbin, n_streams):
    """Σ conf per bin, Σ conf² per stream, Σ_hit conf per stream, with each conf as exact.fixed sees it."""
    v = [int(x) for x in exact.fixed(conf)]
    cal = [Fraction(0)] * (n_streams * 10)
    sq = [Fraction(0)] * n_streams
    hits = [Fraction(0)] * n_streams
    for vi, h, g, b in zip(v, hit, stream, cbin):
        cal[b] += vi
        sq[g] += vi * vi
        if h:
            hits[g] += vi
    return cal, sq, hits


def _inputs(draw_conf, n_streams, rng):
    n = len(draw_conf)
    stream = np.sort(rng.integers(0, n_streams, n))
    conf = np.asarray(draw_conf, dtype=np.float64)
    # The kernel's order: stream, then conf descending.
    order = np.lexsort((-conf, stream))
    conf, stream = conf[order], stream[order]
    cbin = stream * 10 + np.minimum(np.floor(conf * 10), 9).astype(np.int64)
    order = np.lexsort((-conf, cbin))  # bins within a stream are contiguous runs too
    conf, stream, cbin = conf[order], stream[order], cbin[order]
    hit = rng.random(n) < 0.4
    return conf, hit, stream, cbin


confs32 = st.lists(st.floats(0.03125, 1.0, width=32), min_size=0, max_size=60)
confs64 = st.lists(st.floats(0.001, 1.0), min_size=0, max_size=60)
quantised = st.lists(st.sampled_from([0.02, 0.3, 0.5, 0.75, 1.0, 0.1 + 0.2]), min_size=0, max_size=60)


@pytest.mark.slow
@settings(max_examples=150)
@given(values=st.one_of(confs32, confs64, quantised), n_streams=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_sums_are_exact_whichever_path_runs(values, n_streams, seed):
    rng = np.random.default_rng(seed)
    conf, hit, stream, cbin = _inputs(values, n_streams, rng)
    cal, sq, hits = exact.sums(conf, hit, stream, cbin, n_streams)
    want_cal, want_sq, want_hits = _brute(conf, hit, stream, cbin, n_streams)
    assert exact._as_int(cal).tolist() == [int(x) for x in want_cal]
    assert exact._square_int(sq).tolist() == [int(x) for x in want_sq]
    assert exact._as_int(hits).tolist() == [int(x) for x in want_hits]
    # Canonical: the other path gives the same integers, bit for bit.
    starts, counts = exact._runs(conf, stream)
    h_starts, h_counts = exact._runs(conf[hit], stream[hit])
    args = (exact.fixed(conf[starts]), counts, cbin[starts], stream[starts],
            exact.fixed(conf[hit][h_starts]), h_counts, stream[hit][h_starts], n_streams)
    slow = exact._limb_sums(*args)
    assert np.array_equal(exact._limbs_of(slow[0]), cal)
    assert np.array_equal(exact._digits_of(slow[1]), sq)
    if not (args[0] & exact._SHORT_LOW).any() and not (args[4] & exact._SHORT_LOW).any():
        fast = exact._short_sums(*args)
        assert [list(map(int, x)) for x in fast] == [list(map(int, x)) for x in slow]


def test_float32_confidences_take_the_short_path(monkeypatch):
    conf = np.sort((np.random.default_rng(1).random(1000) * 0.9 + 0.05).astype(np.float32).astype(np.float64))
    stream = np.zeros(conf.size, dtype=np.int64)
    cbin = np.minimum(np.floor(conf * 10), 9).astype(np.int64)
    order = np.lexsort((-conf, cbin))
    conf, cbin = conf[order], cbin[order]
    called = []
    limb_sums = exact._limb_sums

    def spy(*args):
        called.append(1)
        return limb_sums(*args)

    monkeypatch.setattr(exact, "_limb_sums", spy)
    exact.sums(conf, np.zeros(conf.size, bool), stream, cbin, 1)
    assert not called
    # float64 values with more bits take the limb path.
    exact.sums(conf + 1e-12, np.zeros(conf.size, bool), stream, cbin, 1)
    assert called


def test_merged_limbs_are_canonical_again():
    conf = np.array([1.0, 0.75, 0.5, 0.3])
    parts = [exact.sums(conf[i:i + 2], np.array([True, False]), np.zeros(2, np.int64),
                        np.minimum(np.floor(conf[i:i + 2] * 10), 9).astype(np.int64), 1) for i in (0, 2)]
    whole = exact.sums(conf, np.array([True, False, True, False]), np.zeros(4, np.int64),
                       np.minimum(np.floor(conf * 10), 9).astype(np.int64), 1)
    cal, sq = exact.canonical(parts[0][0] + parts[1][0], parts[0][1] + parts[1][1])
    assert np.array_equal(cal, whole[0]) and np.array_equal(sq, whole[1])
