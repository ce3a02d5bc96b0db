"""Names the docstring examples of ``pickscale/`` run against (``--doctest-modules``).

This conftest sits in the rootdir so that it applies to the doctests collected from ``pickscale/``; the
test suite's own set-up is ``tests/conftest.py`` (it applies to ``tests/`` only, and names no fixture used
here).  Every doctest finds in its namespace:

``ds``
    The demo results (:func:`pickscale.demo.catalogue`: two datasets, four stations each, three models),
    scored once per session with ``time_bin="2h"``, ``tols=[0.1, 0.2, 0.5]`` and
    ``group_by="magnitude:1,2,3"`` (so that the figures and tables of time bins, tolerances and groups have
    something to show; the other numbers are the demo's own) and loaded into memory.  Examples must not
    modify it.
``tmp``
    A fresh temporary folder (:class:`pathlib.Path`) of the example's own.

The suite runs on every usable CPU (pytest-xdist, ``-n auto`` in pyproject.toml): as many test processes as
``dask.system.CPU_COUNT`` (affinity and cgroup quotas; not the machine's core count, which psutil may give as
physical cores only), each a module's tests together (``--dist loadscope``) so module fixtures are built once.
``-n 0`` runs in one process.

Matplotlib draws with the Agg backend (no display).  The demo is scored only when a doctest runs: the
tests of ``tests/`` never pay for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from _pytest.doctest import DoctestItem

matplotlib.use("Agg")

# The suite starts hundreds of Python processes (Dask workers, the command as a user runs it, figure
# children).  With PYTHONDONTWRITEBYTECODE set (as on the machines this project is tested on) each of them
# compiled pickscale from source again, and each test process rewrote every test module's asserts again:
# writing the bytecode caches (into the tree's __pycache__ folders, which git ignores) cut ~10 % of the
# cluster tests' time here.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one test process per CPU this process may use (at least one)."""
    from dask.system import CPU_COUNT  # only when xdist asks: a plain run never imports dask here

    return max(1, int(CPU_COUNT))


#: The options the doctests' demo results are scored with (the demo's defaults otherwise).
DEMO_OPTIONS: dict[str, Any] = dict(time_bin="2h", tols=[0.1, 0.2, 0.5], group_by="magnitude:1,2,3")


@pytest.fixture(scope="session")
def doctest_demo_results() -> Any:
    """The demo results of the doctests' ``ds``: scored once, in memory."""
    import pickscale
    from pickscale.demo import catalogue

    return pickscale.score(*catalogue(), progress=False, **DEMO_OPTIONS).load()


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest, doctest_namespace: dict[str, Any]) -> None:
    """Put ``ds`` and ``tmp`` in a doctest's namespace (nothing for the tests of ``tests/``)."""
    if isinstance(request.node, DoctestItem):
        doctest_namespace["ds"] = request.getfixturevalue("doctest_demo_results")
        tmp: Path = request.getfixturevalue("tmp_path")
        doctest_namespace["tmp"] = tmp
