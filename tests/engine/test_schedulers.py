"""HPC schedulers as they are used (issue 21 item 3): scheduler files, Dask's configuration, adaptive clusters.

Real ``dask scheduler --scheduler-file F`` and ``dask worker --scheduler-file F`` processes on 127.0.0.1,
started here and stopped by the process ids this module started; ``pickscale score`` runs in its own process
(``python -m pickscale.cli``) with the scheduler named by ``--scheduler-file``, ``DASK_SCHEDULER_FILE``,
``DASK_SCHEDULER_ADDRESS`` or a ``scheduler-address`` in a Dask YAML file, and its tables are byte-equal to an
in-process run.  An adaptive ``LocalCluster(n_workers=0)`` with ``adapt(minimum=0, maximum=2)`` runs a job
passed as ``client=`` (the cluster scales for pickscale's first task), and a process pinned to one CPU starts a
local cluster of one worker with all the memory the process may use.

Every wait is for an event (a file written, a worker registered, a process ended); the only timeouts are the
bounds under test (``PICKSCALE_WORKER_TIMEOUT``, the scheduler file's wait) and generous safety limits.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pickscale
from pickscale.cli import main
from pickscale.engine.workers import SCALING_TIMEOUT, TIMEOUT_ENV, check_workers, worker_timeout
from pickscale.errors import ClusterError
from pickscale.store import open_results, save
from tests.helpers.checks import TABLE_NAMES, assert_same_csv, csv_bytes
from tests.helpers.processes import stop_sessions
from tests.helpers.stores import unranked

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "configs" / "demo"
BIN = Path(sys.executable).parent
INPUTS = ["--reference", str(DATA / "reference.csv"), "--picks", str(DATA / "picks.csv")]


def _dask(*args: str, log: Path) -> subprocess.Popen:
    exe = BIN / "dask"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]]
    return subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=_clean_env())


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without any scheduler setting of the user's or of another test, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DASK_SCHEDULER_ADDRESS", "DASK_SCHEDULER_FILE", "DASK_CONFIG", TIMEOUT_ENV)}
    return {**env, **extra}


def _wait_for_file(path: Path, proc: subprocess.Popen, log: Path) -> None:
    # The event: the scheduler wrote its address. A safety limit only, far above any start-up time.
    deadline = time.monotonic() + 120
    while not (path.exists() and path.stat().st_size > 0 and _address_in(path)):
        assert proc.poll() is None, f"the scheduler exited:\n{log.read_text(errors='replace')}"
        assert time.monotonic() < deadline, f"no scheduler file:\n{log.read_text(errors='replace')}"
        time.sleep(0.05)


def _address_in(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("address")
    except ValueError:  # being written
        return None


@pytest.fixture(scope="module")
def sched_file(tmp_path_factory):
    """A real scheduler and one real worker, both given only the scheduler file."""
    from distributed import Client

    tmp = tmp_path_factory.mktemp("scheduler")
    path = tmp / "sched.json"
    procs = [_dask("scheduler", "--scheduler-file", str(path), "--host", "127.0.0.1", "--port", "0",
                   "--no-dashboard", log=tmp / "scheduler.log")]
    try:
        _wait_for_file(path, procs[0], tmp / "scheduler.log")
        assert _address_in(path).startswith("tcp://127.0.0.1:")
        procs.append(_dask("worker", "--scheduler-file", str(path), "--host", "127.0.0.1", "--nworkers", "1",
                           "--nthreads", "1", "--no-dashboard", "--name", "w0", log=tmp / "worker.log"))
        with Client(scheduler_file=str(path), timeout="60s", set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)  # the event: the worker registered (a safety limit)
        yield path
    finally:
        stop_sessions(procs)


@pytest.fixture(scope="module")
def in_process_tables(tmp_path_factory) -> dict[str, bytes]:
    """The tables of the same inputs scored in this process (small local inputs: Dask's local scheduler)."""
    out = tmp_path_factory.mktemp("local") / "out"
    assert main(["score", *INPUTS, "--out", str(out), "--no-figures", "--quiet"]) == 0
    return {name: (out / f"{name}.csv").read_bytes() for name in TABLE_NAMES}


def _transitions(path: Path) -> int:
    """How many task transitions the scheduler has made: grows when a job ran there."""
    from distributed import Client

    with Client(scheduler_file=str(path), timeout="60s", set_as_default=False) as client:
        return int(client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter))


def _command(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pickscale.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def _tables(out: Path) -> dict[str, bytes]:
    return {name: (out / f"{name}.csv").read_bytes() for name in TABLE_NAMES}


@pytest.mark.cluster
def test_score_with_a_scheduler_file(sched_file, in_process_tables, tmp_path):
    before = _transitions(sched_file)
    out = tmp_path / "out"
    done = _command(["score", *INPUTS, "--scheduler-file", str(sched_file), "--out", str(out), "--no-figures",
                     "--quiet"], _clean_env(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert_same_csv(_tables(out), in_process_tables)
    assert _transitions(sched_file) > before + 10  # the job ran on that scheduler, not in the command's process
    assert "connecting to the scheduler named by" not in done.stderr  # a flag: nothing to explain


@pytest.mark.cluster
def test_dask_scheduler_file_in_the_environment(sched_file, in_process_tables, tmp_path):
    before = _transitions(sched_file)
    out = tmp_path / "out"
    done = _command(["score", *INPUTS, "--out", str(out), "--no-figures", "--quiet"],
                    _clean_env(DASK_SCHEDULER_FILE=str(sched_file)), tmp_path)
    assert done.returncode == 0, done.stderr
    assert_same_csv(_tables(out), in_process_tables)
    assert _transitions(sched_file) > before + 10  # not silently in-process
    address = _address_in(sched_file)
    assert f"connecting to the scheduler named by DASK_SCHEDULER_FILE: {address} (from {sched_file})" in done.stderr


@pytest.mark.cluster
def test_dask_scheduler_address_in_the_environment_or_a_dask_config_file(sched_file, in_process_tables, tmp_path):
    address = _address_in(sched_file)
    before = _transitions(sched_file)
    done = _command(["score", *INPUTS, "--out", str(tmp_path / "env"), "--no-figures", "--quiet"],
                    _clean_env(DASK_SCHEDULER_ADDRESS=address), tmp_path)
    assert done.returncode == 0, done.stderr
    assert_same_csv(_tables(tmp_path / "env"), in_process_tables)
    assert f"connecting to the scheduler named by DASK_SCHEDULER_ADDRESS: {address}" in done.stderr
    middle = _transitions(sched_file)
    assert middle > before + 10

    # A scheduler-address in Dask's own YAML configuration: what distributed.Client() would connect to.
    config = tmp_path / "dask-config"
    config.mkdir()
    (config / "pickscale-test.yaml").write_text(f"scheduler-address: {address}\n")
    done = _command(["demo", "--out", str(tmp_path / "yaml"), "--no-figures", "--quiet"],
                    _clean_env(DASK_CONFIG=str(config)), tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"connecting to the scheduler named by Dask's configuration (scheduler-address): {address}" in done.stderr
    assert _transitions(sched_file) > middle + 10


@pytest.mark.cluster
def test_flags_win_over_dask_configuration(sched_file, in_process_tables, tmp_path, capsys, monkeypatch):
    # A configured scheduler that does not exist: an explicit flag wins over it (nothing connects to it).
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    out = tmp_path / "flag"
    assert main(["score", *INPUTS, "--scheduler-file", str(sched_file), "--out", str(out), "--no-figures",
                 "--quiet"]) == 0
    assert_same_csv(_tables(out), in_process_tables)

    # --workers N with a scheduler only from Dask's configuration: a local cluster of N, and it says so.
    capsys.readouterr()
    out = tmp_path / "workers"
    assert main(["score", *INPUTS, "--workers", "1", "--out", str(out), "--no-figures", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert ("--workers 1: starting a local cluster of 1 worker(s), not the scheduler named by "
            "DASK_SCHEDULER_ADDRESS (tcp://127.0.0.1:9)") in err, err
    assert_same_csv(_tables(out), in_process_tables)


def test_two_schedulers_or_workers_with_a_scheduler_are_refused(tmp_path, capsys):
    for extra, needle in (
        (["--scheduler", "tcp://127.0.0.1:9", "--scheduler-file", "s.json"],
         "--scheduler and --scheduler-file both name a scheduler"),
        (["--workers", "2", "--scheduler-file", "s.json"],
         "--workers sizes the local cluster pickscale starts, and --scheduler-file names an existing scheduler"),
    ):
        for command in (["score", *INPUTS], ["demo"]):
            out = tmp_path / "out"
            assert main([*command, *extra, "--out", str(out), "--no-figures", "--quiet"]) == 2
            err = capsys.readouterr().err
            assert err.count("pickscale: error: ") == 1 and needle in err, err
            assert not out.exists()


@pytest.mark.cluster
def test_study_file_cluster_table_names_a_scheduler_file(sched_file, in_process_tables, tmp_path):
    study = tmp_path / "study" / "study.toml"
    study.parent.mkdir()
    relative = os.path.relpath(sched_file, study.parent)  # relative to the study file, not to the shell
    study.write_text(f'reference = "{DATA / "reference.csv"}"\npicks = "{DATA / "picks.csv"}"\n'
                     f'out = "out"\n[cluster]\nscheduler_file = "{relative}"\n')
    before = _transitions(sched_file)
    done = _command(["score", "--config", str(study), "--no-figures", "--quiet"], _clean_env(), ROOT)
    assert done.returncode == 0, done.stderr
    assert_same_csv(_tables(study.parent / "out"), in_process_tables)
    assert _transitions(sched_file) > before + 10


@pytest.mark.slow
def test_a_scheduler_file_that_never_appears_is_exit_2(tmp_path, capsys, monkeypatch):
    import pickscale.engine.cluster as cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 0.5)  # the bound under test
    missing = tmp_path / "nowhere.json"
    out = tmp_path / "out"
    assert main(["score", *INPUTS, "--scheduler-file", str(missing), "--out", str(out), "--no-figures",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("pickscale: error: ") == 1 and "Traceback" not in err, err
    assert f"--scheduler-file {missing}: it does not exist after 0.5 s" in err, err
    assert f"dask scheduler --scheduler-file {missing}" in err, err
    assert not out.exists()

    # A file left by a scheduler that has stopped: nothing listens at its address (port 9, discard, is closed).
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"type": "Scheduler", "address": "tcp://127.0.0.1:9"}))
    assert main(["score", *INPUTS, "--scheduler-file", str(stale), "--out", str(out), "--no-figures",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("pickscale: error: ") == 1 and "Traceback" not in err, err
    assert (f"cannot connect to the Dask scheduler at tcp://127.0.0.1:9 (named by --scheduler-file {stale}: a file "
            "left by a scheduler that has stopped?)") in err, err
    assert not out.exists()


def _adaptive_cluster(maximum: int, **worker_kwargs):
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=0, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=":0", silence_logs=40, **worker_kwargs)
    cluster.adapt(minimum=0, maximum=maximum, interval="200ms")
    return cluster


@pytest.mark.cluster
def test_an_adaptive_cluster_with_no_workers_runs_the_job(in_process_tables, monkeypatch):
    from distributed import Client

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    with _adaptive_cluster(2) as cluster, Client(cluster, set_as_default=False) as client:
        assert not client.scheduler_info()["workers"]  # it starts with none
        ds = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"), client=client, progress=False)
    assert_same_csv(csv_bytes(pickscale.tables(ds)), in_process_tables)


@pytest.mark.cluster
def test_the_pickscale_check_runs_on_the_first_worker_an_adaptive_cluster_starts(tmp_path, monkeypatch):
    from distributed import Client

    hide = tmp_path / "preload_hide_pickscale.py"
    hide.write_text("import sys\nsys.modules['pickscale'] = None  # this worker cannot import pickscale\n")
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    with _adaptive_cluster(1, preload=[str(hide)]) as cluster, Client(cluster, set_as_default=False) as client:
        with pytest.raises(ClusterError) as info:
            check_workers(client)
    msg = str(info.value)
    assert "cannot run pickscale's tasks" in msg and "cannot import pickscale" in msg, msg


@pytest.mark.cluster
def test_an_adaptive_cluster_that_starts_no_worker_says_how_to_scale(monkeypatch):
    from distributed import Client

    monkeypatch.setenv(TIMEOUT_ENV, "2")  # the bound under test
    with _adaptive_cluster(0) as cluster, Client(cluster, set_as_default=False) as client:
        with pytest.raises(ClusterError) as info:
            check_workers(client)
    msg = str(info.value)
    assert "no Dask worker joined the adaptive cluster at tcp://127.0.0.1:" in msg and "within 2 s" in msg, msg
    assert "maximum=0" in msg and "cluster.scale(n)" in msg and TIMEOUT_ENV in msg, msg


def test_a_cluster_that_starts_its_own_workers_gets_the_longer_bound(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert worker_timeout() == 30.0
    assert worker_timeout(scaling=True) == SCALING_TIMEOUT == 600.0
    monkeypatch.setenv(TIMEOUT_ENV, "45")
    assert worker_timeout(scaling=True) == worker_timeout() == 45.0


_PINNED = textwrap.dedent("""
    import json, os, sys

    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})  # before Dask is imported, as a batch system pins a job
    from pickscale.engine.cluster import local_cluster, local_cluster_size

    if __name__ == "__main__":
        from distributed.system import MEMORY_LIMIT

        size = local_cluster_size()
        client = local_cluster(silence_logs=40)
        try:
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
            print(json.dumps({"size": size, "MEMORY_LIMIT": MEMORY_LIMIT, "n": len(workers),
                              "memory": [w["memory_limit"] for w in workers],
                              "threads": [w["nthreads"] for w in workers]}))
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
""")


@pytest.mark.cluster
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and at least two usable CPUs to tell one from all")
def test_a_process_pinned_to_one_cpu_starts_one_worker(tmp_path):
    script = tmp_path / "pinned.py"
    script.write_text(_PINNED)
    done = subprocess.run([sys.executable, str(script)], env=_clean_env(), cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["size"] == {"n_workers": 1, "threads_per_worker": 1, "memory_limit": got["MEMORY_LIMIT"]}
    assert got["n"] == 1 and got["threads"] == [1], got
    assert got["memory"] == [got["MEMORY_LIMIT"] // got["n"]], got


@pytest.mark.cluster
def test_extend_on_a_scheduler_file_has_its_workers_read_the_stored_pairs(sched_file, tmp_path):
    # The worker was started in another folder than the command, which names its store by a relative path: the
    # worker reads the stored pairs by the store's absolute path (issue 22, item 3), and the extended tables are
    # one run's over the whole catalogue.
    from distributed import Client

    from tests.helpers.extend import DAY, START, stretches

    ref, picks = stretches(2)
    cut = START + DAY
    parts = {"first": (ref[ref.time < cut], picks[picks.time < cut]),
             "second": (ref[ref.time >= cut], picks[picks.time >= cut]), "whole": (ref, picks)}
    for name, (r, p) in parts.items():
        r.to_csv(tmp_path / f"{name}_reference.csv", index=False)
        p.to_csv(tmp_path / f"{name}_picks.csv", index=False)

    def inputs(name: str) -> list[str]:
        return ["--reference", str(tmp_path / f"{name}_reference.csv"), "--picks", str(tmp_path / f"{name}_picks.csv")]

    with Client(scheduler_file=str(sched_file), timeout="60s", set_as_default=False) as client:
        assert not any(client.run(lambda: "zarr" in sys.modules).values())  # (scoring loads no Zarr on a worker)
    assert main(["score", *inputs("first"), "--out", str(tmp_path / "store"), "--no-figures", "--quiet"]) == 0
    assert main(["score", *inputs("whole"), "--out", str(tmp_path / "whole"), "--no-figures", "--quiet"]) == 0
    # (as a store written before stores kept their pairs ranked: one that keeps them is read by rank, SPEC §11)
    written = tmp_path / "store" / "results.zarr"
    first = open_results(written, lazy=False)
    shutil.rmtree(written)
    save(unranked(first), written)
    done = _command(["extend", "store", *inputs("second"), "--scheduler-file", str(sched_file), "--no-figures",
                     "--quiet"], _clean_env(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert_same_csv(_tables(tmp_path / "store"), _tables(tmp_path / "whole"))
    with Client(scheduler_file=str(sched_file), timeout="60s", set_as_default=False) as client:
        read = client.run(lambda: "zarr" in sys.modules)
        worker_cwd = set(client.run(os.getcwd).values())
    assert all(read.values())  # (the stored pairs were read by the worker: it loaded Zarr to read them)
    assert str(tmp_path) not in worker_cwd
