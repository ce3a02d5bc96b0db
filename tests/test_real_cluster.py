"""A real Dask cluster: `dask scheduler` and two `dask worker` processes on 127.0.0.1 (issue 5).

`pickscale score --scheduler tcp://127.0.0.1:PORT` runs on it and writes a store identical to a
local run. The processes are started here and stopped by the process ids this test started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pickscale
from pickscale.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "configs" / "demo"
BIN = Path(sys.executable).parent


def _dask(*args: str, log: Path) -> subprocess.Popen:
    exe = BIN / "dask"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]]
    return subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def scheduler_address(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    sched_file = tmp / "scheduler.json"
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(sched_file), log=tmp / "scheduler.log")]
    try:
        _wait_for(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 60, "the scheduler")
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            procs.append(_dask("worker", address, "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1",
                               "--no-dashboard", "--name", f"w{i}", log=tmp / f"worker{i}.log"))
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        # Stop exactly the processes started here, by their pids (each leads its own session).
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.mark.cluster
@pytest.mark.slow
def test_score_on_a_real_cluster_equals_a_local_run(scheduler_address, tmp_path):
    args = ["score", "--reference", str(DATA / "reference.csv"), "--picks", str(DATA / "picks.csv"),
            "--no-figures", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "remote"), "--scheduler", scheduler_address]) == 0
    assert main(args + ["--out", str(tmp_path / "local"), "--workers", "1"]) == 0
    remote = pickscale.open_results(tmp_path / "remote/results.zarr").load()
    local = pickscale.open_results(tmp_path / "local/results.zarr").load()
    assert set(remote.variables) == set(local.variables)
    for name in local.variables:
        assert remote[name].dtype == local[name].dtype, name
        if local[name].dtype == object:
            assert remote[name].values.tolist() == local[name].values.tolist(), name
        else:
            assert np.array_equal(remote[name].values, local[name].values,
                                  equal_nan=local[name].dtype.kind == "f"), name
    for table in ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep"):
        assert (tmp_path / "remote" / f"{table}.csv").read_bytes() == (tmp_path / "local" / f"{table}.csv").read_bytes()


@pytest.mark.cluster
@pytest.mark.slow
def test_scheduler_address_from_the_environment(scheduler_address, tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", scheduler_address)
    out = tmp_path / "env"
    assert main(["score", "--reference", str(DATA / "reference.csv"), "--picks", str(DATA / "picks.csv"),
                 "--out", str(out), "--no-figures", "--quiet"]) == 0
    assert pickscale.open_results(out / "results.zarr").sizes["station"] == 8
