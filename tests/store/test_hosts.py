"""Issue 20, item 10: locks and temporaries on a file system shared by several hosts.

"Another host" is faked the way another host would look: a lock file, or the lease beside a temporary,
whose owner record names another host name (and a pid that runs nowhere here).  Nothing of the code
under test is patched; the lease durations are set through the environment.  Tests wait on files, never
on the machine's speed.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest
import xarray as xr

from pickscale.cli import main
from pickscale.errors import StoreError
from pickscale.store import cleanup_stale, open_results, reserved, save

OTHER = "node-elsewhere-07"


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def owner(host: str = OTHER, *, pid: int | None = None, expires_in: float = 3600.0, boot_id: str | None = None,
          token: str = "0123456789abcdef") -> str:
    """An owner record as pickscale writes it in a lock or a lease, for ``host``."""
    return json.dumps({"pickscale_lease": 1, "pid": dead_pid() if pid is None else pid, "host": host,
                       "boot_id": boot_id, "token": token, "expires": time.time() + expires_in}) + "\n"


def ds(n: int = 1) -> xr.Dataset:
    return xr.Dataset({"n": ("x", list(range(n)))})


def temporary(folder: pathlib.Path, name: str, lease: str | None) -> pathlib.Path:
    """A half-written temporary folder ``name`` with its lease beside it (no lease: an earlier pickscale's)."""
    path = folder / name
    path.mkdir()
    (path / "zarr.json").write_text("{}")
    if lease is not None:
        (folder / f"{name}.lease").write_text(lease)
    return path


# --------------------------------------------------------------------------- locks


def test_a_lock_of_another_host_with_a_live_lease_is_not_taken_over(tmp_path):
    target = tmp_path / "r.zarr"
    lock = tmp_path / ".r.zarr.lock"
    lock.write_text(owner())  # its pid runs nowhere here: a pid check would take it over
    before = lock.read_bytes()
    with pytest.raises(StoreError, match=rf"another pickscale run \(pid \d+ on {OTHER}, its lease renewed until"):
        save(ds(), target)
    assert lock.read_bytes() == before and not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [lock.name]


def test_a_lock_of_another_host_whose_lease_expired_is_taken_over(tmp_path):
    target = tmp_path / "r.zarr"
    lock = tmp_path / ".r.zarr.lock"
    lock.write_text(owner(expires_in=-1.0, pid=os.getpid()))  # a pid that does run here: not what counts
    save(ds(2), target)
    assert open_results(target)["n"].values.tolist() == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


def test_a_lock_of_this_host_with_a_dead_pid_is_taken_over_at_once(tmp_path):
    from pickscale.store.lease import HOST

    target = tmp_path / "r.zarr"
    (tmp_path / ".r.zarr.lock").write_text(owner(HOST, expires_in=3600.0))  # lease live, pid dead
    save(ds(), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


def test_a_lock_of_this_host_from_before_a_reboot_is_taken_over(tmp_path):
    from pickscale.store.lease import HOST, boot_id

    if boot_id() is None:
        pytest.skip("no boot id on this system")
    target = tmp_path / "r.zarr"
    # This very pid runs now, but the lock was written in another boot of the machine.
    (tmp_path / ".r.zarr.lock").write_text(owner(HOST, pid=os.getpid(), boot_id="not-" + boot_id()))
    save(ds(), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


@pytest.mark.slow
def test_score_stops_at_once_on_another_hosts_live_lock_naming_the_host(tmp_path, capsys):
    from pickscale.demo import write_inputs

    ref, picks = write_inputs(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    lock = out / ".results.zarr.lock"
    lock.write_text(owner())
    code = main(["score", "--reference", str(ref), "--picks", str(picks), "--out", str(out), "--no-figures",
                 "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert OTHER in err and "is writing it right now" in err and "lease" in err, err
    assert sorted(p.name for p in out.iterdir()) == [lock.name]

    lock.write_text(owner(expires_in=-5.0))  # that host went down: its lease ran out
    code = main(["score", "--reference", str(ref), "--picks", str(picks), "--out", str(out), "--no-figures",
                 "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert not lock.exists() and (out / "detection.csv").is_file()
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_the_lock_records_host_pid_and_a_lease_that_its_run_renews(tmp_path, monkeypatch):
    from pickscale.store.lease import HOST, boot_id

    monkeypatch.setenv("PICKSCALE_LEASE_SECONDS", "30")
    monkeypatch.setenv("PICKSCALE_LEASE_RENEW_SECONDS", "0.05")
    lock = tmp_path / ".r.zarr.lock"
    with reserved(tmp_path / "r.zarr"):
        first = json.loads(lock.read_text())
        assert (first["host"], first["pid"], first["boot_id"]) == (HOST, os.getpid(), boot_id())
        assert first["expires"] > time.time() + 20
        deadline = time.monotonic() + 60
        while json.loads(lock.read_text())["expires"] == first["expires"]:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.01)
        assert json.loads(lock.read_text())["token"] == first["token"]
    assert not lock.exists()


@pytest.mark.slow
def test_a_run_that_lost_its_lock_does_not_publish(tmp_path):
    """Its lease ran out and another host took the lock over: the save stops, the target untouched."""
    target = save(ds(1), tmp_path / "r.zarr")
    lock = tmp_path / ".r.zarr.lock"
    with reserved(target):
        lock.write_text(owner())  # what another host's take-over leaves
        with pytest.raises(StoreError, match=f"lost its lock.*{OTHER}"):
            save(ds(3), target, overwrite=True)
    assert open_results(target)["n"].values.tolist() == [0]
    assert lock.exists()  # the other host's lock is not ours to remove
    assert sorted(p.name for p in tmp_path.iterdir()) == [lock.name, "r.zarr"]


# --------------------------------------------------------------------------- temporaries


@pytest.mark.slow
def test_cleanup_keeps_another_hosts_temporaries_while_their_lease_lives(tmp_path):
    target = save(ds(), tmp_path / "r.zarr")
    dead = dead_pid()  # what a pid check on this host would see
    live_tmp = temporary(tmp_path, f".r.zarr.tmp-{dead}-0123abcd", owner())
    live_old = temporary(tmp_path, f".r.zarr.old-{dead}-4567abcd", owner())
    gone_tmp = temporary(tmp_path, f".r.zarr.tmp-{dead}-89abcdef", owner(expires_in=-1.0))
    gone_old = temporary(tmp_path, f".r.zarr.old-{dead}-fedcba98", owner(expires_in=-1.0))
    orphan = tmp_path / f".r.zarr.tmp-{dead}-0badc0de.lease"  # a lease whose run died before its folder
    orphan.write_text(owner(expires_in=-1.0))
    waiting = tmp_path / f".r.zarr.tmp-{dead}-00c0ffee.lease"  # ... and one whose run is about to make it
    waiting.write_text(owner())

    removed = cleanup_stale(target)

    assert removed == sorted([gone_old, gone_tmp, orphan])
    assert live_tmp.exists() and live_old.exists() and target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["r.zarr", live_tmp.name, live_old.name, f"{live_tmp.name}.lease", f"{live_old.name}.lease", waiting.name])


def test_save_keeps_another_hosts_live_temporary(tmp_path):
    target = tmp_path / "r.zarr"
    live = temporary(tmp_path, f".r.zarr.tmp-{dead_pid()}-0123abcd", owner())
    save(ds(), target)
    assert live.exists() and (tmp_path / f"{live.name}.lease").exists()


@pytest.mark.slow
def test_a_previous_store_moved_aside_by_a_live_run_elsewhere_is_not_put_back(tmp_path):
    target = save(ds(2), tmp_path / "r.zarr")
    aside = tmp_path / f".r.zarr.old-{dead_pid()}-0123abcd"
    os.rename(target, aside)  # another host's run is between its two renames
    (tmp_path / f"{aside.name}.lease").write_text(owner())
    assert cleanup_stale(target) == [] and not target.exists() and aside.exists()
    (tmp_path / f"{aside.name}.lease").write_text(owner(expires_in=-1.0))  # ... and then that host died
    assert cleanup_stale(target) == []
    assert open_results(target)["n"].values.tolist() == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


def test_temporaries_of_earlier_pickscales_are_judged_by_their_pid(tmp_path):
    target = save(ds(), tmp_path / "r.zarr")
    dead = temporary(tmp_path, f".r.zarr.tmp-{dead_pid()}-0123abcd", None)
    mine = temporary(tmp_path, f".r.zarr.tmp-{os.getpid()}-4567abcd", None)
    assert cleanup_stale(target) == [dead] and mine.exists()


def test_a_save_leaves_its_lease_beside_its_temporary_and_removes_both(tmp_path, monkeypatch):
    from pickscale.store import publish
    from pickscale.store.lease import HOST

    seen: list[tuple[str, dict]] = []
    real = publish._write_complete_store

    def watching(clean, tmp, target, *rest):  # (only looks at the folder mid-save)
        lease = tmp.with_name(tmp.name + ".lease")
        seen.append((lease.name, json.loads(lease.read_text())))
        return real(clean, tmp, target, *rest)

    monkeypatch.setattr(publish, "_write_complete_store", watching)
    target = save(ds(), tmp_path / "r.zarr")
    save(ds(2), target, overwrite=True)
    assert [name.startswith(".r.zarr.tmp-") for name, _ in seen] == [True, True]
    assert all(rec["host"] == HOST and rec["pid"] == os.getpid() and rec["expires"] > time.time()
               for _, rec in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


@pytest.mark.slow
def test_report_keeps_another_hosts_live_output_temporaries(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    target = save(_results(), out / "results.zarr")
    dead = dead_pid()
    live = temporary(out, f".pickscale-outputs.tmp-{dead}-0123abcd", owner())
    gone = temporary(out, f".pickscale-outputs.tmp-{dead}-4567abcd", owner(expires_in=-1.0))
    orphan = out / f".pickscale-outputs.tmp-{dead}-89abcdef.lease"
    orphan.write_text(owner(expires_in=-1.0))
    code = main(["report", str(target), "--no-figures", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert live.exists() and (out / f"{live.name}.lease").exists()
    assert not gone.exists() and not (out / f"{gone.name}.lease").exists() and not orphan.exists()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [live.name, f"{live.name}.lease"]


def _results() -> xr.Dataset:
    import pandas as pd

    import pickscale

    ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"], "time": [10.0, 20.0]})
    picks = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"], "time": [10.1, 20.1], "conf": [0.9, 0.8],
                          "model": ["m", "m"]})
    return pickscale.score(ref, picks)
