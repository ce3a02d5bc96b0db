"""Data selection shared by the figures: options, subsets, threshold positions, and which models to show.

Every figure reads the options the Dataset was scored with
(:func:`options_of`), the datasets and models asked for (:func:`subsets`),
the shared threshold's position on the grid (:func:`threshold_index`), and
shows at most a few models, the best by recall at the shared threshold
(:func:`cap_models`).  Nothing here draws.

Examples
--------
>>> names_of(["P", "S"])
['P', 'S']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ...options import Options
from .style import fmt_theta

__all__ = [
    "options_of",
    "names_of",
    "subsets",
    "threshold_index",
    "fine_index",
    "is_present",
    "n_reference",
    "rank_models",
    "cap_models",
    "zoom_limits",
]


def options_of(ds: xr.Dataset) -> Options:
    """The scoring options a results Dataset carries, or ValueError when it carries none."""
    attrs = ds.attrs.get("options")
    if attrs is None:
        raise ValueError(
            "ds.attrs['options'] is missing: pass a Dataset made by pickscale.score or read by "
            "pickscale.open_results."
        )
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    return Options.from_attrs(attrs)


def names_of(values: Any) -> list[str]:
    """Labels (a coordinate's values) as a list of ``str``."""
    return [str(v) for v in np.asarray(values).tolist()]


def subsets(
    ds: xr.Dataset, datasets: Sequence[str] | None, models: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """The datasets and models to show, in Dataset order (default: all); ValueError naming unknown ones."""
    all_d, all_m = names_of(ds.dataset.values), names_of(ds.model.values)
    out = []
    for kind, given, known in (("dataset", datasets, all_d), ("model", models, all_m)):
        if given is None:
            out.append(known)
            continue
        given = [given] if isinstance(given, str) else [str(g) for g in given]
        missing = [g for g in given if g not in known]
        if missing:
            raise ValueError(f"unknown {kind}(s) {missing}; the Dataset has {known}")
        out.append([k for k in known if k in given])
    return out[0], out[1]


def threshold_index(ds: xr.Dataset, theta: float) -> int:
    """Position of ``theta`` on the Dataset's threshold grid."""
    return int(np.argmin(np.abs(ds.threshold.values - theta)))


def fine_index(ds: xr.Dataset, theta: float) -> int:
    """Position of ``theta`` on the Dataset's fine threshold grid."""
    return int(np.argmin(np.abs(ds.fine_threshold.values - theta)))


def is_present(ds: xr.Dataset, dataset: str, model: str) -> bool:
    """Whether ``model`` ran on ``dataset``."""
    return bool(ds.model_present.sel(dataset=dataset, model=model).values)


def n_reference(ds: xr.Dataset) -> xr.DataArray:
    """Scored reference arrivals per (dataset, phase)."""
    return ds.n_reference.sum("station")


def rank_models(ds: xr.Dataset, dsets: Sequence[str], mods: Sequence[str]) -> list[str]:
    """Models best first: mean recall at the shared threshold over the selected datasets and
    both phases where the model ran (ties and models without a recall: by name)."""
    if not mods:
        return []
    rec = options_of(ds).at_shared(ds.recall).sel(dataset=list(dsets), model=list(mods))
    present = ds.model_present.sel(dataset=list(dsets), model=list(mods))
    vals = np.asarray(rec.where(present).transpose("model", ...).values, dtype=float).reshape(len(mods), -1)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(vals)
        score = np.where(ok.any(1), np.where(ok, vals, 0).sum(1) / np.maximum(ok.sum(1), 1), -np.inf)
    order = sorted(range(len(mods)), key=lambda i: (-score[i], str(mods[i])))
    return [str(mods[i]) for i in order]


def cap_models(
    ds: xr.Dataset, dsets: Sequence[str], mods: Sequence[str], limit: int
) -> tuple[list[str], str]:
    """At most ``limit`` models, the best by recall at the shared threshold, kept in Dataset order.

    Returns the models to draw and a note ("showing 8 of 300 models: …"), empty when none is left out.
    """
    limit = max(int(limit), 1)
    if len(mods) <= limit:
        return list(mods), ""
    keep = set(rank_models(ds, dsets, mods)[:limit])
    theta = fmt_theta(options_of(ds).threshold)
    note = (f"showing {limit} of {len(mods)} models: the best {limit} by recall at threshold {theta} "
            "(pass models=[...] to choose)")
    return [m for m in mods if m in keep], note


def zoom_limits(
    values: Any, *, top: float = 1.0, step: float = 0.05, floor_below: float = 0.3
) -> tuple[float, float]:
    """Axis limits for rates in [0, top] that zoom on the data: from a round value below the
    smallest one to just above ``top``; from 0 when the data reach down to ``floor_below``.

    >>> [round(v, 3) for v in zoom_limits([0.91, 0.97])]
    [0.85, 1.006]
    >>> zoom_limits([0.2, 0.9])
    (0.0, 1.04)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, top * 1.04
    lo, hi = float(v.min()), float(v.max())
    pad = max(0.02, 0.1 * (hi - lo))
    start = np.floor((lo - pad) / step) * step
    if start <= floor_below:
        start = 0.0
    return float(start), float(top + 0.04 * (top - start))
