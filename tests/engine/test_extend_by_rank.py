"""Issue 22, item 3: an extension of a store that keeps its pairs ranked (SPEC §9) reads no stored pair.

A later stretch adds pairs to the stored streams, whose merged medians and quantiles need the stored residuals'
order: the store's ranked runs give it a block at a time (``metrics/ranked_runs.py``), its exact sums
(``residual_sums``) give the means, and the merged results are one run's -- the tables, what §5's rules found,
the sums and the ranked runs (per stream, the same residuals).  Nothing stored is read pair by pair
(``StoredShares`` refuses here), so the cost is the new part's, the per-station counts and the blocks the
searches reach.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
import pickscale.engine.extension as extension
from pickscale.metrics.flags import FLAG_NAMES
from pickscale.metrics.ranked_runs import RankedStream
from tests.helpers.extend import ranked_by_stream
from tests.helpers.stores import chunk_reads

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]


def _refused(*args, **kwargs):
    raise AssertionError("a stored pair was read")


@pytest.fixture
def by_rank(monkeypatch):
    """The stored streams an extension reads by rank (each a RankedStream, its blocks read), and no stored pair."""
    made: list[RankedStream] = []
    real = RankedStream.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(RankedStream, "__init__", init)
    monkeypatch.setattr(extension, "StoredShares", _refused)
    monkeypatch.setattr(extension, "_merged_statistics", _refused)
    return made


def _equal_to_one_run(extended, one_run) -> None:
    for name, table in pickscale.tables(one_run).items():
        assert pickscale.tables(extended)[name].to_csv() == table.to_csv(), name
    for name in (*FLAG_NAMES, "residual_sums"):
        assert np.array_equal(extended[name].values, one_run[name].values), name
    assert extended.attrs["data_quality"] == one_run.attrs["data_quality"]
    assert ranked_by_stream(extended) == ranked_by_stream(one_run)


def test_a_later_stretch_by_rank_by_hand(tmp_path, by_rank):
    # Stored: P residuals −0.1, +0.2, +0.3 s (conf 0.9); new: +0.1, +0.4 s (conf 0.9).  Merged, sorted: −0.1, 0.1,
    # 0.2, 0.3, 0.4: bias (the median) 0.2 s; mae (0.1 + 0.1 + 0.2 + 0.3 + 0.4) / 5 = 0.22 s; p10 at h = 0.4:
    # −0.1 + 0.4·0.2 = −0.02 s; p90 at h = 3.6: 0.3 + 0.6·0.1 = 0.36 s; medae 0.2 s.
    ref1 = pd.DataFrame({"station": "A", "phase": "P", "time": [100.0, 200.0, 300.0]})
    picks1 = ref1.assign(model="m", conf=0.9, time=ref1.time + [-0.1, 0.2, 0.3])
    ref2 = pd.DataFrame({"station": "A", "phase": "P", "time": [10_000.0, 10_100.0]})
    picks2 = ref2.assign(model="m", conf=0.9, time=ref2.time + [0.1, 0.4])
    store = pickscale.save(pickscale.score(ref1, picks1), tmp_path / "results.zarr")
    got = pickscale.extend(store, ref2, picks2)
    at = got.sel(dataset="all", model="m", phase="P", threshold=0.3)
    assert int(at.n_pairs) == 5
    assert float(at.bias) == pytest.approx(0.2) and float(at.mae) == pytest.approx(0.22)
    assert float(at.p10) == pytest.approx(-0.02) and float(at.p90) == pytest.approx(0.36)
    assert float(at.medae) == pytest.approx(0.2)
    assert len(by_rank) == 1 and by_rank[0].n_shared == 3  # (the stored stream, read by rank)
    one_run = pickscale.score(pd.concat([ref1, ref2]), pd.concat([picks1, picks2]))
    _equal_to_one_run(got, one_run)
    # The extended store holds two ranked runs of the stream (one a segment) and opens whole.
    reopened = pickscale.open_results(store, lazy=False)
    assert reopened.attrs["pair_runs"] == [["all", "m", "P", 3], ["all", "m", "P", 2]]
    assert reopened["ranked_residual"].values.tolist() == [-10**8, 2 * 10**8, 3 * 10**8, 10**8, 4 * 10**8]


def test_two_extensions_by_rank_are_one_run(tmp_path, by_rank):
    from tests.helpers.extend import DAY, START, stretches

    ref, picks = stretches(3)
    cuts = (START + DAY, START + 3 * DAY)
    first = (ref.time < cuts[0], picks.time < cuts[0])
    second = ((ref.time >= cuts[0]) & (ref.time < cuts[1]), (picks.time >= cuts[0]) & (picks.time < cuts[1]))
    third = (ref.time >= cuts[1], picks.time >= cuts[1])
    store = pickscale.save(pickscale.score(ref[first[0]], picks[first[1]]), tmp_path / "results.zarr")
    pickscale.extend(store, ref[second[0]], picks[second[1]])
    got = pickscale.extend(store, ref[third[0]], picks[third[1]])
    assert by_rank and all(s.blocks_read >= 0 for s in by_rank)
    _equal_to_one_run(got, pickscale.score(ref, picks))
    assert len(pickscale.open_results(store, lazy=False).attrs["pair_segments"]) == 3


# A property: a store of one stretch extended by a later one equals one run of both, whatever the residuals
# (spikes, grids, spreads, confidences): read by rank, never pair by pair.

_RESIDUAL = st.one_of(st.sampled_from([0.0, 0.0, 0.01, -0.01, 0.1, -0.1, 0.2, 0.3]),
                      st.floats(-1.5, 1.5, allow_nan=False).map(lambda x: round(x, 6)))
_PICK = st.one_of(st.none(), st.tuples(_RESIDUAL, st.sampled_from([0.1, 0.3, 0.5, 0.8, 1.0])))
_ROWS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["P", "S"]), _PICK, _PICK), min_size=1, max_size=50)


def _stretch(rows, start: float) -> tuple[list, list]:
    ref, picks = [], []
    for k, (station, phase, a, b) in enumerate(rows):
        t = start + 10.0 * k
        ref.append((f"S{station}", phase, t))
        for model, pick in (("a", a), ("b", b)):
            if pick is not None:
                picks.append((model, f"S{station}", phase, t + pick[0], pick[1]))
    # (every station scored and every model picking at it in both stretches: scoping each alone drops nothing
    # one run keeps, SPEC §11)
    for station in range(3):
        ref.append((f"S{station}", "P", start - 50.0))
        for model in ("a", "b"):
            for t in (start - 100.0, start + 100.0 + 10.0 * len(rows)):
                picks.append((model, f"S{station}", "P", t, 0.1))
    return ref, picks


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(_ROWS, _ROWS)
def test_a_later_stretch_read_by_rank_is_one_run(first, second):
    r1, p1 = _stretch(first, 1000.0)
    r2, p2 = _stretch(second, 100_000.0)
    columns = (["station", "phase", "time"], ["model", "station", "phase", "time", "conf"])
    ref1, ref2 = (pd.DataFrame(r, columns=columns[0]) for r in (r1, r2))
    picks1, picks2 = (pd.DataFrame(p, columns=columns[1]) for p in (p1, p2))
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("ignore")
        patch.setattr(extension, "StoredShares", _refused)
        patch.setattr(extension, "_merged_statistics", _refused)
        one_run = pickscale.score(pd.concat([ref1, ref2]), pd.concat([picks1, picks2]))
        with tempfile.TemporaryDirectory() as folder:
            store = pickscale.save(pickscale.score(ref1, picks1), Path(folder) / "results.zarr")
            extended = pickscale.extend(store, ref2, picks2).load()
            pickscale.open_results(store, lazy=False)  # (the extended store opens whole: its runs rank its pairs)
    _equal_to_one_run(extended, one_run)


@pytest.fixture
def reads(monkeypatch):
    return chunk_reads(monkeypatch)


@pytest.mark.cluster
@pytest.mark.parametrize("seen_there", [True, False])
def test_on_a_cluster_each_stream_is_timed_by_rank_where_the_new_pairs_are(client, tmp_path, monkeypatch, reads,
                                                                             seen_there):
    # One task a stream reads the stored blocks from the store's folder on a worker: this process reads none.
    # Workers that cannot see the folder (here: a source naming another one) leave it to this process.
    import dataclasses

    from pickscale.engine.extension import extended
    from pickscale.store import open_results
    from pickscale.store.pair_chunks import PAIR_SOURCE
    from tests.engine.test_extend_on_cluster import _stored_half

    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    monkeypatch.setattr(extension, "StoredShares", _refused)
    stored = open_results(target)
    if not seen_there:
        stored.encoding[PAIR_SOURCE] = dataclasses.replace(stored.encoding[PAIR_SOURCE], store=str(tmp_path / "gone"))
    with client.as_current():
        got = extended(stored, r2, p2, store=target, client=client).load()
    ranked_reads = [r for r in reads if r.startswith("ranked_")]
    assert (ranked_reads == []) == seen_there
    one_run = pickscale.score(ref, picks)
    _equal_to_one_run(got, one_run)
