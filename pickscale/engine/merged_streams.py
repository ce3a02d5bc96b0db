"""The SPEC §5 statistics of an extension's merged streams (SPEC §11): kept, read by rank, or timed from pairs.

A merged (dataset, model, phase) stream with pairs on one side only keeps that side's statistics as it states
them (:func:`statistics_apart`).  One with pairs on both sides is timed: from the stored sums and the blocks of the
stored ranked runs its searches reach, with the new run's pairs (:func:`ranked_statistics`; a store that keeps
them, SPEC §9), or from every stored pair with the new ones (:func:`merged_statistics`; a store written before).
:mod:`pickscale.engine.extension` runs one of them on a thread while it merges the counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StoreError
from ..metrics.flags import keeps_flags
from ..metrics.ranked_runs import RankedMismatch
from ..metrics.split_stream import BLOCK
from ..metrics.timing import lay_out
from ..options import PHASES, Options
from ..results.derived import stored_statistics
from ..results.extend import merged_index, ranks_kept
from ..results.variables import RUNS
from ..results.variables import residual_ns as residual_ns_of
from ..store.pair_chunks import PAIR_SOURCE, NotHere
from ..store.segments import PAIR_CHUNK_ROWS
from . import ranged
from .by_rank import RankedRows, ranked_stream, stream_by_rank
from .pairs import PairColumns, statistics_of
from .stored_pairs import stream_map

if TYPE_CHECKING:
    import xarray as xr

    from .stored_pairs import StoredShares

__all__ = ["keeps_statistics", "present_models", "statistics_apart", "merged_statistics", "by_rank", "runs_on",
           "ranked_statistics"]


def keeps_statistics(stored: xr.Dataset) -> bool:
    """Whether ``stored`` states what its streams' SPEC §5 statistics are, so that a stream kept from one side
    is exact: what the two rules found (:func:`~pickscale.metrics.flags.keeps_flags`).  Stores written before
    they were kept have every stream timed again from its pairs.  (A store without its exact sums,
    ``residual_sums``, gives an extension without them: :func:`_without_sums`.)"""
    return keeps_flags(stored)


def _without_sums(stored: xr.Dataset, statistics: dict[str, dict[str, np.ndarray]]
                  ) -> dict[str, dict[str, np.ndarray]]:
    """``statistics`` without the exact sums where ``stored`` keeps none (written before they were kept): the
    sums of its streams kept from it are not known, so the merged results keep none either."""
    if "residual_sums" not in stored:
        statistics.pop("sums", None)
    return statistics


def present_models(side: xr.Dataset) -> dict[str, set[str]]:
    """Each dataset's models present in results ``side`` (``model_present``).

    >>> import xarray as xr
    >>> side = xr.Dataset({"model_present": (("dataset", "model"), [[True, False]])},
    ...                   coords={"dataset": ["d"], "model": ["a", "b"]})
    >>> present_models(side)
    {'d': {'a'}}
    """
    present = np.asarray(side["model_present"].transpose("dataset", "model").values, dtype=bool)
    return {str(d): {str(m) for m, p in zip(side["model"].values, row) if p}
            for d, row in zip(side["dataset"].values, present)}


def statistics_apart(stored: xr.Dataset, new: xr.Dataset, datasets: list[str], models: list[str], *,
                     options: Options, streams: tuple[set[int], set[int]] | None = None
                     ) -> dict[str, dict[str, np.ndarray]]:
    """The merged streams' statistics on ``datasets`` and ``models`` of the streams whose pairs are all on one
    side: each takes that side's statistics as it states them (:func:`~pickscale.results.derived.stored_statistics`:
    its timing readings and what SPEC §5's rules found), and no pair is read.  Exact: a stream's statistics are
    those of its pairs.  ``streams``: the merged stream codes (``(dataset · models + model) · 2 + phase``) taken
    from the store and from the new run; None: every stream of each (dataset, model) present on a side (an
    extension that shares none: :func:`shares_no_stream`).  The other streams: no pairs (n_pairs 0, NaN)."""
    out = lay_out({}, shape=(len(datasets), len(models)), n_thresholds=options.grid.size, n_groups=0,
                  grouped=False)
    for side, chosen in zip((stored, new), streams or (None, None)):
        stated = stored_statistics(side, options)
        d_of, m_of = merged_index(side["dataset"].values, datasets), merged_index(side["model"].values, models)
        present = np.asarray(side["model_present"].transpose("dataset", "model").values, dtype=bool)
        for d, m, p in ((d, m, p) for d, m in zip(*np.nonzero(present)) for p in (0, 1)):
            if chosen is not None and (d_of[d] * len(models) + m_of[m]) * 2 + p not in chosen:
                continue
            for kind in ("sweep", "mode", "grid", "sums"):
                for name, values in stated.get(kind, {}).items():
                    out[kind][name][d_of[d], m_of[m], p] = values[d, m, p]
    return _without_sums(stored, out)


def merged_statistics(stored: xr.Dataset, new: xr.Dataset, new_pairs: PairColumns, datasets: list[str],
                       models: list[str], *, client: Any, options: Options, ahead: StoredShares
                       ) -> dict[str, dict[str, np.ndarray]]:
    """The merged streams' statistics (on ``datasets`` and ``models``): each stream with pairs on both sides
    timed from its stored pairs (``ahead``: read a batch at a time, checked as read, each share sent to the
    cluster at once) and the new run's where they are (its stream tasks); a stream with pairs on one side only
    keeps that side's statistics (:func:`statistics_apart`; SPEC §11), where the store keeps what SPEC §5's
    rules found (else it is timed too)."""
    got = ahead.result(datasets=datasets, models=models)
    shares, sizes = got.shares, dict(got.sizes)
    # The new run's streams, on the merged coordinates (each side's names are a sorted subset of them).
    merged_code = stream_map(new, datasets=datasets, models=models)
    new_sizes = {merged_code(code): size for code, size in new_pairs.sizes.items() if size}
    one_sided = None
    if keeps_statistics(stored):
        stored_only = {c for c, n in sizes.items() if n and c not in new_sizes}
        new_only = {c for c in new_sizes if not sizes.get(c)}
        one_sided = statistics_apart(stored, new, datasets, models, options=options, streams=(stored_only, new_only))
        for c in stored_only:  # (their shares let go: read and checked, never timed again)
            shares.pop(c, None)
            sizes.pop(c, None)
    offset = 0
    for code, size in new_pairs.sizes.items():
        if one_sided is None or merged_code(code) not in new_only:
            if code in new_pairs.tasks:
                held: list[Any] = list(new_pairs.tasks[code])  # (its stream's tasks: one, or one per range)
            else:  # (no cluster: the run's pairs are here, in stream order)
                held = [{"residual_ns": residual_ns_of(new["residual"].values[offset:offset + size]),
                         "conf": np.asarray(new["pair_conf"].values[offset:offset + size])}]
            shares.setdefault(merged_code(code), []).extend(held)
            sizes[merged_code(code)] = sizes.get(merged_code(code), 0) + size
        offset += size
    timed_streams = sorted(shares)
    timed = statistics_of(dict(sorted(shares.items())), client, options=options, n_datasets=len(datasets),
                          n_models=len(models), sizes=sizes)
    if one_sided is None:
        return timed
    nm = len(models)
    for c in timed_streams:  # (the streams with pairs on both sides, over the one-sided ones)
        cell = (c // (2 * nm), (c // 2) % nm, c % 2)
        for kind in ("sweep", "mode", "grid", "sums"):
            for name, values in timed[kind].items():
                if kind in one_sided:
                    one_sided[kind][name][cell] = values[cell]
    return one_sided


def by_rank(stored: xr.Dataset) -> bool:
    """Whether an extension times ``stored``'s streams from their ranked runs and exact sums (SPEC §11) rather
    than their pairs."""
    return ranks_kept(stored) and keeps_statistics(stored)


def runs_on(runs: list[Any], datasets: list[str], models: list[str]) -> list[tuple[int, int]]:
    """Ranked runs listed by name (``attrs["pair_runs"]``: dataset, model, phase, pairs) as (stream code on the
    merged ``datasets`` and ``models``, pairs), in row order.

    >>> runs_on([["d", "m", "S", 5], ["d", "n", "P", 2]], ["d"], ["a", "m", "n"])
    [(3, 5), (4, 2)]
    """
    d_at = {name: i for i, name in enumerate(datasets)}
    m_at = {name: i for i, name in enumerate(models)}
    return [((d_at[str(d)] * len(models) + m_at[str(m)]) * 2 + PHASES.index(str(p)), int(n)) for d, m, p, n in runs]


def ranked_statistics(stored: xr.Dataset, new: xr.Dataset, new_pairs: PairColumns, datasets: list[str],
                      models: list[str], *, client: Any, options: Options, store: Any = None
                      ) -> dict[str, dict[str, np.ndarray]]:
    """The merged streams' statistics (on ``datasets`` and ``models``) of an extension of a store that keeps its
    pairs ranked (SPEC §9, §11): a stream with pairs on one side only keeps that side's (:func:`statistics_apart`);
    a stream with pairs on both is timed from the new run's pairs where they are (its stream tasks) and the
    stored ones by rank -- its exact sums as stored, and every order statistic and rule candidate from the
    blocks of its ranked runs that the searches reach (:class:`~pickscale.metrics.ranked_runs.RankedStream`),
    never every stored pair: on a cluster by one task a stream beside the new run's (:mod:`.by_rank`), else
    here."""
    runs = runs_on(stored.attrs[RUNS], datasets, models)
    sizes: dict[int, int] = {}
    starts, first_block = [], []
    row = block = 0
    for code, n in runs:
        starts.append(row)
        first_block.append(block)
        row, block = row + n, block + -(-n // BLOCK)
        sizes[code] = sizes.get(code, 0) + n
    merged_code = stream_map(new, datasets=datasets, models=models)
    new_sizes = {merged_code(code): size for code, size in new_pairs.sizes.items() if size}
    stored_only = {c for c, n in sizes.items() if n and c not in new_sizes}
    new_only = {c for c in new_sizes if not sizes.get(c)}
    out = statistics_apart(stored, new, datasets, models, options=options, streams=(stored_only, new_only))
    both = sorted(c for c in new_sizes if sizes.get(c))
    if not both:
        return out
    first = np.asarray(stored["ranked_first"].values)
    counts = np.asarray(stored["ranked_counts"].values)
    kept = np.asarray(stored["residual_sums"].transpose("dataset", "model", "phase", "level", "residual_term").values)
    d_of = {str(d): i for i, d in enumerate(stored["dataset"].values)}
    m_of = {str(m): i for i, m in enumerate(stored["model"].values)}
    nm = len(models)
    streams = {}  # each stream with pairs on both sides: its stored runs' tables, where they start, its sums
    for c in both:
        mine = [i for i, (code, n) in enumerate(runs) if code == c and n]
        blocks = [slice(first_block[i], first_block[i] + -(-runs[i][1] // BLOCK)) for i in mine]
        cell = (d_of[datasets[c // (2 * nm)]], m_of[models[(c // 2) % nm]], c % 2)
        streams[c] = ([(first[b], counts[b]) for b in blocks], [starts[i] for i in mine], kept[cell])
    new_of = {merged_code(code): code for code in new_pairs.sizes}
    try:
        timed = _by_rank_there(streams, new_of, new_pairs, stored, client=client, options=options)
        if timed is None:
            timed = _by_rank_here(streams, new_of, new_pairs, stored, new, client=client, options=options)
    except RankedMismatch as error:  # (an edit the store's opening does not read for: the blocks read now)
        raise StoreError(f"results store {store}: variable 'ranked_residual' does not match its block table "
                         f"(ranked_first, ranked_counts; SPEC §9, §15): {error}") from None
    for c, one in timed.items():
        cell = (c // (2 * nm), (c // 2) % nm, c % 2)
        for name, values in one["sweep"].items():
            out["sweep"][name][cell] = values
        for kind in ("mode", "grid"):
            for name, value in one[kind].items():
                out[kind][name][cell] = value
        out["sums"]["residual_sums"][cell] = one["sums"]
    return out


def _by_rank_there(streams: dict[int, Any], new_of: dict[int, int], new_pairs: PairColumns, stored: xr.Dataset, *,
                   client: Any, options: Options) -> dict[int, dict[str, Any]] | None:
    """Each stream timed by rank on the cluster, one task a stream beside the new run's (:func:`stream_by_rank`);
    None where there is no cluster, or its workers cannot see the store's folder."""
    source = stored.encoding.get(PAIR_SOURCE)
    if client is None or source is None or not all(code in new_pairs.tasks for code in new_of.values()):
        return None
    tasks = {c: client.submit(stream_by_rank, tables, at, source, sums, *new_pairs.tasks[new_of[c]], options=options,
                              phase=c % 2, pure=False, retries=3) for c, (tables, at, sums) in streams.items()}
    try:
        return dict(zip(tasks, client.gather(list(tasks.values()))))
    except NotHere:
        return None


def _by_rank_here(streams: dict[int, Any], new_of: dict[int, int], new_pairs: PairColumns, stored: xr.Dataset,
                  new: xr.Dataset, *, client: Any, options: Options) -> dict[int, dict[str, Any]]:
    """Each stream timed by rank here: the stored blocks read from the Dataset ``stored`` (its variables read when
    used), the new run's parts where they are (:func:`pickscale.engine.ranged.statistics`)."""
    e, level = stored["ranked_residual"].variable, stored["ranked_level"].variable
    rows = RankedRows(lambda lo, hi: (np.asarray(e[lo:hi].values), np.asarray(level[lo:hi].values)),
                      int((stored["ranked_residual"].encoding.get("chunks") or (PAIR_CHUNK_ROWS,))[0]))
    offsets = dict(zip(new_pairs.sizes, np.cumsum([0, *new_pairs.sizes.values()]).tolist()))
    parts: dict[int, list[Any]] = {}
    for c, (tables, at, sums) in streams.items():
        shared = int(np.searchsorted(options.grid, options.threshold_of(c % 2), side="left"))
        parts[c] = [ranked_stream(tables, at, rows, sums, shared=shared, bound=options.residual_tol_ns)]
        code = new_of[c]
        if code in new_pairs.tasks:  # (its stream's tasks, one or one per range: their facts made there)
            parts[c] += [client.submit(ranged.part_of, held, options=options, phase=c % 2, pure=False, retries=3)
                         for held in new_pairs.tasks[code]]
        else:  # (no cluster: the run's pairs are here, in stream order)
            window = slice(offsets[code], offsets[code] + new_pairs.sizes[code])
            parts[c].append(ranged.part_of({"residual_ns": residual_ns_of(new["residual"].values[window]),
                                            "conf": np.asarray(new["pair_conf"].values[window])},
                                           options=options, phase=c % 2))
    return ranged.statistics(parts, client if new_pairs.tasks else None, options=options)
