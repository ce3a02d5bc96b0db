"""The residual pairs of a store opened with its pairs read when used, read where a task runs.

:func:`pickscale.store.open_results` reads every file of a store but the pairs' chunks, which it checks by
name and size and leaves to read when used, each checked then against the manifest it was opened with
(:class:`~pickscale.store.checked.Deferred`).  :class:`PairSource` is what such a reading needs -- the
store's folder, the pair variables' Zarr metadata and their chunk files' manifest entries, a few kB however
many pairs -- so that a task on a worker reads a range of pairs itself, checked as the opener would check
them: an extension's workers read the stored pairs, and the client never holds them (issue 22).

A worker that cannot see the folder (a cluster on other hosts, without the file system the store is on)
raises :class:`NotHere`; the caller then reads the pairs itself.

Examples
--------
>>> import pathlib, tempfile, pandas as pd, pickscale
>>> from pickscale.store import open_results
>>> ref = pd.DataFrame({"station": ["A", "B"], "phase": ["P", "P"], "time": [10.0, 20.0]})
>>> picks = ref.assign(time=[10.1, 19.8], conf=[0.9, 0.8], model="m")
>>> target = pickscale.save(pickscale.score(ref, picks), pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
>>> source = open_results(target).encoding[PAIR_SOURCE]
>>> source.read(("residual", "pair_station"), 0, 2)["residual"].round(3).tolist()
[0.1, -0.2]
>>> source.rows
2
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checked import CheckedStore, Deferred

__all__ = ["PairSource", "NotHere", "PAIR_SOURCE"]

#: The key of a lazily opened store's :class:`PairSource` in its Dataset's ``encoding``.
PAIR_SOURCE = "pickscale_pair_source"


class NotHere(Exception):
    """The store's folder is not on this host's file system: the pairs are to be read where it is."""


@dataclass(frozen=True)
class PairSource:
    """The pair variables of one opened store: ``store`` (its folder), ``metadata`` (each variable's
    ``zarr.json`` bytes, by their path in the store), ``entries`` (the manifest's ``{"size", "sha256"}`` of each
    of their chunk files) and what the opener saw of the store (``identity``, ``identify``: a file that no
    longer matches is then said to be of a store replaced since, not a damaged one)."""

    store: str
    metadata: Mapping[str, bytes]
    entries: Mapping[str, Mapping[str, Any]]
    identity: Any
    identify: Callable[[pathlib.Path], Any] | None

    @property
    def rows(self) -> int:
        """How many pairs the store holds."""
        shapes = [json.loads(meta)["shape"][0] for meta in self.metadata.values()]
        return int(shapes[0]) if shapes else 0

    @property
    def chunk_rows(self) -> int:
        """The pairs in one chunk of the pair variables (the largest, if they differ)."""
        sizes = [json.loads(meta)["chunk_grid"]["configuration"]["chunk_shape"][0] for meta in self.metadata.values()]
        return int(max(sizes, default=1))

    def chunk_rows_of(self, name: str) -> int:
        """The pairs in one chunk of pair variable ``name``."""
        meta = json.loads(self.metadata[f"{name}/zarr.json"])
        return int(meta["chunk_grid"]["configuration"]["chunk_shape"][0])

    def read(self, names: Sequence[str], lo: int, hi: int) -> dict[str, np.ndarray]:
        """Pairs ``lo … hi − 1`` of each variable in ``names``, every chunk file they touch checked whole against
        the manifest (:class:`~pickscale.store.checked.Deferred`: a :class:`~pickscale.errors.StoreError` when it
        differs).  Raises :class:`NotHere` where the store's folder cannot be seen."""
        folder = pathlib.Path(self.store)
        if not os.path.isdir(folder):
            raise NotHere(f"results store {self.store} is not on this host's file system")
        import zarr  # (imported by the task that reads, on a worker)
        memory = CheckedStore(dict(self.metadata), Deferred(folder, self.entries, identity=self.identity,
                                                            identify=self.identify))
        return {name: np.asarray(zarr.open_array(store=memory, path=name, mode="r")[lo:hi]) for name in names}


def pair_source(store: pathlib.Path, files: Mapping[str, bytes], deferred: Deferred,
                names: Sequence[str]) -> PairSource:
    """The :class:`PairSource` of the pair variables ``names`` of a store opened from ``files`` (every file
    read, checked) with ``deferred`` (their chunk files, left to read; a chunk Zarr did not write, all fill
    values, has none)."""
    # (absolute: a worker started in another folder reads the same store)
    return PairSource(store=os.fspath(pathlib.Path(store).absolute()),
                      metadata={f"{n}/zarr.json": files[f"{n}/zarr.json"] for n in names},
                      entries=dict(deferred.entries), identity=deferred.identity, identify=deferred.identify)
