"""The combined results brought from the cluster to the client, a batch of station fields at a time.

The reduction tree leaves one :class:`~pickscale.kernel.Partial` on a worker: every station's counts,
about 13 kB a station with three models.  Gathered whole, the client would hold it twice while it arrives
(the message and the arrays made from it) and once more while laying it out.  So a large partial comes
in two steps: first without its station fields (keys, pairs and fine curves), then the fields in batches
of at most :data:`BATCH_BYTES`, each fetched when :func:`pickscale.results.assemble` takes its first field
and dropped as the fields are laid out.  The client then holds the laid-out results plus one batch.
A partial of at most :data:`BATCH_BYTES` of station fields is gathered whole, in one round trip.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np

from ..kernel import Partial, StationStack

__all__ = ["bring_back", "BATCH_BYTES"]

#: The most station-field bytes fetched in one round trip (and held in transit on the client).
BATCH_BYTES = 64 * 2**20


def bring_back(total: Any, client: Any, *, batch_bytes: int = BATCH_BYTES) -> Partial:
    """The combined partial on the client; on a cluster, a large one's station fields are fetched when read.

    ``total`` is the partial itself (local scheduler) or its future (a cluster).  The future is
    released once every field has been taken (or the returned partial is dropped).
    """
    if client is None:
        return total
    sizes = client.submit(_field_sizes, total, pure=False, retries=3).result()
    if sum(n for per in sizes.values() for n in per.values()) <= batch_bytes:
        return total.result()
    skeleton = client.submit(_without_fields, total, pure=False, retries=3).result()
    for d, stack in skeleton.stacks.items():
        fields = RemoteFields(client, total, d, _batches(sizes[d], batch_bytes))
        skeleton.stacks[d] = StationStack(keys=stack.keys, fields=fields, pair_key=stack.pair_key, pairs=stack.pairs)
    return skeleton


def _batches(sizes: dict[str, int], limit: int) -> list[list[str]]:
    """Consecutive fields (in their order) grouped into batches of at most ``limit`` bytes (or one field)."""
    batches: list[list[str]] = []
    used = limit
    for name, n in sizes.items():
        if used + n > limit:
            batches.append([])
            used = 0
        batches[-1].append(name)
        used += n
    return batches


class RemoteFields(MutableMapping[str, np.ndarray]):
    """One dataset's station fields, left on the cluster until read, fetched a batch at a time.

    A field taken out (``pop`` or ``del``) is no longer held here; once every field is taken the
    partial's future is dropped too, so the cluster can free it.
    """

    def __init__(self, client: Any, total: Any, dataset: int, batches: list[list[str]]) -> None:
        self._client, self._total, self._dataset = client, total, dataset
        self._batch_of = {name: tuple(batch) for batch in batches for name in batch}
        self._names = [name for batch in batches for name in batch]
        self._fetched: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._fetched:
            wanted = [n for n in self._batch_of[name] if n in self._names]
            got = self._client.submit(_fields, self._total, self._dataset, wanted, pure=False, retries=3).result()
            self._fetched.update(got)
        return self._fetched[name]

    def __setitem__(self, name: str, values: np.ndarray) -> None:
        raise TypeError("the station fields fetched from the cluster are read-only")

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._fetched.pop(name, None)
        if not self._names:
            self._total = None  # the last field taken: the cluster may free the partial

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


def _field_sizes(total: Partial) -> dict[int, dict[str, int]]:
    """Per dataset code, the bytes of each station field (in field order)."""
    return {d: {name: int(values.nbytes) for name, values in s.fields.items()} for d, s in total.stacks.items()}


def _without_fields(total: Partial) -> Partial:
    """``total`` without its station fields: keys, pairs and fine curves (what the client receives first)."""
    stacks = {d: StationStack(keys=s.keys, fields={}, pair_key=s.pair_key, pairs=s.pairs)
              for d, s in total.stacks.items()}
    return Partial(stacks=stacks, fine=total.fine)


def _fields(total: Partial, dataset: int, names: list[str]) -> dict[str, np.ndarray]:
    fields = total.stacks[dataset].fields
    return {name: fields[name] for name in names}
