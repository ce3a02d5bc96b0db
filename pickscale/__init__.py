"""pickscale: score seismic phase pickers against bulletin arrivals, at catalogue scale.

>>> import pickscale
>>> ds = pickscale.score("reference.csv", "picks.csv")      # doctest: +SKIP
>>> pickscale.save(ds, "run/results.zarr")                   # doctest: +SKIP
>>> pickscale.tables(pickscale.open_results("run/results.zarr"))["detection"]  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .errors import InputError, OptionsError, PickscaleError, PickscaleWarning, StoreError  # noqa: E402

# The public functions are loaded on first use (PEP 562): a Dask worker that
# unpickles a task of `pickscale.engine.parts` then never imports xarray, zarr or
# matplotlib, `pickscale --help` answers at once, and the command catches a
# Ctrl-C while the heavy modules load.
_LAZY = {
    "score": "engine",
    "extend": "engine",
    "local_cluster": "engine",
    "Options": "options",
    "open_results": "store",
    "save": "store",
    "bootstrap": "results",
    "tables": "report.tables",
}

__all__ = [
    "__version__",
    "score",
    "extend",
    "tables",
    "bootstrap",
    "save",
    "open_results",
    "local_cluster",
    "Options",
    "PickscaleError",
    "InputError",
    "OptionsError",
    "StoreError",
    "PickscaleWarning",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # next time: a plain attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
