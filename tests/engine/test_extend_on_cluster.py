"""``extend`` merges the pairs where the run's are (issue 22): a stream at a time on the cluster, bit for bit.

The stored pairs and the new run's are put together stream by stream (a (dataset, model, phase)), sorted and
timed by the stream tasks of :mod:`pickscale.engine.pairs` -- on the extension's cluster when Dask computes
with its client, where the merged pairs then stay until they are saved.  Whatever runs where, the merged
results equal one run over all the inputs, and the store written from the cluster is the same files.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import numpy as np
import pytest

import pickscale
from pickscale.engine.extension import extended
from pickscale.errors import InputError, StoreError
from pickscale.results.extend import BATCH_ROWS, merge_results, stream_shares
from pickscale.store import open_results
from tests.helpers.extend import DAY, START, generated, stretches
from tests.helpers.stores import edit_array, unranked
from tests.results.test_extend import same

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]

#: The threads an extension starts (its stored pairs read; its stored side rebuilt): none left once it ends.
THREADS = ("pickscale-stored-pairs", "pickscale-stored-side")
PAIRS = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


def _is_dask(ds, name: str) -> bool:
    return type(ds[name].data).__module__.startswith("dask.")


def _coordinates(stored, new):
    models = sorted({str(m) for m in stored.model.values} | {str(m) for m in new.model.values})
    stations = sorted({str(s) for s in stored.station.values} | {str(s) for s in new.station.values})
    datasets = sorted({str(d) for d in stored.dataset.values} | {str(d) for d in new.dataset.values})
    return {"datasets": datasets, "models": models, "stations": stations}


@pytest.mark.slow
@pytest.mark.parametrize("rows", [BATCH_ROWS, 7, 1])
def test_stream_shares_are_each_side_s_pairs_on_the_merged_coordinates(rows):
    ref, picks, cut = generated()
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    new = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    coords = _coordinates(stored, new)
    seen, put = [], []
    shares = stream_shares(stored, new, replaced={}, rows=rows, **coords,
                           check=lambda lo, batch: seen.append((lo, batch["residual"].size)),
                           put=lambda share: put.append(share["station"].size) or ("put", share))
    # The stored pairs are read (and checked) a batch of at most `rows` at a time, in order; every share is put.
    assert [lo for lo, _ in seen] == list(range(0, stored.sizes["pair"], rows))
    assert max(n for _, n in seen) <= rows and sum(n for _, n in seen) == stored.sizes["pair"]
    assert all(isinstance(s, tuple) and s[0] == "put" for ss in shares.values() for s in ss) and max(put) <= rows
    # Every pair of either side is in exactly one share; each stream's shares, put together, are the stored
    # stream's pairs then the new one's, in each side's (canonical) order.
    assert sum(put) == stored.sizes["pair"] + new.sizes["pair"]
    nm = len(coords["models"])
    for s, ss in shares.items():
        rows_ = {k: np.concatenate([share[k] for _, share in ss]) for k in ("station", "residual_ns", "conf")}
        d, m, p = s // (2 * nm), (s // 2) % nm, s % 2
        want = []
        for ds in (stored, new):
            at = ((ds.pair_dataset.values == list(ds.dataset.values).index(coords["datasets"][d])
                   if coords["datasets"][d] in ds.dataset.values else False)
                  & (ds.pair_model.values == (list(ds.model.values).index(coords["models"][m])
                                              if coords["models"][m] in ds.model.values else -1))
                  & (ds.pair_phase.values == p))
            want.append(np.round(ds.residual.values[at] * 1e9).astype(np.int64))
        assert np.array_equal(rows_["residual_ns"], np.concatenate(want)), s
    # A replaced model's stored pairs are left out (and still checked: every stored batch is seen).
    model = str(stored.model.values[0])
    seen.clear()
    dropped = stream_shares(stored, new, replaced={d: [model] for d in coords["datasets"]}, rows=rows, **coords,
                            check=lambda lo, batch: seen.append((lo, batch["residual"].size)))
    assert sum(n for _, n in seen) == stored.sizes["pair"]
    m = coords["models"].index(model)
    new_of_model = int((new.pair_model.values == list(new.model.values).index(model)).sum())
    assert sum(share["station"].size for s, ss in dropped.items() if (s // 2) % nm == m
               for share in ss) == new_of_model


def _halves():
    """The generated catalogue scored in two parts: before its cut, and after it."""
    ref, picks, cut = generated()
    return (pickscale.score(ref[ref.time < cut], picks[picks.time < cut]),
            pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut]))


def _merged_here(stored, new, *, rows=BATCH_ROWS, **keywords):
    """``merge_results`` of two parts, their pairs merged a stream at a time in this process, ``rows`` pairs
    of a side read at a time."""
    from pickscale.engine.pairs import streams_of
    from pickscale.options import Options

    options = Options.from_attrs(stored.attrs["options"])
    return merge_results(stored, new, same_arrivals={}, **keywords,
                         streams=lambda shares_of, ds, ms, _: streams_of(shares_of(rows=rows), None, options=options,
                                                                         n_datasets=len(ds), n_models=len(ms)))


@pytest.mark.slow
@pytest.mark.parametrize("rows", [7, 1])
def test_the_merged_pairs_do_not_depend_on_the_batches(rows):
    stored, new = _halves()
    a, b = _merged_here(stored, new), _merged_here(stored, new, rows=rows)
    same(a, b)
    for name in PAIRS:
        assert np.array_equal(a[name].values, b[name].values), name


@pytest.mark.slow
def test_streams_merged_here_equal_the_station_by_station_merge():
    stored, new = _halves()
    same(merge_results(stored, new, same_arrivals={}), _merged_here(stored, new))


@pytest.mark.slow
def test_the_stored_side_built_ahead_is_what_the_merge_rebuilds():
    # An extension builds the store's own counts, events and pick rates while its new inputs are scored
    # (stored_side); the merge takes them when no stored model is replaced, and rebuilds them otherwise.
    from pickscale.results.extend import stored_side

    stored, new = _halves()

    def merged(prepared, **keywords):
        return _merged_here(stored, new, prepared=prepared, **keywords)

    rebuilt = merged(None)
    same(rebuilt, merged(stored_side(stored)))
    # Built from other counts (the new part's own), it is taken: the merge is not the rebuilt one ...
    other = stored_side(new)
    assert not rebuilt.matched.equals(merged(other).matched)
    # ... unless a stored model is replaced: then it was built for another merge, and is not taken.
    replaced = {str(stored.dataset.values[0]): [str(stored.model.values[0])]}
    assert merged(None, replaced=replaced).matched.equals(merged(other, replaced=replaced).matched)


@pytest.mark.cluster
def test_an_extension_with_intervals_on_a_cluster_draws_them_as_one_run(client):
    # A store with intervals has them drawn again on the merged counts (SPEC §12): the stored pairs read here a
    # batch at a time, the new ones fetched from the workers that hold them.
    ref, picks, cut = generated()
    whole = pickscale.bootstrap(pickscale.score(ref, picks), level=0.8, draws=100, seed=2)
    stored = pickscale.bootstrap(pickscale.score(ref[ref.time < cut], picks[picks.time < cut]), level=0.8,
                                 draws=100, seed=2)
    with client.as_current():
        there = extended(stored, ref[ref.time >= cut], picks[picks.time >= cut], client=client)
        assert all(_is_dask(there, name) for name in PAIRS)  # (the merged pairs stay on the cluster)
        same(whole, there)
    assert there.attrs["bootstrap"] == whole.attrs["bootstrap"]


@pytest.mark.cluster
def test_an_extension_on_a_cluster_keeps_the_merged_pairs_there(client, tmp_path):
    ref, picks, cut = generated()
    whole = pickscale.score(ref, picks)
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    here = extended(stored, ref[ref.time >= cut], picks[picks.time >= cut])
    with client.as_current():
        there = extended(stored, ref[ref.time >= cut], picks[picks.time >= cut], client=client)
        assert all(_is_dask(there, name) for name in PAIRS)
        a = pickscale.save(there, tmp_path / "there.zarr")
    b = pickscale.save(here, tmp_path / "here.zarr")
    assert not any(_is_dask(here, name) for name in PAIRS)
    same(whole, here)
    with client.as_current():
        same(whole, there.load())
    # The store written from the cluster: the same chunk files, byte for byte.
    files = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file() and "/c/" in p.as_posix())
    assert files and files == sorted(p.relative_to(b).as_posix() for p in b.rglob("*")
                                     if p.is_file() and "/c/" in p.as_posix())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    # Replacing a stored model on the cluster drops its stored pairs there.
    model = str(stored.model.values[0])
    with client.as_current():
        again = extended(stored, ref[ref.time < cut], picks[(picks.time < cut) & (picks.model == model)],
                         replace=True, client=client).load()
    same(stored, again)


def _stored_half(tmp_path, *, ranked=True):
    """A store of the first of two stretches (tests/helpers/extend.py), and the second stretch; not ``ranked``: as
    a store written before stores kept their pairs ranked, whose every stored pair an extension reads."""
    ref, picks = stretches(2)
    cut = START + DAY
    first = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    target = pickscale.save(first if ranked else unranked(first), tmp_path / "results.zarr")
    return target, (ref[ref.time >= cut], picks[picks.time >= cut]), (ref, picks)


def _scored_only_once_checked(monkeypatch) -> threading.Event:
    """The new inputs scored only once the stored pairs are checked (set: the event): an extension that read them
    when it merges would wait forever (a minute, then fail)."""
    import pickscale.engine.extension as extension
    import pickscale.engine.stored_pairs as stored_pairs

    checked = threading.Event()

    class Check(stored_pairs.PairCheck):
        def finish(self):
            super().finish()
            checked.set()

    real_execute = extension.execute

    def execute(run):
        assert checked.wait(60), "the stored pairs were not read while the new inputs were scored"
        return real_execute(run)

    monkeypatch.setattr(stored_pairs, "PairCheck", Check)
    monkeypatch.setattr(extension, "execute", execute)
    return checked


@pytest.mark.cluster
def test_the_stored_pairs_are_read_and_sent_while_the_new_inputs_are_scored(client, tmp_path, monkeypatch):
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path, ranked=False)
    here = extended(open_results(target), r2, p2, store=target)
    checked = _scored_only_once_checked(monkeypatch)
    with client.as_current():
        there = extended(open_results(target), r2, p2, store=target, client=client)
        assert checked.is_set() and all(_is_dask(there, name) for name in PAIRS)
        there = there.load()
    same(here, there)
    same(pickscale.score(ref, picks), there)


def test_without_a_cluster_the_stored_pairs_are_read_while_the_new_inputs_are_scored(tmp_path, monkeypatch):
    # (in this process, as `pickscale extend` runs a small extension: read, checked and cut on a thread of their
    # own while the new inputs are scored, not once they are)
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path, ranked=False)
    checked = _scored_only_once_checked(monkeypatch)
    got = pickscale.extend(target, r2, p2).load()
    assert checked.is_set()
    same(pickscale.score(ref, picks), got)


@pytest.mark.cluster
def test_extend_on_the_default_client_without_naming_it(client, tmp_path):
    # What a notebook does: a Client made (Dask's default), then pickscale.extend(store, ...) with no client
    # given. The new inputs are scored on that client, so their pairs are there: the merged streams are timed
    # there too (they were timed here, from futures it cannot read: a TypeError).
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    with client.as_current():
        got = pickscale.extend(target, r2, p2).load()
    same(pickscale.score(ref, picks), got)
    same(got, open_results(target).load())


@pytest.mark.cluster
def test_a_stored_pair_that_breaks_spec_15_refuses_an_extension_on_a_cluster(client, tmp_path):
    target, (r2, p2), _ = _stored_half(tmp_path, ranked=False)
    edit_array(target, "pair_conf", lambda conf: conf.__setitem__(3, 1.5))
    files = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    with client.as_current(), pytest.raises(StoreError, match=r"pair_conf.*must lie in \[floor"):
        pickscale.extend(target, r2, p2, client=client)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == files  # nothing written
    assert not [t for t in threading.enumerate() if t.name.startswith(THREADS)]


def _held_until_cancelled(monkeypatch, why: str) -> tuple[threading.Event, list[bool]]:
    """The stored pairs' check holds each batch until the reading is cancelled (``stopped``); ``finished`` says
    whether the check ever finished."""
    import pickscale.engine.stored_pairs as stored_pairs

    stopped, finished = threading.Event(), []

    class Check(stored_pairs.PairCheck):
        def take(self, facts):
            assert stopped.wait(60), why
            return super().take(facts)

        def finish(self):
            finished.append(True)
            super().finish()

    real_cancel = stored_pairs.StoredShares.cancel

    def cancel(self):
        self._stop.set()
        stopped.set()
        real_cancel(self)

    monkeypatch.setattr(stored_pairs, "PairCheck", Check)
    monkeypatch.setattr(stored_pairs.StoredShares, "cancel", cancel)
    return stopped, finished


@pytest.mark.cluster
def test_an_extension_refused_while_the_stored_pairs_are_read_stops_reading_them(client, tmp_path, monkeypatch):

    target, _, (ref, picks) = _stored_half(tmp_path, ranked=False)
    # (the first batch, read and checked by a worker or here, is held until the extension is refused and has told
    # the thread to stop)
    stopped, finished = _held_until_cancelled(monkeypatch, "the refused extension did not stop the thread")
    before = set(client.futures)
    with client.as_current(), pytest.raises(InputError, match="already stored over an overlapping span"):
        extended(open_results(target), ref[ref.time < START + DAY], picks[picks.time < START + DAY], store=target,
                 client=client)
    # The thread stopped at its next batch (the check never finished), is done, and left nothing on the cluster
    # (neither the workers' batches nor shares sent from here).
    assert stopped.is_set() and not finished
    assert not [t for t in threading.enumerate() if t.name.startswith(THREADS)]
    _let_go(client)
    assert set(client.futures) <= before


@pytest.mark.cluster
@pytest.mark.parametrize("ranked", [True, False])
def test_the_merged_streams_are_timed_while_the_counts_are_merged(client, tmp_path, monkeypatch, ranked):
    import pickscale.engine.extension as extension
    import pickscale.results.extend as merging

    target, (r2, p2), (ref, picks) = _stored_half(tmp_path, ranked=ranked)
    timed = threading.Event()
    # (by rank, or from the stored pairs: the store written before it kept them ranked)
    import pickscale.engine.merged_streams as merged_streams

    timer = "ranked_statistics" if ranked else "statistics_of"
    where = extension if ranked else merged_streams  # (statistics_of: what merged_statistics times the pairs with)
    real_statistics, real_merge_counts = getattr(where, timer), merging.merge_counts

    def statistics_of(*args, **kwargs):
        try:
            return real_statistics(*args, **kwargs)
        finally:
            timed.set()

    def merge_counts(*args, **kwargs):
        # Merging the counts waits for the streams' statistics: one after the other, it would wait forever.
        assert timed.wait(60), "the merged streams were not timed while the counts were merged"
        return real_merge_counts(*args, **kwargs)

    monkeypatch.setattr(where, timer, statistics_of)
    monkeypatch.setattr(merging, "merge_counts", merge_counts)
    with client.as_current():
        got = extended(open_results(target), r2, p2, store=target, client=client).load()
    assert timed.is_set()
    same(pickscale.score(ref, picks), got)


@pytest.mark.cluster
def test_an_extension_s_new_pairs_are_computed_while_its_store_s_arrays_are_made(client, monkeypatch):
    import dask.array as da
    import xarray as xr
    import zarr
    from distributed import Event

    from pickscale.store.segments import PAIR_CHUNK_ROWS, PairParts
    from pickscale.store.writing import start_dataset

    def marked(block):  # (on a worker, when the new rows are computed)
        Event("pickscale-new-rows").set()
        return block

    computed = Event("pickscale-new-rows", client=client)
    real_to_zarr = xr.Dataset.to_zarr

    def to_zarr(self, *args, **kwargs):
        if kwargs.get("compute") is False:
            # The arrays are made once the cluster has computed the new rows: a save that fetched them after
            # would wait here forever (a minute, then fail).
            assert computed.wait(60), "the new rows were not computed while the arrays were made"
        return real_to_zarr(self, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "to_zarr", to_zarr)
    stored = np.arange(PAIR_CHUNK_ROWS, dtype=np.int64)  # (a store large enough that its chunks may be linked)
    with client.as_current():
        new = da.from_delayed(client.submit(np.arange, 5, dtype=np.int64), shape=(5,), dtype=np.int64)
        new = new.map_blocks(marked, dtype=np.int64, meta=np.zeros(0, np.int64))  # (meta: never called here)
        clean = xr.Dataset({"x": ("pair", da.concatenate([da.from_array(stored, chunks=2**16), new]))})
        parts = PairParts(rows=stored.size, stored={"x": (stored, None)}, new={"x": new}, store=Path("stored.zarr"))
        memory = zarr.storage.MemoryStore()
        pending = start_dataset(clean, memory, parts=parts, linking=True)
        assert pending is not None and pending.fill(memory) == []
    assert computed.is_set()
    got = zarr.open_group(memory, mode="r", zarr_format=3)["x"][:]
    assert np.array_equal(got, np.r_[stored, np.arange(5)])


@pytest.mark.cluster
def test_an_extension_by_a_new_model_stops_reading_the_stored_pairs_once_its_models_are_known(
        client, tmp_path, monkeypatch):
    # The stored pairs are read while the new inputs are read (they might be a later stretch); once the new run's
    # models are known and none is stored, no stored stream gets a pair: the reading stops (SPEC §11).

    ref, picks = stretches(1)
    last = sorted(picks.model.unique())[-1]
    # (a store written before stores kept their pairs ranked: one that keeps them never starts reading them)
    target = pickscale.save(unranked(pickscale.score(ref, picks[picks.model != last])), tmp_path / "results.zarr")
    stopped, finished = _held_until_cancelled(monkeypatch, "the extension by a new model did not stop reading")
    before = set(client.futures)
    with client.as_current():
        got = extended(open_results(target), ref, picks[picks.model == last], store=target, client=client).load()
    assert stopped.is_set() and not finished
    assert not [t for t in threading.enumerate() if t.name.startswith(THREADS)]
    same(pickscale.score(ref, picks), got)
    _let_go(client)
    # (the merged results hold the new run's pairs on the cluster; nothing of the stored pairs' reading is left)
    assert not [key for key in set(client.futures) - before if str(key).startswith(("read_and_cut", "report_of"))]


def _let_go(client) -> None:
    """Every future this process dropped released by ``client``: a dropped future queues its release on the
    client's event loop (``Future.release``), so a coroutine run there after them sees them done."""
    gc.collect()

    async def after_the_releases_queued() -> None:
        return None

    client.sync(after_the_releases_queued)
