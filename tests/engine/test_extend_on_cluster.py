"""``extend`` merges the pairs where the run's are (issue 22): a stream at a time on the cluster, bit for bit.

The stored pairs and the new run's are put together stream by stream (a (dataset, model, phase)), sorted and
timed by the stream tasks of :mod:`pickscale.engine.pairs` -- on the extension's cluster when Dask computes
with its client, where the merged pairs then stay until they are saved.  Whatever runs where, the merged
results equal one run over all the inputs, and the store written from the cluster is the same files.
"""

from __future__ import annotations

import numpy as np
import pytest

import pickscale
from pickscale.engine.extension import extended
from pickscale.results.extend import BATCH_ROWS, merge_results, stream_shares
from tests.helpers.extend import generated
from tests.results.test_extend import same

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]

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


@pytest.mark.slow
@pytest.mark.parametrize("rows", [7, 1])
def test_the_merged_pairs_do_not_depend_on_the_batches(rows):
    from pickscale.engine.pairs import streams_of
    from pickscale.options import Options

    ref, picks, cut = generated()
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    new = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    options = Options.from_attrs(stored.attrs["options"])

    def merged(n):
        return merge_results(stored, new, same_arrivals={},
                             streams=lambda shares_of, nd, nm: streams_of(shares_of(rows=n), None, options=options,
                                                                          n_datasets=nd, n_models=nm))
    a, b = merged(BATCH_ROWS), merged(rows)
    same(a, b)
    for name in PAIRS:
        assert np.array_equal(a[name].values, b[name].values), name


@pytest.mark.slow
def test_streams_merged_here_equal_the_station_by_station_merge():
    from pickscale.engine.pairs import streams_of
    from pickscale.options import Options

    ref, picks, cut = generated()
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    new = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    options = Options.from_attrs(stored.attrs["options"])
    by_station = merge_results(stored, new, same_arrivals={})
    by_stream = merge_results(stored, new, same_arrivals={},
                              streams=lambda shares_of, nd, nm: streams_of(shares_of(), None, options=options,
                                                                           n_datasets=nd, n_models=nm))
    same(by_station, by_stream)


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
