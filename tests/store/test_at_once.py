"""pickscale.store.at_once: every array made at once writes the files ``Dataset.to_zarr`` writes, byte for byte."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.store import sanitise, save
from pickscale.store.at_once import write_at_once
from pickscale.store.writing import chunks_of
from tests.helpers.examples import examples
from tests.store.test_store import make_results

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEAD50 = ROOT / "tests/data/stead50_phasenet"


def _files(write, clean: xr.Dataset) -> dict[str, bytes]:
    """The files of ``clean`` written by ``write`` into a store in memory, consolidated as a save does."""
    files: dict = {}
    store = zarr.storage.MemoryStore(store_dict=files)
    encoding = {name: {"chunks": chunks_of(str(name), clean[name].variable)} for name in clean.data_vars
                if clean[name].dims[:1] == ("pair",)}
    write(clean, store, encoding)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        zarr.consolidate_metadata(store, zarr_format=3)
    return {key: value.to_bytes() for key, value in files.items()}


def _by_xarray(clean, store, encoding):
    clean.to_zarr(store, mode="w", zarr_format=3, consolidated=False, encoding=encoding)


def _at_once(clean, store, encoding):
    write_at_once(clean, store, encoding=encoding)


def assert_same_files(ds: xr.Dataset) -> None:
    clean = sanitise(ds).load()
    want, got = _files(_by_xarray, clean), _files(_at_once, clean)
    assert sorted(got) == sorted(want)
    assert [key for key in want if got[key] != want[key]] == []


@pytest.fixture(scope="module")
def demo_results():
    from pickscale.demo import catalogue

    # time bins, several tolerances and groups: every kind of variable a study can hold
    return pickscale.score(*catalogue(), progress=False, time_bin="2h", tols=[0.1, 0.2, 0.5],
                           group_by="magnitude:1,2,3").load()


def test_a_study_is_the_same_files():
    ds = pickscale.score(STEAD50 / "reference.csv", STEAD50 / "picks.csv", progress=False).load()
    assert_same_files(ds)


def test_the_demo_with_time_bins_tolerances_and_groups_is_the_same_files(demo_results):
    assert "bin_start" in demo_results.coords or any("time" in str(d) for d in demo_results.dims)
    assert_same_files(demo_results)


def test_awkward_values_are_the_same_files():
    # text in several scripts, NaN and infinities, zeros where nothing is written, chunks given, nested attrs
    assert_same_files(make_results(n_pairs=7))


def test_times_an_empty_dimension_and_a_scalar_are_the_same_files():
    ds = xr.Dataset(
        {"start": ("bin", np.array(["2020-01-01T00:00", "2020-01-01T02:00", "NaT"], dtype="datetime64[ns]")),
         "span": ("bin", np.array([7_200, 3_600, 0], dtype="timedelta64[s]").astype("timedelta64[ns]")),
         "none": ("pair", np.zeros(0, dtype=np.int64)),
         "total": ((), np.int64(12)),
         "ok": ("bin", np.array([True, False, True]))},
        coords={"bin": np.arange(3), "pair": np.arange(0)})
    assert_same_files(ds)


def test_arrays_left_to_fill_are_the_files_to_zarr_makes_without_computing():
    # A store too large to build whole: its Dask-backed variables' arrays are made (to be filled a chunk range
    # at a time), everything else written -- as to_zarr(compute=False) does.
    import dask.array as da

    ds = make_results(n_pairs=300_000)
    clean = sanitise(ds)
    for name in ("pair_residual_ns", "pair_conf", "pair_model"):
        var = clean[name].variable
        clean[name] = var.chunk({"pair": chunks_of(name, var)[0]})
    assert isinstance(clean["pair_conf"].data, da.Array)
    encoding = {name: {"chunks": chunks_of(str(name), clean[name].variable)} for name in clean.data_vars
                if clean[name].dims[:1] == ("pair",)}

    def made(write):
        files: dict = {}
        write(zarr.storage.MemoryStore(store_dict=files))
        return {key: value.to_bytes() for key, value in files.items()}

    want = made(lambda store: clean.to_zarr(store, mode="w", zarr_format=3, consolidated=False, compute=False,
                                            encoding=encoding))
    got = made(lambda store: write_at_once(clean, store, encoding=encoding, compute=False))
    assert not any(key.startswith("pair_conf/c") for key in got)  # (left to fill)
    assert any(key.startswith("pair_station/c") for key in got)  # (in memory: written)
    assert sorted(got) == sorted(want) and [key for key in want if got[key] != want[key]] == []


_DTYPES = st.sampled_from(["int8", "int32", "int64", "uint16", "float32", "float64", "bool", "text", "datetime"])


@st.composite
def datasets(draw):
    n = draw(st.integers(0, 5))
    variables = {}
    for i in range(draw(st.integers(1, 6))):
        kind = draw(_DTYPES)
        dims = draw(st.sampled_from([(), ("x",), ("x", "y")]))
        shape = tuple({"x": n, "y": 2}[d] for d in dims)
        size = int(np.prod(shape, dtype=np.int64))
        raw = draw(st.lists(st.integers(-1000, 1000), min_size=size, max_size=size))
        values = np.array(raw, dtype=np.int64).reshape(shape)
        if kind == "text":
            data = np.array([f"s{v}é" for v in values.ravel()], dtype=np.dtypes.StringDType()).reshape(shape)
        elif kind == "datetime":
            data = values.astype("datetime64[s]").astype("datetime64[ns]")
        elif kind.startswith("float"):
            data = values.astype(kind)
            if size and draw(st.booleans()):
                data.ravel()[0] = np.nan
        elif kind == "bool":
            data = values > 0
        else:
            data = (values % 100).astype(kind)
        variables[f"v{i}"] = (dims, data, {"n": i} if draw(st.booleans()) else {})
    return xr.Dataset(variables, coords={"x": np.arange(n)}, attrs={"k": draw(st.integers(0, 9))})


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ds=datasets())
def test_any_dataset_is_the_same_files(ds):
    assert_same_files(ds)


class _FailingStore(zarr.storage.MemoryStore):
    """A store whose write of one array's chunks fails (a full disk, a refused upload)."""

    async def set(self, key, value, byte_range=None):
        if key.startswith("matched/c"):
            raise OSError(28, "No space left on device")
        await super().set(key, value)


def test_a_failed_write_raises_its_own_error_not_a_group():
    ds = make_results()
    with pytest.raises(OSError, match="No space left"):
        write_at_once(sanitise(ds).load(), _FailingStore())


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    # save builds a small store in memory: its failure leaves no store and no temporary, and says why
    import pickscale.store.publish as publish

    monkeypatch.setattr(publish.zarr.storage, "MemoryStore", _FailingStore)
    with pytest.raises(pickscale.errors.StoreError, match="No space left"):
        save(make_results(), tmp_path / "results.zarr")
    assert list(tmp_path.iterdir()) == []


def test_fetched_together_computes_small_dask_backed_variables_once(monkeypatch):
    import dask
    import dask.array as da

    from pickscale.store import writing
    from pickscale.store.segments import PAIR_PARTS

    computed = []

    def counted(block):
        computed.append(block.size)
        return block

    x = da.arange(10, chunks=4).map_blocks(counted, dtype=np.int64, meta=np.zeros(0, np.int64))
    ds = xr.Dataset({"x": ("pair", x), "y": ("phase", [1, 2])})
    with dask.config.set(scheduler="sync"):
        got = writing.fetched_together(ds)
    assert type(got["x"].data) is np.ndarray and got["x"].values.tolist() == list(range(10))
    assert sorted(computed) == [2, 4, 4]  # (each block once: one graph)
    assert got["y"].values.tolist() == [1, 2] and writing.fetched_together(got) is got
    # Too many bytes to hold together (the store writes them a chunk range at a time), or an extension's pairs
    # (made of the stored ones and the new): left where they are.
    monkeypatch.setattr(writing, "_FETCH_TOGETHER_BYTES", 79)
    assert writing.fetched_together(ds) is ds
    monkeypatch.setattr(writing, "_FETCH_TOGETHER_BYTES", 80)
    assert type(writing.fetched_together(ds)["x"].data) is np.ndarray
    extension = ds.copy()
    extension.encoding[PAIR_PARTS] = object()
    assert writing.fetched_together(extension) is extension
