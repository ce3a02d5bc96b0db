"""SPEC §5, what the results keep of the pairs' sums (``residual_sums``): per level, the counts and the exact sums
in one form, so that a stream's sums merged from parts are the same bytes as one run's, and give its means back."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pickscale.metrics.level_sums import SUM_DIGITS, decode, encode, level_sums
from pickscale.metrics.timing import SUM_TERMS, WITHIN, pair_statistics


def test_the_kept_sums_of_a_hand_worked_stream():
    # Residuals −1, +2, +2 ns at levels 1, 2, 2 (two thresholds), and one of 3·10^9 ns (3 s) at level 0.
    e = np.array([-1, 2, 2, 3_000_000_000])
    level = np.array([1, 2, 2, 0])
    kept = encode(level_sums(e, level, 2, tol=0.5, within=WITHIN))
    assert SUM_TERMS == ("count", "gross", "within_0.1", "within_0.25", "within_0.5",
                         *(f"{n}_{i}" for n in ("abs", "negative", "square") for i in range(SUM_DIGITS)))
    rows = {term: kept[:, i].tolist() for i, term in enumerate(SUM_TERMS)}
    assert rows["count"] == [1, 1, 2]
    assert rows["gross"] == [1, 0, 0]  # (3 s > tol)
    assert rows["within_0.1"] == [0, 1, 2]
    # Σ|e| per level: 3·10^9 = 1·2^31 + 852,516,352; 1; 4.
    assert [rows[f"abs_{i}"] for i in range(2)] == [[852_516_352, 1, 4], [1, 0, 0]]
    assert rows["negative_0"] == [0, 1, 0]
    # Σe² at level 0: 9·10^18 = 4·2^62 + 0·2^31 + ... : digits of 9·10^18 in base 2^31.
    nine = 9 * 10**18
    assert [rows[f"square_{i}"][0] for i in range(SUM_DIGITS)] == [(nine >> (31 * i)) & (2**31 - 1)
                                                                  for i in range(SUM_DIGITS)]
    assert [rows[f"square_{i}"][2] for i in range(SUM_DIGITS)] == [8, 0, 0, 0]
    back = decode(kept, n_within=len(WITHIN))
    assert back.at_threshold("count") == [3, 2]
    assert back.at_threshold("signed") == [3, 4]
    assert back.at_threshold("square") == [9, 8]


@given(st.lists(st.tuples(st.integers(-5 * 10**12, 5 * 10**12), st.integers(0, 4)), min_size=1, max_size=60),
       st.lists(st.integers(0, 60), max_size=4))
def test_the_kept_sums_of_parts_are_the_whole_ones(rows, cuts):
    e = np.array([r[0] for r in rows], np.int64)
    level = np.array([r[1] for r in rows], np.int64)
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    parts = [level_sums(e[a:b], level[a:b], 4, tol=0.5, within=WITHIN) for a, b in zip(bounds[:-1], bounds[1:])]
    whole = level_sums(e, level, 4, tol=0.5, within=WITHIN)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    assert encode(total).tobytes() == encode(whole).tobytes()
    back = decode(encode(whole), n_within=len(WITHIN))
    for name in ("count", "abs", "signed", "square"):
        assert back.at_threshold(name) == whole.at_threshold(name)
    assert encode(back).tobytes() == encode(whole).tobytes()


def test_a_streams_statistics_carry_its_kept_sums():
    out = pair_statistics([100_000_000, -200_000_000], [0.9, 0.4], [0, 0], thresholds=[0.3, 0.5], tol=0.5,
                          threshold=0.3, n_groups=0)
    assert out["sums"].shape == (3, len(SUM_TERMS))
    assert out["sums"][:, 0].tolist() == [0, 1, 1]  # (levels 0, 1, 2: conf 0.4 clears one threshold, 0.9 two)
