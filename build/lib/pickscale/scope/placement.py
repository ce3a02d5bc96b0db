"""Where arrivals and picks sit in the windows of a coverage (SPEC §5, "Residuals on a grid", with windows).

With the windows each model was run on, two data-quality facts are read off the inputs directly, whatever
the other side does: the reference's offsets into the windows (labels placed at a fixed offset, e.g. exactly
30.00 s, rather than read off the waveform) and the picks' offsets (a picker stepping its windows by a fixed
time puts them on a grid from each window's start).  Both are small JSON records kept in the run's
``attrs["coverage"]["placement"]``; :mod:`pickscale.results.quality` turns them into flags and warnings.

Examples
--------
>>> import numpy as np
>>> recs = reference_placement(np.full(25, 30 * 10**9), np.zeros(25, int), np.zeros(25, int), ["d"], ["P"])
>>> {k: recs[0][k] for k in ("dataset", "phase", "n", "offset_ns", "count")}
{'dataset': 'd', 'phase': 'P', 'n': 25, 'offset_ns': 30000000000, 'count': 25}
>>> recs[0]["grid"]["step_ns"]  # one offset: a fixed offset, not a grid
0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..metrics.grid import OFFSET_BINS, fixed_offset, offset_bin, offset_grid, residual_grid, to_ms
from ..options import PHASES

__all__ = ["reference_placement", "pick_placement", "pick_offsets", "summed_offsets"]


def reference_placement(offset_ns: np.ndarray, dataset: np.ndarray, phase: np.ndarray,
                        dataset_names: Sequence[str], phase_names: Sequence[str]) -> list[dict[str, Any]]:
    """Per (dataset, phase) of the scored arrivals: :func:`pickscale.metrics.grid.fixed_offset` of their
    offsets into their windows, and (``grid``) :func:`pickscale.metrics.grid.residual_grid` of the same
    offsets to the nearest ms (every distinct offset counted: the arrivals are on the client), as records
    sorted by dataset, then phase.

    Parameters
    ----------
    offset_ns : numpy.ndarray of int64
        Per scored arrival: ns since the start of its window (:meth:`pickscale.scope.Coverage.offsets`).
    dataset, phase : numpy.ndarray of int
        Per arrival: codes into ``dataset_names`` and ``phase_names``.
    dataset_names, phase_names : sequence of str

    Returns
    -------
    list of dict
        ``dataset``, ``phase``, ``n``, ``offset_ns``, ``count`` and ``grid`` (a dict).
    """
    out = []
    d_names, p_names = [str(d) for d in dataset_names], [str(p) for p in phase_names]
    for d in sorted(range(len(d_names)), key=d_names.__getitem__):
        for p in sorted(range(len(p_names)), key=p_names.__getitem__):
            rows = (dataset == d) & (phase == p)
            if rows.any():
                out.append({"dataset": d_names[d], "phase": p_names[p], **fixed_offset(offset_ns[rows]),
                            "grid": residual_grid(to_ms(offset_ns[rows]))})
    return out


_OFFSET_KEY = ["dataset", "model", "phase", "bin"]


def summed_offsets(rows: pd.DataFrame) -> pd.DataFrame:
    """Offset counts with one row per key, summed, in key order (whatever the parts' order)."""
    out = rows.groupby(_OFFSET_KEY, sort=True, observed=True)["n_picks"].sum().reset_index()
    return out.astype({"dataset": object, "model": object, "phase": np.int8, "bin": np.int64, "n_picks": np.int64})


def pick_offsets(coverage: Any, cells: np.ndarray, combos: pd.DataFrame, combo: np.ndarray, phase: np.ndarray,
                 time: np.ndarray, conf: np.ndarray, thresholds: Sequence[float]) -> pd.DataFrame:
    """A part's picks at the shared threshold (of their phase) inside a window, counted per (dataset, model,
    phase, offset bin): where they sit in their windows.  Run on the workers, in the outline
    (:func:`pickscale.engine.parts.outline`): ``cells`` from :meth:`pickscale.scope.Coverage.cells`,
    ``combos``/``combo`` the part's (dataset, station, model) rows and each pick's row.
    """
    keep = coverage.held(cells) & (conf >= np.asarray(thresholds, dtype=np.float64)[phase.astype(np.int64)])
    rows = np.flatnonzero(keep)
    which = combo[rows].astype(np.int64)
    return summed_offsets(pd.DataFrame({
        "dataset": combos["dataset"].to_numpy(object)[which], "model": combos["model"].to_numpy(object)[which],
        "phase": phase[rows].astype(np.int8),
        "bin": offset_bin(coverage.offsets(cells[rows], time[rows])), "n_picks": np.ones(rows.size, np.int64),
    }))


def pick_placement(offsets: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Per (dataset, model, phase): :func:`pickscale.metrics.grid.offset_grid` of the picks' offsets into
    their windows, as records in key order.

    Parameters
    ----------
    offsets : pandas.DataFrame or None
        The picks at the shared threshold inside a window, counted per ``dataset, model, phase`` (code
        into :data:`pickscale.options.PHASES`) and ``bin`` (:func:`pickscale.metrics.grid.offset_bin`):
        ``n_picks`` (an outline's :attr:`pickscale.engine.parts.PickPart.offsets`).

    Returns
    -------
    list of dict
        ``dataset``, ``model``, ``phase`` and :data:`pickscale.metrics.grid.GRID_NAMES`.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "d", "model": "m", "phase": 0, "bin": [0, 100, 200, 300] * 6,
    ...                      "n_picks": 1})
    >>> rec = pick_placement(rows)[0]
    >>> rec["model"], rec["phase"], rec["n"], rec["step_ns"], rec["values"]
    ('m', 'P', 24, 100000000, 4)
    """
    if offsets is None or offsets.empty:
        return []
    out = []
    key = ["dataset", "model", "phase"]
    for (d, m, p), rows in offsets.groupby(key, sort=True):
        counts = np.bincount(rows["bin"].to_numpy(np.int64), weights=rows["n_picks"].to_numpy(np.int64),
                             minlength=OFFSET_BINS).astype(np.int64)
        out.append({"dataset": str(d), "model": str(m), "phase": PHASES[int(p)], **offset_grid(counts)})
    return out
