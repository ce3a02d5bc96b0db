"""A scheduler that cannot run pickscale says so, within a bound (issue 16 item 6b).

Real `dask scheduler` / `dask worker` processes on 127.0.0.1, started here and stopped by the process ids
this module started: a scheduler without workers; and workers that cannot import pickscale (a preload
module puts ``None`` in ``sys.modules['pickscale']``) or report another pickscale version, beside a good one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pickscale import __version__
from pickscale.cli import main
from pickscale.engine.workers import TIMEOUT_ENV, check_workers, worker_timeout
from pickscale.errors import ClusterError, OptionsError
from tests.helpers.processes import stop_sessions

BIN = Path(sys.executable).parent


def _dask(*args: str, log: Path, env: dict | None = None) -> subprocess.Popen:
    exe = BIN / "dask"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]]
    return subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def scheduler(self) -> str:
        sched_file = self.tmp / "scheduler.json"
        self.procs.append(_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                "--scheduler-file", str(sched_file), log=self.tmp / "scheduler.log"))
        _wait_for(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 60, "the scheduler")
        return json.loads(sched_file.read_text())["address"]

    def worker(self, address: str, name: str, preload: Path | None = None) -> None:
        args = ["worker", address, "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                "--no-nanny", "--name", name]
        env = None
        if preload is not None:
            args += ["--preload", preload.stem]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(preload.parent),
                                                                               os.environ.get("PYTHONPATH")]))}
        self.procs.append(_dask(*args, log=self.tmp / f"worker-{name}.log", env=env))

    def stop(self) -> None:
        stop_sessions(self.procs, timeout=20)


@pytest.fixture
def processes(tmp_path):
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.stop()


def _client(address: str):
    from distributed import Client

    return Client(address, timeout="30s")


@pytest.mark.cluster
def test_a_scheduler_without_workers_is_reported_within_the_timeout(processes, tmp_path, capsys, monkeypatch):
    address = processes.scheduler()
    with _client(address) as client:
        start = time.monotonic()
        with pytest.raises(ClusterError) as info:
            check_workers(client, timeout=3)
        assert time.monotonic() - start < 20  # 3 s, with room for a loaded machine
    msg = str(info.value)
    assert f"no Dask worker joined the scheduler at {address} within 3 s" in msg
    assert f"dask worker {address}" in msg and TIMEOUT_ENV in msg

    # The command: exit 2, one message, no traceback, nothing written, within the bound from the environment.
    monkeypatch.setenv(TIMEOUT_ENV, "3")
    root = Path(__file__).resolve().parents[2] / "configs" / "demo"
    out = tmp_path / "out"
    start = time.monotonic()
    code = main(["score", "--reference", str(root / "reference.csv"), "--picks", str(root / "picks.csv"),
                 "--out", str(out), "--scheduler", address, "--no-figures", "--quiet"])
    elapsed = time.monotonic() - start
    _, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("pickscale: error: ") == 1 and "Traceback" not in err, err
    assert "no Dask worker joined" in err and address in err, err
    assert elapsed < 45, elapsed  # 3 s for the workers, with room for imports on a loaded machine
    assert not out.exists()


@pytest.mark.cluster
def test_workers_that_cannot_run_pickscale_are_named(processes, tmp_path):
    hide = tmp_path / "preload_hide_pickscale.py"
    hide.write_text("import sys\nsys.modules['pickscale'] = None  # this worker cannot import pickscale\n")
    other = tmp_path / "preload_other_version.py"
    other.write_text("import pickscale\npickscale.__version__ = '0.0.0+other'\n")
    address = processes.scheduler()
    processes.worker(address, "good")
    with _client(address) as client:
        client.wait_for_workers(1, timeout=60)
        assert check_workers(client, timeout=10) == 1
        processes.worker(address, "hidden", preload=hide)
        processes.worker(address, "other", preload=other)
        client.wait_for_workers(3, timeout=60)
        workers = {info["name"]: addr for addr, info in client.scheduler_info(n_workers=-1)["workers"].items()}
        with pytest.raises(ClusterError) as info:
            check_workers(client, timeout=10)
    msg = str(info.value)
    assert f"the Dask workers at {address} cannot run pickscale's tasks" in msg
    assert "1 of 3 worker(s) cannot import pickscale" in msg and workers["hidden"] in msg
    assert "ModuleNotFoundError" in msg or "ImportError" in msg
    assert "1 of 3 worker(s) run another pickscale version" in msg and workers["other"] in msg
    assert "pickscale 0.0.0+other" in msg
    assert workers["good"] not in msg
    assert f"pip install pickscale=={__version__}" in msg


@pytest.mark.cluster
def test_a_worker_that_dies_while_it_is_checked_has_left_and_is_not_named(processes, tmp_path):
    """A worker killed while it answers the check (a real process that exits then) is not reported as one
    that cannot import pickscale: the check counts the workers that answered."""
    dying = tmp_path / "preload_dies_when_asked.py"
    dying.write_text(
        "import os\n\n\ndef dask_setup(worker):\n"
        "    def run(comm, function, args=(), wait=True, kwargs=None):\n"
        "        os._exit(1)  # dies while it is asked, out of band, whether it can run pickscale\n"
        "    worker.handlers['run'] = run\n")
    address = processes.scheduler()
    processes.worker(address, "good")
    processes.worker(address, "dying", preload=dying)
    with _client(address) as client:
        client.wait_for_workers(2, timeout=60)
        assert check_workers(client, timeout=10) == 1
        _wait_for(lambda: len(client.scheduler_info(n_workers=-1)["workers"]) == 1, 30, "the scheduler to see it go")


def test_worker_timeout_from_keyword_or_environment(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert worker_timeout() == 30.0
    assert worker_timeout(2.5) == 2.5
    monkeypatch.setenv(TIMEOUT_ENV, "7")
    assert worker_timeout() == 7.0
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(OptionsError, match=TIMEOUT_ENV):
            worker_timeout()
    with pytest.raises(OptionsError, match="timeout"):
        worker_timeout(0)


#: The first probe of the test below waits on this until the test has cancelled it (an in-process worker runs it:
#: the function is pickled by reference, so it sees these very objects).
_PROBE_STARTED = threading.Event()
_PROBE_RELEASED = threading.Event()
_PROBE_CALLS: list[int] = []


def _blocking_once_probe() -> dict:
    _PROBE_CALLS.append(1)
    if len(_PROBE_CALLS) == 1:
        _PROBE_STARTED.set()
        _PROBE_RELEASED.wait(60)
    return {"ok": True, "version": __version__}


@pytest.mark.cluster
def test_a_probe_cancelled_under_it_is_submitted_again(monkeypatch):
    """A probe whose future is cancelled while it is awaited (distributed's ``sync`` then raises
    ``UnboundLocalError``: dask/distributed#8514) is submitted again, not reported as a failed worker."""
    from distributed import Client, LocalCluster

    from pickscale.engine import workers

    _PROBE_CALLS.clear()
    _PROBE_STARTED.clear()
    _PROBE_RELEASED.clear()
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        submitted: list = []
        submit = client.submit

        def recording(*args, **kwargs):
            future = submit(*args, **kwargs)
            submitted.append(future)
            return future

        monkeypatch.setattr(client, "submit", recording)

        def cancel_the_first() -> None:
            _PROBE_STARTED.wait(60)  # (the first probe runs: its future is awaited)
            submitted[0].cancel()
            _PROBE_RELEASED.set()

        canceller = threading.Thread(target=cancel_the_first)
        canceller.start()
        try:
            reply = workers._first_task(client, _blocking_once_probe, cluster.scheduler_address, 60)
        finally:
            _PROBE_RELEASED.set()
            canceller.join()
    assert reply == {"ok": True, "version": __version__}
    assert len(submitted) == 2 and len(_PROBE_CALLS) == 2


@pytest.mark.cluster
def test_a_probe_cancelled_every_time_is_a_cluster_error(monkeypatch):
    """Cancelled :data:`~pickscale.engine.workers.PROBE_ATTEMPTS` times, the probe's check gives up with a
    ClusterError naming the scheduler (exit 2 in the CLI), not distributed's UnboundLocalError."""
    from distributed import Client, LocalCluster

    from pickscale.engine import workers

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        submit = client.submit

        def cancelled(*args, **kwargs):
            future = submit(*args, **kwargs)
            future.cancel()
            return future

        monkeypatch.setattr(client, "submit", cancelled)
        with pytest.raises(ClusterError, match=f"cancelled on the Dask scheduler at {cluster.scheduler_address} "
                                               f"{workers.PROBE_ATTEMPTS} times"):
            workers._first_task(client, _blocking_once_probe, cluster.scheduler_address, 60)
