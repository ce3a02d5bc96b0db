"""pickscale: score seismic phase pickers against bulletin arrivals, at catalogue scale.

>>> import pickscale
>>> from pickscale.demo import write_inputs
>>> reference, picks = write_inputs(tmp)  # the demo's reference.csv and picks.csv; tmp: a temporary folder
>>> ds = pickscale.score(reference, picks, progress=False)
>>> pickscale.save(ds, tmp / "results.zarr").name
'results.zarr'
>>> detection = pickscale.tables(pickscale.open_results(tmp / "results.zarr"))["detection"]
>>> detection.loc[detection.phase == "P", ["dataset", "model", "recall", "precision_lb"]].round(2)
             dataset    model  recall  precision_lb
0  aftershocks_north     late    0.83          0.73
1  aftershocks_north  liberal    0.95          0.29
2  aftershocks_north    sharp    0.83          0.68
6  aftershocks_south     late    0.86          0.79
7  aftershocks_south  liberal    0.98          0.27
8  aftershocks_south    sharp    0.86          0.74
"""

from __future__ import annotations

from ._lazy import lazy_names

__version__ = "0.1.0"

# compare is imported here, not on first use: once imported, the submodule of that name would otherwise shadow
# the function.  It imports numpy and pandas only when called.
from .compare import compare  # noqa: E402
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
    "predict": "prediction",
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
    "compare",
    "predict",
    "Options",
    "PickscaleError",
    "InputError",
    "OptionsError",
    "StoreError",
    "PickscaleWarning",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
