"""Issue 22: the residual pairs stay on the cluster -- grouped by stream, ordered and timed there -- and the
store is the same, byte for byte, whether they were written from the cluster or from memory.

* the engine's statistics (computed per stream where the pairs are) are bit for bit those of the pairs
  the Dataset holds, derived again from them (:func:`pickscale.results.derived.pair_statistics_of`),
  and the pairs are in the store's canonical order, on random catalogues (hypothesis);
* a stream's pieces in any split give the same stream (order and statistics);
* on a cluster the Dataset's pairs are Dask arrays of the workers' results, its client never receives
  them (the pieces come back without them), and the store written from them is the store written
  from the same Dataset loaded, file for file (several write blocks, too);
* ``pickscale score --workers 1`` writes figures that read the pairs back from the store once the
  cluster is gone.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.engine.pairs import stream_of
from pickscale.metrics.timing import pair_statistics
from pickscale.options import Options
from pickscale.results.derived import pair_statistics_of
from pickscale.store import writing
from tests.helpers.catalogues import trap_catalogue
from tests.helpers.checks import assert_same_results, cli_flags

PAIR_VARIABLES = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


def _canonical(ds) -> bool:
    keys = [ds[n].values for n in ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual",
                                   "pair_conf")]
    order = np.lexsort(tuple(reversed(keys)))
    return bool((order == np.arange(order.size)).all())


def _same_statistics(ds, options) -> None:
    sweep = pair_statistics_of(ds, options)["sweep"]
    for name, values in sweep.items():
        got = ds[name].transpose("dataset", "model", "phase", "threshold", ...).values
        # Bit for bit where there are pairs; NaN (or n = 0) where there are none.
        assert np.array_equal(got, values, equal_nan=True), name
        assert got.tobytes() == np.asarray(values, dtype=got.dtype).tobytes() or np.isnan(values).any(), name


@given(seed=st.integers(0, 10_000), n_events=st.integers(1, 8))
@settings(max_examples=12, deadline=None)
@pytest.mark.slow
def test_engine_statistics_are_those_of_the_pairs_it_stores(seed, n_events):
    cat = trap_catalogue(seed=seed, n_events=n_events)
    ds = pickscale.score(cat.reference, cat.picks, block_picks=7)  # busy stations cut into time blocks
    options = Options.from_attrs(ds.attrs["options"])
    assert _canonical(ds)
    _same_statistics(ds, options)


@pytest.mark.slow
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.integers(-2_000, 2_000), st.sampled_from([0.2, 0.5, 0.9]),
                               st.integers(0, 2)), min_size=1, max_size=60),
       cuts=st.lists(st.integers(0, 60), max_size=4))
@settings(max_examples=60, deadline=None)
def test_a_stream_is_the_same_whatever_pieces_it_comes_in(rows, cuts):
    o = Options(thresholds=[0.1, 0.5, 0.8], group_by="network").with_group_labels(("a", "b", "c"))
    cols = {"station": np.array([r[0] for r in rows], np.int32),
            "residual_ns": np.array([r[1] for r in rows], np.int64) * 1_000_000,
            "conf": np.array([r[2] for r in rows], np.float64), "group": np.array([r[3] for r in rows], np.int32)}
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    shares = [{k: v[a:b] for k, v in cols.items()} for a, b in zip(bounds[:-1], bounds[1:])]
    whole, stats = stream_of(cols, options=o, phase=0)
    split, split_stats = stream_of(*reversed(shares), None, options=o, phase=0)
    for k in cols:
        assert whole[k].tobytes() == split[k].tobytes()
    order = np.lexsort((whole["group"], whole["conf"], whole["residual_ns"], whole["station"]))
    assert (order == np.arange(order.size)).all()  # (station, residual, conf, group)
    want = pair_statistics(cols["residual_ns"], cols["conf"], cols["group"], thresholds=o.grid, tol=o.tol,
                           threshold=o.threshold, n_groups=3)
    for part in ("sweep", "by_group"):
        for name, values in want[part].items():
            assert np.array_equal(stats[part][name], values, equal_nan=True)
            assert np.array_equal(split_stats[part][name], values, equal_nan=True)


def test_pair_statistics_by_hand():
    # Three pairs; at the shared threshold 0.5 the pairs of conf 0.9 and 0.8 (groups 0 and 0) count.
    out = pair_statistics([100_000_000, -200_000_000, 300_000_000], [0.9, 0.4, 0.8], [0, 1, 0],
                          thresholds=[0.3, 0.5], tol=0.25, threshold=0.5, n_groups=2)
    assert out["sweep"]["n_pairs"].tolist() == [3, 2]
    assert out["sweep"]["mae"].tolist() == pytest.approx([0.2, 0.2])
    assert out["sweep"]["bias"].tolist() == pytest.approx([0.1, 0.2])
    assert out["sweep"]["gross_error_rate"].tolist() == pytest.approx([1 / 3, 0.5])
    assert out["by_group"]["n_pairs"].tolist() == [2, 0]
    assert out["by_group"]["medae"][0] == pytest.approx(0.2) and np.isnan(out["by_group"]["medae"][1])


@pytest.fixture(scope="module")
def trap_inputs(tmp_path_factory):
    return trap_catalogue(seed=5, n_events=10).write_csv(tmp_path_factory.mktemp("pairs_inputs"))


def _files(store) -> dict:
    """Every file's SHA-256 but the root metadata's, and the root metadata without the run's own attributes
    (when it ran, on what inputs): the rest of a store is the same bytes whatever wrote it."""
    files = dict(json.loads((store / "pickscale-manifest.json").read_text())["files"])
    files.pop("zarr.json")
    root = json.loads((store / "zarr.json").read_text())
    for key in ("created", "inputs"):
        root["attributes"].pop(key, None)
    return {"files": files, "root": root}


@pytest.mark.cluster
def test_pairs_stay_on_the_cluster_and_the_store_is_the_same(trap_inputs, client, tmp_path, monkeypatch):
    ref, picks = map(str, trap_inputs)
    local = pickscale.score(ref, picks, group_by="event")
    # A client that is not Dask's current one: the pairs are brought here (Dask would not compute them).
    apart = pickscale.score(ref, picks, client=client, group_by="event")
    assert isinstance(apart.residual.data, np.ndarray)
    assert_same_results(apart, local)
    with client.as_current():
        ds = pickscale.score(ref, picks, client=client, exchange_method="shuffle", block_picks=40,
                             group_by="event")
    for name in (*PAIR_VARIABLES, "pair_group"):
        assert type(ds[name].data).__module__.startswith("dask."), name  # not in this process
    with client.as_current():
        assert_same_results(ds, local)
        from_cluster = pickscale.store.save(ds, tmp_path / "cluster.zarr")
    from_memory = pickscale.store.save(local, tmp_path / "memory.zarr")
    assert _files(from_cluster) == _files(from_memory)
    # Written a few chunks at a time (blocks far smaller than a variable): the same files again.
    monkeypatch.setattr(writing, "BLOCK_BYTES", 64)
    monkeypatch.setattr(writing, "_FETCH_TOGETHER_BYTES", 64)  # (else every variable is fetched at once)
    with client.as_current():
        blocks = pickscale.store.save(ds, tmp_path / "blocks.zarr")
    assert _files(blocks) == _files(from_memory)
    # And the store reads back as the results (checked on opening).
    assert_same_results(pickscale.open_results(blocks), local, attrs=False)


@pytest.mark.cluster
def test_the_pieces_come_back_without_their_pairs(trap_inputs, client, monkeypatch):
    from pickscale.engine import collect

    seen = []
    real = collect.join

    def spy(pieces, take, **kw):
        seen.extend(s.pair_key.size + sum(v.size for v in s.pairs.values())
                    for p in pieces for s in p.stacks.values())
        seen.extend(len(p.events) for p in pieces)  # (nor their events: they come merged, kw["events"])
        return real(pieces, take, **kw)

    monkeypatch.setattr(collect, "join", spy)
    with client.as_current():
        ds = pickscale.score(*map(str, trap_inputs), client=client, event_min_arrivals=2)
    assert seen and not any(seen)  # the client joined the pieces with no pair (nor event) in them
    assert ds.residual.size > 0


@pytest.mark.cluster
def test_cli_on_workers_draws_the_pairs_from_the_store(trap_inputs, tmp_path, monkeypatch):
    from pickscale.cli import main
    from pickscale.report.figures import build

    ref, picks = map(str, trap_inputs)
    out, alone = tmp_path / "workers", tmp_path / "in_process"
    assert main(["score", "--reference", ref, "--picks", picks, "--out", str(out), "--workers", "1",
                 "--quiet", *cli_flags("score")]) == 0  # every figure, drawn once the cluster is gone
    # The run to compare with, in this process: only the figure compared below is drawn (the figures are
    # most of a run's time); the one that reads the pairs (report/figures/onsets.py).
    real = build._default_names
    monkeypatch.setattr(build, "_default_names", lambda ds: [n for n in real(ds) if n == "residuals"])
    assert main(["score", "--reference", ref, "--picks", picks, "--out", str(alone), "--quiet",
                 *cli_flags("score")]) == 0
    monkeypatch.undo()
    assert sorted(p.name for p in (alone / "figures").iterdir()) == ["residuals.png"]
    for name in ("timing.csv", "detection.csv", "figures/residuals.png"):
        assert (out / name).read_bytes() == (alone / name).read_bytes(), name
