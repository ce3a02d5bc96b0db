"""Data-quality flags of a run (SPEC §5): the warnings that change how the timing numbers read.

Three flags, each from the pairs' statistics at the shared threshold (what the engine computes where the
pairs are: :func:`pickscale.metrics.timing.pair_statistics`), never from the pairs themselves:

- **concentrated residuals** (per model; :func:`pickscale.results.derived.concentration_warnings` words it):
  a spike at one residual;
- **picks at a fixed grid** (per model, :func:`grid_warnings`): the residuals lie on a lattice of a step
  of 0.05–0.5 s (:func:`pickscale.metrics.grid.residual_grid`);
- **a reference at a fixed offset into windows** (per dataset and phase, :func:`grid_warnings`): some
  model's residuals lie on its grid there, so every arrival sits at one point of the grid of the window
  it is in.

:func:`quality_flags` gives them as records (``ds.attrs["data_quality"]``, which the verdict reads:
:mod:`pickscale.report.verdict`).

Examples
--------
>>> import numpy as np, xarray as xr
>>> ds = xr.Dataset(coords={"dataset": ["d"], "model": ["A"], "phase": ["P", "S"]})
>>> grid = {"n": np.array([[[30, 0]]]), "step_ns": np.array([[[100_000_000, 0]]]),
...         "offset_ns": np.array([[[0, 0]]]), "count": np.array([[[30, 0]]]), "values": np.array([[[5, 0]]])}
>>> [f["flag"] for f in quality_flags(ds, None, grid)]
['pick_grid', 'reference_offset']
>>> print(grid_warnings(ds, grid)[0][:72])
A: picks at a fixed grid: residuals at the shared threshold on a 0.1 s g
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ..metrics import grid as lattice
from ..metrics import timing

__all__ = ["quality_flags", "grid_warnings"]


def _labels(ds: xr.Dataset) -> tuple[list[str], list[str], list[str]]:
    datasets, models, phases = (list(map(str, ds[c].values)) for c in ("dataset", "model", "phase"))
    return datasets, models, phases


def _one(arrays: dict[str, np.ndarray], d: int, m: int, p: int) -> dict[str, int]:
    return {name: int(values[d, m, p]) for name, values in arrays.items()}


def _grid_note(g: dict[str, int]) -> str:
    step = g["step_ns"] / 1e9
    return (f"{g['count'] / g['n']:.0%} of {g['n']} congruent to {g['offset_ns'] / 1e9:+.3f} s modulo {step:g} s, "
            f"{g['values']} distinct values")


def quality_flags(ds: xr.Dataset, mode: dict[str, np.ndarray] | None,
                  grid: dict[str, np.ndarray] | None) -> list[dict[str, Any]]:
    """The data-quality flags as records: ``flag``, ``dataset``, ``phase``, ``model`` ("" for the reference's)
    and ``note`` (the numbers behind it); ``"pick_grid"`` also ``step`` (seconds).

    ``flag`` is ``"concentrated"`` (SPEC §5, :func:`pickscale.metrics.timing.concentrated`), ``"pick_grid"``
    (:func:`pickscale.metrics.grid.on_grid`) or ``"reference_offset"`` (a (dataset, phase) where some model's
    residuals are on a grid: ``note`` names the models).  In coordinate order: datasets, phases, models.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (their coordinates name the datasets, models and phases).
    mode, grid : dict or None
        :func:`pickscale.results.derived.pair_statistics_of`'s ``"mode"`` and ``"grid"`` arrays (dataset,
        model, phase); None: not known (no flag of that kind).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset(coords={"dataset": ["d"], "model": ["A"], "phase": ["P", "S"]})
    >>> mode = {"n": np.array([[[25, 0]]]), "residual_ns": np.array([[[0, 0]]]),
    ...         "count": np.array([[[18, 0]]]), "second": np.array([[[3, 0]]])}
    >>> quality_flags(ds, mode, None)
    [{'flag': 'concentrated', 'dataset': 'd', 'phase': 'P', 'model': 'A', 'note': '72% of 25 at +0.000 s'}]
    """
    datasets, models, phases = _labels(ds)
    out: list[dict[str, Any]] = []
    for d, p in np.ndindex(len(datasets), len(phases)):
        gridded = []
        for m, model in enumerate(models):
            where = {"dataset": datasets[d], "phase": phases[p], "model": model}
            if mode is not None:
                one = _one(mode, d, m, p)
                if timing.concentrated(one):
                    out.append({"flag": "concentrated", **where,
                                "note": f"{one['count'] / one['n']:.0%} of {one['n']} at "
                                        f"{one['residual_ns'] / 1e9:+.3f} s"})
            if grid is not None:
                g = _one(grid, d, m, p)
                if lattice.on_grid(g):
                    gridded.append(f"{model} ({g['step_ns'] / 1e9:g} s)")
                    out.append({"flag": "pick_grid", **where, "step": g["step_ns"] / 1e9, "note": _grid_note(g)})
        if gridded:
            out.append({"flag": "reference_offset", "dataset": datasets[d], "phase": phases[p], "model": "",
                        "note": f"the residuals of {', '.join(gridded)} lie on a grid"})
    return out


def grid_warnings(ds: xr.Dataset, grid: dict[str, np.ndarray]) -> list[str]:
    """SPEC §5, "Residuals on a grid": one message per model whose picks are at a fixed grid somewhere, then
    one per (dataset, phase) whose reference sits at a fixed offset into windows.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (their coordinates name the datasets, models and phases).
    grid : dict
        :func:`pickscale.metrics.grid.residual_grid` per (dataset, model, phase), as arrays
        (:func:`pickscale.results.derived.pair_statistics_of`'s ``"grid"``).

    Returns
    -------
    list of str
        The models' messages (coordinate order), then the reference's (datasets, then phases).
    """
    flags = quality_flags(ds, None, grid)
    messages = []
    for model in map(str, ds["model"].values):
        mine = [f for f in flags if f["flag"] == "pick_grid" and f["model"] == model]
        where = [f"{f['dataset']} {f['phase']} ({f['note']})" for f in mine]
        if where:
            steps = sorted({f["step"] for f in mine})
            step = "/".join(f"{s:g}" for s in steps)
            messages.append(
                f"{model}: picks at a fixed grid: residuals at the shared threshold on a {step} s grid in "
                f"{', '.join(where)}: its pick times fall on a fixed time step (a picker stepping its windows by "
                f"{step} s, or data sampled at {1 / max(steps):g} Hz or less) and the reference on the same grid, "
                "so medae, bias, p10/p90, iqr and within_0.1 read that grid rather than the picker's timing "
                "(SPEC §5, \"Residuals on a grid\").")
    for f in flags:
        if f["flag"] == "reference_offset":
            messages.append(
                f"dataset {f['dataset']!r} {f['phase']}: reference at a fixed offset into windows: "
                f"{f['note']} (their picks' step), so every {f['phase']} arrival sits at one point of the "
                "grid of the window it is in -- labels placed at a fixed offset into the windows (e.g. exactly "
                "30.00 s), not read off the waveform; timing statistics against it read that placement "
                "(SPEC §5, \"Residuals on a grid\").")
    return messages
