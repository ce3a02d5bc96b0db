"""The cluster a command starts (``--workers N``): its workers set up for the command.

Each worker imports ``dask.array`` in the background as it starts (``pickscale.cli.runtime._warm``), so that
the save's first tasks -- the pair chunks, made by ``dask.array`` functions -- do not import it on the run's
critical path.
"""

from __future__ import annotations

import pytest

from pickscale.cli.runtime import WARM_THREAD, command_client


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
