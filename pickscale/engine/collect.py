"""The combined results brought from the cluster to the client one station field at a time.

The reduction tree leaves one :class:`~pickscale.kernel.Partial` on a worker: every station's counts,
about 13 kB a station with three models.  Gathered whole, the client would hold it twice while it arrives
(the message and the arrays made from it) and once more while laying it out.  Instead the client receives
the partial without its station fields (keys, pairs and fine curves), and each field is fetched when the
results are laid out (:func:`pickscale.results.assemble` takes the fields one by one), so at any time the
client holds the laid-out results plus one field of one dataset in transit.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np

from ..kernel import Partial, StationStack

__all__ = ["bring_back"]


def bring_back(total: Any, client: Any) -> Partial:
    """The combined partial on the client; on a cluster, its station fields are fetched when read.

    ``total`` is the partial itself (local scheduler) or its future (a cluster).  The future is
    released once every field has been taken (or the returned partial is dropped).
    """
    if client is None:
        return total
    skeleton = client.submit(_without_fields, total, pure=False, retries=3).result()
    for d, (stack, names) in skeleton.stacks.items():
        skeleton.stacks[d] = StationStack(keys=stack.keys, fields=RemoteFields(client, total, d, names),
                                          pair_key=stack.pair_key, pairs=stack.pairs)
    return skeleton


class RemoteFields(MutableMapping[str, np.ndarray]):
    """One dataset's station fields, left on the cluster until read; a field taken out is dropped there."""

    def __init__(self, client: Any, total: Any, dataset: int, names: list[str]) -> None:
        self._client, self._total, self._dataset, self._names = client, total, dataset, list(names)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        return self._client.submit(_field, self._total, self._dataset, name, pure=False, retries=3).result()

    def __setitem__(self, name: str, values: np.ndarray) -> None:
        raise TypeError("the station fields fetched from the cluster are read-only")

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        if not self._names:
            self._total = None  # the last field taken: the cluster may free the partial

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


def _without_fields(total: Partial) -> Partial:
    """``total`` with each stack's fields replaced by their names (what the client receives first)."""
    stacks: dict[int, Any] = {
        d: (StationStack(keys=s.keys, fields={}, pair_key=s.pair_key, pairs=s.pairs), list(s.fields))
        for d, s in total.stacks.items()}
    return Partial(stacks=stacks, fine=total.fine)


def _field(total: Partial, dataset: int, name: str) -> np.ndarray:
    return total.stacks[dataset].fields[name]
