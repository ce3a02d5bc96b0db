"""A real Dask cluster: `dask scheduler` and two `dask worker` processes on 127.0.0.1 (issue 5).

`pickscale score --scheduler tcp://127.0.0.1:PORT` runs on it and writes a store identical to a
local run. The processes are started here and stopped by the process ids this test started.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pickscale
from pickscale.cli import main
from tests.helpers.processes import stop_sessions

ROOT = Path(__file__).resolve().parents[2]
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
        stop_sessions(procs, timeout=20)


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
        if local[name].dtype.kind in "OT":
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


@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_shape_graph_is_linear_and_tables_equal(scheduler_address):
    """Issue 10: P read parts and Q work partitions in the hundreds; the tasks grow like P + Q, not P × Q.

    The picks come as a Dask DataFrame of P = 150 partitions and ``block_picks`` gives Q = 150 work
    partitions: the direct exchange would hold 22,500 edges; Dask's p2p shuffle holds ~P + Q tasks.
    """
    import dask.dataframe as dd
    from distributed import Client, get_task_stream

    from pickscale.engine.exchange import choose
    from tests.helpers.catalogues import plain_catalogue
    from tests.helpers.checks import assert_same_csv, assert_same_results, csv_bytes

    cat = plain_catalogue(seed=8, n_datasets=2, n_stations=90, n_events=3)
    p = q = 150
    frame = dd.from_pandas(cat.picks, npartitions=p, sort=False)
    assert frame.npartitions == p
    block = len(cat.picks) // q
    assert choose("auto", p, q) == "shuffle"
    local = pickscale.score(cat.reference, cat.picks, exchange_method="direct")
    with Client(scheduler_address, timeout="30s", set_as_default=False) as client:
        with get_task_stream(client) as stream:
            ds = pickscale.score(cat.reference, frame, client=client, block_picks=block, progress=False)
        n_tasks = len(stream.data)
        assert client.run(lambda: 1)  # the workers are still there
    # Read + outline + encode + transfer per part; unpack + score per partition; the reduction tree; and a
    # constant for the reference, whatever P and Q: ~20 tasks per bucket of stations (SPEC §2's passes, the
    # extent, the exchange's codes; one bucket per worker here).
    assert n_tasks < 6 * (p + q) + 20 * 2 * 2, n_tasks
    assert n_tasks > p + q  # the stream did see the job
    assert_same_csv(csv_bytes(pickscale.tables(ds)), csv_bytes(pickscale.tables(local)))
    assert_same_results(ds, local)
