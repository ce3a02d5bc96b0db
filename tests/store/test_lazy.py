"""Opening a store with its residual pairs read when used (issue 22, SPEC §15).

``open_results`` reads and checks every file but the pairs' chunks, whose sizes it checks; each of those is
read -- and checked against the manifest the store was opened with -- when a slice needs it.  Opened so, the
results are those of a whole opening, bit for bit; a slice reads the chunks it needs only; a chunk that
changed since (damaged, or the store replaced) is a StoreError naming the store, never other numbers.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pickscale
from pickscale.errors import StoreError
from pickscale.report.tables import to_csv_bytes
from pickscale.store import checked, open_results, save
from pickscale.store.segments import PAIR_CHUNK_ROWS
from tests.helpers.extend import generated

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")

PAIRS = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf", "ranked_residual",
         "ranked_level")


@pytest.fixture(scope="module")
def scored():
    ref, picks, _ = generated()
    return pickscale.score(ref, picks)


@pytest.fixture
def reads(monkeypatch):
    """The pair chunk files read, in order (each also checked)."""
    seen: list[str] = []
    real = checked.Deferred.read

    def counted(self, rel):
        seen.append(rel)
        return real(self, rel)

    monkeypatch.setattr(checked.Deferred, "read", counted)
    return seen


@pytest.mark.slow
def test_a_lazy_opening_is_a_whole_one_bit_for_bit(scored, tmp_path, reads):
    target = save(scored, tmp_path / "results.zarr")
    lazy, whole = open_results(target), open_results(target, lazy=False)
    assert not reads  # nothing of the pairs read on opening
    assert all(not lazy[name].variable._in_memory for name in PAIRS)
    assert all(lazy[name].variable._in_memory for name in lazy.data_vars if "pair" not in lazy[name].dims)
    assert {n: to_csv_bytes(f) for n, f in pickscale.tables(lazy).items()} == {
        n: to_csv_bytes(f) for n, f in pickscale.tables(whole).items()}
    assert not reads  # the tables need no pair
    loaded = lazy.load()
    assert sorted(reads) == sorted({r for r in reads}) and {r.split("/c/")[0] for r in reads} == set(PAIRS)
    xr.testing.assert_identical(loaded, whole)


def test_a_slice_reads_the_chunks_it_needs(tmp_path, reads):
    # 4 · 2^18 pairs: every pair variable in 4 chunks of PAIR_CHUNK_ROWS = 2^18 rows (store/segments.py).
    n = 4 * PAIR_CHUNK_ROWS
    ds = xr.Dataset({"residual": ("pair", np.linspace(-1, 1, n)),
                     "pair_model": ("pair", np.repeat(np.arange(4, dtype=np.int8), n // 4)),
                     "emitted": ("phase", [5, 7])}, coords={"phase": ["P", "S"]})
    target = save(ds, tmp_path / "results.zarr")
    got = open_results(target)
    # One model's residuals: the second quarter of the pairs.
    one = got.residual.isel(pair=slice(n // 4, n // 2)).values
    assert reads == ["residual/c/1"] and got.residual.encoding["chunks"] == (PAIR_CHUNK_ROWS,)
    assert np.array_equal(one, ds.residual.values[n // 4:n // 2])
    assert got.emitted.values.tolist() == [5, 7]


@pytest.mark.slow
def test_a_chunk_damaged_after_opening_is_refused_when_read(scored, tmp_path):
    target = save(scored, tmp_path / "results.zarr")
    got = open_results(target)
    chunk = next((target / "residual" / "c").iterdir())
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x10
    chunk.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        _ = got.residual.values
    assert str(target) in str(info.value) and "residual/c/" in str(info.value)
    assert "has changed since the store was opened" in str(info.value)
    assert got.recall.values.size  # what was read on opening stays readable


@pytest.mark.slow
def test_a_chunk_cut_short_is_refused_on_opening(scored, tmp_path):
    target = save(scored, tmp_path / "results.zarr")
    chunk = next((target / "pair_conf" / "c").iterdir())
    chunk.write_bytes(chunk.read_bytes()[:-1])
    with pytest.raises(StoreError, match="pair_conf/c/.* bytes, not"):
        open_results(target)


@pytest.mark.slow
def test_a_store_replaced_after_opening_is_said_so(scored, tmp_path):
    target = save(scored, tmp_path / "results.zarr")
    got = open_results(target)
    other = pickscale.score(pd.DataFrame({"station": ["A"], "phase": ["P"], "time": [10.0]}),
                            pd.DataFrame({"station": ["A"], "phase": ["P"], "time": [10.2], "conf": [0.9]}))
    save(other, target, overwrite=True)
    with pytest.raises(StoreError, match="replaced or removed after it was opened.*open it again"):
        _ = got.residual.values
    assert open_results(target).residual.values.tolist() == pytest.approx([0.2])  # opened again: the new one
    shutil.rmtree(target)
    with pytest.raises(StoreError, match="after it was opened"):
        _ = got.pair_conf.values


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_an_extensions_results_read_after_their_store_changed_refuse(tmp_path, how):
    # pickscale.extend returns its results with the pairs left in the store it wrote: read after that store was
    # removed or replaced, they are a StoreError -- never Zarr's fill values (NaN residuals, index 0) or the pairs
    # of another store.

    ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0]})
    picks = ref.assign(model="m", conf=0.9, time=ref["time"] + 0.1)
    target = save(pickscale.score(ref, picks), tmp_path / "results.zarr")
    got = pickscale.extend(target, ref.assign(time=ref["time"] + 1000.0), picks.assign(time=picks["time"] + 1000.0))
    assert got.residual.values.round(3).tolist() == [0.1] * 4  # (read while the store is the one written)
    got = pickscale.extend(target, ref.assign(time=ref["time"] + 2000.0), picks.assign(time=picks["time"] + 2000.0))
    if how == "removed":
        shutil.rmtree(target)
    else:
        save(pickscale.score(ref, picks.assign(time=picks["time"] + 0.05)), target, overwrite=True)
    lazy = [name for name in got.data_vars if not got[name].variable._in_memory]
    assert {"residual", "pair_conf", "ranked_residual"} <= set(lazy)  # (the rest, held here, are values)
    for name in lazy:
        with pytest.raises(StoreError, match="replaced or removed after it was opened"):
            np.asarray(got[name].values)


def test_the_ranked_copy_is_read_in_smaller_chunks(tmp_path, reads):
    # SPEC §9: the ranked copy's chunks are 2^14 rows (an extension reads a few of its blocks a stream), the other
    # pair variables' 2^18: one block read reads one 2^14-row chunk.
    from pickscale.store.segments import RANKED_CHUNK_ROWS

    n = 2 * PAIR_CHUNK_ROWS
    ds = xr.Dataset({"residual": ("pair", np.zeros(n)), "ranked_residual": ("pair", np.arange(n, dtype=np.int64)),
                     "emitted": ("phase", [5, 7])}, coords={"phase": ["P", "S"]})
    got = open_results(save(ds, tmp_path / "results.zarr"))
    assert got.residual.encoding["chunks"] == (PAIR_CHUNK_ROWS,)
    assert got.ranked_residual.encoding["chunks"] == (RANKED_CHUNK_ROWS,)
    block = got.ranked_residual.isel(pair=slice(3 * RANKED_CHUNK_ROWS + 5, 3 * RANKED_CHUNK_ROWS + 1029)).values
    assert reads == ["ranked_residual/c/3"] and block[0] == 3 * RANKED_CHUNK_ROWS + 5
