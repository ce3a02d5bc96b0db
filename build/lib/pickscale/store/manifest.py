"""The manifest of a results store: every file with its size and SHA-256, and its verification.

:func:`write_manifest` lists every file of a freshly written store -- the
root ``zarr.json`` (root attributes, the options, and the consolidated
metadata of every array) included -- with its size and SHA-256 in
``pickscale-manifest.json``, in one canonical JSON form (:func:`manifest_text`),
so that any change to the manifest itself shows too.  A store of this schema
without a readable manifest is damaged.  This matters because Zarr silently
reads a missing chunk as its fill value, and a flipped bit in a compressed
chunk can decode to a wildly wrong number.  :func:`check_manifest` checks the
bytes of a store, read into memory, against it.

Examples
--------
>>> import pathlib, tempfile
>>> store = pathlib.Path(tempfile.mkdtemp())
>>> _ = (store / "zarr.json").write_text("{}")
>>> write_manifest(store)
>>> files = {"zarr.json": b"{}", MANIFEST: (store / MANIFEST).read_bytes()}
>>> sorted(check_manifest(store, files))  # nothing to say; the entries it checked
['zarr.json']
>>> try:
...     check_manifest(store, {**files, "zarr.json": b"[]"})
... except StoreError as exc:
...     print(str(exc).split(" (")[1])
zarr.json has changed
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import secrets
from collections.abc import Mapping
from typing import Any

from pickscale.errors import StoreError

__all__ = ["MANIFEST", "write_manifest", "linked_entries", "manifest_text", "read_manifest", "check_manifest",
           "damaged"]

#: Every file of the store (root ``zarr.json`` included) with its size and
#: SHA-256, written last, before the store is moved into place;
#: :func:`pickscale.store.open_results` checks every byte read against it.
MANIFEST = "pickscale-manifest.json"
_MANIFEST_FORMAT = 2


def write_manifest(store: pathlib.Path, *, known: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Record every file of a freshly written store with its size and SHA-256 (fsynced).

    The root ``zarr.json`` is listed like every other file; only the manifest
    itself is not.  It is written in one canonical form (:func:`manifest_text`),
    so that a reader can tell a manifest changed after it was written.
    ``known``: the entries of files linked from the store being replaced (the same files, so the same
    bytes: :func:`linked_entries`), not read again.
    """
    files = {}
    known = known or {}
    for folder, dirs, names in os.walk(store):
        dirs.sort()
        for name in sorted(names):
            path = pathlib.Path(folder, name)
            rel = path.relative_to(store).as_posix()
            if rel == MANIFEST:
                continue
            if rel in known:
                files[rel] = {"sha256": known[rel]["sha256"], "size": known[rel]["size"]}
                continue
            digest = hashlib.sha256()
            size = 0
            with open(path, "rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
                    size += len(block)
            files[rel] = {"sha256": digest.hexdigest(), "size": size}
    # A random id: every save's manifest differs, so a reader can tell a replaced store.
    text = manifest_text({"pickscale_manifest": _MANIFEST_FORMAT, "store_id": secrets.token_hex(8),
                           "files": files})
    with open(store / MANIFEST, "w", encoding="ascii") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def linked_entries(source: pathlib.Path, linked: list[str]) -> dict[str, dict[str, Any]]:
    """The manifest entries of ``source`` for the files ``linked`` from it (hard links: the same files).

    A file that is not listed, or whose size on disk is not the listed one, is left out (it is then hashed
    like any other): the new manifest never vouches for more than the old one did.
    """
    listed = read_manifest(source, (source / MANIFEST).read_bytes() if (source / MANIFEST).exists() else None)
    out = {}
    for rel in linked:
        entry = listed.get(rel)
        if entry is not None and (source / rel).stat().st_size == entry["size"]:
            out[rel] = dict(entry)
    return out


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The one text form of a manifest: sorted keys, one-space indent, ASCII, final newline."""
    return json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def damaged(store: pathlib.Path, what: str) -> StoreError:
    return StoreError(
        f"results store {store} is damaged: {what}; it was probably copied or synced only in part, or "
        "changed on disk since it was written — copy it again, or re-run `pickscale score`"
    )


def read_manifest(store: pathlib.Path, raw: bytes | None) -> dict[str, dict[str, Any]]:
    """The ``files`` of a manifest, or the StoreError saying what is wrong with it."""
    if raw is None:
        raise damaged(store, f"its manifest {MANIFEST} is missing (every store pickscale writes lists its "
                              "files there; without it nothing shows whether they are complete and unchanged)")
    if not raw.strip():
        raise damaged(store, f"its manifest {MANIFEST} cannot be read (it is empty)")
    try:
        text = raw.decode("ascii")
        manifest = json.loads(text)
        if not isinstance(manifest, dict) or manifest.get("pickscale_manifest") != _MANIFEST_FORMAT:
            raise ValueError(f"it is not a pickscale manifest of format {_MANIFEST_FORMAT}")
        files = manifest["files"]
        if not isinstance(files, dict):
            raise ValueError("its 'files' is not a mapping")
        for rel, entry in files.items():
            if rel.startswith("/") or ".." in rel.split("/") or rel == MANIFEST:
                raise ValueError(f"{rel!r} is not a path inside the store")
            if (not isinstance(entry, dict) or sorted(entry) != ["sha256", "size"]
                    or type(entry["size"]) is not int or not isinstance(entry["sha256"], str)):
                raise ValueError(f"its entry for {rel!r} is not a size and a sha256")
        if manifest_text(manifest) != text:
            raise ValueError("it is not in the form pickscale wrote it in, so it was changed")
    except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise damaged(store, f"its manifest {MANIFEST} cannot be read ({exc})") from None
    return files


def check_manifest(store: pathlib.Path, files: Mapping[str, bytes], *,
                   sizes: Mapping[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Refuse a store whose files differ from those its manifest lists (names, sizes, SHA-256); its entries.

    ``sizes``: files not read yet (relative path -> size), checked by name and size only here (their
    bytes are checked when read: :class:`pickscale.store.checked.Deferred`).
    """
    listed = read_manifest(store, files.get(MANIFEST))
    sizes = sizes or {}
    bad = []
    for rel, entry in listed.items():
        data = files.get(rel)
        if rel in sizes:
            if sizes[rel] != entry["size"]:
                bad.append(f"{rel} has {sizes[rel]} bytes, not {entry['size']}")
        elif data is None:
            bad.append(f"{rel} is missing")
        elif len(data) != entry["size"]:
            bad.append(f"{rel} has {len(data)} bytes, not {entry['size']}")
        elif hashlib.sha256(data).hexdigest() != entry["sha256"]:
            bad.append(f"{rel} has changed (its SHA-256 differs)")
    bad += [f"{rel} is not in the manifest (an extra file)" for rel in [*files, *sizes]
            if rel != MANIFEST and rel not in listed]
    if bad:
        shown = "; ".join(bad[:3]) + (" …" if len(bad) > 3 else "")
        total = len(set(listed) | set(files) | set(sizes) - {MANIFEST})
        raise damaged(store, f"{len(bad)} of its {total} files are missing, changed or not in its manifest "
                              f"{MANIFEST} ({shown})")
    return listed
