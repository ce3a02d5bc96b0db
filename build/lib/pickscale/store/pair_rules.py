"""SPEC §15's checks of one batch of residual pairs, on its own: numpy only, run where the batch is read.

An extension's workers read the stored pairs a batch at a time (:mod:`pickscale.engine.stored_batches`) and check
each with :meth:`PairRules.check` -- indices in range, of present models at scored stations, confidences and
residuals in range, the canonical order within the batch -- while the client makes the checks across batches
from what each reports (:class:`BatchFacts`: its first and last pairs, its pairs per station and level) in
:class:`pickscale.store.consistency.PairCheck`.  A refusal names the pairs by their position in the store.

Examples
--------
>>> import pickscale, pandas as pd
>>> from pickscale.store.consistency import stored_options
>>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0]})
>>> picks = ref.assign(time=[10.1, 20.1], conf=[0.9, 0.8])
>>> ds = pickscale.score(ref, picks)
>>> rules = PairRules("demo.zarr", ds, stored_options("demo.zarr", ds.attrs))
>>> facts = rules.check(0, {name: ds[name].values for name in rules.names})
>>> facts.rows, facts.derived["residual_ns"].tolist()
(2, [100000000, 100000000])
>>> rules.check(0, {name: ds[name].values[::-1] for name in rules.names})
Traceback (most recent call last):
...
pickscale.errors.StoreError: results store demo.zarr: variable 'pair_dataset' pairs must be in canonical order ...
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .segments import segments_of

if TYPE_CHECKING:
    import xarray as xr

    from ..options import Options

__all__ = ["PairRules", "BatchFacts", "ORDER", "PAIR_NAMES", "descending"]

#: The residual pairs' variables (``pair_group`` aside): what a check reads (that one too with ``group_by``), in
#: canonical-order rank, and what an extension merges and the intervals' draws sum.
PAIR_NAMES = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


class PairRules:
    """What SPEC §15's checks of one batch of pairs need of a store (its sizes, present models, scored stations
    and options; nothing that grows with the pairs): sent with each batch where it is read.

    :meth:`check` checks one batch on its own; what spans batches -- the order across their boundaries, the
    pairs per station summed over every batch -- is :class:`PairCheck`'s.
    """

    def __init__(self, store: pathlib.Path | str, ds: xr.Dataset, options: Options) -> None:
        self.store, self.options = store, options
        # (for the messages: the version that wrote the store, and how many pairs it holds)
        self.attrs = {k: ds.attrs[k] for k in ("pickscale_version",) if k in ds.attrs}
        self.n_pairs = int(ds.sizes.get("pair", 0))
        self.nd, self.nm, self.ns = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["station"]
        self.nt = ds.sizes["threshold"]
        self.grouped = options.group_by is not None
        self.n_groups = ds.sizes.get("group", 0)
        self.names = (*PAIR_NAMES, "pair_group") if self.grouped else PAIR_NAMES
        self.present = np.asarray(ds["model_present"].values)
        self.scored = np.asarray(ds["station_scored"].values)
        # Each segment (a run's pairs, then each extension's: SPEC §11) is in canonical order on its own.
        lengths = segments_of(ds.attrs, self.n_pairs)
        self.starts = np.cumsum([0, *lengths])[1:-1] if lengths else np.zeros(0, dtype=np.int64)

    @property
    def cells(self) -> int:
        """The (dataset, model, phase, station, level) cells the pairs are counted in (:attr:`BatchFacts.counts`)."""
        return self.nd * self.nm * 2 * self.ns * (self.nt + 1)

    def refuse(self, name: str, bad: np.ndarray, what: str, lo: int) -> None:
        """Raise naming the pairs from ``lo`` where ``bad`` is True, if any is."""
        if not bad.any():
            return
        import xarray as xr  # lazy: a refusal's message only (a worker that checks a store's pairs loads no xarray)

        from .consistency.refusal import _refuse  # lazy: the same (the refusals' module imports xarray)

        hi = lo + bad.size
        where = {"pair": lo} if (lo or hi < self.n_pairs) else None
        _refuse(self.store, xr.Dataset(attrs=self.attrs), name, bad,  # type: ignore[arg-type]
                what + (f" (among pairs {lo}–{hi - 1})" if where else ""), dims=("pair",), offsets=where)

    def check(self, lo: int, batch: Mapping[str, np.ndarray]) -> BatchFacts:
        """Check the pairs ``lo, lo + 1, …`` (``batch[name]``: those rows of each of :attr:`names`) on their own:
        indices, ranges and the order within the batch; what the checks computed of them, with what the
        checks across batches need (:class:`BatchFacts`)."""
        options = self.options
        d = np.asarray(batch["pair_dataset"]).astype(np.int64)
        m = np.asarray(batch["pair_model"]).astype(np.int64)
        p = np.asarray(batch["pair_phase"]).astype(np.int64)
        s = np.asarray(batch["pair_station"]).astype(np.int64)
        derived = {"pair_dataset": d, "pair_model": m, "pair_phase": p, "pair_station": s}
        if not d.size:
            return BatchFacts(lo, 0, {**derived, "residual_ns": np.zeros(0, np.int64)}, None, None,
                              np.zeros(0, np.int64), np.zeros(0, np.int64))
        bounds = {"pair_dataset": (d, self.nd), "pair_model": (m, self.nm), "pair_phase": (p, 2),
                  "pair_station": (s, self.ns)}
        group = np.asarray(batch["pair_group"]) if self.grouped else None
        if group is not None:
            bounds["pair_group"] = (group.astype(np.int64), self.n_groups)
        for name, (index, size) in bounds.items():
            self.refuse(name, (index < 0) | (index >= size),
                        f"must be an index in [0, {size}) (into the {name.removeprefix('pair_')} coordinate)", lo)
        self.refuse("pair_model", ~self.present[d, m], "must be a model present in the pair's dataset", lo)
        self.refuse("pair_station", ~self.scored[d, s], "must be a station scored in the pair's dataset", lo)
        conf = np.asarray(batch["pair_conf"])
        self.refuse("pair_conf", ~((conf >= options.floor) & (conf <= 1.0)),
                    f"must lie in [floor = {options.floor!r}, 1] (pairs are of picks at or above the floor)", lo)
        residual = np.asarray(batch["residual"])
        with np.errstate(invalid="ignore"):
            ns_ = np.round(residual * 1e9)
        self.refuse("residual", ~(np.abs(ns_) <= options.residual_tol_ns),
                    f"must be a finite residual within residual_tol = {options.residual_tol!r} s", lo)
        # The canonical order (results/assembly.py): (dataset, model, phase, station, residual, conf, group).  The
        # four indices, in range (refused above otherwise), ordered as one number: their cell.
        cell = ((d * self.nm + m) * 2 + p) * self.ns + s
        columns = [cell, residual, conf, *([group] if group is not None else [])]
        if cell.size > 1:
            # (the later pair of each comparison: where a segment begins, the order begins again)
            wrong = descending(columns) & ~np.isin(np.arange(1, cell.size) + lo, self.starts)
            self.refuse("pair_dataset", np.r_[False, wrong], ORDER, lo)
        # The thresholds each pair survives, counted per (dataset, model, phase, station): checked once every
        # batch is in, against the stations' picks and arrivals.
        survives = np.searchsorted(np.asarray(options.grid), conf, side="right")
        counted = np.bincount(cell * (self.nt + 1) + survives, minlength=self.cells)
        at = np.flatnonzero(counted)
        # (the residuals finite: refused above otherwise)
        return BatchFacts(lo, int(d.size), {**derived, "residual_ns": ns_.astype(np.int64)},
                          [c[:1] for c in columns], [c[-1:] for c in columns], at, counted[at])


@dataclass
class BatchFacts:
    """What :meth:`PairRules.check` knows of a batch of ``rows`` pairs from position ``lo``: the checks'
    ``derived`` columns (the four indices as int64, ``residual_ns``; left out where the facts are sent), its
    ``first`` and ``last`` pairs' order keys (None: an empty batch), and its pairs counted per (dataset, model,
    phase, station) and level (the thresholds survived): ``counts`` at the flat cells ``at``."""

    lo: int
    rows: int
    derived: dict[str, np.ndarray]
    first: list[np.ndarray] | None
    last: list[np.ndarray] | None
    at: np.ndarray
    counts: np.ndarray


#: What the order check says of pairs out of order.
ORDER = "pairs must be in canonical order (dataset, model, phase, station, residual, conf) within each segment"


def descending(columns: list[np.ndarray]) -> np.ndarray:
    """Where each row of the columns (compared lexicographically) is greater than the next."""
    undecided = np.ones(columns[0].size - 1, dtype=bool)
    wrong = np.zeros(columns[0].size - 1, dtype=bool)
    for c in columns:
        wrong |= undecided & (c[:-1] > c[1:])
        undecided &= c[:-1] == c[1:]
    return wrong
