"""Figures drawn by several processes (issue 27): the same bytes as drawn by one, each drawn once, and a
child that dies leaves nothing undone."""

from __future__ import annotations

import gc
import os
import signal
import sys

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import pickscale  # noqa: E402
from pickscale.demo import catalogue  # noqa: E402
from pickscale.report.figures import build, processes  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning"),
              pytest.mark.skipif(sys.platform != "linux", reason="figures are drawn by forked processes on Linux")]


@pytest.fixture(scope="module")
def demo():
    return pickscale.score(*catalogue())


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _big(i: int) -> bytes:
    """A 'figure' of ~0.5 MB: far more than a pipe's buffer, so a message is written in many pieces."""
    return bytes([i % 251]) * (400_000 + 1_000 * i)


def test_children_sending_at_once_never_mix_their_bytes():
    # Several children finishing together send their figures at the same time: each has its own pipe, so no
    # message is read with another's bytes inside it (one shared pipe interleaved them: UnpicklingError).
    written: dict[int, bytes] = {}
    processes.draw_all(_big, [f"f{i}" for i in range(24)], processes=4,
                       write=lambda i, data: written.__setitem__(i, data))
    assert sorted(written) == list(range(24))
    assert all(written[i] == _big(i) for i in written)


def _frozen_in_the_child(i: int) -> bytes:
    return str(gc.get_freeze_count()).encode()


def test_what_this_process_holds_is_frozen_for_the_children_and_thawed_after():
    """gc.freeze before the fork (the children's collections leave the parent's objects and pages alone), and
    gc.unfreeze after -- unless something was frozen before (the console script's own process)."""
    assert gc.get_freeze_count() == 0
    written: dict[int, bytes] = {}
    processes.draw_all(_frozen_in_the_child, ["a", "b", "c", "d"], processes=2,
                       write=lambda i, data: written.__setitem__(i, data))
    assert all(int(data) > 1000 for data in written.values())  # (this process's objects, frozen in each child)
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        processes.draw_all(_frozen_in_the_child, ["a", "b"], processes=2, write=lambda i, data: None)
        assert gc.get_freeze_count() > 1000  # (not thawed: what the caller froze stays frozen)
    finally:
        gc.unfreeze()


def _wait_forever(ready) -> bytes:
    ready.set()
    signal.pause()  # until told to go
    return b""


def test_a_child_told_to_go_goes_quietly_whatever_handler_it_inherited():
    # The command turns SIGTERM into an exception (cli.runtime.sigterm_as_interrupt); a child forked under it
    # and terminated by the parent must die of the signal, not raise (which printed a traceback after a run
    # that succeeded).  Synchronised on an event: the child is terminated only once it is drawing.
    import multiprocessing

    from pickscale.cli.runtime import sigterm_as_interrupt

    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    receive, send = ctx.Pipe(duplex=False)
    with sigterm_as_interrupt():
        child = ctx.Process(target=processes._child,
                            args=(lambda i: _wait_forever(ready), [0], ctx.Value("i", 0), send), daemon=True)
        child.start()
    send.close()
    assert ready.wait(timeout=120)
    child.terminate()
    child.join()
    receive.close()
    assert child.exitcode == -signal.SIGTERM  # killed by the signal (a raised Terminated exits 0 or 1)


@pytest.mark.slow
def test_several_processes_write_the_same_bytes_as_one(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "1")
    one = build.save_figures(demo, tmp_path / "one", dpi=40)
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "3")
    written = []
    several = build.save_figures(demo, tmp_path / "several", dpi=40, on_written=written.append)
    assert [p.name for p in several] == [p.name for p in one]  # in FIGURES order, whoever drew them
    assert sorted(written) == sorted(several)  # each counted once, here
    assert _files(tmp_path / "several") == _files(tmp_path / "one")


@pytest.mark.slow
def test_a_child_that_dies_leaves_its_figures_to_this_process(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "1")
    build.save_figures(demo, tmp_path / "one", dpi=40, names=["timing", "stations", "reliability"])
    parent = os.getpid()
    real = build._BUILDERS["stations"]

    def dies_in_a_child(ds):
        if os.getpid() != parent:
            os._exit(3)  # no message, no clean-up: as if killed
        return real(ds)

    monkeypatch.setitem(build._BUILDERS, "stations", dies_in_a_child)
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "2")
    calls = []
    meanwhile = lambda: calls.append("tables")  # noqa: E731
    build.save_figures(demo, tmp_path / "two", dpi=40, names=["timing", "stations", "reliability"],
                       meanwhile=meanwhile)
    assert calls == ["tables"]
    assert _files(tmp_path / "two") == _files(tmp_path / "one")


@pytest.mark.slow
def test_how_many_processes(demo, monkeypatch, tmp_path):
    monkeypatch.delenv("PICKSCALE_FIGURE_PROCESSES", raising=False)
    names = build.figure_names(demo)
    from pickscale.engine.cluster import process_cpus

    assert processes.figure_processes(demo, names) == min(process_cpus(), len(names), processes.MAX_PROCESSES)
    assert processes.figure_processes(demo, names[:1]) == 1  # one figure: nothing to share
    dask_array = pytest.importorskip("dask.array")
    lazy = demo.assign(extra=("station", dask_array.zeros(demo.sizes["station"])))
    assert processes.figure_processes(lazy, names) == 1  # read through Zarr's thread: drawn here
    stored = pickscale.open_results(pickscale.save(demo, tmp_path / "results.zarr"))
    assert processes.figure_processes(stored, names) == 1  # its pairs read when used: drawn here, none loaded
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "1")
    assert processes.figure_processes(demo, names) == 1


@pytest.mark.slow
def test_a_stored_dataset_is_drawn_by_several_processes_the_same_bytes(demo, tmp_path, monkeypatch):
    """A store's pairs, read lazily (a run on a cluster, `pickscale report`): the ones the residuals figure reads
    whole are read once before the figures are drawn, the rest left out, and the figures drawn by several
    processes -- the same bytes as one process drawing the Dataset in memory; the caller's Dataset stays lazy."""
    from pickscale.engine.cluster import process_cpus

    if process_cpus() < 2:
        pytest.skip("one CPU: the figures are drawn by one process")
    monkeypatch.setenv("PICKSCALE_FIGURE_PROCESSES", "1")
    one = build.save_figures(demo, tmp_path / "one", dpi=40)
    monkeypatch.delenv("PICKSCALE_FIGURE_PROCESSES")
    stored = pickscale.open_results(pickscale.save(demo, tmp_path / "results.zarr"))
    lazy = sorted(name for name, var in stored.variables.items() if not processes.in_memory(var))
    assert "residual" in lazy and "pair_station" in lazy
    counted = []
    real = build.draw_all

    def counting(*args, processes, **kwargs):
        counted.append(processes)
        return real(*args, processes=processes, **kwargs)

    monkeypatch.setattr(build, "draw_all", counting)
    several = build.save_figures(stored, tmp_path / "several", dpi=40)
    assert counted == [min(process_cpus(), len(one), processes.MAX_PROCESSES)] and counted[0] > 1
    assert [p.name for p in several] == [p.name for p in one]
    assert _files(tmp_path / "several") == _files(tmp_path / "one")
    assert sorted(name for name, var in stored.variables.items() if not processes.in_memory(var)) == lazy
    drawn = processes.as_drawn(stored, ["timing", "residuals"])
    assert all(processes.in_memory(var) for var in drawn.variables.values())
    assert set(processes.PAIRS_READ["residuals"]) <= set(drawn.variables) and "pair_station" not in drawn
    timing_only = processes.as_drawn(stored, ["timing"])
    assert not any("pair" in var.dims for var in timing_only.variables.values())


def test_the_costliest_figures_are_handed_out_first_whatever_the_study(demo):
    """figure_costs grows with what a figure shows: the 10^7-pick run's residuals and stations figures, drawn
    last in the small study's order, are handed out first (the processes then finish together)."""
    names = ["recall_treatments", "operating_curves", "timing", "residuals", "reliability", "stations",
             "event_detection", "pick_rates", "recall_over_time"]
    small = xr.Dataset(coords={"dataset": ["d"], "pair": range(300), "station": range(50)})
    large = xr.Dataset(coords={"dataset": ["d"], "pair": range(333_664), "station": range(200)})
    first = [names[i] for i in processes.handout_order(processes.figure_costs(small, names))]
    assert first[0] == "operating_curves" and first.index("residuals") > first.index("timing")
    first = [names[i] for i in processes.handout_order(processes.figure_costs(large, names))]
    assert first[:4] == ["residuals", "operating_curves", "pick_rates", "stations"]
    assert processes.figure_costs(demo, ["recall_over_time"]) == [processes.OTHER_COST]
