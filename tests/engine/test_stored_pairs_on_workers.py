"""An extension on a cluster has its workers read the stored pairs (issue 22, item 3): the client holds none.

(Of a store written before stores kept their pairs ranked, SPEC §9: one that keeps them is read by rank, a block
at a time, and no stored pair is read at all: ``tests/engine/test_extend_by_rank.py``.)

Each task reads a range of the store's pairs from its folder (every chunk file checked against the manifest the
store was opened with), makes SPEC §15's checks of that batch and cuts it into its streams' shares, which stay
on its worker; the client makes the checks across batches from what each task reports.  Whatever the ranges,
the extension is the one the client would have made reading the pairs itself, and a store that breaks a rule
-- also just across two tasks' ranges -- is refused as the client's check refuses it.  A cluster whose workers
cannot see the store's folder has the client read the pairs, as before.
"""

from __future__ import annotations

import dataclasses
import sys
import threading

import numpy as np
import pandas as pd
import pytest

import pickscale
import pickscale.engine.stored_batches as stored_batches
import pickscale.engine.stored_pairs as stored_pairs
from pickscale.engine.extension import extended
from pickscale.errors import StoreError
from pickscale.store import open_results
from pickscale.store.pair_chunks import PAIR_SOURCE, NotHere
from tests.engine.test_extend_on_cluster import _stored_half as _half
from tests.helpers.checks import start_cluster
from tests.helpers.extend import DAY, START
from tests.helpers.stores import chunk_reads, edit_array
from tests.results.test_extend import same

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]


def _stored_half(tmp_path):
    return _half(tmp_path, ranked=False)


@pytest.fixture
def reads(monkeypatch):
    """The pair chunk files this process reads (a worker's reads are its own)."""
    return chunk_reads(monkeypatch)


@pytest.mark.cluster
@pytest.mark.parametrize("task_rows", [stored_pairs.TASK_ROWS, 5])
def test_the_workers_read_the_stored_pairs_and_the_client_none(client, tmp_path, monkeypatch, reads, task_rows):
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    here = extended(open_results(target), r2, p2, store=target)  # no cluster: read here
    assert reads, "the extension without a cluster read no stored pair"
    reads.clear()
    monkeypatch.setattr(stored_pairs, "TASK_ROWS", task_rows)
    stored = open_results(target)
    tasks = len(stored_pairs._ranges(stored.encoding[PAIR_SOURCE]))
    assert tasks == (1 if task_rows > stored.sizes["pair"] else -(-stored.sizes["pair"] // task_rows)) > 0
    with client.as_current():
        there = extended(stored, r2, p2, store=target, client=client)
        assert reads == []  # (every stored pair was read by a worker)
        there = there.load()
    same(here, there)
    same(pickscale.score(ref, picks), there)


@pytest.mark.cluster
def test_a_replaced_model_s_extension_has_the_workers_read_the_stored_pairs(client, tmp_path, reads):
    # A stored model scored again (replace): every pair is merged into one segment again, the replaced model's
    # stored pairs left out -- by the workers that read them, the new run's where its stream tasks hold them.
    target, _, (ref, picks) = _stored_half(tmp_path)
    first = picks.time < START + DAY
    again = ref[ref.time < START + DAY], picks[first & (picks.model == "m1")].assign(conf=lambda p: p.conf * 0.9)
    here = extended(open_results(target), *again, store=target, replace=True)  # no cluster: read here
    assert reads
    reads.clear()
    with client.as_current():
        there = extended(open_results(target), *again, store=target, replace=True, client=client)
        assert reads == []  # (every stored pair was read by a worker)
        there = there.load()
    same(here, there)
    kept = picks[~first | (picks.model != "m1")]
    same(pickscale.score(ref[ref.time < START + DAY], pd.concat([again[1], kept[kept.time < START + DAY]])), there)


@pytest.mark.cluster
def test_workers_that_cannot_see_the_store_leave_the_pairs_to_the_client(client, tmp_path, reads):
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    stored = open_results(target)
    source = stored.encoding[PAIR_SOURCE]
    # (as a cluster on other hosts sees it: no such folder)
    stored.encoding[PAIR_SOURCE] = dataclasses.replace(source, store=str(tmp_path / "elsewhere" / "results.zarr"))
    with pytest.raises(NotHere):
        stored.encoding[PAIR_SOURCE].read(("residual",), 0, 1)
    with client.as_current():
        there = extended(stored, r2, p2, store=target, client=client).load()
    assert any(rel.startswith("residual/c/") for rel in reads)  # read here instead
    same(pickscale.score(ref, picks), there)


@pytest.mark.cluster
def test_a_pair_out_of_order_across_two_tasks_is_refused(client, tmp_path, monkeypatch):
    target, (r2, p2), _ = _stored_half(tmp_path)
    ds = open_results(target).load()
    names = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")
    rows = list(zip(*(ds[k].values.tolist() for k in names)))
    # Two neighbouring pairs that differ, swapped: the first ends a task's range, the second begins the next
    # one's; each task alone sees its pairs in order.
    at = next(i for i in range(1, len(rows) - 1) if rows[i] != rows[i + 1])

    def swap(values):
        values[[at, at + 1]] = values[[at + 1, at]]

    for name in names:
        edit_array(target, name, swap)
    monkeypatch.setattr(stored_pairs, "TASK_ROWS", at + 1)
    with client.as_current(), pytest.raises(StoreError, match=rf"canonical order.*pair {at + 1}\b"):
        extended(open_results(target), r2, p2, store=target, client=client)
    assert not [t for t in threading.enumerate() if t.name.startswith("pickscale-stored-pairs")]


@pytest.mark.cluster
def test_a_chunk_changed_after_opening_is_refused_by_the_worker_that_reads_it(client, tmp_path):
    target, (r2, p2), _ = _stored_half(tmp_path)
    stored = open_results(target)
    chunk = next(p for p in sorted((target / "residual" / "c").rglob("*")) if p.is_file())
    data = bytearray(chunk.read_bytes())
    data[-1] ^= 0xFF  # (a damaged file: the manifest is not written again)
    chunk.write_bytes(bytes(data))
    with client.as_current(), pytest.raises(StoreError, match=r"is damaged: residual/c/\S+ has changed"):
        extended(stored, r2, p2, store=target, client=client)


@pytest.mark.cluster
def test_workers_that_read_the_stored_pairs_load_no_xarray(tmp_path):
    # (a cluster of its own: what its workers load is this extension's alone)
    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    cluster, client = start_cluster(n_workers=2)
    try:
        with client.as_current():
            there = extended(open_results(target), r2, p2, store=target, client=client)
            loaded = client.run(lambda: sorted(m for m in ("xarray", "zarr", "matplotlib", "dask.dataframe")
                                               if m in sys.modules))
            there = there.load()
    finally:
        client.close()
        cluster.close()
    # Zarr where a batch was read (on either worker, or both), nothing else of the list anywhere.
    assert all(set(mods) <= {"zarr"} for mods in loaded.values()) and any(loaded.values()), loaded
    same(pickscale.score(ref, picks), there)


def test_a_store_opened_by_a_relative_path_is_read_by_its_absolute_one(tmp_path, monkeypatch):
    # (a worker started in another folder must read the same store, not one of the same name there)
    target, _, _ = _stored_half(tmp_path)
    monkeypatch.chdir(target.parent)
    source = open_results(target.name).encoding[PAIR_SOURCE]
    assert source.store == str(target.absolute())
    monkeypatch.chdir(tmp_path.parent)
    np.testing.assert_array_equal(source.read(("residual",), 0, 5)["residual"],
                                  open_results(target)["residual"].values[:5])


def test_one_task_s_batch_and_the_client_s_checks_across_batches_give_the_whole_verdict(tmp_path):
    # What a worker runs (read, check, cut) and what the client adds, in one process.
    target, _, _ = _stored_half(tmp_path)
    stored = open_results(target)
    source = stored.encoding[PAIR_SOURCE]
    check = stored_pairs.PairCheck(target, stored, stored_pairs.stored_options(target, stored.attrs))
    n = stored.sizes["pair"]
    cuts = [stored_batches.read_and_cut(source, check.rules, lo, min(lo + 4, n)) for lo in range(0, n, 4)]
    for cut in cuts:
        check.take(cut[None])
    check.finish()
    whole = {k: stored[k].values for k in ("pair_dataset", "pair_model", "pair_phase", "residual", "pair_conf")}
    stream = (whole["pair_dataset"].astype(np.int64) * stored.sizes["model"] + whole["pair_model"]) * 2 \
        + whole["pair_phase"]
    for code in np.unique(stream):
        got = np.concatenate([cut[int(code)]["residual_ns"] for cut in cuts if int(code) in cut])
        np.testing.assert_array_equal(got, np.round(whole["residual"][stream == code] * 1e9).astype(np.int64))
        assert sum(cut[None].sizes.get(int(code), 0) for cut in cuts) == int((stream == code).sum())
