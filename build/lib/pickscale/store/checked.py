"""A read-only Zarr store of checked bytes whose large files are read, and checked, only when asked for.

:func:`pickscale.store.open_results` reads every file of a store once and checks it against the store's
manifest, so that what it returns is one store, never a mixture of a store and the one replacing it.  The
residual pairs (dimension ``pair``) are the one part of results that grows with the data (issue 22): read
lazily, a notebook that slices one model's residuals reads those chunks only.  Each such file is listed
here with the size and SHA-256 the manifest gives it, and checked when Zarr reads it -- so a chunk read
later is still a chunk of the store that was opened: when it differs (the store was replaced, or damaged,
after it was opened) the read is a :class:`~pickscale.errors.StoreError`, never other numbers.

Examples
--------
>>> import hashlib, pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "a").write_bytes(b"chunk")
>>> later = Deferred(folder, {"a": {"size": 5, "sha256": hashlib.sha256(b"chunk").hexdigest()}}, identity=None)
>>> later.read("a")
b'chunk'
>>> _ = (folder / "a").write_bytes(b"other")
>>> later.read("a")
Traceback (most recent call last):
...
pickscale.errors.StoreError: results store ... is damaged: a has changed since the store was opened ...
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pathlib
import stat as _stat
from collections.abc import Callable, Mapping
from typing import Any

import zarr
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from pickscale.errors import StoreError

from .manifest import MANIFEST, damaged

__all__ = ["Deferred", "CheckedStore", "store_identity"]


def store_identity(store: pathlib.Path) -> tuple[Any, ...] | None:
    """What changes when a save swaps another store in: the folder's inode and the manifest's bytes."""
    try:
        st = os.stat(store)
    except OSError:
        return None
    try:
        manifest = (store / MANIFEST).read_bytes()
    except OSError:
        manifest = None
    return (st.st_dev, st.st_ino, _stat.S_IFMT(st.st_mode), manifest)


class Deferred:
    """The files of a store read on demand, each checked against its manifest entry.

    ``entries[rel]``: the manifest's ``{"size", "sha256"}`` of a file not read yet; ``identity``: what
    :func:`pickscale.store.read` saw of the store when it was opened (its folder and manifest), and
    ``identify`` how to see it again -- a file that no longer matches is then said to be of a store
    replaced since, rather than a damaged one.
    """

    def __init__(self, store: pathlib.Path, entries: Mapping[str, Mapping[str, Any]], *, identity: Any,
                 identify: Callable[[pathlib.Path], Any] | None = None) -> None:
        self.store = pathlib.Path(store)
        self.entries = dict(entries)
        self.identity = identity
        self.identify = identify

    def __contains__(self, rel: object) -> bool:
        return rel in self.entries

    def read(self, rel: str) -> bytes:
        """The bytes of ``rel``, as the manifest the store was opened with lists them (else StoreError)."""
        entry = self.entries[rel]
        try:
            data: bytes | None = (self.store / rel).read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            raise StoreError(f"could not read results store {self.store}: {rel}: {exc}") from exc
        if (data is not None and len(data) == entry["size"]
                and hashlib.sha256(data).hexdigest() == entry["sha256"]):
            return data
        if self.identify is not None and self.identify(self.store) != self.identity:
            raise StoreError(f"results store {self.store} was replaced or removed after it was opened (by "
                             "`pickscale score --overwrite`, `extend` or a save): its residual pairs are read when "
                             "used, and those of the new store are not the opened one's; open it again")
        what = "is missing" if data is None else "has changed since the store was opened"
        raise damaged(self.store, f"{rel} {what} (the manifest lists {entry['size']} bytes with another SHA-256)")


class CheckedStore(zarr.storage.MemoryStore):
    """Zarr's in-memory store of checked bytes, with the :class:`Deferred` files read when Zarr asks."""

    def __init__(self, files: Mapping[str, bytes], deferred: Deferred) -> None:
        buffer = default_buffer_prototype().buffer
        super().__init__({rel: buffer.from_bytes(data) for rel, data in files.items()}, read_only=True)
        self.deferred = deferred

    async def get(self, key: str, prototype: BufferPrototype | None = None,
                  byte_range: Any = None) -> Buffer | None:
        if key not in self.deferred:
            return await super().get(key, prototype=prototype, byte_range=byte_range)
        prototype = prototype or default_buffer_prototype()
        data = await asyncio.to_thread(self.deferred.read, key)  # (file reads and hashing off the event loop)
        # The whole file is checked, whatever part of it Zarr asked for (a shard's index, say).
        return prototype.buffer.from_bytes(data) if byte_range is None else _ranged(prototype, data, byte_range)

    async def exists(self, key: str) -> bool:
        return key in self.deferred or await super().exists(key)


def _ranged(prototype: BufferPrototype, data: bytes, byte_range: Any) -> Buffer:
    """``data`` cut to one of Zarr's byte requests (a range, an offset, or a suffix)."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if isinstance(byte_range, RangeByteRequest):
        return prototype.buffer.from_bytes(data[byte_range.start:byte_range.end])
    if isinstance(byte_range, OffsetByteRequest):
        return prototype.buffer.from_bytes(data[byte_range.offset:])
    if isinstance(byte_range, SuffixByteRequest):
        return prototype.buffer.from_bytes(data[-byte_range.suffix:] if byte_range.suffix else b"")
    raise TypeError(f"unexpected byte request {byte_range!r}")
