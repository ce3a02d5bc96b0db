"""Issue 15, item 2: a work unit too large for a worker stops the run on the client, before any scoring.

A station with no quiet gap cannot be cut in time blocks: all its picks are
one unit, scored by one task.  Past what a worker thread holds, the run used to
end in ``KilledWorker`` after several workers died.  Now the plan is checked
against the workers' memory (``memory_limit / nthreads``, or
``PICKSCALE_WORKER_MEMORY``) and an InputError names the station, the span, the
picks and the way out.  A small fake budget stands in for millions of picks.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import pickscale
import pickscale.engine.scoring
from pickscale.engine.unit_size import MEMORY_ENV, worker_budget
from pickscale.errors import InputError, OptionsError

S = 1_000_000_000
BASE = pd.Timestamp("2022-06-01", tz="UTC").value


def burst(n_burst: int = 20_000, *, quiet_picks: int = 0, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """XX.BURST: arrivals every 3 s for ten minutes and ``n_burst`` picks among them (no quiet gap);
    then, from 1 h to 2 h, an arrival every 100 s and ``quiet_picks`` picks.  XX.CALM: one arrival, one pick."""
    rng = np.random.default_rng(seed)
    a_burst = BASE + np.arange(200) * 3 * S
    a_quiet = BASE + 3600 * S + np.arange(36) * 100 * S
    ref = pd.DataFrame({"station": ["XX.BURST"] * 236 + ["XX.CALM"],
                        "phase": (["P", "S"] * 118) + ["P"],
                        "time": pd.to_datetime(np.r_[a_burst, a_quiet, BASE + 60 * S], utc=True)})
    t = np.r_[BASE + rng.integers(0, 595 * S, n_burst), BASE + 3600 * S + rng.integers(0, 3600 * S, quiet_picks)]
    picks = pd.DataFrame({"model": rng.choice(["eqt", "phasenet"], t.size), "station": "XX.BURST",
                          "phase": rng.choice(["P", "S"], t.size), "time": pd.to_datetime(t, utc=True),
                          "conf": rng.uniform(0.05, 1, t.size).astype(np.float32)})
    calm = pd.DataFrame({"model": ["eqt"], "station": ["XX.CALM"], "phase": ["P"],
                         "time": pd.to_datetime([BASE + 60 * S], utc=True), "conf": np.float32([0.9])})
    return ref, pd.concat([picks, calm], ignore_index=True)


@pytest.fixture
def no_scoring(monkeypatch):
    """Scoring must not start: a unit too large is refused before."""
    def refuse(*args, **kwargs):
        raise AssertionError("scoring started")
    monkeypatch.setattr(pickscale.engine.scoring, "score_station", refuse)


def _assert_names_everything(message: str, picks: int) -> None:
    assert "station XX.BURST (dataset all)" in message
    assert f"{picks:,} picks of 2 model(s)" in message
    assert "2022-06-01T00:" in message  # the span
    assert "floor" in message and "fewer models" in message and "more memory" in message
    assert "Nothing was scored" in message


@pytest.mark.slow
def test_too_large_unit_in_process(monkeypatch, no_scoring):
    monkeypatch.setenv(MEMORY_ENV, "6MB")
    ref, picks = burst()
    with pytest.raises(InputError) as err:
        pickscale.score(ref, picks)
    _assert_names_everything(str(err.value), 20_000)
    assert f"{MEMORY_ENV}=6MB" in str(err.value)


@pytest.mark.slow
def test_unit_that_fits_is_scored(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "64MB")
    ref, picks = burst()
    ds = pickscale.score(ref, picks)
    assert int(ds.emitted.isel(threshold=0).sum()) > 0


@pytest.mark.slow
def test_split_station_counted_exactly(monkeypatch, no_scoring):
    """A station cut in blocks whose burst stays one block: the units are counted, the burst one refused."""
    monkeypatch.setenv(MEMORY_ENV, "6MB")
    ref, picks = burst(20_000, quiet_picks=3_000)
    with pytest.raises(InputError) as err:
        pickscale.score(ref, picks, block_picks=5_000)
    _assert_names_everything(str(err.value), 20_000)  # the burst's block alone, not the station's 23,000


@pytest.mark.slow
def test_split_station_whose_blocks_fit(monkeypatch):
    """The whole station would not fit, each of its blocks does: scored, with the numbers of one unit."""
    ref, picks = burst(2_000, quiet_picks=20_000)
    whole = pickscale.score(ref, picks)
    monkeypatch.setenv(MEMORY_ENV, "6MB")
    split = pickscale.score(ref, picks, block_picks=5_000)
    np.testing.assert_array_equal(split.matched.values, whole.matched.values)


def test_budget_setting_is_checked(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "lots")
    with pytest.raises(OptionsError, match=MEMORY_ENV):
        worker_budget(None)


@pytest.mark.slow
def test_too_large_unit_on_a_cluster(monkeypatch):
    """The budget comes from the workers' memory_limit / nthreads (a LocalCluster in this process;
    Dask's own memory monitor off, so that its tiny limit only informs pickscale)."""
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    distributed = pytest.importorskip("distributed")
    off = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
           "distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": False}
    ref, picks = burst()
    with dask.config.set(off), distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                                        memory_limit="12MB", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert worker_budget(client)[0] == 6_000_000
        with pytest.raises(InputError) as err:
            pickscale.score(ref, picks, client=client)
    _assert_names_everything(str(err.value), 20_000)
    assert "memory_limit 11 MB / 2 thread(s)" in str(err.value)
