"""Integrity of results stores (issue 16 items 2 and 3, issue 15).

- Every file of a store, its root ``zarr.json`` (options, consolidated metadata) included, is hashed in
  ``pickscale-manifest.json``: one flipped bit anywhere is refused by ``open_results`` and by
  ``pickscale report`` (exit 2, no traceback), and so are an edited threshold, a deleted or emptied
  manifest, a missing chunk and an extra file.
- A store written by the previous version (schema 1, sizes only) is refused with a message to re-run.
- A reader racing ``save(..., overwrite=True)`` gets one store or the other, never a mixture.
- A stale lock left by another user in a sticky-bit folder is a StoreError naming the lock file.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import pickscale
from pickscale.cli import main
from pickscale.demo import catalogue
from pickscale.errors import StoreError
from pickscale.store import MANIFEST, SCHEMA_VERSION, open_results, sanitise, save
from pickscale.store import read as store_read

RETRY_MESSAGE = "replaced while it was being read"


@pytest.fixture(scope="module")
def runs():
    """Two results of the demo catalogue with the same shapes and different numbers (tol 0.5 s and 0.1 s)."""
    ref, picks = catalogue()
    a = pickscale.score(ref, picks)
    b = pickscale.score(ref, picks, tol=0.1)
    return a, b


@pytest.fixture
def stored(runs, tmp_path):
    (tmp_path / "run").mkdir()
    return save(runs[0], tmp_path / "run" / "results.zarr")


def fingerprint(ds) -> dict:
    """Every variable's dims, dtype and bytes, and the attributes (without the markers)."""
    out = {}
    for name, var in ds.variables.items():
        values = np.asarray(var.values)
        data = repr(values.tolist()) if values.dtype.kind in "OT" else values.tobytes()
        out[name] = (var.dims, str(values.dtype), data)
    attrs = {k: v for k, v in ds.attrs.items() if k not in ("pickscale_complete", "pickscale_schema")}
    out["<attrs>"] = json.dumps(attrs, sort_keys=True)
    return out


def store_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file())


def report_refuses(store: Path, capsys, *needles: str) -> None:
    before = sorted(p.name for p in store.parent.iterdir())
    code = main(["report", str(store), "--no-figures"])
    out, err = capsys.readouterr()
    assert code == 2, (code, err[-2000:])
    assert err.startswith("pickscale: error: ") and "Traceback" not in err, err[-2000:]
    assert str(store) in err
    for needle in needles:
        assert needle in err, (needle, err)
    assert sorted(p.name for p in store.parent.iterdir()) == before  # no table written


# --------------------------------------------------------------------------- bit flips


#: The chunk files of the residual pairs: read when used by a lazy opening, and checked then.
PAIR_CHUNKS = tuple(f"{name}/c/" for name in ("pair_dataset", "pair_model", "pair_phase", "pair_station",
                                              "residual", "pair_conf", "pair_group", "ranked_residual", "ranked_level"))


@pytest.mark.slow
def test_every_bit_flip_in_every_file_is_detected(stored, runs, capsys):
    """3 seeded random single-bit flips in each file of a demo store (over 300 trials)."""
    rng = np.random.default_rng(16)
    files = store_files(stored)
    names = [p.relative_to(stored).as_posix() for p in files]
    assert "zarr.json" in names and MANIFEST in names and len(files) > 50
    undetected: list[str] = []
    trials = 0
    for path, name in zip(files, names):
        original = path.read_bytes()
        for k in range(3):
            bit = int(rng.integers(len(original) * 8))
            data = bytearray(original)
            data[bit // 8] ^= 1 << (bit % 8)
            path.write_bytes(bytes(data))
            trials += 1
            try:
                try:
                    open_results(stored).load()
                    undetected.append(f"{name} bit {bit}: opened")
                except StoreError as exc:
                    assert str(stored) in str(exc)
                except Exception as exc:  # noqa: BLE001 - anything but a StoreError is a failure
                    undetected.append(f"{name} bit {bit}: {type(exc).__name__}: {exc}")
                if k == 0 and name.startswith(PAIR_CHUNKS):
                    # A report without figures reads no pair (SPEC §15): a whole opening checks them too.
                    try:
                        open_results(stored, lazy=False)
                        undetected.append(f"{name} bit {bit}: opened whole")
                    except StoreError:
                        pass
                elif k == 0:  # the CLI too, once a file (each report costs a little more)
                    code = main(["report", str(stored), "--no-figures"])
                    _, err = capsys.readouterr()
                    if code != 2 or "Traceback" in err:
                        undetected.append(f"{name} bit {bit}: report exit {code}")
            finally:
                path.write_bytes(original)
            if len(undetected) >= 10:
                break
        if len(undetected) >= 10:
            break
    assert not undetected, f"{len(undetected)} of {trials} flips undetected: {undetected}"
    assert trials >= 3 * len(files)
    assert fingerprint(open_results(stored)) == fingerprint(sanitise(runs[0]).load())  # restored: opens


# --------------------------------------------------------------------------- named damage


def _edit_threshold(store: Path) -> None:
    meta = json.loads((store / "zarr.json").read_text())
    meta["attributes"]["options"]["threshold"] = 0.9
    (store / "zarr.json").write_text(json.dumps(meta, indent=2))


def _first_chunk(store: Path, var: str) -> Path:
    return next(p for p in store_files(store) if p.relative_to(store).as_posix().startswith(f"{var}/c/"))


DAMAGE = {
    "threshold-edited": (_edit_threshold, ["is damaged", "zarr.json", "changed"]),
    "manifest-deleted": (lambda s: (s / MANIFEST).unlink(), ["is damaged", MANIFEST, "missing"]),
    "manifest-emptied": (lambda s: (s / MANIFEST).write_bytes(b""), ["is damaged", MANIFEST, "cannot be read"]),
    "chunk-missing": (lambda s: _first_chunk(s, "matched").unlink(), ["is damaged", "matched/c/", "is missing"]),
    "chunk-emptied": (lambda s: _first_chunk(s, "recall").write_bytes(b""), ["is damaged", "recall/c/", "bytes, not"]),
    "chunk-rewritten": (lambda s: _first_chunk(s, "recall").write_bytes(
        _first_chunk(s, "precision_lb").read_bytes()), ["is damaged", "recall/c/"]),
    "manifest-without-files": (lambda s: (s / MANIFEST).write_text('{"pickscale_manifest": 2, "files": {}}'),
                               ["is damaged", MANIFEST]),
    "manifest-deleted-and-chunk-missing": (lambda s: ((s / MANIFEST).unlink(), _first_chunk(s, "matched").unlink()),
                                           ["is damaged", MANIFEST, "missing"]),
    "extra-file": (lambda s: (s / "recall" / "c" / "9").write_bytes(b"\0" * 8),
                   ["is damaged", "recall/c/9", "not in the manifest"]),
    "manifest-reformatted": (lambda s: (s / MANIFEST).write_text(
        json.dumps(json.loads((s / MANIFEST).read_text()))), ["is damaged", MANIFEST]),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_named_damage_is_refused_by_open_results_and_report(kind, stored, capsys):
    damage, needles = DAMAGE[kind]
    damage(stored)
    with pytest.raises(StoreError) as info:
        open_results(stored)
    message = str(info.value)
    assert str(stored) in message
    for needle in needles:
        assert needle in message, (needle, message)
    report_refuses(stored, capsys, *needles)


@pytest.mark.slow
def test_a_store_of_the_previous_schema_is_refused_with_a_clear_message(stored, capsys):
    """Schema 1 (sizes only, root zarr.json not covered) cannot be trusted: re-run ``score``."""
    assert SCHEMA_VERSION > 1
    meta = json.loads((stored / "zarr.json").read_text())
    meta["attributes"]["pickscale_schema"] = 1
    (stored / "zarr.json").write_text(json.dumps(meta, indent=2))
    files = {p.relative_to(stored).as_posix(): p.stat().st_size for p in store_files(stored)}
    files = {k: v for k, v in sorted(files.items()) if k not in ("zarr.json", MANIFEST)}
    (stored / MANIFEST).write_text(json.dumps({"pickscale_manifest": 1, "files": files}, indent=0))
    needles = ["store schema 1", "re-run `pickscale score`"]
    with pytest.raises(StoreError) as info:
        open_results(stored)
    assert all(n in str(info.value) for n in needles), str(info.value)
    report_refuses(stored, capsys, *needles)


@pytest.mark.slow
def test_open_results_returns_a_loaded_dataset(stored, runs):
    """Eager: nothing is read from disk after ``open_results`` returns."""
    ds = open_results(stored)
    assert dict(ds.chunks) == {}  # NumPy-backed, not Dask
    assert all(isinstance(v.data, np.ndarray) for v in ds.variables.values())
    shutil.rmtree(stored)
    assert fingerprint(ds) == fingerprint(sanitise(runs[0]).load())


# --------------------------------------------------------------------------- reader racing a writer


@pytest.mark.slow
def test_a_reader_racing_overwrites_never_gets_a_mixture(runs, tmp_path, monkeypatch):
    a, b = runs
    replaced = [0]  # attempts that saw the store replaced mid-read (and were retried)
    real_snapshot = store_read._checked_snapshot

    def counting_snapshot(store, **options):
        try:
            return real_snapshot(store, **options)
        except store_read._Replaced:
            replaced[0] += 1
            raise

    monkeypatch.setattr(store_read, "_checked_snapshot", counting_snapshot)
    want = [fingerprint(sanitise(a).load()), fingerprint(sanitise(b).load())]
    differ = [k for k in want[0] if want[0][k] != want[1][k]]
    assert "matched" in differ and "recall" in differ and want[0]["pair_conf"] == want[1]["pair_conf"]
    target = save(a, tmp_path / "results.zarr")
    stop = threading.Event()
    writer_errors: list[BaseException] = []
    saves = [0]

    def writer() -> None:
        while not stop.is_set():
            try:
                save((b, a)[saves[0] % 2], target, overwrite=True)
            except BaseException as exc:  # noqa: BLE001
                writer_errors.append(exc)
                return
            saves[0] += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen = [0, 0]
    mixed: list[list[str]] = []
    failures: list[str] = []
    retried = 0
    # Until enough saves and reads have raced (counted, not timed: a loaded machine only takes longer); the
    # deadline is a safety net that fails the test, never the condition it checks.
    deadline = time.monotonic() + 600.0
    try:
        while ((saves[0] < 5 or seen[0] + seen[1] < 10) and len(mixed) + len(failures) < 5
               and time.monotonic() < deadline and not writer_errors):
            try:
                got = fingerprint(open_results(target).load())
            except StoreError as exc:
                # Gave up after retries, or -- its pairs read when used -- found the store replaced between
                # opening it and reading them: said, never a mixture.
                if RETRY_MESSAGE in str(exc) or "after it was opened" in str(exc):
                    retried += 1
                else:
                    failures.append(str(exc))
                continue
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{type(exc).__name__}: {exc}")
                continue
            if got == want[0]:
                seen[0] += 1
            elif got == want[1]:
                seen[1] += 1
            else:
                mixed.append([k for k in differ if got.get(k) != want[0][k]])
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()
    assert not writer_errors, writer_errors
    assert not mixed, f"{len(mixed)} reads mixed two stores (variables from the second run: {mixed[:2]})"
    assert not failures, failures
    reads = seen[0] + seen[1]
    print(f"{saves[0]} saves; reads: {seen} (first run, second run), {replaced[0]} attempts retried, "
          f"{retried} reads gave up")
    assert saves[0] >= 5 and reads >= 10, (saves, seen, retried)  # else the safety deadline ran out
    # A reader may give up on a store that keeps changing (it says so); how often depends on the scheduling of
    # the two threads, not on pickscale — what must never happen is a mixture, checked above.
    assert fingerprint(open_results(target)) in want


@pytest.mark.slow
def test_a_reader_retries_then_says_the_store_keeps_changing(stored, monkeypatch):
    """Replaced during every attempt: a StoreError after a few attempts, never a mixture."""
    real_read = store_read._read_files
    calls = [0]

    def read_then_replace(store, **options):
        calls[0] += 1
        files, sizes = real_read(store, **options)
        fresh = store.parent / f"fresh{calls[0]}.zarr"
        shutil.copytree(store, fresh)
        shutil.rmtree(store)
        os.rename(fresh, store)  # same content, another folder: replaced while being read
        files["recall/c/9"] = b"y"  # and what was read does not match the manifest
        return files, sizes

    monkeypatch.setattr(store_read, "_read_files", read_then_replace)
    with pytest.raises(StoreError, match=RETRY_MESSAGE):
        open_results(stored)
    assert calls[0] == store_read._READ_ATTEMPTS


# --------------------------------------------------------------------------- the lock of another user


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


SAVE_AS_OTHER_USER = """
import os, sys, tempfile, xarray as xr
from pickscale.store import save
from pickscale.errors import StoreError
# Warm up as root (every module imported), then become another user: the venv's Python may live in
# a folder that user cannot read, so the switch happens here rather than before exec.
save(xr.Dataset({"n": ("x", [1])}), os.path.join(tempfile.mkdtemp(), "warm.zarr"))
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
try:
    save(xr.Dataset({"n": ("x", [1])}), sys.argv[1])
except StoreError as exc:
    print(f"StoreError: {exc}")
    sys.exit(3)
print("saved")
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to leave a lock owned by another user and to run as a third one")
def test_stale_lock_of_another_user_in_a_sticky_folder_is_a_store_error():
    shared = Path(tempfile.mkdtemp(prefix="pickscale-shared-", dir="/tmp"))  # reachable by another user
    try:
        os.chmod(shared, 0o1777)  # like /tmp: only a file's owner may remove it
        lock = shared / ".results.zarr.lock"
        lock.write_text(f"{_dead_pid()} {socket.gethostname()}\n")
        os.chown(lock, 65533, 65533)  # left by another user whose run died
        env = {**os.environ, "HOME": str(shared), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run([sys.executable, "-c", SAVE_AS_OTHER_USER, str(shared / "results.zarr")],
                              capture_output=True, text=True, timeout=120, env=env,
                              cwd=str(shared))
        assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr[-3000:])
        assert "Traceback" not in proc.stderr
        message = proc.stdout
        assert str(lock) in message and "another user" in message and "delete" in message, message
        assert lock.exists() and not (shared / "results.zarr").exists()
        assert sorted(p.name for p in shared.iterdir()) == [lock.name]  # nothing else left
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_stale_lock_that_cannot_be_moved_is_a_store_error(tmp_path, monkeypatch):
    """The same without root: the take-over's rename refused as in a sticky folder."""
    target = tmp_path / "results.zarr"
    lock = tmp_path / ".results.zarr.lock"
    lock.write_text(f"{_dead_pid()} {socket.gethostname()}\n")
    real_rename = os.rename

    def rename(src, dst):
        if Path(src) == lock:
            raise PermissionError(1, "Operation not permitted", str(src))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(StoreError, match="lock file") as info:
        save(xr.Dataset({"n": ("x", [1])}), target)
    assert str(lock) in str(info.value) and "delete" in str(info.value)
    assert lock.exists() and not target.exists()
