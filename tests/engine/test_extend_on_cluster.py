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
from pickscale.results.extend import merge_results, stream_shares
from tests.helpers.extend import generated
from tests.results.test_extend import same

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]

PAIRS = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


def _is_dask(ds, name: str) -> bool:
    return type(ds[name].data).__module__.startswith("dask.")


def test_stream_shares_are_each_side_s_pairs_on_the_merged_coordinates():
    ref, picks, cut = generated()
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    new = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    models = sorted({str(m) for m in stored.model.values} | {str(m) for m in new.model.values})
    stations = sorted({str(s) for s in stored.station.values} | {str(s) for s in new.station.values})
    datasets = sorted({str(d) for d in stored.dataset.values} | {str(d) for d in new.dataset.values})
    shares = stream_shares(stored, new, replaced={}, datasets=datasets, models=models, stations=stations)
    # Every pair of either side is in exactly one share, in that side's (canonical) order.
    for side, ds in enumerate((stored, new)):
        got = sum(share[side]["station"].size for share in shares.values() if share[side] is not None)
        assert got == ds.sizes["pair"]
        for s, share in shares.items():
            if share[side] is None:
                continue
            rows = share[side]
            keys = np.lexsort((rows["conf"], rows["residual_ns"], rows["station"]))
            assert np.array_equal(keys, np.arange(keys.size)), s
    # A replaced model's stored pairs are left out.
    model = str(stored.model.values[0])
    dropped = stream_shares(stored, new, replaced={d: [model] for d in datasets}, datasets=datasets,
                            models=models, stations=stations)
    m = models.index(model)
    assert all(share[0] is None for s, share in dropped.items() if (s // 2) % len(models) == m)


def test_streams_merged_here_equal_the_station_by_station_merge():
    from pickscale.engine.pairs import streams_of
    from pickscale.options import Options

    ref, picks, cut = generated()
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    new = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    options = Options.from_attrs(stored.attrs["options"])
    by_station = merge_results(stored, new, same_arrivals={})
    by_stream = merge_results(stored, new, same_arrivals={},
                              streams=lambda shares, nd, nm: streams_of(shares, None, options=options,
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
