"""What makes a folder a complete pickscale store: the layout version and the root attributes.

A results store is a Zarr v3 group whose root ``zarr.json`` carries
``pickscale_complete`` (``True``, written once every array is on disk),
``pickscale_schema`` (:data:`SCHEMA_VERSION`) and ``pickscale_version``.
The functions here read those attributes straight from the root
``zarr.json``, without opening the store with Zarr.

Examples
--------
>>> import pathlib, tempfile
>>> is_pickscale_store(pathlib.Path(tempfile.mkdtemp()))
False
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from typing import Any

from pickscale import __version__
from pickscale.errors import StoreError

__all__ = [
    "SCHEMA_VERSION",
    "COMPLETE",
    "SCHEMA",
    "VERSION",
    "MARKERS",
    "read_root_meta",
    "root_attrs",
    "read_root_attrs",
    "is_pickscale_store",
    "check_pickscale_attrs",
]

#: Layout version of the results store; bumped when the store's layout changes.
#: 2: the manifest holds a SHA-256 of every file, root ``zarr.json`` included, and is required
#: (schema 1 listed sizes only, without the root metadata; such stores are refused: re-run score).
#: 3: the extent keeps each stretch's arrival spans and the station_key (SPEC §11), and the metrics of a phase
#: without reference arrivals are NaN (SPEC §4), which a store is checked against on opening (SPEC §15).
#: 4: the names before the first release (docs/CHANGELOG.md): ``n_pairs``, ``residual_mean``, ``residual_std``,
#: ``fraction_within`` on dim ``within``, ``matched_budget`` and the dim ``budget``, and the pick-rate days as
#: runs (``rate_run_*``, SPEC §20); a schema-3 store holds the old names and is refused (re-run score).
#: 5: SPEC §5's means exact (sums in integer ns, rounded once), the residual pairs in chunks of a fixed number
#: of rows and, once extended, in segments (``pair_segments``, SPEC §11); a schema-4 store's means are the
#: float sums of before, which its pairs no longer give (refused: re-run score).
SCHEMA_VERSION: int = 5

COMPLETE = "pickscale_complete"
SCHEMA = "pickscale_schema"
VERSION = "pickscale_version"
#: The attributes written only once the store is complete.
MARKERS = (COMPLETE, SCHEMA)


def read_root_meta(store: pathlib.Path) -> bytes:
    """The bytes of a Zarr v3 store's root ``zarr.json``, or StoreError saying what the path is."""
    if not store.is_dir():
        raise StoreError(f"{store} is not a Zarr store: it is a file, not a folder")
    meta_file = store / "zarr.json"
    if not meta_file.is_file():
        if (store / ".zgroup").is_file() or (store / ".zarray").is_file():
            raise StoreError(f"{store} is a Zarr v2 store; pickscale results are Zarr v3 stores")
        raise StoreError(f"{store} is not a Zarr store (it has no zarr.json)")
    try:
        return meta_file.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"{store} is not a readable Zarr store: {meta_file} could not be read ({exc})"
        ) from exc


def root_attrs(store: pathlib.Path, raw: bytes) -> dict[str, Any]:
    """The attributes in the bytes of a root ``zarr.json``."""
    meta_file = store / "zarr.json"
    try:
        meta = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError included
        raise StoreError(
            f"{store} is not a readable Zarr store: {meta_file} could not be read ({exc})"
        ) from exc
    if not isinstance(meta, dict) or meta.get("node_type") != "group":
        raise StoreError(f"{store} is not a Zarr group, so it is not a pickscale results store")
    attrs = meta.get("attributes") or {}
    return attrs if isinstance(attrs, dict) else {}


def read_root_attrs(store: pathlib.Path) -> dict[str, Any]:
    """Root attributes of a Zarr v3 group, read straight from ``zarr.json``."""
    return root_attrs(store, read_root_meta(store))


def is_pickscale_store(path: pathlib.Path) -> bool:
    """A Zarr v3 group whose root attributes carry a pickscale key (complete or not)."""
    try:
        attrs = read_root_attrs(path)
    except StoreError:
        return False
    return any(key in attrs for key in (VERSION, *MARKERS))


def check_pickscale_attrs(store: pathlib.Path, attrs: Mapping[str, Any]) -> None:
    """Refuse root attributes that are not those of a complete store of this schema."""
    if not any(key in attrs for key in (VERSION, *MARKERS)):
        raise StoreError(f"{store} is not a pickscale store (a Zarr store without pickscale attributes)")
    if attrs.get(COMPLETE) is not True:
        raise StoreError(
            f"incomplete store {store}: a run that wrote it did not finish — re-run `pickscale score`"
        )
    schema = attrs.get(SCHEMA)
    if type(schema) is not int or schema != SCHEMA_VERSION:
        earlier = " (an earlier pickscale wrote it)" if type(schema) is int and schema < SCHEMA_VERSION else ""
        raise StoreError(
            f"{store} has store schema {schema!r}{earlier}, but this pickscale ({__version__}) reads "
            f"schema {SCHEMA_VERSION}; re-run `pickscale score` to rewrite it"
        )
    if VERSION not in attrs:
        raise StoreError(f"{store} is not a pickscale store (no {VERSION!r} attribute)")
