"""The residual pairs' checks (SPEC §15), a batch of pairs at a time: the answer of the whole store's check
whatever the batches, with the client holding one batch, not every pair (issue 22: ``extend`` reads a store's
pairs this way, checking each batch as it is cut into streams).

What is checked: indices in range, of present models at scored stations; confidences in ``[floor, 1]``;
residuals within ``residual_tol``; the canonical order (dataset, model, phase, station, residual, conf[,
group]) -- across batches too, each batch compared with the last pair of the one before; and, once every
batch is in (:meth:`PairCheck.finish`), never more pairs at a threshold than emitted picks or arrivals at any
station (a histogram of the stations' pairs by the thresholds they survive, summed batch by batch: the size of
the per-station results, never of the pairs).

Examples
--------
>>> import pickscale, pandas as pd, pathlib, tempfile
>>> from pickscale.store.consistency.attributes import stored_options
>>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0]})
>>> picks = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.1, 20.1], "conf": [0.9, 0.8]})
>>> ds = pickscale.score(ref, picks)
>>> check = PairCheck(pathlib.Path("demo.zarr"), ds, stored_options(pathlib.Path("demo.zarr"), ds.attrs))
>>> for lo in range(ds.sizes["pair"]):  # one pair a batch
...     _ = check.add(lo, {name: ds[name].values[lo:lo + 1] for name in check.names})
>>> check.finish()  # nothing to refuse
>>> check.add(2, {name: ds[name].values[:1] for name in check.names})  # the first pair again, after the last
Traceback (most recent call last):
...
pickscale.errors.StoreError: results store demo.zarr: variable 'pair_dataset' pairs must be in canonical order ...
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..segments import segments_of
from .counts import _on
from .refusal import _refuse

if TYPE_CHECKING:
    from ...options import Options

__all__ = ["PairCheck", "check_pairs_whole", "PAIR_NAMES"]

#: The stored pair variables a check reads (``pair_group`` too with ``group_by``), in canonical-order rank.
PAIR_NAMES = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


class PairCheck:
    """SPEC §15's pair checks of one store, fed a batch of pairs at a time (:meth:`add`), then :meth:`finish`.

    ``ds``: the store's results (every variable but the pairs is read from it; the pairs come in the batches).
    Raises :class:`~pickscale.errors.StoreError` at the first batch that breaks a rule, naming the pairs by
    their position in the store.
    """

    def __init__(self, store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
        self.store, self.ds, self.options = store, ds, options
        self.nd, self.nm, self.ns = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["station"]
        self.nt = ds.sizes["threshold"]
        self.grouped = options.group_by is not None
        self.names = (*PAIR_NAMES, "pair_group") if self.grouped else PAIR_NAMES
        self._present = np.asarray(ds["model_present"].values)
        self._scored = np.asarray(ds["station_scored"].values)
        self._hist = np.zeros(self.nd * self.nm * 2 * self.ns * (self.nt + 1), dtype=np.int64)
        self._last: list[np.ndarray] | None = None  # the previous batch's last pair (the order across batches)
        self._seen = 0
        # Each segment (a run's pairs, then each extension's: SPEC §11) is in canonical order on its own.
        lengths = segments_of(ds.attrs, ds.sizes.get("pair", 0))
        self._starts = np.cumsum([0, *lengths])[1:-1] if lengths else np.zeros(0, dtype=np.int64)

    def _refuse(self, name: str, bad: np.ndarray, what: str, lo: int) -> None:
        hi = lo + bad.size
        where = {"pair": lo} if (lo or hi < self.ds.sizes.get("pair", hi)) else None
        _refuse(self.store, self.ds, name, bad, what + (f" (among pairs {lo}–{hi - 1})" if where else ""),
                dims=("pair",), offsets=where)

    def add(self, lo: int, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Check the pairs ``lo, lo + 1, …`` (``batch[name]``: those rows of each of :attr:`names`); returns what
        the checks computed of them, for a caller that cuts the same batch: the four indices as int64 and the
        residuals in integer nanoseconds (``residual_ns``, as :func:`pickscale.results.variables.residual_ns`
        gives them)."""
        if lo != self._seen:
            raise RuntimeError(f"internal error: pairs checked from {lo}, after {self._seen}")
        options = self.options
        d = np.asarray(batch["pair_dataset"]).astype(np.int64)
        m = np.asarray(batch["pair_model"]).astype(np.int64)
        p = np.asarray(batch["pair_phase"]).astype(np.int64)
        s = np.asarray(batch["pair_station"]).astype(np.int64)
        self._seen += d.size
        derived = {"pair_dataset": d, "pair_model": m, "pair_phase": p, "pair_station": s}
        if not d.size:
            return {**derived, "residual_ns": np.zeros(0, np.int64)}
        bounds = {"pair_dataset": (d, self.nd), "pair_model": (m, self.nm), "pair_phase": (p, 2),
                  "pair_station": (s, self.ns)}
        group = np.asarray(batch["pair_group"]) if self.grouped else None
        if group is not None:
            bounds["pair_group"] = (group.astype(np.int64), self.ds.sizes.get("group", 0))
        for name, (index, size) in bounds.items():
            self._refuse(name, (index < 0) | (index >= size),
                         f"must be an index in [0, {size}) (into the {name.removeprefix('pair_')} coordinate)", lo)
        self._refuse("pair_model", ~self._present[d, m], "must be a model present in the pair's dataset", lo)
        self._refuse("pair_station", ~self._scored[d, s], "must be a station scored in the pair's dataset", lo)
        conf = np.asarray(batch["pair_conf"])
        self._refuse("pair_conf", ~((conf >= options.floor) & (conf <= 1.0)),
                     f"must lie in [floor = {options.floor!r}, 1] (pairs are of picks at or above the floor)", lo)
        residual = np.asarray(batch["residual"])
        with np.errstate(invalid="ignore"):
            ns_ = np.round(residual * 1e9)
        self._refuse("residual", ~(np.abs(ns_) <= options.residual_tol_ns),
                     f"must be a finite residual within residual_tol = {options.residual_tol!r} s", lo)
        # The canonical order (results/assembly.py): (dataset, model, phase, station, residual, conf, group),
        # each batch's first pair compared with the last of the batch before.  The four indices, in range (refused
        # above otherwise), ordered as one number: their cell.
        cell = ((d * self.nm + m) * 2 + p) * self.ns + s
        columns = [cell, residual, conf, *([group] if group is not None else [])]
        with_last = [np.r_[last, c] for last, c in zip(self._last, columns)] if self._last is not None else columns
        if with_last[0].size > 1:
            undecided = np.ones(with_last[0].size - 1, dtype=bool)
            wrong = np.zeros(with_last[0].size - 1, dtype=bool)
            for c in with_last:
                wrong |= undecided & (c[:-1] > c[1:])
                undecided &= c[:-1] == c[1:]
            # (the later pair of each comparison: where a segment begins, the order begins again)
            later = np.arange(wrong.size) + (lo if self._last is not None else lo + 1)
            wrong &= ~np.isin(later, self._starts)
            self._refuse("pair_dataset", wrong if self._last is not None else np.r_[False, wrong],
                         "pairs must be in canonical order (dataset, model, phase, station, residual, conf) "
                         "within each segment", lo)
        self._last = [c[-1:] for c in columns]
        # The thresholds each pair survives, counted per (dataset, model, phase, station): checked in finish.
        survives = np.searchsorted(np.asarray(options.grid), conf, side="right")
        self._hist += np.bincount(cell * (self.nt + 1) + survives, minlength=self._hist.size)
        return {**derived, "residual_ns": ns_.astype(np.int64)}  # (finite: refused above otherwise)

    def finish(self) -> None:
        """Each pair is one emitted pick and one arrival: never more pairs at a threshold than either, per
        station (over every batch given)."""
        ds = self.ds
        hist = self._hist.reshape(self.nd, self.nm, 2, self.ns, self.nt + 1)
        # pairs surviving threshold t: those with survives > t
        at = np.flip(np.cumsum(np.flip(hist, axis=-1), axis=-1), axis=-1)[..., 1:]  # (d, m, p, s, t)
        pairs_at = np.moveaxis(at, 3, 4)  # (dataset, model, phase, threshold, station), as emitted
        dmpts = ("dataset", "model", "phase", "threshold", "station")
        _refuse(self.store, ds, "residual", pairs_at > ds.variables["emitted"].values,
                "has more pairs than emitted picks at a threshold (each pair is one pick)", dims=dmpts)
        _refuse(self.store, ds, "residual", pairs_at > _on(ds, "n_reference", dmpts),
                "has more pairs than arrivals (each pair is one arrival)", dims=dmpts)


#: Pairs read per batch by :func:`check_pairs_whole` (and by ``extend``): ~100 bytes a pair while checked.
BATCH_ROWS = 2**20


def check_pairs_whole(store: pathlib.Path, ds: xr.Dataset, options: Options, *, rows: int = BATCH_ROWS) -> None:
    """Every pair of ``ds`` checked, ``rows`` at a time (pairs read lazily are read a batch at a time)."""
    check = PairCheck(store, ds, options)
    n = ds.sizes.get("pair", 0)
    for lo in range(0, n, rows):
        check.add(lo, {name: np.asarray(ds[name].isel(pair=slice(lo, lo + rows)).values) for name in check.names})
    check.finish()
