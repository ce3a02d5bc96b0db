"""Issue 27: the detection-only path of SPEC §13 (``match_detections``, one candidate search for every
tolerance, and ``_matched_at_tols`` matching only the picks at or above the shared threshold) equals the
former one (one full ``match_streams`` per tolerance) on every input: ties, several streams, empty streams,
tol = 0, and spans wide enough to split the streams into batches or to match them one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import station
from pickscale.kernel.streams import N_PHASES, match_detections, match_streams
from pickscale.options import Options
from tests.helpers.examples import examples

_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min
# Offsets and lattice steps: ordinary spans (one batch), spans of ~2**60 (several batches of streams) and the
# whole int64 range (streams matched one by one on raw times).
_LAYOUTS = [(0, 1), (-5, 1), (0, 1 << 57), (_SMALL + 8, (_BIG // 8) * 2)]


@st.composite
def _streams(draw):
    n_models = draw(st.integers(1, 3))
    n_streams = n_models * N_PHASES
    offset, step = draw(st.sampled_from(_LAYOUTS))
    n_slots = draw(st.integers(1, 8))
    slot = st.integers(0, n_slots)
    jitter = st.integers(-2, 2) if step == 1 else st.just(0)
    # Some streams drawn empty of arrivals, of picks, or of both.
    r_streams = draw(st.sets(st.integers(0, n_streams - 1)))
    p_streams = sorted(draw(st.sets(st.integers(0, n_streams - 1))))
    arrivals = draw(st.lists(st.tuples(st.sampled_from(sorted(r_streams)), slot), max_size=10)) if r_streams else []
    picks = draw(st.lists(st.tuples(st.sampled_from(p_streams), slot, jitter, st.integers(0, 4)),
                          max_size=16)) if p_streams else []
    r_stream = np.array([g for g, _ in arrivals], dtype=np.int64)
    r_time = np.array([offset + s * step for _, s in arrivals], dtype=np.int64)
    order = np.lexsort((r_time, r_stream))  # arrivals sorted by (stream, time); repeats allowed
    r_stream, r_time = r_stream[order], r_time[order]
    p_stream = np.array([g for g, *_ in picks], dtype=np.int64)
    p_time = np.array([int(np.clip(offset + s * step + j, _SMALL, _BIG)) for _, s, j, _ in picks], dtype=np.int64)
    p_conf = np.array([c / 4 for *_, c in picks], dtype=np.float64)  # few values: ties in conf and time
    order = np.lexsort((p_time, -p_conf, p_stream))  # canonical order
    tol_unit = 1 if step == 1 else min(step, 1 << 60)  # every rtol below 2**63
    tols = sorted(draw(st.sets(st.integers(0, 3), min_size=1, max_size=4)))
    tols = [t * tol_unit for t in tols]
    rtol = max(tols) + draw(st.integers(0, 2)) * tol_unit
    return r_stream, r_time, p_stream[order], p_time[order], p_conf[order], n_streams, tols, rtol


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(case=_streams())
def test_match_detections_equals_the_detection_matching_of_match_streams(case):
    r_stream, r_time, p_stream, p_time, p_conf, n_streams, tols, rtol = case
    got = match_detections(r_stream, r_time, p_stream, p_time, n_streams=n_streams, tols=tols)
    assert len(got) == len(tols)
    for tol, det in zip(tols, got):
        want = match_streams(r_stream, r_time, p_stream, p_time, p_conf, n_streams=n_streams, tol=tol, rtol=rtol)[0]
        assert det.dtype == want.dtype and det.tolist() == want.tolist(), tol


def test_match_detections_by_hand():
    # SPEC §3's counter-example in stream 0 (arrivals 10.0 and 10.7 s; picks 10.25 s conf 0.9, 9.6 s conf 0.5),
    # nothing in streams 1 and 3, and in stream 2 one pick equidistant from two arrivals (the earlier wins).
    s = 1_000_000_000
    r_stream = np.array([0, 0, 2, 2])
    r_time = np.array([10 * s, 10_700_000_000, 4 * s, 6 * s])
    p_stream = np.array([0, 0, 2])
    p_time = np.array([10_250_000_000, 9_600_000_000, 5 * s])
    got = match_detections(r_stream, r_time, p_stream, p_time, n_streams=4, tols=[0, s // 2, 2 * s])
    assert [d.tolist() for d in got] == [[-1, -1, -1], [0, -1, -1], [0, 1, 2]]
    empty = match_detections(r_stream[:0], r_time[:0], p_stream, p_time, n_streams=4, tols=[s])
    assert [d.tolist() for d in empty] == [[-1, -1, -1]]


def _former_matched_at_tols(r_stream, r_time, p_stream, p_time, p_conf, lvl, *, n_streams, options):
    # The loop before issue 27, verbatim: every pick above the floor, one full match_streams per tolerance.
    tols = options.tols_ns
    out = np.zeros((n_streams, len(tols)), dtype=np.int64)
    if not tols or p_time.size == 0 or r_time.size == 0:
        return out
    surviving = station._at_shared(lvl, p_stream, options)
    for i, tol in enumerate(tols):
        det = match_streams(r_stream, r_time, p_stream, p_time, p_conf, n_streams=n_streams,
                           tol=tol, rtol=options.residual_tol_ns)[0]
        out[:, i] = np.bincount(p_stream[surviving & (det >= 0)], minlength=n_streams)
    return out


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(case=_streams(), data=st.data())
def test_matched_at_tols_equals_the_former_loop(case, data):
    r_stream, r_time, p_stream, p_time, p_conf, n_streams, _, _ = case
    # Shared thresholds on the picks' own confidence values (ties at the threshold), one or one per phase.
    thresholds = [0.25, 0.5, 0.75]
    shared = data.draw(st.one_of(st.sampled_from(thresholds),
                                 st.fixed_dictionaries({"P": st.sampled_from(thresholds),
                                                        "S": st.sampled_from(thresholds)})))
    tols = sorted(data.draw(st.sets(st.sampled_from([0.1, 0.25, 0.5, 1.0, 2.0]), min_size=1, max_size=4)))
    options = Options(threshold=shared, thresholds=[0.0, *thresholds], tols=tols)
    above = p_conf >= options.floor
    p_stream, p_time, p_conf = p_stream[above], p_time[above], p_conf[above]
    # Times in seconds for these tolerances; the lattice above is in ns, so scale the ordinary layouts.
    if p_time.size and r_time.size and max(np.abs(p_time).max(), np.abs(r_time).max()) < 1000:
        p_time, r_time = p_time * 250_000_000, r_time * 250_000_000
    order, (lvl, _) = station.canonical_order(p_stream, p_conf, p_time, options.grid, options.fine)
    p_stream, p_time, p_conf, lvl = p_stream[order], p_time[order], p_conf[order], lvl[order]
    args = (r_stream, r_time, p_stream, p_time, p_conf, lvl)
    got = station._matched_at_tols(*args, n_streams=n_streams, options=options)
    want = _former_matched_at_tols(*args, n_streams=n_streams, options=options)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
