"""Edits of a saved store, as an adversary makes them: the array changed, then the manifest written again
(:func:`pickscale.store.manifest.write_manifest`), so every hash matches and only the consistency checks can
tell."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from pickscale.results.variables import RANKED, RUNS
from pickscale.store.manifest import write_manifest


def edit_array(store: Path, name: str, change: Callable[[np.ndarray], None]) -> None:
    array = zarr.open_array(store / name, mode="r+", zarr_format=3)
    values = array[...]
    change(values)
    array[...] = values
    write_manifest(store)


def edit_attrs(store: Path, change: Callable[[dict], None]) -> None:
    """The store's root attributes changed (``change`` edits them in place), then the manifest written again."""
    meta_file = store / "zarr.json"
    meta = json.loads(meta_file.read_text())
    change(meta["attributes"])
    meta_file.write_text(json.dumps(meta))
    write_manifest(store)


def unranked(results: xr.Dataset) -> xr.Dataset:
    """``results`` as a store written before stores kept their pairs ranked and their exact sums (SPEC §9):
    without ``ranked_*``, ``residual_sums`` and ``attrs["pair_runs"]`` -- what an extension reads every stored
    pair of."""
    out = results.drop_vars([*RANKED, "residual_sums", "residual_term"], errors="ignore")
    out.attrs = {k: v for k, v in results.attrs.items() if k != RUNS}
    return out


def chunk_reads(monkeypatch) -> list[str]:
    """The pair chunk files this process reads from here on (``Deferred.read``: a worker's reads are its own)."""
    from pickscale.store.checked import Deferred

    seen: list[str] = []
    real = Deferred.read

    def read(self, rel):
        seen.append(rel)
        return real(self, rel)

    monkeypatch.setattr(Deferred, "read", read)
    return seen
