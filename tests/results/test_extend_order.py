"""Extending by a stretch of time gives the same answer whatever the order of the parts (SPEC §11).

Two stretches whose scored spans (picks ± residual_tol) meet: an arrival of either side inside the window
where they meet, at a station both sides score, could be matched by the other side's picks in one run.  The
extension refuses, naming the station, in either order; a quiet gap is accepted in either order, and both
orders give the same tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.engine.extension import extended
from pickscale.errors import InputError
from pickscale.report.tables import to_csv_bytes

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")


def frames(ref_times, picks):
    """One dataset, station A, phase P; times in seconds since 1970 (SPEC §1)."""
    ref = pd.DataFrame({"station": "A", "phase": "P", "time": [float(t) for t in ref_times]})
    pk = pd.DataFrame({"station": "A", "phase": "P", "model": "m", "time": [float(t) for t, _ in picks],
                       "conf": [float(c) for _, c in picks]})
    return ref, pk


# The case: part A holds arrivals at 100 s and 201 s and picks at 100.1 s (0.9) and 200.0 s (0.8);
# part B an arrival at 400 s and picks at 201.2 s (0.5) and 400.1 s (0.9).
PART_A = frames([100, 201], [(100.1, 0.9), (200.0, 0.8)])
PART_B = frames([400], [(201.2, 0.5), (400.1, 0.9)])


@pytest.mark.slow
def test_one_run_matches_all_three_by_hand():
    ref = pd.concat([PART_A[0], PART_B[0]], ignore_index=True)
    picks = pd.concat([PART_A[1], PART_B[1]], ignore_index=True)
    ds = pickscale.score(ref, picks)
    one = ds.sel(dataset="all", model="m", phase="P", threshold=0.3)
    # 100.1 takes 100; 201.2 (0.2 s from 201, within tol 0.5) takes 201 — 200.0 is 1.0 s away; 400.1 takes 400.
    assert int(ds.n_reference.sum()) == 3 and int(one.matched.sum()) == 3


@pytest.mark.slow
@pytest.mark.parametrize("first, second, side", [(PART_A, PART_B, "stored"), (PART_B, PART_A, "new")])
def test_spans_that_meet_with_an_arrival_are_refused_in_either_order(first, second, side):
    stored = pickscale.score(*first)
    with pytest.raises(InputError) as info:
        extended(stored, *second)
    message = str(info.value)
    # A's arrival at 201 s lies where the spans meet ([199.2, 202.0] s): it is named, with the side holding it.
    assert "scored spans meet" in message and f"A ({side})" in message, message
    assert "1970-01-01T00:03:19.2" in message and "1970-01-01T00:03:22.0" in message, message


@pytest.mark.slow
def test_a_store_without_arrival_spans_is_refused_where_spans_meet():
    stored = pickscale.score(*PART_A)
    for entry in stored.attrs["extent"]["datasets"]["all"]:
        del entry["arrival_spans"]  # as a store written before stretches kept them
    with pytest.raises(InputError, match=r"A \(stored\)"):
        extended(stored, *frames([400], [(200.5, 0.1), (400.1, 0.9)]))


@pytest.mark.slow
def test_a_quiet_gap_is_accepted_in_either_order_with_the_same_tables():
    late = frames([300, 400], [(300.1, 0.5), (400.1, 0.9)])  # spans [98.1, 202.0] and [298.1, 402.1]: apart
    ab = extended(pickscale.score(*PART_A), *late)
    ba = extended(pickscale.score(*late), *PART_A)
    one = pickscale.score(pd.concat([PART_A[0], late[0]]), pd.concat([PART_A[1], late[1]]))
    for name, frame in pickscale.tables(one).items():
        assert to_csv_bytes(pickscale.tables(ab)[name]) == to_csv_bytes(frame), name
        assert to_csv_bytes(pickscale.tables(ba)[name]) == to_csv_bytes(frame), name


def _outcome(stored_part, new_part):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = extended(pickscale.score(*stored_part), *new_part)
    except InputError as exc:
        return "refused", "scored spans meet" in str(exc) or "already stored" in str(exc)
    return "accepted", {name: to_csv_bytes(frame) for name, frame in pickscale.tables(ds).items()}


part = st.tuples(
    st.lists(st.integers(0, 80), min_size=1, max_size=3),  # arrival times, tenths of a second into the part
    st.lists(st.tuples(st.integers(0, 80), st.sampled_from([0.1, 0.35, 0.8])), min_size=1, max_size=4),
)


@pytest.mark.slow
@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(early=part, late=part, gap=st.integers(0, 60))
def test_the_answer_does_not_depend_on_the_order_of_the_parts(early, late, gap):
    # Part one's picks lie in [0, 8] s and part two's start at least 8.1 s + gap/10: the pick spans never
    # overlap (a stretch of time, not new models), and the scored spans meet when the gap is under 2 × 2 s.
    def build(p, offset):
        ref_t, pk = p
        return frames([offset + t / 10 for t in ref_t], [(offset + t / 10, c) for t, c in pk])

    one = build(early, 1000.0)
    two = build(late, 1000.0 + 8.1 + gap / 10)
    a, b = _outcome(one, two), _outcome(two, one)
    assert a[0] == b[0], (a, b)
    if a[0] == "accepted":
        assert a[1] == b[1]
    # Where the two scored spans hold an arrival of either part, the extension is refused.
    lo = min(t for t, _ in two[1][["time", "conf"]].itertuples(index=False)) - 2.0
    hi = max(t for t, _ in one[1][["time", "conf"]].itertuples(index=False)) + 2.0
    arrivals = np.r_[one[0]["time"].to_numpy(), two[0]["time"].to_numpy()]
    in_both = ((arrivals >= lo) & (arrivals <= hi)).any()
    # Each part's arrivals count only inside its own scored span (SPEC §2).
    own = np.r_[
        one[0]["time"][(one[0]["time"] >= one[1]["time"].min() - 2) & (one[0]["time"] <= one[1]["time"].max() + 2)],
        two[0]["time"][(two[0]["time"] >= two[1]["time"].min() - 2) & (two[0]["time"] <= two[1]["time"].max() + 2)],
    ]
    scored_in_both = ((own >= lo) & (own <= hi)).any()
    if scored_in_both:
        assert a[0] == "refused", (a, in_both)
