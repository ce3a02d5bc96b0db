"""Faults of issue 6: killed workers, a killed or interrupted command, failed writes, concurrent runs,
and the integrity checks of ``open_results``.

- A worker process killed (by its pid) in the middle of ``pickscale.score``: the run completes through
  Dask's retries and its tables are byte-identical to an undisturbed run's.
- ``pickscale score`` killed with SIGINT or SIGKILL at several points (while its cluster starts, while
  its worker reads the inputs, while it writes the store), with a good store already at the target and ``--overwrite``:
  the target then holds a complete store equal to one of the two full runs (or, after a SIGKILL between
  the two renames of the swap, nothing, with the previous store kept aside); SIGINT exits 130 promptly,
  with no traceback and the cluster closed; the next run succeeds and removes what a dead run left.
- A write that fails (a full disk, a file-size limit, a read-only folder): a clear error, exit 2, the
  previous store and tables untouched, no temporary left.
- Two runs aimed at one folder: one wins cleanly, the other stops with a clear message; never a mix.
- ``open_results`` (and ``pickscale report``) refuse an incomplete store, another schema, a folder that
  is not a pickscale store, and a store that lost or changed files since it was written, or lost its
  manifest (more in ``tests/test_store_integrity.py``).
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.errors import StoreError
from pickscale.report.tables import TABLE_NAMES, to_csv_bytes, write_tables
from pickscale.store import MANIFEST, SCHEMA_VERSION, locks, open_results, publish, sanitise, save
from tests.helpers.catalogues import plain_catalogue

S = 10**9
T0 = 1_709_251_200 * S  # 2024-03-01T00:00:00Z


# --------------------------------------------------------------------------- inputs


def write_big_catalogue(folder: Path, n_picks: int, *, n_files: int = 6, n_stations: int = 120, seed: int = 0):
    """A synthetic catalogue big enough to take a few seconds: Parquet, typed UTC times, several files."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    n_arr = n_picks // 6
    station = np.array([f"XX.S{i:03d}" for i in range(n_stations)], dtype=object)[rng.integers(0, n_stations, n_arr)]
    phase = np.where(rng.integers(0, 2, n_arr) == 0, "P", "S").astype(object)
    t = T0 + rng.integers(0, 20 * 86400 * S, n_arr)
    pd.DataFrame({"station": station, "phase": phase, "time": pd.to_datetime(t, unit="ns", utc=True)}).to_parquet(
        folder / "reference.parquet", index=False)
    which = rng.integers(0, n_arr, n_picks)
    picks = pd.DataFrame({
        "model": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n_picks)],
        "station": station[which],
        "phase": phase[which],
        "time": pd.to_datetime(t[which] + rng.normal(0, 0.3 * S, n_picks).astype(np.int64), unit="ns", utc=True),
        "conf": rng.random(n_picks),
    })
    (folder / "picks").mkdir(exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(n_picks), n_files)):
        picks.iloc[part].to_parquet(folder / "picks" / f"part{i:02d}.parquet", index=False)
    return folder / "reference.parquet", folder / "picks"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Catalogue B: 300 000 picks in six Parquet files (a few seconds of work)."""
    return write_big_catalogue(tmp_path_factory.mktemp("big"), 300_000)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Catalogue A: small CSV files (the run whose store is already at the target)."""
    cat = plain_catalogue(seed=3, n_datasets=1, n_stations=4, n_events=6)
    return cat.write_csv(tmp_path_factory.mktemp("small"))


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes; the client is not the default client."""
    from distributed import Client, LocalCluster

    cl = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=50)
    client = Client(cl, set_as_default=False)
    try:
        yield cl, client
    finally:
        client.close()
        cl.close()


def csv_tables(ds) -> dict[str, bytes]:
    frames = pickscale.tables(ds)
    return {name: to_csv_bytes(frames[name]) for name in TABLE_NAMES}


@pytest.fixture(scope="module")
def run_a(small):
    ds = pickscale.score(*map(str, small))
    return ds, csv_tables(ds)


@pytest.fixture(scope="module")
def run_b(big, cluster):
    """The undisturbed run of catalogue B, on the module's cluster."""
    ds = pickscale.score(*map(str, big), client=cluster[1]).load()
    return ds, csv_tables(ds)


def write_previous_run(ds, out: Path) -> list:
    """What an earlier ``pickscale score`` left in ``out``: a store and its tables."""
    out.mkdir(parents=True, exist_ok=True)
    save(ds, out / "results.zarr")
    write_tables(pickscale.tables(ds), out)
    return snapshot(out)


def snapshot(folder: Path) -> list:
    """Every file below ``folder`` with its content (bytes), for before/after comparisons."""
    return sorted((str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


def siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".results.zarr."))


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def pid_alive(pid: int) -> bool:
    return locks.pid_running(pid)


def console_script() -> list[str]:
    exe = Path(sys.executable).with_name("pickscale")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main())"]


def group_gone(pgid: int, timeout: float) -> bool:
    """Whether every process of the group has exited (zombies count as gone) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            out = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return True  # no ps: nothing to check
        rows = [line.split() for line in out.splitlines()]
        if not [r for r in rows if len(r) >= 2 and r[0] == str(pgid) and not r[1].startswith("Z")]:
            return True
        time.sleep(0.2)
    return False


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------- a worker killed mid-run


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("exchange_method", ["direct", "shuffle"])
def test_worker_killed_mid_run_completes_identically(big, cluster, run_b, exchange_method):
    """Both exchanges survive a lost worker: the direct one by task retries, Dask's p2p shuffle by restarting."""
    cl, client = cluster
    want_ds, want = run_b
    pids = client.run(os.getpid)  # worker address -> pid
    result: dict = {}

    def run():
        try:
            result["ds"] = pickscale.score(*map(str, big), client=client, exchange_method=exchange_method).load()
        except BaseException as exc:  # reported below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    victim = None
    deadline = time.monotonic() + 120
    # Kill a worker that holds results (persisted inputs) and is running a task: both are lost.
    while thread.is_alive() and time.monotonic() < deadline:
        processing, has_what = client.processing(), client.has_what()
        busy = [w for w, keys in processing.items() if keys and has_what.get(w) and w in pids]
        if busy:
            victim = busy[0]
            os.kill(pids[victim], signal.SIGKILL)
            break
        time.sleep(0.01)
    thread.join(timeout=300)
    assert victim is not None, "the run ended before a worker could be killed"
    assert not thread.is_alive()
    assert "error" not in result, result.get("error")
    assert not pid_alive(pids[victim])

    got = csv_tables(result["ds"])
    for name in TABLE_NAMES:
        assert got[name] == want[name], name
    for name, var in want_ds.variables.items():
        a, b = np.asarray(var.values), np.asarray(result["ds"][name].values)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert (a.tobytes() == b.tobytes()) if a.dtype.kind not in "OT" else a.tolist() == b.tolist(), name

    # The nanny replaced the worker; the cluster is whole again.
    client.wait_for_workers(2, timeout=60)
    assert pids[victim] not in client.run(os.getpid).values()


# --------------------------------------------------------------------------- the command killed mid-run


#: Loaded by every Python process of the command (PYTHONPATH): in a worker process of its cluster, the first read
#: of a Parquet input says so in a file and then waits — the test kills the command while a worker is reading,
#: whatever the machine's speed (polling for an open file missed short reads on a loaded machine).
_HOLD_READS = """
import os, pathlib, sys, time
# A process that multiprocessing spawned (a worker of the command's local cluster), not the command itself.
if "--multiprocessing-fork" in sys.argv and os.environ.get("PICKSCALE_TEST_READING"):
    import pyarrow.parquet as pq
    marker = pathlib.Path(os.environ["PICKSCALE_TEST_READING"])

    def _hold(real):
        def read(self, *args, **kwargs):
            marker.touch()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:  # until this process is interrupted or killed
                time.sleep(0.05)
            return real(self, *args, **kwargs)
        return read

    pq.ParquetFile.read = _hold(pq.ParquetFile.read)
    pq.ParquetFile.read_row_groups = _hold(pq.ParquetFile.read_row_groups)
"""


def holding_reads(folder: Path) -> tuple[dict[str, str], Path]:
    """The environment that makes the command's workers hold their first read, and the file that says one has."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_HOLD_READS)
    marker = folder / "a-worker-is-reading"
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "PICKSCALE_TEST_READING": str(marker)}, marker


def start_score(big, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    argv = console_script() + ["score", "--reference", str(big[0]), "--picks", str(big[1]), "--out", str(out),
                               "--workers", "1", "--no-figures", "--quiet", *extra]
    # The command is started as from a terminal, where Ctrl-C reaches it.  A test run started in the
    # background (`pytest &`, `nohup pytest`) ignores SIGINT, and a child would inherit that and never be
    # interrupted; a handler (unlike "ignore") is not inherited across exec, so the child starts with the default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=None if env is None else {**os.environ, **env})
    finally:
        signal.signal(signal.SIGINT, previous)


def wait_for(predicate, proc: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (status {proc.returncode}) before {what}:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


def store_tables(path: Path) -> dict[str, bytes] | None:
    """The tables of the store at ``path`` if one is there (it must open as complete), else None."""
    if not os.path.lexists(path):
        return None
    return csv_tables(open_results(path).load())


# Points of a run, found from what the run does (not from the clock, which differs between machines):
# (signal, point, whether a store from an earlier run is at the target)
KILL_POINTS = [
    (signal.SIGINT, "starting", True),  # it holds the store's lock and starts its cluster
    (signal.SIGINT, "computing", True),  # a worker reads the inputs
    (signal.SIGINT, "saving", True),  # it writes its temporary store
    (signal.SIGKILL, "starting", False),
    (signal.SIGKILL, "computing", True),
    (signal.SIGKILL, "saving", True),
    (signal.SIGKILL, "saving", False),
]


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("sig, when, previous", KILL_POINTS,
                         ids=[f"{s.name}-{w}-{'over-a-store' if p else 'fresh'}" for s, w, p in KILL_POINTS])
def test_command_killed_mid_run(sig, when, previous, big, small, run_a, run_b, cluster, tmp_path, capsys):
    out = tmp_path / "out"
    if previous:
        write_previous_run(run_a[0], out)
    else:
        out.mkdir()
    target = out / "results.zarr"
    env, reading = holding_reads(tmp_path / "hold") if when == "computing" else (None, None)
    proc = start_score(big, out, "--overwrite", env=env)
    try:
        # The run has started (it holds the store's lock) ...
        # (The lock with its owner's record: a SIGKILL between the file's creation and its record leaves an
        # empty lock, left alone for its grace period, as an empty lease is.)
        lock = out / ".results.zarr.lock"
        wait_for(lambda: lock.exists() and lock.stat().st_size > 0, proc, 90, "the run reserved its target")
        if when == "computing":  # ... and a worker reads the inputs (and waits there until the signal)
            wait_for(reading.exists, proc, 300, "a worker read the inputs")
        elif when == "saving":  # ... and it writes its temporary store
            # The temporary store itself, not its lease: the lease is created first, and a SIGKILL between its
            # creation and its record leaves an empty lease that runs leave alone for EMPTY_GRACE_S (it may be
            # another host's, being written).
            wait_for(lambda: any(n.startswith(".results.zarr.tmp-") and not n.endswith(".lease")
                                 for n in os.listdir(out)), proc, 120, "the run started writing its store")
        sent = time.monotonic()
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        if sig == signal.SIGINT:
            assert proc.returncode == 130, err
            assert "pickscale: interrupted;" in err and "Traceback" not in err, err
            assert took < 30, f"took {took:.1f} s to exit after Ctrl-C"
            assert group_gone(proc.pid, 30), "the cluster's processes outlived the command"
            assert not [n for n in siblings(out) if not n.startswith(".results.zarr.lock")], siblings(out)
            assert not (out / ".results.zarr.lock").exists()
        else:
            assert proc.returncode == -signal.SIGKILL
            assert group_gone(proc.pid, 60), "the cluster's processes outlived the killed command"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        kill_group(proc.pid)

    # Whatever is at the target is a complete store of one of the two full runs (never a half-written one).
    left = store_tables(target)
    if left is None:
        if previous:  # only a SIGKILL between the two renames of the swap: the old store waits aside
            assert sig == signal.SIGKILL and when == "saving", "the previous store vanished"
            assert any(n.startswith(".results.zarr.old-") for n in siblings(out)), siblings(out)
    else:
        assert left in ((run_a[1], run_b[1]) if previous else (run_b[1],)), "the store is neither run's"
    # The tables next to it are whole tables of one run or the other (each file is replaced atomically).
    for name in TABLE_NAMES:
        table = out / f"{name}.csv"
        if previous or table.exists():
            assert table.read_bytes() in (run_a[1][name], run_b[1][name]), name

    # The next run (of the small catalogue, to be quick) succeeds and removes what the dead run left.
    had_leftovers = bool([n for n in siblings(out) if not n.endswith(".lock")])
    code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out), "--overwrite",
                 "--scheduler", cluster[0].scheduler_address, "--no-figures", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert siblings(out) == []
    if had_leftovers:
        assert ("left next to" in err and "by a run that did not finish" in err) or (
            "put back the previous results store" in err), err
    assert store_tables(target) == run_a[1]
    for name in TABLE_NAMES:
        assert (out / f"{name}.csv").read_bytes() == run_a[1][name], name


@pytest.mark.cluster
def test_leftovers_of_dead_runs_are_removed_and_reported(small, run_a, cluster, tmp_path, capsys):
    out = tmp_path / "out"
    before = write_previous_run(run_a[0], out)
    dead = dead_pid()
    # A half-written store, a previous store moved aside by a run killed mid-swap, and a stale lock.
    tmp = out / f".results.zarr.tmp-{dead}-0badc0de"
    sanitise(run_a[0]).to_zarr(tmp, mode="w", zarr_format=3, consolidated=False)
    shutil.copytree(out / "results.zarr", out / f".results.zarr.old-{dead}-00c0ffee")
    (out / ".results.zarr.lock").write_text(f"{dead} {socket.gethostname()}\n")
    # A live run's temporary store is not touched.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = out / f".results.zarr.tmp-{sleeper.pid}-facade00"
        live.mkdir()
        code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out),
                     "--overwrite", "--no-figures", "--quiet", "--scheduler", cluster[0].scheduler_address])
        _, err = capsys.readouterr()
        assert code == 0, err
        assert siblings(out) == [live.name]
        assert "removed 2 temporary file(s) left next to" in err, err
        assert snapshot(out / "results.zarr") != []
        assert store_tables(out / "results.zarr") == run_a[1]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert before  # (the earlier run's files were there)


@pytest.mark.slow
def test_previous_store_moved_aside_by_a_dead_run_is_put_back(small, run_a, tmp_path, capsys):
    """A run killed between the two renames of the swap leaves no store at the target: the next run
    (here one that then stops on a bad option) puts the previous store back first, and says so."""
    out = tmp_path / "out"
    write_previous_run(run_a[0], out)
    dead = dead_pid()
    os.rename(out / "results.zarr", out / f".results.zarr.old-{dead}-00c0ffee")
    code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2  # the store is back, and --overwrite was not given
    assert "put back the previous results store" in err and "already exists; pass --overwrite" in err, err
    assert siblings(out) == []
    assert store_tables(out / "results.zarr") == run_a[1]


# --------------------------------------------------------------------------- failed writes


@pytest.mark.cluster
def test_full_disk_while_writing_keeps_the_previous_store(small, run_a, cluster, tmp_path, capsys, monkeypatch):
    """The disk fills up half way through writing the new store (a stand-in: the 21st file's write fails)."""
    out = tmp_path / "out"
    before = write_previous_run(run_a[0], out)
    real = Path.write_bytes
    written: list[Path] = []

    counting = threading.Lock()  # (the store's files are written by several threads)

    def full_disk(path, data):
        with counting:
            if len(written) == 20:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written.append(path)
        return real(path, data)

    # (a store this small is built in memory and then written file by file: publish._write_files)
    assert publish.IN_MEMORY_BYTES > 10 * 2**20
    monkeypatch.setattr(Path, "write_bytes", full_disk)
    code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out), "--overwrite",
                 "--scheduler", cluster[0].scheduler_address])
    monkeypatch.setattr(Path, "write_bytes", real)
    _, err = capsys.readouterr()
    assert len(written) == 20 and all(".tmp-" in str(p) for p in written)  # the new store was half written
    assert code == 2, err
    assert err.startswith("pickscale: error: could not write results to ") and "Traceback" not in err, err
    assert "No space left on device" in err and "nothing was changed at the target" in err, err
    assert snapshot(out) == before  # the previous store and its tables, byte for byte
    assert siblings(out) == [] and not (out / "figures").exists()
    assert store_tables(out / "results.zarr") == run_a[1]


@pytest.mark.cluster
@pytest.mark.slow
def test_file_size_limit_while_writing_keeps_the_previous_store(small, run_a, tmp_path):
    """A real failed write: the command runs under a file-size limit (RLIMIT_FSIZE) its store exceeds."""
    out = tmp_path / "out"
    before = write_previous_run(run_a[0], out)
    limit = 16 * 1024  # the inputs are read, the lock written; the store's metadata is larger

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(console_script() + ["score", "--reference", str(small[0]), "--picks", str(small[1]),
                                              "--out", str(out), "--overwrite", "--workers", "1"],
                          capture_output=True, text=True, preexec_fn=limited, timeout=180)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("pickscale: error: could not write results to "), proc.stderr
    assert "File too large" in proc.stderr and "nothing was changed at the target" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(out) == before
    assert siblings(out) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_target_keeps_the_previous_store(small, run_a, tmp_path, capsys):
    out = tmp_path / "out"
    before = write_previous_run(run_a[0], out)
    out.chmod(0o555)
    try:
        code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out),
                     "--overwrite"])
        _, err = capsys.readouterr()
        assert code == 2
        assert "is not writable" in err and str(out) in err and "Traceback" not in err
        with pytest.raises(StoreError, match="not writable"):
            save(run_a[0], out / "results.zarr", overwrite=True)
    finally:
        out.chmod(0o755)
    assert snapshot(out) == before


@pytest.mark.cluster
def test_tables_that_cannot_be_written_say_the_store_is_complete(small, run_a, cluster, tmp_path, capsys,
                                                                 monkeypatch):
    """The store is written, then the disk fills up while writing the tables."""
    outputs_module = importlib.import_module("pickscale.report.outputs")

    out = tmp_path / "out"

    def full_disk(frames, out_dir):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(out_dir) / "detection.csv"))

    monkeypatch.setattr(outputs_module, "write_tables", full_disk)
    code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out),
                 "--no-figures", "--quiet", "--scheduler", cluster[0].scheduler_address])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert "cannot write the tables and figures to" in err and "No space left on device" in err
    assert f"The results store {out / 'results.zarr'} is complete" in err and "pickscale report" in err
    assert store_tables(out / "results.zarr") == run_a[1]


# --------------------------------------------------------------------------- two runs, one target


@pytest.mark.cluster
@pytest.mark.slow
def test_two_runs_writing_one_target_at_once(small, tmp_path):
    other = plain_catalogue(seed=4, n_datasets=1, n_stations=4, n_events=6).write_csv(tmp_path / "other")
    inputs = {"first": small, "second": other}
    expected = {k: csv_tables(pickscale.score(*map(str, v))) for k, v in inputs.items()}
    assert expected["first"] != expected["second"]
    out = tmp_path / "out"
    procs = {k: subprocess.Popen(console_script() + ["score", "--reference", str(v[0]), "--picks", str(v[1]),
                                                     "--out", str(out), "--workers", "1", "--no-figures", "--quiet"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, v in inputs.items()}
    results = {}
    for k, p in procs.items():
        _, err = p.communicate(timeout=180)
        results[k] = (p.returncode, err)
    winners = [k for k, (code, _) in results.items() if code == 0]
    losers = [k for k, (code, _) in results.items() if code != 0]
    assert len(winners) == 1 and len(losers) == 1, results
    code, err = results[losers[0]]
    assert code == 2 and "Traceback" not in err, err
    assert ("another pickscale run" in err and "is writing it right now" in err) or "already exists" in err, err
    # The folder holds the winner's store and the winner's tables, nothing of the loser's.
    assert store_tables(out / "results.zarr") == expected[winners[0]]
    for name in TABLE_NAMES:
        assert (out / f"{name}.csv").read_bytes() == expected[winners[0]][name], name
    assert siblings(out) == []


@pytest.mark.slow
def test_a_run_aimed_at_a_folder_another_run_is_writing_stops_at_once(small, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pickscale.store import reserved\n"
                               "with reserved(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)",
         str(out / "results.zarr")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        code = main(["score", "--reference", str(small[0]), "--picks", str(small[1]), "--out", str(out)])
        _, err = capsys.readouterr()
        assert code == 2
        assert f"another pickscale run (pid {holder.pid}) is writing it right now" in err, err
        assert time.monotonic() - started < 10  # before any computing
        assert sorted(p.name for p in out.iterdir()) == [".results.zarr.lock"]
    finally:
        holder.kill()
        holder.wait()


# --------------------------------------------------------------------------- store integrity


@pytest.mark.slow
def test_store_written_by_this_version_reopens_with_identical_values(run_a, tmp_path):
    ds = run_a[0]
    target = save(ds, tmp_path / "results.zarr")
    got = open_results(target).load()
    want = sanitise(ds).load()
    assert sorted(got.variables) == sorted(want.variables)
    for name, var in want.variables.items():
        a, b = np.asarray(var.values), np.asarray(got[name].values)
        assert (a.dtype, a.shape, var.dims) == (b.dtype, b.shape, got[name].dims), name
        same = a.tolist() == b.tolist() if a.dtype.kind in "OT" else a.tobytes() == b.tobytes()
        assert same, name
        assert got[name].attrs == var.attrs, name
    attrs = {k: v for k, v in got.attrs.items() if k not in ("pickscale_complete", "pickscale_schema")}
    assert json.dumps(attrs, sort_keys=True) == json.dumps(want.attrs, sort_keys=True)
    assert csv_tables(got) == run_a[1]


def _edit_root_attrs(store: Path, **changes) -> None:
    meta = json.loads((store / "zarr.json").read_text())
    for key, value in changes.items():
        if value is None:
            meta["attributes"].pop(key, None)
        else:
            meta["attributes"][key] = value
    # Consolidated metadata carries the root attributes too; keep them consistent.
    (store / "zarr.json").write_text(json.dumps(meta))


def _damage(kind: str, store: Path) -> None:
    chunks = sorted(p for p in store.rglob("*") if p.is_file() and "/c/" in p.as_posix())
    if kind == "incomplete":
        _edit_root_attrs(store, pickscale_complete=None)
    elif kind == "other-schema":
        _edit_root_attrs(store, pickscale_schema=SCHEMA_VERSION + 98)
    elif kind == "chunk-missing":
        next(p for p in chunks if "/recall/" in p.as_posix()).unlink()
    elif kind == "chunk-truncated":
        p = next(p for p in chunks if "/emitted/" in p.as_posix())
        p.write_bytes(p.read_bytes()[:-3])
    elif kind == "not-pickscale":
        _edit_root_attrs(store, pickscale_complete=None, pickscale_schema=None, pickscale_version=None)
    elif kind == "not-zarr":
        shutil.rmtree(store)
        store.mkdir()
        (store / "notes.txt").write_text("hello")
    elif kind == "zarr-v2":
        shutil.rmtree(store)
        store.mkdir()
        (store / ".zgroup").write_text('{"zarr_format": 2}')
    elif kind == "a-file":
        shutil.rmtree(store)
        store.write_text("not a folder")
    else:
        raise ValueError(kind)


DAMAGE = {
    "incomplete": ["incomplete store", "did not finish", "re-run `pickscale score`"],
    "other-schema": [f"has store schema {SCHEMA_VERSION + 98}", f"reads schema {SCHEMA_VERSION}"],
    "chunk-missing": ["is damaged", "recall/c/", "is missing", "copied or synced only in part"],
    "chunk-truncated": ["is damaged", "emitted/c/", "bytes, not"],
    "not-pickscale": ["is not a pickscale store"],
    "not-zarr": ["is not a Zarr store (it has no zarr.json)"],
    "zarr-v2": ["is a Zarr v2 store"],
    "a-file": ["is not a Zarr store: it is a file, not a folder"],
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_open_results_and_report_refuse_a_store_that_cannot_be_trusted(kind, run_a, tmp_path, capsys):
    (tmp_path / "run").mkdir()
    store = save(run_a[0], tmp_path / "run" / "results.zarr")
    _damage(kind, store)
    with pytest.raises(StoreError) as info:
        open_results(store)
    for needle in DAMAGE[kind]:
        assert needle in str(info.value), (needle, str(info.value))
    assert str(store) in str(info.value)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    code = main(["report", str(store), "--no-figures"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("pickscale: error: ") and "Traceback" not in err
    assert all(needle in err for needle in DAMAGE[kind]), err
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before  # no table written


@pytest.mark.slow
def test_store_without_manifest_is_refused(run_a, tmp_path):
    """Every store of this schema has a manifest: without it nothing shows a missing chunk (read as 0)."""
    store = save(run_a[0], tmp_path / "results.zarr")
    (store / MANIFEST).unlink()
    with pytest.raises(StoreError, match=rf"is damaged: its manifest {MANIFEST} is missing"):
        open_results(store)
