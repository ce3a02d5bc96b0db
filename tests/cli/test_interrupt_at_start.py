"""Ctrl-C while the command is still importing its modules ends like any other interruption: exit 130, a
one-line message, no traceback.

The interruption is sent at a known point, not after a guessed delay: an import hook in the child sends
SIGINT to its own process when the command starts importing its heavy modules (pickscale.cli.commands, which
brings pandas, xarray and Dask).
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

CHILD = r"""
import importlib.abc, os, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pickscale.cli.commands":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)  # delivered at once: inside this import
        return None

sys.meta_path.insert(0, Interrupt())
from pickscale.cli import main
sys.exit(main(["score", "--reference", "r.csv", "--picks", "p.csv", "--out", "out"]))
"""


@pytest.mark.slow
def test_ctrl_c_while_modules_load_exits_130_without_a_traceback(tmp_path):
    # Ctrl-C's default disposition in the child (a suite started in the background ignores SIGINT).
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "pickscale: interrupted" in done.stderr
    assert not (tmp_path / "out").exists()
