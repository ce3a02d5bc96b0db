"""pickscale: score seismic phase pickers against bulletin arrivals, at catalogue scale.

>>> import pickscale
>>> ds = pickscale.score("reference.csv", "picks.csv")      # doctest: +SKIP
>>> pickscale.save(ds, "run/results.zarr")                   # doctest: +SKIP
>>> pickscale.tables(pickscale.open_results("run/results.zarr"))["detection"]  # doctest: +SKIP
"""

__version__ = "0.1.0"

from .engine import local_cluster, score  # noqa: E402
from .errors import InputError, OptionsError, PickscaleError, StoreError  # noqa: E402
from .options import Options  # noqa: E402
from .store import open_results, save  # noqa: E402
from .tables import tables  # noqa: E402

__all__ = [
    "__version__",
    "score",
    "tables",
    "save",
    "open_results",
    "local_cluster",
    "Options",
    "PickscaleError",
    "InputError",
    "OptionsError",
    "StoreError",
]
