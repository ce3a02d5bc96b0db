"""The cluster a command starts (``--workers N``): its workers set up for the command.

Each worker imports ``dask.array`` in the background as it starts (``pickscale.cli.runtime._warm``), so that
the save's first tasks -- the pair chunks, made by ``dask.array`` functions -- do not import it on the run's
critical path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pickscale.cli.runtime import WARM_THREAD, command_client

ROOT = Path(__file__).resolve().parents[2]


def _warmed() -> bool:
    import sys
    import threading

    for thread in threading.enumerate():
        if thread.name == WARM_THREAD:
            thread.join(120)  # (the import, however slow the machine: an event, not a delay)
    return "dask.array" in sys.modules


@pytest.mark.cluster
def test_the_command_s_workers_import_dask_array_before_any_task_needs_it():
    with command_client(2, None) as client:
        got = client.run(_warmed)
    assert len(got) == 2 and all(got.values())


@pytest.mark.cluster
def test_a_run_on_a_cluster_saves_and_draws_its_pairs_from_memory(tmp_path, monkeypatch):
    # Pairs few enough to be fetched together (issue 27): fetched once, before the store is written; the store
    # writes them and the figures and tables read them from memory, not read back from the store.
    import pickscale.store
    from pickscale.cli import main
    from pickscale.store.codec import is_dask

    saved = []
    real_save = pickscale.store.save

    def save(ds, path, **kwargs):
        saved.append([name for name, var in ds.variables.items() if is_dask(var.data)])
        return real_save(ds, path, **kwargs)

    monkeypatch.setattr(pickscale.store, "save", save)
    demo = ROOT / "configs" / "demo"
    args = ["score", "--reference", str(demo / "reference.csv"), "--picks", str(demo / "picks.csv"), "--quiet",
            "--no-figures"]
    assert main([*args, "--workers", "2", "--out", str(tmp_path / "cluster")]) == 0
    assert saved == [[]]  # (nothing left on the cluster as the store was written)
    monkeypatch.setattr(pickscale.store, "save", real_save)
    assert main([*args, "--out", str(tmp_path / "here")]) == 0
    for table in ("detection.csv", "timing.csv", "sweep.csv"):
        assert (tmp_path / "cluster" / table).read_bytes() == (tmp_path / "here" / table).read_bytes()
