"""SPEC §3 by hand: ``pickscale.kernel.greedy_match`` on cases worked out on paper.

Every case is also run through ``brute.walk`` so that the brute-force reference
used by the property tests is itself pinned to the same hand-computed answers.
Times are written in seconds and converted to int64 ns with rounding; where a
case is about one nanosecond the ns are written out.
"""

from __future__ import annotations

import numpy as np
import pytest

from pickscale.kernel import greedy_match
from tests.helpers import brute
from tests.helpers.brute import ns

S = 10**9  # ns per second
#: An epoch-scale offset (2023-11-14): float64 spacing there is 256 ns, so any
#: implementation that turns times into floats cannot see a 1 ns difference.
EPOCH = 1_700_000_000 * S


def _run_both(arrivals_ns, pick_times_ns, pick_conf, tol_ns):
    """Run the real greedy_match and brute.walk; return both as int lists."""
    arrivals_ns = np.asarray(arrivals_ns, dtype=np.int64)
    pick_times_ns = np.asarray(pick_times_ns, dtype=np.int64)
    pick_conf = np.asarray(pick_conf, dtype=np.float64)
    got = greedy_match(arrivals_ns, pick_times_ns, pick_conf, tol_ns=int(tol_ns))
    ref = brute.walk(arrivals_ns.tolist(), list(zip(pick_times_ns.tolist(), pick_conf.tolist())), int(tol_ns))
    return got, ref


# (id, arrivals s, picks [(time s, conf)], tol s, expected arrival index per pick)
CASES = [
    # SPEC §3's greedy counter-example.  In confidence order 10.25 (0.9) goes
    # first: |10.25-10.0| = 0.25, |10.25-10.7| = 0.45, both <= 0.5, nearer is
    # 10.0 -> takes arrival 0.  Then 9.6 (0.5): 10.0 is taken; |9.6-10.7| = 1.1
    # > 0.5 -> unmatched.  One pair, although 9.6-10.0 and 10.25-10.7 were possible.
    ("spec-counter-example", [10.0, 10.7], [(10.25, 0.9), (9.6, 0.5)], 0.5, [0, -1]),
    # Same picks, input rows reversed: the result follows the picks' input order.
    ("spec-counter-example-reversed", [10.0, 10.7], [(9.6, 0.5), (10.25, 0.9)], 0.5, [-1, 0]),
    # A more confident but farther pick wins.  5.4 (0.9) goes first, 0.4 <= 0.5
    # from 5.0 -> takes it; 5.1 (0.5) is nearer (0.1) but comes second and finds
    # nothing free.
    ("confident-farther-wins", [5.0], [(5.1, 0.5), (5.4, 0.9)], 0.5, [-1, 0]),
    # Equal conf -> earlier time first.  4.6 and 5.1 both have conf 0.6; 4.6 is
    # earlier so it goes first and takes 5.0 (distance 0.4) although 5.1 is
    # nearer (0.1).  5.1 is then unmatched.
    ("equal-conf-earlier-time-first", [5.0], [(5.1, 0.6), (4.6, 0.6)], 0.5, [-1, 0]),
    # Equidistant arrivals -> the earlier arrival.  5.0 is 0.2 from both 4.8 and
    # 5.2 (exactly 200_000_000 ns each) -> takes 4.8 (index 0).
    ("equidistant-earlier-arrival", [4.8, 5.2], [(5.0, 0.9)], 0.5, [0]),
    # ... and a second, less confident pick at the same time takes the other one.
    ("equidistant-second-pick", [4.8, 5.2], [(5.0, 0.4), (5.0, 0.9)], 0.5, [1, 0]),
    # Identical arrival times: at equal distance the lower index in the sorted list.
    ("identical-arrivals", [5.0, 5.0], [(5.0, 0.9)], 0.5, [0]),
    ("identical-arrivals-two-picks", [5.0, 5.0], [(5.2, 0.8), (5.0, 0.9)], 0.5, [1, 0]),
    # Identical arrival times approached from the late side: 5.2 is 0.2 from both
    # 5.0s -> still the lower index 0 (then 5.3 takes index 1).
    ("identical-arrivals-from-later", [5.0, 5.0], [(5.2, 0.9), (5.3, 0.8)], 0.5, [0, 1]),
    ("identical-arrivals-from-earlier", [5.0, 5.0], [(4.8, 0.9)], 0.5, [0]),
    # Nearest free arrival: 10.2 is 0.2 from 10.0 and 0.1 from 10.3 -> 10.3 (index 1);
    # then 10.1 (0.8) finds 10.3 taken and takes 10.0 (0.1 away).
    ("nearest-then-next", [10.0, 10.3], [(10.2, 0.9), (10.1, 0.8)], 0.5, [1, 0]),
    # A taken arrival pushes the next pick to its second choice: 10.0 (0.9) takes
    # 10.0; 10.1 (0.8) would prefer 10.0 (0.1) but takes 10.4 (0.3).
    ("second-choice", [10.0, 10.4], [(10.0, 0.9), (10.1, 0.8)], 0.5, [0, 1]),
    # Inclusive tolerance, in both directions: exactly 0.5 s matches.
    ("inclusive-late", [10.0], [(10.5, 0.9)], 0.5, [0]),
    ("inclusive-early", [10.0], [(9.5, 0.9)], 0.5, [0]),
    # No arrivals: every pick unmatched.  No picks: empty result.
    ("no-arrivals", [], [(1.0, 0.9), (2.0, 0.1)], 0.5, [-1, -1]),
    ("no-picks", [1.0, 2.0], [], 0.5, []),
    # greedy_match does not apply the floor (the kernel does): conf 0 still matches.
    ("conf-zero-matches", [1.0], [(1.0, 0.0)], 0.5, [0]),
    # A pick between two arrivals farther than tol from both.
    ("out-of-reach", [1.0, 3.0], [(2.0, 0.9)], 0.5, [-1]),
]


@pytest.mark.parametrize("arrivals, picks, tol, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hand_cases(arrivals, picks, tol, expected):
    times = [p[0] for p in picks]
    conf = [p[1] for p in picks]
    got, ref = _run_both(ns(arrivals), ns(times), conf, round(tol * S))
    assert ref == expected, "brute.walk disagrees with the hand-worked answer"
    assert got.dtype == np.int64
    assert got.shape == (len(picks),)
    assert got.tolist() == expected


@pytest.mark.parametrize("offset", [0, EPOCH], ids=["t0", "epoch"])
def test_tolerance_is_inclusive_to_the_nanosecond(offset):
    # Arrival at 10 s, tol 0.5 s = 500_000_000 ns.  Distances 500_000_000 ns
    # (exactly tol) match; 500_000_001 ns do not -- on either side.
    a = offset + 10 * S
    tol_ns = 500_000_000
    arrivals = [a]
    for pick, expected in [
        (a + tol_ns, [0]),
        (a - tol_ns, [0]),
        (a + tol_ns + 1, [-1]),
        (a - tol_ns - 1, [-1]),
    ]:
        got, ref = _run_both(arrivals, [pick], [0.9], tol_ns)
        assert ref == expected
        assert got.tolist() == expected, f"pick at arrival{pick - a:+d} ns, tol {tol_ns} ns"


@pytest.mark.parametrize("offset", [0, EPOCH], ids=["t0", "epoch"])
def test_one_nanosecond_decides_nearest_and_order(offset):
    # Two arrivals 1 s apart; pick 1 ns later than the midpoint -> nearer to the
    # second arrival (499_999_999 vs 500_000_001 ns), so it takes index 1.
    a0, a1 = offset + 10 * S, offset + 11 * S
    got, ref = _run_both([a0, a1], [a0 + S // 2 + 1], [0.9], S)
    assert ref == [1] and got.tolist() == [1]
    # Exactly at the midpoint: equidistant -> the earlier arrival.
    got, ref = _run_both([a0, a1], [a0 + S // 2], [0.9], S)
    assert ref == [0] and got.tolist() == [0]
    # Equal conf, times 1 ns apart: the earlier pick (a0 + 300 ms) goes first and
    # takes a0 though the later one (a0 + 300 ms + 1 ns) is listed first.
    got, ref = _run_both([a0], [a0 + 300_000_001, a0 + 300_000_000], [0.5, 0.5], S // 2)
    assert ref == [-1, 0] and got.tolist() == [-1, 0]


def test_zero_tolerance_matches_only_coincident_times():
    # tol = 0: only |q - r| = 0 matches.  The more confident pick is 1 ns off.
    a = 10 * S
    got, ref = _run_both([a], [a, a + 1], [0.5, 0.9], 0)
    assert ref == [0, -1]
    assert got.tolist() == [0, -1]


def test_identical_picks_are_interchangeable():
    # Two identical picks (same time, same conf) on two identical arrivals: each
    # takes one; which takes which is not specified, the set of indices is.
    got, ref = _run_both(ns([5.0, 5.0]), ns([5.0, 5.0]), [0.7, 0.7], S // 2)
    assert sorted(ref) == [0, 1]
    assert sorted(got.tolist()) == [0, 1]
