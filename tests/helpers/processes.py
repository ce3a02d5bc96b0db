"""Processes the tests start and must stop: each leads its own session, so a whole group is stopped at once."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence


def stop_sessions(procs: Sequence[subprocess.Popen], *, timeout: float = 30) -> None:
    """Stop exactly the processes started by a test, by their pids (each leads its own session): SIGTERM to
    each group, last started first, each waited for before the next; SIGKILL a group that outlives ``timeout``.

    One at a time because workers are started after their scheduler: a worker told to stop while its
    scheduler is stopping too waits for the scheduler it can no longer reach (a 20 s teardown in a loaded
    suite), one stopped first says goodbye and exits.
    """
    for proc in reversed(procs):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


#: Address space a command run by :func:`run_limited` may use: a normal run fits, a runaway allocation does not,
#: so a regression is a failed test, not a machine brought down.
MEMORY_LIMIT = 4 * 2**30


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_limited(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m pickscale.cli ARGS`` under :data:`MEMORY_LIMIT` and a timeout (a safety net, never the
    condition a test checks)."""
    import sys

    return subprocess.run([sys.executable, "-m", "pickscale.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limited)
