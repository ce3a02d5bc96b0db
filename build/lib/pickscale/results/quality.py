"""Data-quality flags of a run (SPEC §5): the warnings that change how the timing numbers read.

Three flags.  **Concentrated residuals** (per model; :func:`pickscale.results.derived.concentration_warnings`
words it): a spike at one residual, from the pairs' statistics at the shared threshold.  The other two are
read, without windows, from the same statistics (:func:`pickscale.metrics.timing.pair_statistics`):

- **picks at a fixed grid** (per model, :func:`grid_warnings`): the residuals lie on a lattice of a step
  of 0.05–0.5 s (:func:`pickscale.metrics.grid.residual_grid`);
- **a reference at a fixed offset into windows** (per dataset and phase, :func:`grid_warnings`): some
  model's residuals lie on its grid there, so every arrival sits at one point of the grid of the window
  it is in.

With the windows each model was run on (a coverage), both are read off the inputs directly instead
(:mod:`pickscale.scope.placement`, kept in ``attrs["coverage"]["placement"]``): the picks' offsets into
their windows on a grid (:func:`pickscale.metrics.grid.offset_grid`), whatever the reference does, and the
arrivals at one offset into their windows (:func:`pickscale.metrics.grid.fixed_offset`), whatever the picks do.

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
>>> none = {"n": 0, "step_ns": 0, "offset_ns": 0, "count": 0, "values": 0}
>>> placement = {"reference": [{"dataset": "d", "phase": "P", "n": 40, "offset_ns": 30 * 10**9, "count": 40,
...                             "grid": none}], "picks": [{"dataset": "d", "model": "A", "phase": "P", **none}]}
>>> [(f["flag"], f["note"]) for f in quality_flags(ds, None, grid, placement)]  # the windows decide
[('reference_offset', '100% of 40 arrivals at +30.000 s from the start of their window')]
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


def _grid_note(g: dict[str, int], what: str = "", where: str = "") -> str:
    step = g["step_ns"] / 1e9
    return (f"{g['count'] / g['n']:.0%} of {g['n']}{' ' + what if what else ''} congruent to "
            f"{g['offset_ns'] / 1e9:+.3f} s modulo {step:g} s{where}, {g['values']} distinct values")


def quality_flags(ds: xr.Dataset, mode: dict[str, np.ndarray] | None, grid: dict[str, np.ndarray] | None,
                  placement: dict[str, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """The data-quality flags as records: ``flag``, ``dataset``, ``phase``, ``model`` ("" for the reference's)
    and ``note`` (the numbers behind it); ``"pick_grid"`` also ``step`` (seconds); each also ``source``:
    ``"residuals"`` or ``"windows"``.

    ``flag`` is ``"concentrated"`` (SPEC §5, :func:`pickscale.metrics.timing.concentrated`), ``"pick_grid"``
    or ``"reference_offset"``: with ``placement``, the picks' offsets into their windows on a grid
    (:func:`pickscale.metrics.grid.on_grid` of their :func:`~pickscale.metrics.grid.offset_grid`) and the
    arrivals at a fixed offset into them (:func:`pickscale.metrics.grid.at_fixed_offset`); without, from
    ``grid``: a model's residuals on a grid, and a (dataset, phase) where some model's are (``note`` names
    the models).  With windows, the reference is also flagged when its offsets are on a grid (not one
    offset, but one point of a grid of 0.05–0.5 s from each window's start: labels rounded to that step).
    In coordinate order: datasets, phases, models.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (their coordinates name the datasets, models and phases).
    mode, grid : dict or None
        :func:`pickscale.results.derived.pair_statistics_of`'s ``"mode"`` and ``"grid"`` arrays (dataset,
        model, phase); None: not known (no flag of that kind).
    placement : dict or None
        ``attrs["coverage"]["placement"]`` of a run with windows (:mod:`pickscale.scope.placement`).

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
    [{'flag': 'concentrated', 'dataset': 'd', 'phase': 'P', 'model': 'A', 'note': '72% of 25 at +0.000 s',
      'source': 'residuals'}]
    """
    datasets, models, phases = _labels(ds)
    windows = _placed(placement)
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
                                        f"{one['residual_ns'] / 1e9:+.3f} s", "source": "residuals"})
            g = (windows[1].get((datasets[d], model, phases[p])) if windows is not None
                 else _one(grid, d, m, p) if grid is not None else None)
            if g is not None and lattice.on_grid(g):
                gridded.append(f"{model} ({g['step_ns'] / 1e9:g} s)")
                out.append({"flag": "pick_grid", **where, "step": g["step_ns"] / 1e9,
                            "note": _grid_note(g, *(("picks", " from the start of their window") if windows
                                                    is not None else ())),
                            "source": "windows" if windows is not None else "residuals"})
        reference = {"flag": "reference_offset", "dataset": datasets[d], "phase": phases[p], "model": ""}
        if windows is not None:
            r = windows[0].get((datasets[d], phases[p]))
            if r is not None and lattice.at_fixed_offset(r):
                out.append({**reference, "note": f"{r['count'] / r['n']:.0%} of {r['n']} arrivals at "
                                                 f"{r['offset_ns'] / 1e9:+.3f} s from the start of their window",
                            "source": "windows"})
            elif r is not None and lattice.on_grid(r["grid"]):  # not one offset, but one grid point modulo a step
                out.append({**reference, "note": _grid_note(r["grid"], "arrivals", " from the start of their window"),
                            "source": "windows"})
        elif gridded:
            out.append({**reference, "note": f"the residuals of {', '.join(gridded)} lie on a grid",
                        "source": "residuals"})
    return out


def _placed(placement: dict[str, list[dict[str, Any]]] | None
            ) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str, str], dict[str, int]]] | None:
    """The windows' records by key: (dataset, phase) for the reference, (dataset, model, phase) for picks."""
    if not placement:
        return None
    numbers = lambda r, names: {k: int(r[k]) for k in names}  # noqa: E731
    reference = {(str(r["dataset"]), str(r["phase"])): {**numbers(r, ("n", "offset_ns", "count")),
                                                        "grid": numbers(r["grid"], lattice.GRID_NAMES)}
                 for r in placement.get("reference", [])}
    picks = {(str(r["dataset"]), str(r["model"]), str(r["phase"])): numbers(r, lattice.GRID_NAMES)
             for r in placement.get("picks", [])}
    return reference, picks


def grid_warnings(ds: xr.Dataset, grid: dict[str, np.ndarray] | None,
                  placement: dict[str, list[dict[str, Any]]] | None = None) -> list[str]:
    """SPEC §5, "Residuals on a grid": one message per model whose picks are at a fixed grid somewhere, then
    one per (dataset, phase) whose reference sits at a fixed offset into windows.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (their coordinates name the datasets, models and phases).
    grid : dict or None
        :func:`pickscale.metrics.grid.residual_grid` per (dataset, model, phase), as arrays
        (:func:`pickscale.results.derived.pair_statistics_of`'s ``"grid"``).
    placement : dict or None
        With windows: where the picks and arrivals sit in them (:func:`quality_flags`); then it decides.

    Returns
    -------
    list of str
        The models' messages (coordinate order), then the reference's (datasets, then phases).
    """
    flags = quality_flags(ds, None, grid, placement)
    messages = []
    for model in map(str, ds["model"].values):
        mine = [f for f in flags if f["flag"] == "pick_grid" and f["model"] == model]
        where = [f"{f['dataset']} {f['phase']} ({f['note']})" for f in mine]
        if not where:
            continue
        steps = sorted({f["step"] for f in mine})
        step = "/".join(f"{s:g}" for s in steps)
        cause = (f"(a picker stepping its windows by {step} s, or data sampled at {1 / max(steps):g} Hz or less)")
        if mine[0]["source"] == "windows":
            messages.append(
                f"{model}: picks at a fixed grid: its picks at the shared threshold lie on a {step} s grid from the "
                f"start of their windows in {', '.join(where)}: its pick times fall on a fixed time step {cause}, "
                f"so no timing statistic resolves less than {step} s, and where the reference sits on the same "
                "grid medae, bias, p10/p90, iqr and fraction_within_0.1 read that grid rather than the picker's "
                "timing (SPEC §5, \"Residuals on a grid\").")
        else:
            messages.append(
                f"{model}: picks at a fixed grid: residuals at the shared threshold on a {step} s grid in "
                f"{', '.join(where)}: its pick times fall on a fixed time step {cause} and the reference on the "
                "same grid, so medae, bias, p10/p90, iqr and fraction_within_0.1 read that grid rather than the "
                "picker's timing (SPEC §5, \"Residuals on a grid\").")
    for f in flags:
        if f["flag"] != "reference_offset":
            continue
        if f["source"] == "windows":
            how = f"{f['note']}, so the {f['phase']} labels were placed at fixed offsets into the windows"
        else:
            how = (f"{f['note']} (their picks' step), so every {f['phase']} arrival sits at one point of the grid "
                   "of the window it is in -- labels placed at a fixed offset into the windows (e.g. exactly "
                   "30.00 s)")
        messages.append(
            f"dataset {f['dataset']!r} {f['phase']}: reference at a fixed offset into windows: {how}, not read "
            "off the waveform; timing statistics against it read that placement, and a picker that learned it "
            "reads as better timed than it is (SPEC §5, \"Residuals on a grid\").")
    return messages
