"""SPEC §9: the same inputs give bit-identical numbers and byte-identical CSV files regardless of
input row order, file splitting, number of partitions, scheduler, number of workers and PYTHONHASHSEED.

Every variant is compared with one baseline run (CSV files, Dask's local scheduler): the six tables
as CSV bytes (``pickscale.tables.to_csv_bytes``) and every variable of the Dataset (dtype, values,
and the bytes of float arrays).  The baseline itself is checked against brute force in
``test_engine.py``; here only sameness matters.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.engine import shuffle_codes
from tests.helpers.catalogues import trap_catalogue
from tests.helpers.checks import (
    TABLE_NAMES,
    assert_same_csv,
    assert_same_results,
    cli_flags,
    csv_bytes,
    no_default_client,
)


@pytest.fixture(scope="module")
def cat():
    # More events than the engine tests' catalogue: more float sums whose order could show.
    return trap_catalogue(seed=23, n_events=14)


@pytest.fixture(scope="module")
def inputs(cat, tmp_path_factory):
    folder = tmp_path_factory.mktemp("det_inputs")
    return cat.write_csv(folder)


@pytest.fixture(scope="module")
def baseline(inputs):
    assert no_default_client(), "a distributed Client leaked from another test: this would not be the local scheduler"
    ref_path, picks_path = inputs
    ds = pickscale.score(str(ref_path), str(picks_path))
    return ds, csv_bytes(pickscale.tables(ds))


def same_as_baseline(ds, baseline) -> None:
    base_ds, base_bytes = baseline
    assert_same_csv(csv_bytes(pickscale.tables(ds)), base_bytes)
    assert_same_results(ds, base_ds)


def _raw(path) -> pd.DataFrame:
    # As a user would load a CSV into pandas before handing it over: every cell a string.
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@pytest.mark.slow
def test_baseline_is_not_trivial(cat, baseline):
    ds, b = baseline
    assert len(ds["station"]) >= 10 and len(ds["model"]) == 4 and len(ds["dataset"]) == 3
    assert ds.sizes["pair"] > 300
    assert all(len(b[name].splitlines()) > 10 for name in TABLE_NAMES)
    # The catalogue can reveal an order-dependent reduction: summing the confidences of one
    # calibration group in another order changes the last bits for some groups.
    picks = cat.picks_canonical
    picks = picks[picks["conf"] >= 0.02].assign(bin=np.minimum(np.floor(picks["conf"] * 10), 9))
    changed = 0
    for _, g in picks.groupby(["dataset", "model", "phase", "bin"]):
        conf = g["conf"].tolist()
        changed += sum(conf) != sum(sorted(conf)) or sum(conf) != sum(reversed(conf))
    assert changed >= 5


@pytest.mark.slow
def test_shuffled_rows(cat, inputs, baseline, tmp_path):
    rng = np.random.default_rng(99)
    shuffled = type(cat)(
        reference=cat.reference.iloc[rng.permutation(len(cat.reference))],
        picks=cat.picks.iloc[rng.permutation(len(cat.picks))],
        ref_canonical=cat.ref_canonical, picks_canonical=cat.picks_canonical,
    )
    ref_path, picks_path = shuffled.write_csv(tmp_path)
    differ = ref_path.read_bytes() != inputs[0].read_bytes() and picks_path.read_bytes() != inputs[1].read_bytes()
    assert differ
    same_as_baseline(pickscale.score(str(ref_path), str(picks_path)), baseline)


def _split(frame: pd.DataFrame, folder: Path, sizes: list[float], seed: int) -> Path:
    """Shuffle, then write uneven consecutive chunks as part-*.csv in ``folder``."""
    folder.mkdir(parents=True)
    frame = frame.iloc[np.random.default_rng(seed).permutation(len(frame))]
    cuts = (np.cumsum(sizes)[:-1] * len(frame)).astype(int)
    for i, part in enumerate(np.split(np.arange(len(frame)), cuts)):
        frame.iloc[part].to_csv(folder / f"part-{i}.csv", index=False, lineterminator="\n")
    return folder


@pytest.fixture(scope="module")
def split_inputs(cat, tmp_path_factory):
    root = tmp_path_factory.mktemp("det_split")
    picks = _split(cat.picks, root / "picks", [0.15, 0.6, 0.25], seed=3)
    ref = _split(cat.reference, root / "reference", [0.5, 0.5], seed=4)
    assert len(list(picks.glob("*.csv"))) == 3
    return ref, picks


@pytest.mark.slow
def test_picks_split_across_files(split_inputs, baseline):
    ref, picks = split_inputs
    ds = pickscale.score(str(ref), str(picks))
    assert ds.attrs["inputs"]["picks"]["files"] == 3
    same_as_baseline(ds, baseline)


@pytest.mark.slow
@pytest.mark.parametrize("npartitions", [1, 7])
def test_dask_dataframe_partitions(inputs, baseline, npartitions):
    ref_path, picks_path = inputs
    raw = _raw(picks_path)
    raw = raw.iloc[np.random.default_rng(npartitions).permutation(len(raw))]
    frame = dd.from_pandas(raw, npartitions=npartitions, sort=False)
    assert frame.npartitions == npartitions
    # The reference as a pandas frame, or as a Dask frame of several partitions.
    ref = _raw(ref_path) if npartitions == 1 else dd.from_pandas(_raw(ref_path), npartitions=3, sort=False)
    ds = pickscale.score(ref, frame)
    same_as_baseline(ds, baseline)


@pytest.mark.slow
@pytest.mark.parametrize("block_picks", [None, 40])
def test_both_exchanges_give_identical_results(inputs, baseline, block_picks):
    """Dask's shuffle and the direct cut move picks differently; with or without time blocks (which then
    meet again in the reduction tree), the numbers are the same bit for bit."""
    ref_path, picks_path = inputs
    for method in ("shuffle", "direct"):
        same_as_baseline(pickscale.score(str(ref_path), str(picks_path), exchange_method=method,
                                         block_picks=block_picks), baseline)


@pytest.mark.slow
def test_the_shuffle_with_labels_gives_identical_results(inputs, baseline, monkeypatch):
    """Past the keyed codes' bounds the shuffle moves rows by a label per partition (shuffle_codes.codes_for): the same
    numbers bit for bit."""
    monkeypatch.setattr(shuffle_codes, "KEYED_SLOTS", 0)
    ref_path, picks_path = inputs
    same_as_baseline(pickscale.score(str(ref_path), str(picks_path), exchange_method="shuffle", block_picks=40),
                     baseline)


@pytest.mark.slow
def test_unknown_exchange_method_is_refused(inputs):
    with pytest.raises(pickscale.errors.OptionsError, match="exchange_method"):
        pickscale.score(*map(str, inputs), exchange_method="fast")


# --------------------------------------------------------------------------- real worker processes

@pytest.mark.cluster
def test_local_cluster_client(inputs, split_inputs, baseline, client):
    assert no_default_client()  # the cluster is used only where it is passed
    ref_path, picks_path = inputs
    same_as_baseline(pickscale.score(str(ref_path), str(picks_path), client=client), baseline)
    with client.as_current():  # the residual pairs left on the cluster (issue 22): the same numbers
        ds = pickscale.score(str(ref_path), str(picks_path), client=client)
        assert type(ds.residual.data).__module__.startswith("dask.") and ds.residual.size > 0
        same_as_baseline(ds, baseline)
        # Dask's p2p shuffle between worker processes, time blocks of one station in different partitions.
        same_as_baseline(pickscale.score(str(ref_path), str(picks_path), client=client, exchange_method="shuffle",
                                         block_picks=40), baseline)
        # Several files, several workers: parts normalised and scored in different processes.
        ref, picks = split_inputs
        same_as_baseline(pickscale.score(str(ref), str(picks), client=client), baseline)


def _pickscale_command() -> list[str]:
    exe = Path(sys.executable).with_name("pickscale")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pickscale.cli"]


@pytest.mark.cluster
def test_pythonhashseed(inputs, baseline, tmp_path):
    """``pickscale score`` in two processes with PYTHONHASHSEED 1 and 2: same CSV bytes, same store."""
    ref_path, picks_path = inputs
    procs = {}
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"seed{seed}"
        cmd = _pickscale_command() + ["score", "--reference", str(ref_path), "--picks", str(picks_path),
                                      "--out", str(out), "--workers", "1", "--quiet",
                                      *cli_flags("score", "--no-figures")]
        procs[seed] = (subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                       out)
    for seed, (proc, _out) in procs.items():
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, (seed, stdout, stderr)
    (_, out1), (_, out2) = procs["1"], procs["2"]
    base_ds, base_bytes = baseline
    files1 = {name: (out1 / f"{name}.csv").read_bytes() for name in TABLE_NAMES}
    files2 = {name: (out2 / f"{name}.csv").read_bytes() for name in TABLE_NAMES}
    assert_same_csv(files1, files2)
    assert_same_csv(files1, base_bytes)
    s1 = pickscale.open_results(out1 / "results.zarr").load()
    s2 = pickscale.open_results(out2 / "results.zarr").load()
    assert_same_results(s1, s2)
    assert_same_results(s1, base_ds, attrs=False)
