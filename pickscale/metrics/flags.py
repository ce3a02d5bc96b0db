"""SPEC §5's two rules on the residuals at the shared threshold, kept as numbers where they fire.

The concentration rule (:func:`pickscale.metrics.timing.concentrated`) and the grid rule
(:func:`pickscale.metrics.grid.on_grid`) read every pair of a (dataset, model, phase) stream.  Their answer
is what a run warns about and records (``data_quality``); an extension whose new part adds no pair to a stored
stream (new models, new datasets: SPEC §11) must say the same of that stream without reading its pairs again.
So the results keep, per stream, what the rules found, **only where a rule fires** (0 elsewhere):

- ``concentrated_residual`` (ns) and ``concentrated_count``: the value the residuals are concentrated on and how
  many equal it;
- ``grid_step`` and ``grid_offset`` (ns), ``grid_count`` and ``grid_values``: the step, the offset, how many
  residuals are on it and how many distinct values they take.

Only where a rule fires, because only there are these numbers the same however the pairs were held: a stream
timed in parts (:mod:`pickscale.engine.ranged`) knows the runner-up value only when it could stop the rule.
Together with ``n_pairs`` at the shared threshold they give back the rules' inputs
(:func:`rule_inputs`), from which the rules give the same answers and the same words.

Numpy only.

Examples
--------
>>> mode = {"n": np.array([25, 30]), "residual_ns": np.array([0, 5]), "count": np.array([18, 9]),
...         "second": np.array([3, 8])}
>>> grid = {name: np.zeros(2, np.int64) for name in GRID_NAMES}
>>> kept = flag_facts(mode, grid)
>>> kept["concentrated_count"].tolist(), kept["concentrated_residual"].tolist()   # (9 of 30: no)
([18, 0], [0, 0])
>>> again, _ = rule_inputs(kept, np.array([25, 30]))
>>> [concentrated({k: int(v[i]) for k, v in again.items()}) for i in range(2)]
[True, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .grid import GRID_NAMES, on_grid
from .timing import concentrated

__all__ = ["FLAG_NAMES", "flag_facts", "rule_inputs", "keeps_flags"]

#: The kept numbers (int64 each, on the streams' axes), in the Dataset's order.
FLAG_NAMES: tuple[str, ...] = ("concentrated_residual", "concentrated_count", "grid_step", "grid_offset",
                               "grid_count", "grid_values")

#: Which key of the rules' inputs each kept number is (``mode`` for the concentration, ``grid`` for the grid).
_SOURCE = {"concentrated_residual": ("mode", "residual_ns"), "concentrated_count": ("mode", "count"),
           "grid_step": ("grid", "step_ns"), "grid_offset": ("grid", "offset_ns"), "grid_count": ("grid", "count"),
           "grid_values": ("grid", "values")}


def keeps_flags(results: Any) -> bool:
    """Whether results (a Dataset, or any mapping of variables) keep the rules' numbers: results written before
    they were kept have none."""
    return all(name in results for name in FLAG_NAMES)


def flag_facts(mode: dict[str, np.ndarray], grid: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The kept numbers of every stream: ``mode`` and ``grid`` as :func:`pickscale.metrics.timing.lay_out` gives
    them (arrays of one shape, one cell a stream), 0 wherever the rule does not fire."""
    shape = np.shape(mode["n"])
    out = {name: np.zeros(shape, np.int64) for name in FLAG_NAMES}
    for cell in np.ndindex(*shape):
        sides = {"mode": {k: int(v[cell]) for k, v in mode.items()},
                 "grid": {k: int(v[cell]) for k, v in grid.items()}}
        fires = {"mode": concentrated(sides["mode"]), "grid": on_grid(sides["grid"])}
        for name, (side, key) in _SOURCE.items():
            if fires[side]:
                out[name][cell] = sides[side][key]
    return out


def rule_inputs(kept: dict[str, np.ndarray], n: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The rules' inputs (``mode``, ``grid``) from the kept numbers and the pairs at the shared threshold ``n``:
    where a rule fired, what it read (the runner-up value as 0: it was below the rule's bound); elsewhere
    inputs on which it does not fire."""
    n = np.asarray(n, dtype=np.int64)
    mode = {"n": n.copy(), "residual_ns": np.zeros(n.shape, np.int64), "count": np.zeros(n.shape, np.int64),
            "second": np.zeros(n.shape, np.int64)}
    grid = {name: np.zeros(n.shape, np.int64) for name in GRID_NAMES}
    grid["n"] = n.copy()
    sides = {"mode": mode, "grid": grid}
    for name, (side, key) in _SOURCE.items():
        sides[side][key] = np.asarray(kept[name], dtype=np.int64).copy()
    return mode, grid
