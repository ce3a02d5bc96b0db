"""The worker side of the engine (pickscale.engine.parts): encoding, row-group reads, failures, lean workers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pickscale
from pickscale.engine import inputs, parts
from pickscale.engine.parts import Failure, encode_picks, read_part
from pickscale.errors import InputError
from pickscale.io import normalise
from pickscale.report.tables import to_csv_bytes
from pickscale.scope import summarise_picks
from tests.helpers.checks import start_cluster

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "paired_windows"


def _picks_frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "dataset": rng.choice(["A", "B "], n),
        "model": rng.choice(["m1", "m2", "m3"], n),
        "station": rng.choice(["XX.S1", "XX.S2.", " XX.S3"], n),
        "phase": rng.choice(["P", "Sg", "PKP"], n),
        "time": pd.to_datetime(1_600_000_000_000_000_000 + rng.integers(0, 10**12, n), utc=True),
        "conf": rng.choice([0.01, 0.05, 0.3, 0.5, 0.9, 1.0], n).astype(np.float32),
    })


def test_encoded_part_summarises_like_the_rows():
    norm = normalise(_picks_frame(), role="picks", source="p", categorical=True)
    part = encode_picks(norm, 0.02)
    rows = norm.frame
    above = rows[rows["conf"] >= 0.02]
    want = summarise_picks(above.astype({c: object for c in ("dataset", "station", "model")}))
    got = part.combos.sort_values(["dataset", "station", "model"]).reset_index(drop=True)
    assert got[want.columns].astype(object).values.tolist() == want.astype(object).values.tolist()
    # Each row's combo is its own (dataset, station, model).
    combo = part.combos.iloc[part.combo]
    assert combo["station"].tolist() == above["station"].astype(object).tolist()
    assert combo["model"].tolist() == above["model"].astype(object).tolist()
    assert part.below_floor == {k: int(v) for k, v in rows[rows["conf"] < 0.02]["dataset"].value_counts().items()}
    # float32 confidences are kept as float32 (exactly), others as float64.
    assert part.conf.dtype == np.float32
    assert part.conf.astype(np.float64).tolist() == above["conf"].tolist()
    frame = _picks_frame()
    frame["conf"] = frame["conf"].astype(np.float64) + 1e-12 * (frame["conf"] < 1)
    assert encode_picks(normalise(frame, role="picks", source="p", categorical=True), 0.02).conf.dtype == np.float64


def test_a_bad_file_comes_back_as_a_value_not_an_exception(tmp_path):
    bad = tmp_path / "picks.csv"
    bad.write_text("station,phase,time,conf\nXX.A,P,2020-01-01T00:00:00Z,1.5\n")
    out = read_part(str(bad), drop_invalid=False, floor=0.02)
    assert isinstance(out, Failure) and "conf" in out.message and "row 2" in out.message
    with pytest.raises(InputError, match="row 2"):
        pickscale.score(str(DATA / "reference.csv"), str(bad))


def _row_group_file(path: Path, frame: pd.DataFrame, rows_per_group: int) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=rows_per_group)


@pytest.mark.slow
def test_large_files_are_read_as_runs_of_row_groups(tmp_path, monkeypatch):
    picks = pd.read_csv(DATA / "picks.csv")
    path = tmp_path / "picks.parquet"
    _row_group_file(path, picks, rows_per_group=max(1, len(picks) // 7))
    whole = pickscale.score(str(DATA / "reference.csv"), str(path))
    monkeypatch.setattr(inputs, "_SPLIT_BYTES", 0)
    monkeypatch.setattr(inputs, "READ_ROWS", max(1, len(picks) // 5))
    src = inputs.load(str(path), role="picks")
    assert len(src.parts) >= 4  # the file is read by several tasks
    split = pickscale.score(str(DATA / "reference.csv"), str(path))
    tw, ts = pickscale.tables(whole), pickscale.tables(split)
    assert all(to_csv_bytes(tw[k]) == to_csv_bytes(ts[k]) for k in tw)
    assert split.attrs["inputs"]["picks"]["rows_read"] == len(picks)


@pytest.mark.slow
def test_row_numbers_in_messages_count_from_the_top_of_the_file(tmp_path, monkeypatch):
    picks = pd.read_csv(DATA / "picks.csv")
    bad_row = len(picks) - 3  # in the last run of row groups
    picks.loc[bad_row, "conf"] = 7.0
    path = tmp_path / "picks.parquet"
    _row_group_file(path, picks, rows_per_group=max(1, len(picks) // 7))
    monkeypatch.setattr(inputs, "_SPLIT_BYTES", 0)
    monkeypatch.setattr(inputs, "READ_ROWS", max(1, len(picks) // 5))
    with pytest.raises(InputError, match=rf"row {bad_row + 2}: '7.0'"):
        pickscale.score(str(DATA / "reference.csv"), str(path))


@pytest.mark.slow
def test_workers_stay_lean_and_keep_nothing_after_a_run():
    """Workers import no xarray (only pickscale.engine.parts, .scoring and the kernel), and the read parts are freed."""
    cluster, client = start_cluster(n_workers=1)
    try:
        ds = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"), client=client)
        assert float(ds.recall.max()) > 0
        loaded = client.run(lambda: sorted(m for m in ("xarray", "zarr", "matplotlib", "dask.dataframe")
                                           if m in sys.modules))
        assert all(mods == [] for mods in loaded.values()), loaded
        held = client.run(lambda dask_worker: len(dask_worker.data))
        assert all(n == 0 for n in held.values()), held
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_small_files_are_read_in_batches_with_every_error_reported(tmp_path, monkeypatch):
    from pickscale.io import csv_to_parquet

    one_by_one = []
    read_part = parts.read_part
    monkeypatch.setattr(parts, "read_part", lambda path, **k: one_by_one.append(path) or read_part(path, **k))

    hive = csv_to_parquet(DATA / "picks.csv", tmp_path / "hive", partition_by=("station",))
    files = sorted(hive.rglob("*.parquet"))
    assert len(files) > 10
    src = inputs.load(str(hive), role="picks")
    assert len(src.parts) < len(files)  # batched: far fewer tasks than files
    whole = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"))
    one_by_one.clear()
    batched = pickscale.score(str(DATA / "reference.csv"), str(hive))
    tw, tb = pickscale.tables(whole), pickscale.tables(batched)
    assert all(to_csv_bytes(tw[k]) == to_csv_bytes(tb[k]) for k in tw)
    assert one_by_one == []  # clean files of one schema: read and normalised as one table
    # Two bad files of one batch: both named in the one message.
    for f in (files[1], files[-2]):
        table = pq.read_table(f)
        conf = table.column("conf").to_numpy().copy()
        conf[0] = 2.0
        pq.write_table(table.set_column(table.schema.get_field_index("conf"), "conf", pa.array(conf)), f)
    with pytest.raises(InputError) as err:
        pickscale.score(str(DATA / "reference.csv"), str(hive))
    assert str(files[1]) in str(err.value) and str(files[-2]) in str(err.value)
    assert "row 2" in str(err.value)  # the batch was read again file by file, for the row numbers
    assert len(one_by_one) >= len(files) - 2


@pytest.mark.parametrize("ordered", [True, False])
def test_residual_pairs_sort_equals_the_full_lexicographic_sort(ordered, monkeypatch):
    """The pairs' stable sort on (dataset, model, phase) — and the fallback when its precondition fails."""
    from pickscale.results import assembly as results

    rng = np.random.default_rng(5)
    keys = ("dataset", "model", "phase", "station", "residual_ns", "conf")
    parts = []
    for d in range(2):
        n = 300
        part = {"dataset": np.full(n, d, np.int32), "model": rng.integers(0, 3, n).astype(np.int32),
                "phase": rng.integers(0, 2, n).astype(np.int8), "station": rng.integers(0, 5, n).astype(np.int32),
                "residual_ns": rng.integers(-5, 5, n).astype(np.int64), "conf": rng.choice([0.3, 0.5, 0.9], n)}
        if ordered:  # as combine() makes them: by station, then the kernel's (model, phase, residual, conf)
            o = np.lexsort((part["conf"], part["residual_ns"], part["phase"], part["model"], part["station"]))
            part = {k: v[o] for k, v in part.items()}
        parts.append(part)
    cat = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    want = np.lexsort(tuple(cat[k] for k in reversed(keys)))
    calls = []
    lexsort = np.lexsort
    monkeypatch.setattr(results.np, "lexsort", lambda *a, **k: calls.append(1) or lexsort(*a, **k))
    got = results._canonical_pairs(parts)
    assert all(np.array_equal(got[k], cat[k][want]) for k in keys)
    assert bool(calls) is (not ordered)  # the full sort runs only when the cheap one was not enough


@pytest.mark.slow
def test_reference_files_in_batches(tmp_path):
    from pickscale.io import csv_to_parquet

    hive = csv_to_parquet(DATA / "reference.csv", tmp_path / "ref", role="reference", partition_by=("station",))
    files = sorted(hive.rglob("*.parquet"))
    assert len(inputs.load(str(hive), role="reference").parts) < len(files)
    whole = pickscale.tables(pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv")))
    batched = pickscale.tables(pickscale.score(str(hive), str(DATA / "picks.csv")))
    assert all(to_csv_bytes(whole[k]) == to_csv_bytes(batched[k]) for k in whole)
    # An empty phase in one file: read file by file, and the message names that file and row.
    table = pq.read_table(files[2])
    phase = table.column("phase").to_pylist()
    phase[0] = ""
    pq.write_table(table.set_column(table.schema.get_field_index("phase"), "phase", pa.array(phase)), files[2])
    with pytest.raises(InputError, match="row 2") as err:
        pickscale.score(str(hive), str(DATA / "picks.csv"))
    assert str(files[2]) in str(err.value)
