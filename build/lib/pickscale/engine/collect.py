"""The reduction's top pieces brought to the client and joined there, a batch of station fields at a time.

The reduction tree stops at up to :data:`~pickscale.kernel.stacks.FAN_IN` pieces
(:func:`~pickscale.engine.graph.reduce_stage`): combined into one on a worker, every station's counts (about
13 kB a station with three models) would be held there twice, the pieces and their concatenation.  Gathered
whole, the client would also hold them twice while they arrive (the messages and the arrays made from them)
and once more while laying them out.  So the pieces come in two steps: first without their station fields
(keys, time-binned rows and fine curves), then the fields in batches of at most :data:`BATCH_BYTES`,
each fetched when :func:`pickscale.results.assemble` takes its first field and dropped as the fields are laid
out.  The
pieces are joined field by field (:class:`JoinedFields`); a station whose time blocks ended in several
pieces is merged here by the kernel's rules (:func:`~pickscale.kernel.merge_results`), as the reduction
would have.  Pieces with at most :data:`BATCH_BYTES` of station fields in all are gathered whole.  The
residual pairs never come: they stay on the cluster (:mod:`pickscale.engine.pairs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

import numpy as np

from ..kernel import Partial, StationStack, merge_results, summed_fine
from ..kernel.stacks import concat_binned, merged_events
from .pairs import without_pairs

__all__ = ["bring_back", "join", "BATCH_BYTES"]

#: The most station-field bytes fetched in one round trip (and held in transit on the client).
BATCH_BYTES = 64 * 2**20

_MISSING: Any = object()


def bring_back(tops: Sequence[Any], client: Any, *, batch_bytes: int = BATCH_BYTES) -> Partial:
    """The reduction's top pieces joined into one partial on the client.

    ``tops`` are the pieces themselves (local scheduler) or their futures (a cluster).  On a cluster,
    large pieces' station fields are fetched when read; each piece's future is released once every one
    of its fields has been taken (or the returned partial is dropped).
    """
    if client is None:
        pieces = [without_pairs(t) for t in tops]
        return join(pieces, lambda i, d, rows: pieces[i].stacks[d].take(rows))
    sizes = client.gather([client.submit(_field_sizes, t, pure=False, retries=3) for t in tops])
    # SPEC §19's events merged on a worker: their rows grow with the bulletin's events, and merging the pieces'
    # K highest levels takes several times the merged rows in passing (issue 22: the client's peak at 5·10^6
    # arrivals); the client receives the merged rows only.
    events = client.submit(merged_events, tops, pure=False, retries=3).result()
    if sum(n for piece in sizes for per in piece.values() for n in per.values()) <= batch_bytes:
        pieces = client.gather([client.submit(_without_events, t, pure=False, retries=3) for t in tops])
        return join(pieces, lambda i, d, rows: pieces[i].stacks[d].take(rows), events=events)
    skeletons = client.gather([client.submit(_without_fields, t, pure=False, retries=3) for t in tops])
    # A field is read from every piece in turn: each piece's share of the batch, so that at most
    # batch_bytes are in transit in all (or one field of one piece, if larger).
    share = max(1, batch_bytes // len(tops))
    for top, skeleton, piece_sizes in zip(tops, skeletons, sizes):
        for d, stack in skeleton.stacks.items():
            stack.fields = RemoteFields(client, top, d, _batches(piece_sizes[d], share))

    def take(i: int, d: int, rows: np.ndarray) -> StationStack:
        return client.submit(_rows, tops[i], d, rows, pure=False, retries=3).result()

    return join(skeletons, take, events=events)


def join(pieces: Sequence[Partial], take: Callable[[int, int, np.ndarray], StationStack], *,
         events: dict[int, dict[str, np.ndarray]] | None = None) -> Partial:
    """One partial from the reduction's pieces, as :func:`~pickscale.kernel.combine_partials` would give.

    The pieces' arrays are taken, not copied: their pairs are taken out of them, and their station
    fields as the joined fields are read (:class:`JoinedFields`).  ``take(i, d, rows)`` gives the
    rows ``rows`` of piece ``i``'s stack of dataset code ``d`` whole (fields and pairs): it is used for
    the stations found in several pieces (a station cut into time blocks), merged here.  ``events``: the
    pieces' events already merged (on a cluster, where they are); by default merged here.
    """
    stacks: dict[int, StationStack] = {}
    for d in sorted({d for piece in pieces for d in piece.stacks}):
        have = [(i, piece.stacks[d]) for i, piece in enumerate(pieces) if d in piece.stacks]
        stacks[d] = have[0][1] if len(have) == 1 else _joined(d, have, take)
    return Partial(stacks=stacks, fine=summed_fine(pieces), events=merged_events(pieces) if events is None else events)


def _joined(d: int, have: list[tuple[int, StationStack]],
            take: Callable[[int, int, np.ndarray], StationStack]) -> StationStack:
    keys, counts = np.unique(np.concatenate([s.keys for _, s in have]), return_counts=True)
    repeated = keys[counts > 1]
    parts: list[tuple[MutableMapping[str, np.ndarray], np.ndarray | None]] = []
    key_parts, pair_keys, pair_parts = [], [], []
    bin_parts: list[StationStack] = []  # the binned rows (SPEC §10), sparse: joined like the pairs
    merged: dict[int, list[Any]] = {}
    for i, s in have:
        split = np.isin(s.keys, repeated)
        kept = np.flatnonzero(~split)
        parts.append((s.fields, None if kept.size == s.keys.size else kept))
        key_parts.append(s.keys[kept])
        pairs_kept = ~np.isin(s.pair_key, repeated) if repeated.size else None
        pair_keys.append(s.pair_key if pairs_kept is None else s.pair_key[pairs_kept])
        pair_parts.append(s.pairs if pairs_kept is None else {n: v[pairs_kept] for n, v in s.pairs.items()})
        bins_kept = ~np.isin(s.bin_key, repeated) if repeated.size else None
        bin_parts.append(s if bins_kept is None else
                         StationStack(keys=s.keys[:0], fields={}, pair_key=s.pair_key[:0], pairs={},
                                      bin_key=s.bin_key[bins_kept],
                                      binned={n: v[bins_kept] for n, v in s.binned.items()}))
        if split.any():
            rows = take(i, d, np.flatnonzero(split))
            for j, key in enumerate(rows.keys.tolist()):
                merged.setdefault(key, []).append(rows.result(j))
    if merged:  # the few stations cut into time blocks that ended in different pieces
        blocks = StationStack.of([(key, merge_results(results)) for key, results in sorted(merged.items())])
        parts.append((blocks.fields, None))
        key_parts.append(blocks.keys)
        pair_keys.append(blocks.pair_key)
        pair_parts.append(blocks.pairs)
        bin_parts.append(blocks)
    all_keys = np.concatenate(key_parts)
    order = np.argsort(all_keys, kind="stable")
    # Pairs follow their station: a stable sort by key keeps each station's canonical order.
    pair_key = np.concatenate(pair_keys)
    p_order = np.argsort(pair_key, kind="stable")
    # Each pair array joined in turn, the pieces' own taken out as it goes (the pairs held once, plus one array).
    pairs = {name: np.concatenate([p.pop(name) for p in pair_parts])[p_order] for name in list(pair_parts[0])}
    bin_key, binned = concat_binned(bin_parts)
    return StationStack(keys=all_keys[order], fields=JoinedFields(parts, order), pair_key=pair_key[p_order],
                        pairs=pairs, bin_key=bin_key, binned=binned,
                        n_time_bins=max(s.n_time_bins for _, s in have))


class JoinedFields(MutableMapping[str, np.ndarray]):
    """Station fields of several pieces (each with the rows it keeps), in one station order when read.

    ``pop`` takes each piece's field out as it is placed, so a piece's arrays are released (or, fetched
    from the cluster, never held more than a batch at a time) while the joined field is built.
    """

    def __init__(self, parts: list[tuple[MutableMapping[str, np.ndarray], np.ndarray | None]],
                 order: np.ndarray) -> None:
        self._parts = parts
        self._names = list(parts[0][0])
        # Where each piece's rows go: row r of the concatenation lands at position[r].
        position = np.empty(order.size, dtype=np.int64)
        position[order] = np.arange(order.size, dtype=np.int64)
        self._position = position

    def _build(self, name: str, get: Callable[[MutableMapping[str, np.ndarray], str], np.ndarray]) -> np.ndarray:
        out: np.ndarray | None = None
        start = 0
        for fields, rows in self._parts:
            block = get(fields, name)
            if rows is not None:
                block = block[rows]
            if out is None:
                out = np.empty((self._position.size,) + block.shape[1:], dtype=block.dtype)
            out[self._position[start:start + block.shape[0]]] = block
            start += block.shape[0]
            del block
        if out is None or start != self._position.size:
            raise RuntimeError(f"internal error: the pieces' rows of {name!r} do not make up the joined stations")
        return out

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        return self._build(name, lambda fields, n: fields[n])

    def pop(self, name: str, default: Any = _MISSING) -> Any:
        if name not in self._names:
            if default is _MISSING:
                raise KeyError(name)
            return default
        out = self._build(name, lambda fields, n: fields.pop(n))
        self._names.remove(name)
        return out

    def __setitem__(self, name: str, values: np.ndarray) -> None:
        raise TypeError("joined station fields are read-only")

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        for fields, _ in self._parts:
            del fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


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
    """One piece's station fields of one dataset, left on the cluster until read, fetched a batch at a time.

    A field taken out (``pop`` or ``del``) is no longer held here; once every field is taken the
    piece's future is dropped too, so the cluster can free it.
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
            self._total = None  # the last field taken: the cluster may free the piece

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


def _field_sizes(piece: Partial) -> dict[int, dict[str, int]]:
    """Per dataset code, the bytes of each station field (in field order)."""
    return {d: {name: int(values.nbytes) for name, values in s.fields.items()} for d, s in piece.stacks.items()}


def _without_events(piece: Partial) -> Partial:
    """``piece`` without its pairs and events (both stay on the cluster: the events come merged)."""
    bare = without_pairs(piece)
    bare.events = {}
    return bare


def _without_fields(piece: Partial) -> Partial:
    """``piece`` without its station fields, pairs and events: keys, binned rows and fine curves (the client's
    first look)."""
    bare = _without_events(piece)
    for s in bare.stacks.values():
        s.fields = {}
    return bare


def _fields(piece: Partial, dataset: int, names: list[str]) -> dict[str, np.ndarray]:
    fields = piece.stacks[dataset].fields
    return {name: fields[name] for name in names}


def _rows(piece: Partial, dataset: int, rows: np.ndarray) -> StationStack:
    return without_pairs(piece).stacks[dataset].take(rows)
