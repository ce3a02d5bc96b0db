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

from ..pair_rules import ORDER, PAIR_NAMES, BatchFacts, PairRules, descending
from .counts import _on
from .refusal import _refuse

if TYPE_CHECKING:
    from ...options import Options

__all__ = ["PairCheck", "check_pairs_whole", "PAIR_NAMES"]


class PairCheck:
    """SPEC §15's pair checks of one store, fed a batch of pairs at a time (:meth:`add`, or :meth:`take` of a
    batch checked elsewhere by :attr:`rules`), then :meth:`finish`.

    ``ds``: the store's results (every variable but the pairs is read from it; the pairs come in the batches).
    Raises :class:`~pickscale.errors.StoreError` at the first batch that breaks a rule, naming the pairs by
    their position in the store.
    """

    def __init__(self, store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
        self.store, self.ds, self.options = store, ds, options
        self.rules = PairRules(store, ds, options)
        self.names = self.rules.names
        self._hist = np.zeros(self.rules.cells, dtype=np.int64)
        self._last: list[np.ndarray] | None = None  # the previous batch's last pair (the order across batches)
        self._seen = 0

    def add(self, lo: int, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Check the pairs ``lo, lo + 1, …`` (``batch[name]``: those rows of each of :attr:`names`); returns what
        the checks computed of them, for a caller that cuts the same batch: the four indices as int64 and the
        residuals in integer nanoseconds (``residual_ns``, as :func:`pickscale.results.variables.residual_ns`
        gives them)."""
        facts = self.rules.check(lo, batch)
        self.take(facts)
        return facts.derived

    def take(self, facts: BatchFacts) -> None:
        """The checks across batches of a batch :attr:`rules` checked (in order: each batch follows the last)."""
        lo = facts.lo
        if lo != self._seen:
            raise RuntimeError(f"internal error: pairs checked from {lo}, after {self._seen}")
        self._seen += facts.rows
        if facts.first is None:
            return
        if self._last is not None and lo not in set(self.rules.starts.tolist()):
            # (each batch's first pair compared with the last of the batch before)
            wrong = descending([np.r_[last, first] for last, first in zip(self._last, facts.first)])
            self.rules.refuse("pair_dataset", wrong, ORDER, lo)
        self._last = facts.last
        self._hist[facts.at] += facts.counts

    def finish(self) -> None:
        """Each pair is one emitted pick and one arrival: never more pairs at a threshold than either, per
        station (over every batch given)."""
        ds, r = self.ds, self.rules
        hist = self._hist.reshape(r.nd, r.nm, 2, r.ns, r.nt + 1)
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
