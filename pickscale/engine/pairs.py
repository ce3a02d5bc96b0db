"""The residual pairs (SPEC §5, §14) kept on the cluster: grouped, put in canonical order and timed there.

The reduction's top pieces (:func:`~pickscale.engine.graph.reduce_stage`) hold every residual pair of the
run, grouped by station.  The client never gathers them (issue 22: they were what grew first on the
client, ~170–200 bytes a pair once joined, ordered and laid out).  Instead:

1. each piece is split on its worker by **stream** -- a (dataset, model, phase) of the results'
   coordinates -- into columns with the results' global station index (:func:`split_piece`);
2. one task per stream takes its share of every piece, puts the pairs in the store's canonical order
   (station, residual, conf, arrival group) and computes the stream's SPEC §5 statistics at every
   threshold and, with ``group_by``, per arrival group at the shared threshold (:func:`stream_of`,
   :func:`pickscale.metrics.timing.pair_statistics`).  The means are exact integer sums, but the medians
   and quantiles are order statistics of all of a stream's residuals: which is why a stream, not a piece,
   is the unit;
3. the client receives the statistics (per stream: the grid's thresholds × the statistics) and the
   number of pairs of each stream; the pairs stay on the workers as one Dask array per variable, in
   stream order -- the store's canonical (dataset, model, phase, station, residual, conf, group) order,
   whatever the partitioning -- which :func:`pickscale.store.save` writes a chunk range at a time.

An extension (:func:`pickscale.extend`) appends the new run's pairs to the stored ones: each merged stream's
statistics come from its stored pairs and the new run's stream task, in any order (:func:`stream_statistics`,
:func:`statistics_of`), and nothing is sorted again.

A stream's pairs are held by one worker (about 100 bytes a pair while sorting): the largest
(dataset, model, phase) bounds a worker's memory here, not the run.  On Dask's local scheduler (no
cluster) the same functions run in this process and the pairs are NumPy arrays.

This module is imported by workers: numpy and the kernel only.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kernel import Partial, StationStack
from ..metrics.timing import lay_out, pair_statistics
from ..options import Options
from . import ranged

__all__ = ["Codes", "PairColumns", "codes_of", "pair_columns", "split_piece", "stream_of", "streams_of",
           "stream_statistics", "statistics_of", "is_current", "without_pairs"]

#: A stream's columns, as the store holds them (the stream itself gives dataset, model and phase).
_COLUMNS = {"station": np.int32, "residual_ns": np.int64, "conf": np.float64, "group": np.int32}
#: What a stream task holds of its pairs: its columns, and their ranked copy (:func:`ranged.ranked_runs`).
_HELD = {**_COLUMNS, "ranked_residual_ns": np.int64, "ranked_level": np.int16}


@dataclass(frozen=True)
class Codes:
    """Where a piece's codes go on the results' coordinates (all sorted by name, as :func:`assemble` lays them).

    ``dataset[d]``: the index of scope dataset ``d``; ``models[d][m]``: the index of its model ``m``;
    ``station[k]``: the index of work-plan station key ``k``; ``n_models``: the results' model count.
    """

    dataset: np.ndarray
    models: dict[int, np.ndarray]
    station: np.ndarray
    n_models: int

    def stream(self, d: int, m: np.ndarray, p: np.ndarray) -> np.ndarray:
        """The stream code ``(dataset · n_models + model) · 2 + phase`` of pairs of scope dataset ``d``."""
        return (int(self.dataset[d]) * self.n_models + self.models[d][m].astype(np.int64)) * 2 + p


def codes_of(datasets: list[str], models: dict[str, list[str]], station_names: np.ndarray) -> Codes:
    """The :class:`Codes` of a run: its scope's datasets and models, the work plan's station names by key."""
    all_models = sorted({m for ms in models.values() for m in ms})
    m_index = {m: i for i, m in enumerate(all_models)}
    d_index = {name: i for i, name in enumerate(sorted(datasets))}
    names = np.asarray(station_names, dtype=object)
    ordered = np.array(sorted(set(names.tolist())), dtype=object)
    station = np.searchsorted(ordered, names).astype(np.int32) if names.size else np.zeros(0, np.int32)
    return Codes(dataset=np.array([d_index[name] for name in datasets], dtype=np.int64),
                 models={d: np.array([m_index[m] for m in models[name]], dtype=np.int64)
                         for d, name in enumerate(datasets)},
                 station=station, n_models=len(all_models))


@dataclass
class PairColumns:
    """The run's pairs as the Dataset holds them, and the statistics computed from them.

    ``data``: ``pair_dataset, pair_model, pair_phase, pair_station, residual, pair_conf`` (and
    ``pair_group`` with ``group_by``), NumPy or Dask arrays; ``statistics``: SPEC §5 and §14 as
    :func:`pickscale.metrics.timing.lay_out` gives them.  ``sizes``: each stream's number of pairs, in
    stream order; ``tasks``: on a cluster, each stream's task (its canonical columns stay there), which an
    extension's statistics read again (:func:`statistics_of`); ``runs``: the ranked runs (SPEC §9), each
    (stream, pairs) in row order -- one per stream, or per range of stations of a large one -- whose ranked
    copy and block table ``data`` holds (``ranked_*``).
    """

    data: dict[str, Any]
    statistics: dict[str, dict[str, np.ndarray]]
    sizes: dict[int, int] = field(default_factory=dict)
    tasks: dict[int, Any] = field(default_factory=dict)
    runs: list[tuple[int, int]] = field(default_factory=list)


def split_piece(piece: Partial, codes: Codes) -> dict[int, dict[str, np.ndarray]]:
    """A piece's pairs by stream code: the columns of :data:`_COLUMNS` (in the piece's order)."""
    parts: dict[int, list[dict[str, np.ndarray]]] = {}
    for d, stack in piece.stacks.items():
        pairs = stack.pairs
        if not stack.pair_key.size:
            continue
        stream = codes.stream(d, pairs["pair_model"], pairs["pair_phase"].astype(np.int64))
        order = np.argsort(stream, kind="stable")
        stream = stream[order]
        columns = {"station": codes.station[stack.pair_key[order]].astype(np.int32),
                   "residual_ns": pairs["pair_residual_ns"][order], "conf": pairs["pair_conf"][order],
                   "group": pairs.get("pair_group", np.zeros(order.size, np.int32))[order].astype(np.int32)}
        cuts = np.flatnonzero(np.diff(stream)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, stream.size]):
            parts.setdefault(int(stream[lo]), []).append({k: v[lo:hi] for k, v in columns.items()})
    return {s: {k: np.concatenate([p[k] for p in ps]) for k in _COLUMNS} for s, ps in parts.items()}


def stream_of(*shares: dict[str, np.ndarray] | None, options: Options,
              phase: int) -> tuple[dict[str, np.ndarray], Any]:
    """One stream's pairs in canonical order, and their statistics (:func:`pair_statistics`; ``phase``: the
    stream's phase code, whose shared threshold they are read at)."""
    have = [s for s in shares if s is not None]
    cat = {k: np.concatenate([s[k] for s in have]).astype(t, copy=False) for k, t in _COLUMNS.items()}
    # The store's order within a stream: (station, residual, conf, group); equal rows are equal.
    order = np.lexsort((cat["group"], cat["conf"], cat["residual_ns"], cat["station"]))
    columns = {k: v[order] for k, v in cat.items()}
    del cat
    stats = pair_statistics(columns["residual_ns"], columns["conf"], columns["group"], thresholds=options.grid,
                            tol=options.tol, threshold=options.threshold_of(phase), n_groups=options.n_groups)
    stats["runs"] = ranged.ranked_runs(columns, options)
    return columns, stats


def without_pairs(piece: Partial) -> Partial:
    """``piece`` with its pairs left out (they are handled by :func:`pair_columns`); the rest shared."""
    def bare(s: StationStack) -> StationStack:
        return StationStack(keys=s.keys, fields=s.fields, pair_key=s.pair_key[:0],
                            pairs={n: v[:0] for n, v in s.pairs.items()}, bin_key=s.bin_key, binned=s.binned,
                            n_time_bins=s.n_time_bins)

    return Partial(stacks={d: bare(s) for d, s in piece.stacks.items()}, fine=piece.fine, events=piece.events)


def pair_columns(tops: list[Any], codes: Codes, client: Any, *, options: Options, n_datasets: int) -> PairColumns:
    """The run's pairs and their statistics from the reduction's top pieces (objects, or futures on a cluster).

    On a cluster whose client Dask computes with (the default client, or any within ``with
    client.as_current():``) the pairs stay there: the returned arrays are Dask arrays of the stream tasks'
    results.  With another client they are brought to this process (NumPy arrays), stream by stream.
    """
    if client is None or not is_current(client):
        # (A client Dask would not compute with: the pairs are split there and brought here.)
        splits = ([split_piece(t, codes) for t in tops] if client is None else
                  client.gather([client.submit(split_piece, t, codes, pure=False, retries=3) for t in tops]))
        shares = {s: [split.get(s) for split in splits] for s in sorted({s for split in splits for s in split})}
        del splits
        return streams_of(shares, None, options=options, n_datasets=n_datasets, n_models=codes.n_models)
    splits = [client.submit(split_piece, t, codes, pure=False, retries=3) for t in tops]
    present = client.gather([client.submit(_stream_sizes, s, pure=False) for s in splits])
    totals: dict[int, int] = {}
    for one in present:
        for s, n in one.items():
            totals[s] = totals.get(s, 0) + n
    shares = {s: [client.submit(dict.get, split, s, pure=False) for split in splits] for s in sorted(totals)}
    del splits  # the stream tasks hold their shares; each share is freed once its stream is done
    return streams_of(shares, client, options=options, n_datasets=n_datasets, n_models=codes.n_models,
                      totals=totals)


def streams_of(shares: dict[int, list[Any]], client: Any, *, options: Options, n_datasets: int,
               n_models: int, totals: dict[int, int] | None = None) -> PairColumns:
    """The pairs and statistics of the streams whose shares are given (``shares[stream]``: each a
    :data:`_COLUMNS` dict, None, or a future of one; every share of a stream sorted or not).

    ``client``: None, or a client Dask computes with (see :func:`pair_columns`): then each stream is one
    task on its cluster and the pairs stay there -- a stream of more than :data:`~pickscale.engine.ranged.
    RANGE_ROWS` pairs (``totals[stream]``) one task per range of stations, its statistics combined from the
    ranges (:mod:`pickscale.engine.ranged`).  Also how :func:`pickscale.extend` merges a store's
    pairs with the new run's when a model is replaced (:mod:`pickscale.results.extend`).
    """
    streams = sorted(shares)
    tasks: dict[int, Any] = {}
    if client is None:
        done = {s: stream_of(*shares[s], options=options, phase=s % 2) for s in streams}
        shares.clear()
        sizes = {s: done[s][0]["station"].size for s in streams}
        stats = {s: done[s][1] for s in streams}
        columns: dict[str, list[Any]] = {k: [done[s][0][k] for s in streams] for k in _HELD}
        del done
        held = [(s, stats[s].pop("runs")) for s in streams]
        runs = [(s, rows) for s, made in held for rows, _, _ in made]
        blocks = [(first, counts) for _, made in held for _, first, counts in made]
        join: Any = np.concatenate
    else:
        import dask.array as da

        columns, sizes, stats, tasks, runs, blocks = _on_cluster(shares, client, options, totals or {})
        join = da.concatenate
    data = _variables(columns, streams, sizes, n_models, options, join)
    data.update(ranked_blocks(blocks, options))
    return PairColumns(data=data, statistics=_laid_out(stats, n_datasets, n_models, options), sizes=sizes,
                       tasks=tasks, runs=runs)


def ranked_blocks(blocks: list[tuple[np.ndarray, np.ndarray]], options: Options) -> dict[str, np.ndarray]:
    """The block tables of ranked runs, one after the other (SPEC §9): ``ranked_first`` and ``ranked_counts``."""
    width = options.grid.size + 1
    return {"ranked_first": np.concatenate([b[0] for b in blocks] or [np.zeros(0, np.int64)]).astype(np.int64),
            "ranked_counts": np.concatenate([b[1] for b in blocks] or [np.zeros((0, width), np.int64)]
                                            ).astype(np.int32).reshape(-1, width)}


def stream_statistics(*shares: Any, options: Options, phase: int) -> Any:
    """The statistics (:func:`pair_statistics`) of one stream whose pairs are in ``shares``: each a
    :data:`_COLUMNS` dict (or one with ``residual_ns`` and ``conf`` alone), a :func:`stream_of` result, or
    None.  The pairs' order does not matter (SPEC §5's statistics are exact), so nothing is sorted here: an
    extension's stored pairs are timed with its new ones without being put in order again.
    """
    have = [s[0] if isinstance(s, tuple) else s for s in shares if s is not None]
    residual = np.concatenate([s["residual_ns"] for s in have]).astype(np.int64, copy=False)
    conf = np.concatenate([s["conf"] for s in have]).astype(np.float64, copy=False)
    return pair_statistics(residual, conf, np.zeros(residual.size, np.int32), thresholds=options.grid,
                           tol=options.tol, threshold=options.threshold_of(phase), n_groups=0)


def statistics_of(shares: dict[int, list[Any]], client: Any, *, options: Options, n_datasets: int,
                  n_models: int, sizes: dict[int, int] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The statistics of the streams whose pairs are in ``shares`` (``shares[stream]``: as
    :func:`stream_statistics` takes them, or futures of such), laid out on the results' coordinates: one
    task per stream on ``client``'s cluster (None: here), or -- a stream of more than
    :data:`~pickscale.engine.ranged.RANGE_ROWS` pairs (``sizes[stream]``) -- one task per share, combined
    (:func:`pickscale.engine.ranged.statistics`).  Without arrival groups (an extension's)."""
    streams = sorted(shares)
    large = [s for s in streams if client is not None and (sizes or {}).get(s, 0) > ranged.RANGE_ROWS]
    small = [s for s in streams if s not in large]
    if client is None:
        stats = {s: stream_statistics(*shares[s], options=options, phase=s % 2) for s in small}
    else:
        tasks = [client.submit(stream_statistics, *shares[s], options=options, phase=s % 2, pure=False, retries=3)
                 for s in small]
        stats = dict(zip(small, client.gather(tasks)))
        parts = {s: [client.submit(ranged.part_of, share, options=options, phase=s % 2, pure=False, retries=3)
                     for share in shares[s]] for s in large}
        stats.update(ranged.statistics(parts, client, options=options))
    shares.clear()
    return _laid_out(stats, n_datasets, n_models, options)


def is_current(client: Any) -> bool:
    """Whether Dask computes with ``client`` (the default client, or one made current): only then can the
    Dataset's arrays be left on its cluster and still be read as any Dask array is."""
    from distributed import Client

    try:
        return Client.current(allow_global=True) is client
    except ValueError:
        return False


def _on_cluster(shares: dict[int, list[Any]], client: Any, options: Options, totals: dict[int, int]
                ) -> tuple[dict[str, list[Any]], dict[int, int], dict, dict[int, list[Any]], list[tuple[int, int]],
                           list[tuple[np.ndarray, np.ndarray]]]:
    streams = sorted(shares)
    large = [s for s in streams if totals.get(s, 0) > ranged.RANGE_ROWS]
    # Each stream's holders: the tasks holding its pairs in canonical order, one after the other.
    holders: dict[int, list[Any]] = {}
    for s in large:  # cut into ranges of stations by its pairs' counts per station
        counts = client.gather([client.submit(_station_counts, share, pure=False) for share in shares[s]])
        width = max((c.size for c in counts), default=0)
        per_station = sum((np.pad(c, (0, width - c.size)) for c in counts), np.zeros(width, np.int64))
        holders[s] = [client.submit(ranged.range_of, *shares[s], lo=lo, hi=hi, options=options, phase=s % 2,
                                    pure=False, retries=3) for lo, hi in ranged.cut_points(per_station)]
    for s in streams:
        if s not in holders:
            holders[s] = [client.submit(stream_of, *shares[s], options=options, phase=s % 2, pure=False, retries=3)]
    shares.clear()  # the stream tasks hold their shares; each share is freed once its stream is done
    small = [s for s in streams if s not in large]
    stats = dict(zip(small, client.gather([client.submit(operator.itemgetter(1), holders[s][0], pure=False)
                                           for s in small])))
    stats.update(ranged.statistics({s: holders[s] for s in large}, client, options=options))
    held = [(s, h) for s in streams for h in holders[s]]
    counted, made = zip(*client.gather([client.submit(_size_and_runs, h, pure=False) for _, h in held])) \
        if held else ((), ())
    for s in small:
        stats[s].pop("runs", None)
    sizes = {s: 0 for s in streams}
    for (s, _), n in zip(held, counted):
        sizes[s] += n
    columns: dict[str, list[Any]] = {k: [] for k in _HELD}
    for k, t in _HELD.items():
        for (_, h), n in zip(held, counted):
            for start in range(0, n, CHUNK_ROWS):
                stop = min(start + CHUNK_ROWS, n)
                rows = client.submit(_rows, h, k, start, stop, pure=False)
                columns[k].append(_remote_array(rows, stop - start, t))
    runs = [(s, rows) for (s, _), one in zip(held, made) for rows, _, _ in one]
    blocks = [(first, counts) for one in made for _, first, counts in one]
    return columns, sizes, stats, holders, runs, blocks


#: Rows of one stream's column per Dask chunk (what a slice of the Dataset's pairs fetches at least).
CHUNK_ROWS = 2**20


def _remote_array(future: Any, n: int, dtype: Any) -> Any:
    """A Dask array of one chunk, the result of ``future``: computed by the client that holds it (the default
    one, or any other within ``with client.as_current():``), never copied here until computed."""
    import dask.array as da

    return da.from_delayed(future, shape=(n,), dtype=dtype)


def _stream_sizes(split: dict[int, dict[str, np.ndarray]]) -> dict[int, int]:
    return {s: int(columns["station"].size) for s, columns in sorted(split.items())}


def _station_counts(share: dict[str, np.ndarray] | None) -> np.ndarray:
    return np.zeros(0, np.int64) if share is None else np.bincount(share["station"]).astype(np.int64)


def _size_and_runs(done: tuple[Any, ...]) -> tuple[int, list[tuple[int, np.ndarray, np.ndarray]]]:
    """A holder's pairs and its ranked runs with their block tables (a :func:`stream_of` or
    :func:`ranged.range_of` result)."""
    return int(done[0]["station"].size), (done[2] if len(done) > 2 else done[1]["runs"])


def _rows(done: tuple[dict[str, np.ndarray], Any], name: str, start: int, stop: int) -> np.ndarray:
    return done[0][name][start:stop]


def _variables(columns: dict[str, list[Any]], streams: list[int], sizes: dict[int, int], nm: int,
               options: Options, join: Any) -> dict[str, Any]:
    """The Dataset's pair variables, stream after stream (the stream gives dataset, model and phase)."""
    if join is np.concatenate:
        constant: Any = np.full
    else:  # on the cluster: generated chunk by chunk where computed, never held whole here
        import dask.array as da

        def constant(n: int, value: int, dtype: Any) -> Any:
            return da.full(n, value, dtype=dtype, chunks=CHUNK_ROWS)

    def full(value: Any, dtype: Any) -> list[Any]:
        return [constant(sizes[s], value(s), dtype=dtype) for s in streams]

    def cat(parts: list[Any], dtype: Any) -> Any:
        return join(parts) if parts else np.zeros(0, dtype)

    data = {
        "pair_dataset": cat(full(lambda s: s // (2 * nm), np.int32), np.int32),
        "pair_model": cat(full(lambda s: (s // 2) % nm, np.int32), np.int32),
        "pair_phase": cat(full(lambda s: s % 2, np.int8), np.int8),
        "pair_station": cat(columns["station"], np.int32),
        # Seconds, converted once from the integer nanoseconds (SPEC §5).
        "residual": cat(columns["residual_ns"], np.int64) / 1e9,
        "pair_conf": cat(columns["conf"], np.float64),
    }
    if options.group_by is not None:  # SPEC §14
        data["pair_group"] = cat(columns["group"], np.int32)
    # Each run's ranked copy (SPEC §9), in the same rows as its canonical pairs.
    data["ranked_residual"] = cat(columns["ranked_residual_ns"], np.int64)
    data["ranked_level"] = cat(columns["ranked_level"], np.int16)
    return data


def _laid_out(stats: dict[int, Any], nd: int, nm: int, options: Options) -> dict[str, dict[str, np.ndarray]]:
    """Each stream's statistics placed on the results' (dataset, model, phase[, threshold | group])."""
    return lay_out({(s // (2 * nm), (s // 2) % nm, s % 2): one for s, one in stats.items()}, shape=(nd, nm),
                   n_thresholds=options.grid.size, n_groups=options.n_groups, grouped=options.group_by is not None)
