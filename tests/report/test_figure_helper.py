"""The figure helper a command starts (issue 27): it draws what it takes, the same bytes as one process, and
never outlives the command or loses a figure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import pickscale  # noqa: E402
from pickscale.demo import catalogue  # noqa: E402
from pickscale.report.figures import build, helper  # noqa: E402
from pickscale.report.outputs import FIGURE_DPI, hand_over_figures  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning"),
              pytest.mark.skipif(not helper.may_start(), reason="a helper is forked on Linux with two CPUs or more")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo():
    return pickscale.score(*catalogue())


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _one_process(ds, folder, monkeypatch):
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "1")
    build.save_figures(ds, folder, dpi=FIGURE_DPI)
    monkeypatch.delenv("PICKSCALE_FIGURE_PROCESSES")
    return _files(folder)


def _until(predicate, what: str, timeout: float = 120.0) -> None:
    """Wait for another process's progress (a bound against a hang, not a clock the test depends on)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.mark.slow
def test_a_helper_handed_the_results_draws_them_the_same_bytes_as_one_process(demo, tmp_path, monkeypatch):
    """Handed the results before they are saved, the helper takes every figure while this process waits; this
    process then draws none of them, and writes each as the helper sent it: the bytes of one process."""
    one = _one_process(demo, tmp_path / "one", monkeypatch)
    with helper.helper_started(enabled=True) as started:
        assert started is not None and started.process.is_alive()
        drawn_here = []
        for name, real in list(build._BUILDERS.items()):  # (patched after the fork: in this process only)
            monkeypatch.setitem(build._BUILDERS, name,
                                lambda ds, real=real, name=name: drawn_here.append(name) or real(ds))
        assert hand_over_figures(demo, "png", early=True) is demo  # (wholly in memory: handed as it is)
        assert started.handed and not started.taken
        n = len(build.figure_names(demo))
        _until(lambda: started.counter.value >= n, "the helper to take every figure")
        written = []
        paths = build.save_figures(demo, tmp_path / "helped", dpi=FIGURE_DPI, on_written=written.append)
    assert drawn_here == []  # every figure was the helper's
    assert sorted(written) == sorted(paths) and len(paths) == n
    assert _files(tmp_path / "helped") == one
    assert not started.process.is_alive()  # stopped with the block


@pytest.mark.slow
def test_a_helper_that_dies_leaves_its_figures_to_this_process(demo, tmp_path, monkeypatch):
    one = _one_process(demo, tmp_path / "one", monkeypatch)
    with helper.helper_started(enabled=True) as started:
        assert started is not None
        hand_over_figures(demo, "png", early=True)
        os.kill(started.process.pid, signal.SIGKILL)  # no message, no clean-up: as if the machine took it
        started.process.join()
        build.save_figures(demo, tmp_path / "after", dpi=FIGURE_DPI)
    assert _files(tmp_path / "after") == one


def test_a_helper_is_stopped_whatever_ends_the_block_and_when_let_go():
    with pytest.raises(RuntimeError, match="the run failed"):
        with helper.helper_started(enabled=True) as started:
            assert started is not None and started.process.is_alive()
            raise RuntimeError("the run failed before its figures")
    assert not started.process.is_alive() and helper.current() is None
    with helper.helper_started(enabled=True) as started:
        helper.let_go()  # (results that do not qualify: it goes at once, unused)
        assert not started.process.is_alive() and helper.current() is None
        assert not helper.hand_over("pickscale.report.figures.build:helper_job")  # (nothing to hand over to)
    with helper.helper_started(enabled=False) as none:
        assert none is None and helper.current() is None


@pytest.mark.slow
def test_results_still_on_the_cluster_are_not_handed_over_early(demo):
    """Results whose pairs are Dask arrays (a run on a cluster, before they are saved) are not handed over:
    the helper waits for the results read back from the store."""
    da = pytest.importorskip("dask.array")
    lazy = demo.assign(residual=("pair", da.from_array(demo["residual"].values, chunks=7)))
    with helper.helper_started(enabled=True) as started:
        assert hand_over_figures(lazy, "png", early=True) is lazy
        assert started is not None and not started.handed and started.process.is_alive()


@pytest.mark.slow
def test_the_command_with_its_helper_writes_the_bytes_of_one_process(tmp_path):
    """`pickscale score` as a user runs it (the console script starts the helper) and with every figure drawn by
    one process: the same files, byte for byte."""
    demo_inputs = ROOT / "configs" / "demo"
    out = {}
    for name, env in (("helped", {}), ("one", {"PICKSCALE_FIGURE_PROCESSES": "1"})):
        folder = tmp_path / name
        run = subprocess.run([sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main())",
                              "score", "--reference", str(demo_inputs / "reference.csv"), "--picks",
                              str(demo_inputs / "picks.csv"), "--out", str(folder), "--quiet"],
                             env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""  # (nothing of the helper reaches the user)
        out[name] = _files(folder / "figures")
    assert out["helped"] == out["one"] and len(out["one"]) >= 6


CTRL_C_CHILD = r"""
import importlib.abc, os, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pickscale.cli.commands":  # (the helper is forked by then: it is started before this import)
            sys.meta_path.remove(self)
            from pickscale.report.figures import helper
            started = helper.current()
            print(f"helper {started.process.pid if started else None}", file=sys.stderr, flush=True)
            os.killpg(os.getpgid(0), signal.SIGINT)  # Ctrl-C at a terminal: to the whole process group
        return None

sys.meta_path.insert(0, Interrupt())
from pickscale.cli import main
sys.argv = ["pickscale", *sys.argv[1:]]
sys.exit(main())
"""


def _session_processes(sid: int) -> list[int]:
    """The processes of session ``sid`` still running (zombies excepted)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # (fields after the name: state, ppid, pgrp, session)
            alive.append(int(entry.name))
    return alive


@pytest.mark.slow
def test_ctrl_c_with_a_helper_exits_130_and_leaves_no_process(tmp_path):
    """Ctrl-C reaches the command and its helper together (a terminal signals the whole process group): the
    helper ignores it, the command ends as any interruption does, and the helper ends with it."""
    demo_inputs = ROOT / "configs" / "demo"
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CHILD, "score", "--reference", str(demo_inputs / "reference.csv"),
         "--picks", str(demo_inputs / "picks.csv"), "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    _, err = child.communicate(timeout=300)
    assert child.returncode == 130, err
    assert "Traceback" not in err and "pickscale: interrupted" in err, err
    helper_pid = err.split("helper ", 1)[1].split()[0]
    assert helper_pid.isdigit(), err  # (a helper was running when Ctrl-C came)
    _until(lambda: not _session_processes(child.pid), "the helper to end with the command", timeout=30)
    assert not (tmp_path / "out").exists()
