"""SPEC §10 time bins: the edges (pickscale.kernel.bins) and the kernel's counts per bin, by hand and
against a brute-force reading (the literal §3 walk at the shared threshold, then each item put in its bin)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.errors import OptionsError
from pickscale.kernel import score_station
from pickscale.kernel.bins import bin_edges, bin_index, check_time_bin
from pickscale.options import Options
from tests.helpers.brute import walk
from tests.helpers.strategies import stations

S = 10**9
HOUR = 3600 * S


def ts(text: str) -> int:
    return pd.Timestamp(text, tz="UTC").value


def test_fixed_bins_are_anchored_at_the_epoch():
    # 7D bins start on Thursdays (1970-01-01 was one), whatever the data's first time.
    edges = bin_edges(ts("2024-03-05T10:00"), ts("2024-03-20"), "7D")
    assert [str(pd.Timestamp(e, tz="UTC").date()) for e in edges] == ["2024-02-29", "2024-03-07", "2024-03-14",
                                                                      "2024-03-21"]
    # The same bins from another stretch of time: equal where they overlap.
    later = bin_edges(ts("2024-03-15"), ts("2024-04-01"), "7D")
    assert set(edges) & set(later) == {ts("2024-03-14"), ts("2024-03-21")}


def test_calendar_months():
    edges = bin_edges(ts("2024-01-31T23:59:59"), ts("2024-03-01T00:00"), "MS")
    assert edges.tolist() == [ts("2024-01-01"), ts("2024-02-01"), ts("2024-03-01"), ts("2024-04-01")]
    # A time exactly on an edge belongs to the bin it starts.
    assert bin_index(np.array([ts("2024-02-01"), ts("2024-02-29T23:59:59")]), edges).tolist() == [1, 1]


def test_time_bin_refused():
    for bad in ("2MS", "fortnight", "", "0h"):
        with pytest.raises(OptionsError) as err:
            Options(time_bin=bad)
        assert err.value.options == ("time_bin",)
    assert check_time_bin("1D") == "1D"


def test_kernel_counts_per_bin_by_hand():
    # Bins of one hour from 0.  P arrivals at 0:59:59.8 and 1:30; S arrival at 2:10.
    # Model 0: a P pick at 1:00:00.1 (0.3 s after the first arrival, matched at tol 0.5: counted *emitted* in
    # bin 1, *matched* in bin 0, the arrival's bin); a P pick at 1:30 with conf 0.2 (below the shared 0.3:
    # in no binned count); an S pick at 2:10:00.2 conf 0.9 (matched, bin 2).
    o = Options(thresholds=[0.1, 0.3, 0.5], time_bin="1h").with_bin_edges(np.arange(4) * HOUR)
    a_phase = [0, 0, 1]
    a_time = [HOUR - S // 5, HOUR + 30 * 60 * S, 2 * HOUR + 10 * 60 * S]
    p = dict(model=[0, 0, 0], phase=[0, 0, 1], conf=[0.8, 0.2, 0.9],
             time=[HOUR + S // 10, HOUR + 30 * 60 * S, 2 * HOUR + 10 * 60 * S + S // 5])
    r = score_station(a_phase, a_time, p["model"], p["phase"], p["time"], p["conf"], n_models=1, options=o)
    assert r.n_reference_over_time.tolist() == [[1, 1, 0], [0, 0, 1]]
    assert r.emitted_over_time[0].tolist() == [[0, 1, 0], [0, 0, 1]]
    assert r.matched_over_time[0].tolist() == [[1, 0, 0], [0, 0, 1]]
    # Totals equal the unbinned counts at the shared threshold.
    k = o.threshold_index
    assert r.emitted_over_time.sum(-1).tolist() == r.emitted[..., k].tolist()
    assert r.matched_over_time.sum(-1).tolist() == r.matched[..., k].tolist()


def test_no_bins_no_binned_counts():
    r = score_station([0], [0], [0], [0], [1], [0.9], n_models=1, options=Options())
    assert r.n_reference_over_time.shape == (2, 0) and r.matched_over_time.shape == (1, 2, 0)


def _brute_binned(case, options, edges):
    """Per (model, phase): the §3 walk at the shared threshold; items put in the bin of their (arrival's) time."""
    n_bins = edges.size - 1
    binned = lambda t: min(max(int(np.searchsorted(edges, t, side="right")) - 1, 0), n_bins - 1)  # noqa: E731
    n_ref = np.zeros((2, n_bins), np.int64)
    emitted = np.zeros((case.n_models, 2, n_bins), np.int64)
    matched = np.zeros((case.n_models, 2, n_bins), np.int64)
    for ph, t in zip(case.arrival_phase.tolist(), case.arrival_time.tolist()):
        n_ref[ph, binned(t)] += 1
    theta = max(options.threshold, options.floor)
    for m in range(case.n_models):
        for ph in range(2):
            arrivals = sorted(t for p_, t in zip(case.arrival_phase.tolist(), case.arrival_time.tolist()) if p_ == ph)
            picks = [(int(t), float(c)) for mm, pp, t, c in zip(case.pick_model, case.pick_phase, case.pick_time,
                                                               case.pick_conf)
                     if mm == m and pp == ph and c >= theta]
            for (t, _), j in zip(picks, walk(arrivals, picks, options.tol_ns)):
                emitted[m, ph, binned(t)] += 1
                if j >= 0:
                    matched[m, ph, binned(arrivals[j])] += 1
    return n_ref, emitted, matched


@pytest.mark.slow
@settings(deadline=None)
@given(case=stations(), width=st.sampled_from([1, 3, 7, 50]))
def test_binned_counts_against_brute_force(case, width):
    times = np.r_[case.arrival_time, case.pick_time]
    step = max(int(np.ptp(times)) // width, 1) if times.size else S
    lo = int(times.min()) if times.size else 0
    edges = lo - step // 3 + step * np.arange(width + 3, dtype=np.int64)
    o = Options(threshold=case.options.threshold, thresholds=case.options.thresholds, tol=case.options.tol,
                residual_tol=case.options.residual_tol, time_bin="1h").with_bin_edges(edges)
    r = score_station(*case.arrays, n_models=case.n_models, options=o)
    n_ref, emitted, matched = _brute_binned(case, o, edges)
    assert r.n_reference_over_time.tolist() == n_ref.tolist()
    assert r.emitted_over_time.tolist() == emitted.tolist()
    assert r.matched_over_time.tolist() == matched.tolist()
    # and the totals are the unbinned counts at the shared threshold
    k = o.threshold_index
    assert (r.emitted_over_time.sum(-1) == r.emitted[..., k]).all()
    assert (r.matched_over_time.sum(-1) == r.matched[..., k]).all()
    assert (r.n_reference_over_time.sum(-1) == r.n_reference).all()
