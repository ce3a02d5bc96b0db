"""Edits of a saved store, as an adversary makes them: the array changed, then the manifest written again
(:func:`pickscale.store.manifest.write_manifest`), so every hash matches and only the consistency checks can
tell."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import zarr

from pickscale.store.manifest import write_manifest


def edit_array(store: Path, name: str, change: Callable[[np.ndarray], None]) -> None:
    array = zarr.open_array(store / name, mode="r+", zarr_format=3)
    values = array[...]
    change(values)
    array[...] = values
    write_manifest(store)
