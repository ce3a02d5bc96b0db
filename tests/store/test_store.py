"""Tests of pickscale.store: atomic Zarr v3 saving, checked reopening, cleanup.

Every test writes real stores on disk under ``tmp_path``.
"""

from __future__ import annotations

import copy
import errno
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

from pickscale.errors import StoreError
from pickscale.store import SCHEMA_VERSION, cleanup_stale, locks, open_results, paths, publish, sanitise, save, writing

MARKERS = {"pickscale_complete": True, "pickscale_schema": SCHEMA_VERSION}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def make_results(n_pairs: int = 5) -> xr.Dataset:
    """A small dataset shaped like pickscale results, with every awkward case."""
    rng = np.random.default_rng(0)
    datasets = np.array(["synthetic", "bulletin-2019"], dtype=object)
    models = np.array(["EQTransformer(original)", "PhaseNet(190703-214543)", "Ñandú v2"], dtype=object)
    stations = np.array(["CH.ZÜR", "NO.ÅLES", "BR.SÃO", "GR.BFO"], dtype=object)
    thresholds = np.round(np.linspace(0.1, 0.9, 5), 2)
    emitted = rng.integers(0, 4, size=(2, 3, 2, 5)).astype(np.int64)
    emitted[0, 0] = 0  # whole rows of zeros must stay zeros (not fill values)
    matched = np.minimum(emitted, rng.integers(0, 3, size=emitted.shape)).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = matched / emitted  # NaN where nothing was emitted
    ds = xr.Dataset(
        data_vars={
            "emitted": (("dataset", "model", "phase", "threshold"), emitted,
                        {"long_name": "picks emitted", "description": "picks at or above the threshold",
                         "units": "1"}),
            "matched": (("dataset", "model", "phase", "threshold"), matched, {"long_name": "matched picks"}),
            "precision": (("dataset", "model", "phase", "threshold"), precision,
                          {"long_name": "precision", "valid_range": np.array([0.0, 1.0])}),
            "n_reference": (("dataset", "station", "phase"), rng.integers(0, 3, size=(2, 4, 2)).astype(np.int64)),
            "covered": (("dataset", "station"), np.array([[True, False, True, True], [False, False, True, True]]),
                        {"description": "station has reference arrivals and picks", "count": np.int64(3)}),
            "cal_n": (("model", "phase", "bin"), np.zeros((3, 2, 10), dtype=np.int64)),
            "brier": (("model", "phase"), np.array([[0.1, np.nan], [np.inf, 0.0], [0.2, 0.3]])),
            "pair_model": (("pair",), rng.integers(0, 3, n_pairs).astype(np.int32)),
            "pair_phase": (("pair",), rng.integers(0, 2, n_pairs).astype(np.int8)),
            "pair_residual_ns": (("pair",), rng.integers(-10**8, 10**8, n_pairs).astype(np.int64),
                                 {"units": "ns"}),
            "pair_conf": (("pair",), rng.random(n_pairs)),
            "pair_station": (("pair",), np.array([stations[i % 4] for i in range(n_pairs)], dtype=object)),
        },
        coords={
            "dataset": datasets,
            "model": models,
            "phase": np.array(["P", "S"]),  # numpy '<U1': must be stored as text, not fixed width
            "threshold": thresholds,
            "station": stations,
            "bin": np.arange(10, dtype=np.int64),
            "pair": np.arange(n_pairs, dtype=np.int64),
            "station_label": ("station", np.array(["Zürich", "Ålesund", "São Paulo", "Black Forest"], dtype="T")),
        },
        attrs={
            "pickscale_version": "0.1.0",
            "tol_s": np.float64(0.5),
            "n_picks": np.int64(1234),
            "budget": float("nan"),
            "ok": np.bool_(True),
            "options": {"grid": np.linspace(0, 1, 3), "floor": np.float32(0.05),
                        "nested": {"inf": -np.inf, "list": [np.int32(1), np.nan, "x"]}},
            "input": pathlib.Path("/data/picks.parquet"),
        },
    )
    ds["emitted"].encoding = {"chunks": (1, 1, 1, 1), "compressor": "something from zarr v2"}
    return ds


def expected_attrs() -> dict:
    return {
        "pickscale_version": "0.1.0",
        "tol_s": 0.5,
        "n_picks": 1234,
        "budget": None,
        "ok": True,
        "options": {"grid": [0.0, 0.5, 1.0], "floor": float(np.float32(0.05)),
                    "nested": {"inf": None, "list": [1, None, "x"]}},
        "input": "/data/picks.parquet",
    }


def assert_same_values(got: xr.Dataset, want: xr.Dataset) -> None:
    """Same variables, dims, dtypes, attrs and values (NaN equal to NaN)."""
    assert set(got.variables) == set(want.variables)
    assert set(got.coords) == set(want.coords)
    for name in want.variables:
        g, w = got[name], want[name]
        assert g.dims == w.dims, name
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        assert g.attrs == w.attrs, name
        if w.dtype.kind in "fc":
            assert np.array_equal(g.values, w.values, equal_nan=True), name
        else:
            assert np.array_equal(g.values, w.values), name


def siblings(path: pathlib.Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def dead_pid() -> int:
    """The pid of a process that has finished (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_incomplete(ds: xr.Dataset, target: pathlib.Path) -> None:
    """What a run killed before the end leaves: a store without the marker."""
    tmp = target.parent / f".{target.name}.tmp-{dead_pid()}-0badc0de"
    sanitise(ds).to_zarr(tmp, mode="w", zarr_format=3, consolidated=False)
    os.rename(tmp, target)


# --------------------------------------------------------------------------
# round trip
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_round_trip_is_identical_after_sanitising(tmp_path):
    ds = make_results()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. Zarr's UnstableSpecificationWarning for '<U'
        target = save(ds, tmp_path / "results.zarr")
        got = open_results(target).load()

    assert target == tmp_path / "results.zarr"
    want = sanitise(ds)
    want.attrs.update(MARKERS)
    xr.testing.assert_identical(got, want)
    assert_same_values(got, want)  # assert_identical does not compare dtypes
    assert got.attrs == {**expected_attrs(), **MARKERS}
    assert json.dumps(got.attrs, allow_nan=False)
    assert siblings(target) == []


@pytest.mark.slow
def test_round_trip_dtypes_and_text(tmp_path):
    got = open_results(save(make_results(), tmp_path / "r.zarr")).load()

    for name in ("emitted", "matched", "n_reference", "cal_n", "pair_residual_ns"):
        assert got[name].dtype == np.int64, name
    assert (got["cal_n"].values == 0).all()
    assert (got["emitted"].values[0, 0] == 0).all()
    assert got["pair_model"].dtype == np.int32 and got["pair_phase"].dtype == np.int8
    assert got["covered"].dtype == bool
    assert np.isnan(got["precision"].values).any()
    assert np.isposinf(got["brier"].values[1, 0])
    for name in ("dataset", "model", "phase", "station", "station_label", "pair_station"):
        assert got[name].dtype == np.dtypes.StringDType(), name  # as plain xr.open_zarr gives it
        assert all(type(v) is str for v in got[name].values.ravel()), name
    assert list(got["model"].values) == ["EQTransformer(original)", "PhaseNet(190703-214543)", "Ñandú v2"]
    assert got.sel(model="PhaseNet(190703-214543)", station="BR.SÃO")["n_reference"].shape == (2, 2)
    assert got["covered"].attrs == {"description": "station has reference arrivals and picks", "count": 3}
    assert got["precision"].attrs["valid_range"] == [0.0, 1.0]


@pytest.mark.slow
def test_caller_dataset_is_not_modified(tmp_path):
    ds = make_results()
    before = copy.deepcopy(ds)
    save(ds, tmp_path / "r.zarr")
    # assert_identical cannot compare attrs holding arrays inside dicts: compare reprs.
    xr.testing.assert_identical(ds.drop_attrs(), before.drop_attrs())
    assert repr(ds.attrs) == repr(before.attrs)
    for name in ds.variables:
        assert repr(ds[name].attrs) == repr(before[name].attrs), name
    assert ds["phase"].dtype.kind == "U"
    assert isinstance(ds.attrs["tol_s"], np.float64)
    assert np.isnan(ds.attrs["budget"])
    assert ds["emitted"].encoding == before["emitted"].encoding


@pytest.mark.slow
def test_plain_open_zarr_reads_a_saved_store(tmp_path):
    ds = make_results()
    target = save(ds, tmp_path / "r.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "consolidated metadata not found" fallback
        plain = xr.open_zarr(target)
    assert plain.attrs["pickscale_complete"] is True
    assert np.array_equal(plain["emitted"].values, ds["emitted"].values)
    assert np.array_equal(plain["precision"].values, ds["precision"].values, equal_nan=True)
    assert list(plain["station"].values) == list(ds["station"].values)  # NumPy StringDType here


@pytest.mark.slow
def test_dask_backed_dataset_with_uneven_chunks(tmp_path):
    ds = make_results(n_pairs=23)
    lazy = ds.chunk({"station": 1, "model": 2})
    lazy = lazy.chunk({"pair": (5, 8, 10)})  # uneven: Zarr refuses these as they are
    got = open_results(save(lazy, tmp_path / "r.zarr")).load()
    assert_same_values(got, sanitise(ds).assign_attrs(MARKERS))


@pytest.mark.slow
def test_empty_pair_dimension(tmp_path):
    ds = make_results(n_pairs=0)
    got = open_results(save(ds, tmp_path / "r.zarr")).load()
    assert got.sizes["pair"] == 0
    assert got["pair_residual_ns"].dtype == np.int64


def test_missing_text_is_refused_not_stored_as_empty(tmp_path):
    ds = make_results()
    ds["pair_station"].values[1] = None
    with pytest.raises(StoreError, match=r"'pair_station' holds None"):
        save(ds, tmp_path / "r.zarr")
    assert not (tmp_path / "r.zarr").exists() and siblings(tmp_path / "r.zarr") == []


def test_attribute_that_is_not_json_is_refused(tmp_path):
    ds = make_results()
    ds["matched"].attrs["bad"] = {1, 2}
    with pytest.raises(StoreError, match=r"attribute 'bad' of variable 'matched'.*set"):
        save(ds, tmp_path / "r.zarr")


# --------------------------------------------------------------------------
# existing targets
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_existing_store_refused_without_overwrite_and_replaced_with_it(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    newer = make_results(n_pairs=7).assign_attrs(run="second")

    with pytest.raises(StoreError, match=r"already exists; pass overwrite=True"):
        save(newer, target)
    assert open_results(target).sizes["pair"] == 5

    save(newer, target, overwrite=True)
    got = open_results(target)
    assert got.sizes["pair"] == 7 and got.attrs["run"] == "second"
    assert siblings(target) == []


@pytest.mark.slow
def test_overwrite_from_a_lazy_copy_of_the_same_store(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    lazy = xr.open_zarr(target, zarr_format=3)  # still reading from the store being replaced
    save(lazy.assign_attrs(note="re-saved"), target, overwrite=True)
    got = open_results(target).load()
    assert got.attrs["note"] == "re-saved"
    assert_same_values(got.drop_attrs(), sanitise(make_results()).drop_attrs())


@pytest.mark.parametrize("kind", ["folder", "file", "zarr"])
def test_something_not_ours_is_never_deleted(tmp_path, kind):
    target = tmp_path / "mine"
    if kind == "folder":
        target.mkdir()
        (target / "thesis.tex").write_text("years of work")
    elif kind == "file":
        target.write_text("years of work")
    else:  # a Zarr store of someone else's
        xr.Dataset({"x": ("t", [1, 2])}).to_zarr(target, zarr_format=3, consolidated=False)
    snapshot = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    with pytest.raises(StoreError, match=r"exists and is not a pickscale results store"):
        save(make_results(), target, overwrite=True)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == snapshot


# --------------------------------------------------------------------------
# failures while writing
# --------------------------------------------------------------------------


def _fill_the_disk(monkeypatch):
    """The store's writer writes some arrays, then finds the disk full."""
    real = writing.write_at_once

    def write(clean, store, *, encoding=None):
        some = ["emitted", "matched"]
        real(clean[some], store, encoding={k: v for k, v in (encoding or {}).items() if k in some})  # some land
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(writing, "write_at_once", write)


@pytest.mark.slow
def test_failing_write_leaves_no_target_and_no_temporary(tmp_path, monkeypatch):
    _fill_the_disk(monkeypatch)
    target = tmp_path / "r.zarr"
    with pytest.raises(StoreError, match=r"could not write results to .*r\.zarr.*No space left on device"):
        save(make_results(), target)
    assert not target.exists()
    assert siblings(target) == []  # no temporary store, no lock


@pytest.mark.slow
def test_failing_overwrite_keeps_the_previous_store(tmp_path, monkeypatch):
    target = save(make_results(), tmp_path / "r.zarr")
    _fill_the_disk(monkeypatch)
    with pytest.raises(StoreError, match=r"No space left on device.*nothing was changed"):
        save(make_results(n_pairs=9), target, overwrite=True)
    monkeypatch.undo()
    assert siblings(target) == []
    got = open_results(target).load()
    assert_same_values(got, sanitise(make_results()).assign_attrs(MARKERS))


@pytest.mark.slow
def test_failed_swap_puts_the_previous_store_back(tmp_path, monkeypatch):
    target = save(make_results(), tmp_path / "r.zarr")
    real_rename = os.rename

    def rename(src, dst):
        if ".tmp-" in os.fspath(src):  # the new store moving in
            raise OSError(errno.EIO, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(publish.os, "rename", rename)
    with pytest.raises(StoreError, match=r"could not move the new results into .*previous store is back"):
        save(make_results(n_pairs=9), target, overwrite=True)
    monkeypatch.undo()
    assert siblings(target) == []
    assert open_results(target).sizes["pair"] == 5


def test_missing_parent_folder(tmp_path):
    with pytest.raises(StoreError, match=r"the folder .*nowhere does not exist"):
        save(make_results(), tmp_path / "nowhere" / "r.zarr")


def test_read_only_parent_folder_reported(tmp_path, monkeypatch):
    # Root may write anywhere, so the permission check itself is simulated.
    monkeypatch.setattr(paths.os, "access", lambda *args, **kwargs: False)
    with pytest.raises(StoreError, match=r"the folder .* is not writable"):
        save(make_results(), tmp_path / "r.zarr")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_parent_folder_real(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        with pytest.raises(StoreError, match=r"is not writable"):
            save(make_results(), parent / "r.zarr")
    finally:
        parent.chmod(0o755)


def test_lock_creation_failure_is_a_store_error(tmp_path, monkeypatch):
    real_open = os.open

    def open_(path, flags, *args):
        if os.fspath(path).endswith(".lock"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, *args)

    monkeypatch.setattr(locks.os, "open", open_)
    with pytest.raises(StoreError, match=r"cannot create the lock file .*Read-only file system"):
        save(make_results(), tmp_path / "r.zarr")


# --------------------------------------------------------------------------
# open_results checks
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_open_incomplete_store(tmp_path):
    target = tmp_path / "r.zarr"
    write_incomplete(make_results(), target)
    with pytest.raises(StoreError, match=r"incomplete store .*r\.zarr: a run that wrote it did not finish "
                                         r"— re-run `pickscale score`"):
        open_results(target)


@pytest.mark.slow
def test_open_other_schema_version(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    meta_file = target / "zarr.json"
    meta = json.loads(meta_file.read_text())
    meta["attributes"]["pickscale_schema"] = SCHEMA_VERSION + 1
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=rf"store schema {SCHEMA_VERSION + 1}, .* reads schema {SCHEMA_VERSION}"):
        open_results(target)


def test_open_folder_that_is_not_a_store(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(StoreError, match=r"plain is not a Zarr store \(it has no zarr.json\)"):
        open_results(tmp_path / "plain")


def test_open_missing_path(tmp_path):
    with pytest.raises(StoreError, match=r"no results store at .*gone\.zarr: the path does not exist"):
        open_results(tmp_path / "gone.zarr")


def test_open_zarr_store_that_is_not_pickscale(tmp_path):
    xr.Dataset({"x": ("t", [1, 2])}).to_zarr(tmp_path / "other.zarr", zarr_format=3, consolidated=False)
    with pytest.raises(StoreError, match=r"is not a pickscale store"):
        open_results(tmp_path / "other.zarr")


@pytest.mark.slow
def test_open_complete_store_without_version(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    group = zarr.open_group(target, mode="r+", zarr_format=3)
    del group.attrs["pickscale_version"]
    with pytest.raises(StoreError, match=r"not a pickscale store \(no 'pickscale_version' attribute\)"):
        open_results(target)


@pytest.mark.slow
def test_incomplete_store_can_be_overwritten(tmp_path):
    target = tmp_path / "r.zarr"
    write_incomplete(make_results(), target)
    save(make_results(n_pairs=2), target, overwrite=True)
    assert open_results(target).sizes["pair"] == 2


# --------------------------------------------------------------------------
# concurrency and leftovers
# --------------------------------------------------------------------------


def _save_in_child(target: str, barrier, results) -> None:
    barrier.wait(timeout=60)
    try:
        save(make_results(n_pairs=50), target)
        results.put("ok")
    except StoreError as exc:
        results.put(f"StoreError: {exc}")
    except BaseException as exc:  # anything else is a bug: report it
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.slow
def test_concurrent_saves_one_wins_cleanly(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    target = tmp_path / "r.zarr"
    procs = [ctx.Process(target=_save_in_child, args=(str(target), barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)

    wins = [o for o in outcomes if o == "ok"]
    losses = [o for o in outcomes if o.startswith("StoreError: ")]
    assert len(wins) == 1 and len(losses) == 1, outcomes
    assert ("is writing it right now" in losses[0]) or ("already exists" in losses[0]), losses
    got = open_results(target).load()
    assert got.attrs["pickscale_complete"] is True and got.sizes["pair"] == 50
    assert siblings(target) == []


@pytest.mark.slow
def test_live_lock_refuses_and_dead_lock_is_taken_over(tmp_path):
    target = tmp_path / "r.zarr"
    lock = tmp_path / ".r.zarr.lock"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(f"{sleeper.pid}\n")
        with pytest.raises(StoreError, match=rf"another pickscale run \(pid {sleeper.pid}\) is writing it"):
            save(make_results(), target)
        assert lock.exists() and not target.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    save(make_results(), target)  # the owner is gone: the lock is stale
    assert open_results(target).attrs["pickscale_complete"] is True
    assert not lock.exists()


@pytest.mark.slow
def test_cleanup_stale_removes_only_dead_siblings(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    dead = dead_pid()
    stale_tmp = tmp_path / f".r.zarr.tmp-{dead}-0123abcd"
    stale_old = tmp_path / f".r.zarr.old-{dead}-4567abcd"
    live_tmp = tmp_path / f".r.zarr.tmp-{os.getpid()}-89abcdef"
    other = tmp_path / f".other.zarr.tmp-{dead}-0123abcd"
    for path in (stale_tmp, stale_old, live_tmp, other):
        path.mkdir()
        (path / "zarr.json").write_text("{}")

    removed = cleanup_stale(target)

    assert removed == sorted([stale_old, stale_tmp])
    assert live_tmp.exists() and other.exists() and target.exists()
    assert cleanup_stale(target) == []


@pytest.mark.slow
def test_cleanup_stale_puts_back_a_store_moved_aside_by_a_dead_run(tmp_path):
    target = save(make_results(), tmp_path / "r.zarr")
    aside = tmp_path / f".r.zarr.old-{dead_pid()}-0123abcd"
    os.rename(target, aside)  # the run died between its two renames

    assert cleanup_stale(target) == []
    assert open_results(target).sizes["pair"] == 5
    assert siblings(target) == []


@pytest.mark.slow
def test_save_removes_dead_temporary_siblings(tmp_path):
    target = tmp_path / "r.zarr"
    stale_tmp = tmp_path / f".r.zarr.tmp-{dead_pid()}-0123abcd"
    stale_tmp.mkdir()
    save(make_results(), target)
    assert not stale_tmp.exists()


@pytest.mark.slow
def test_text_coordinates_have_one_type_however_the_results_are_had(tmp_path):
    """Issue 15: ``pickscale.score``, ``open_results`` and plain ``xr.open_zarr`` agree on the text type."""
    import pickscale
    from tests.helpers.catalogues import trap_catalogue

    cat = trap_catalogue(seed=3, n_events=4)
    reference = cat.reference.assign(region=np.where(np.arange(len(cat.reference)) % 2, "north", "south"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the catalogue's traps are warned about; not what this test is about
        scored = pickscale.score(reference, cat.picks, group_by="region")
    target = save(scored, tmp_path / "r.zarr")
    reopened = open_results(target)
    plain = xr.open_zarr(target, consolidated=True)
    text = np.dtypes.StringDType()
    for name in ("dataset", "model", "phase", "station", "group"):
        assert scored[name].dtype == reopened[name].dtype == plain[name].dtype == text, name
        assert scored[name].values.tolist() == reopened[name].values.tolist() == plain[name].values.tolist()
    model = str(scored["model"].values[0])
    assert reopened.sel(model=model)["recall"].equals(scored.sel(model=model)["recall"])


def test_a_ctrl_c_while_the_lock_is_being_taken_leaves_no_lock(tmp_path, monkeypatch):
    # The lock file exists (with its record) when the interrupt comes, before the run guards it: it is
    # removed, and the next run takes the target at once.
    from pickscale.store import lease

    def interrupted(path, token):
        assert path.exists() and path.stat().st_size > 0
        raise KeyboardInterrupt

    target = tmp_path / "results.zarr"
    monkeypatch.setattr(lease, "renewing", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with locks.reserved(target):
            pass
    assert not locks.lock_path(target).exists()
    monkeypatch.undo()
    with locks.reserved(target):
        assert locks.lock_path(target).exists()
    assert not locks.lock_path(target).exists()


def _files(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_store_built_in_memory_is_written_as_zarr_writes_it_into_a_folder(tmp_path):
    """publish._write_files (several threads, folders by depth): the same files, byte for byte, as Zarr's own
    LocalStore makes of the same Dataset (scalars, 1-D to 4-D arrays, text)."""
    clean = sanitise(make_results(n_pairs=7).assign(scalar=((), 3.5)))
    files: dict = {}
    clean.to_zarr(zarr.storage.MemoryStore(store_dict=files), mode="w", zarr_format=3, consolidated=False)
    publish._write_files(tmp_path / "from_memory", files)
    clean.to_zarr(tmp_path / "by_zarr", mode="w", zarr_format=3, consolidated=False)
    written = _files(tmp_path / "from_memory")
    assert written == _files(tmp_path / "by_zarr")
    assert any(key.count("/") >= 5 for key in written)  # (a 4-D array's chunk, four folders below its own)


def test_a_failed_file_write_stops_the_rest_and_is_raised(tmp_path, monkeypatch):
    """One writer thread: the file after the failed one is under way when the error comes back (held until the
    writers shut down), every later one is cancelled, never written."""
    import concurrent.futures
    import threading

    files: dict = {}
    sanitise(make_results()).to_zarr(zarr.storage.MemoryStore(store_dict=files), mode="w", zarr_format=3,
                                     consolidated=False)
    keys = sorted(files)
    failing = keys.index("matched/zarr.json")
    assert failing + 2 < len(keys)
    real, real_shutdown = pathlib.Path.write_bytes, concurrent.futures.ThreadPoolExecutor.shutdown
    tried: list[str] = []
    failed, shut = threading.Event(), threading.Event()

    def full_disk(path, data):
        tried.append(path.relative_to(tmp_path / "store").as_posix())
        if failed.is_set():
            assert shut.wait(timeout=120)  # (an event, not a clock: set when the writers are shut down)
        if tried[-1] == "matched/zarr.json":
            failed.set()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)

    def shutdown(self, *args, **kwargs):
        shut.set()
        return real_shutdown(self, *args, **kwargs)

    monkeypatch.setattr(publish, "_WRITERS", 1)
    monkeypatch.setattr(pathlib.Path, "write_bytes", full_disk)
    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "shutdown", shutdown)
    with pytest.raises(OSError, match="No space left on device"):
        publish._write_files(tmp_path / "store", files)
    assert tried == keys[:failing + 2]  # (in key order: one writer)
