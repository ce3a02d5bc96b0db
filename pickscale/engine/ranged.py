"""Streams of residual pairs too large for one task: held in parts on the cluster, timed there exactly.

One task per (dataset, model, phase) stream holds all of its pairs while it sorts them (about 100 bytes a
pair): the largest stream bounds a worker's memory.  A stream of more than :data:`RANGE_ROWS` pairs is
instead cut into ranges of stations (:func:`cut_points`, from its pairs' counts per station), each put in the
store's canonical order by a task of its own (:func:`range_of`; in station order the ranges are the stream's
canonical order), and its SPEC §5 statistics are combined from what each range knows
(:mod:`pickscale.metrics.split_stream`), in :func:`statistics`:

1. the additive facts (counts and exact integer sums per level) are added;
2. every median and quantile the statistics need is found by a binary search on the residual (integer ns):
   each round asks every part how many of its pairs lie at or below the tried value, and the parts' answers
   add up to the stream's, so the search ends on the stream's exact order statistic (about 32 rounds,
   every stream's searches in the same rounds);
3. the most common residual and the residual grid at the shared threshold from the candidates the parts
   name, counted in every part.

The same numbers as one task over the whole stream (``tests/engine/test_ranged.py``).  An extension's merged
streams are timed the same way from the store's batches and the new run's streams (:func:`part_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..metrics.grid import GRID_MIN_VALUES, GRID_SHARE, GRID_STEPS_NS
from ..metrics.level_sums import LevelSums, encode
from ..metrics.ranked_runs import RankedStream, block_table
from ..metrics.split_stream import (
    PartFacts,
    count_below,
    facts_of,
    heavy_residues,
    heavy_values,
    residue_facts,
    value_counts,
)
from ..metrics.timing import CONCENTRATED_RATIO, CONCENTRATED_SHARE, GROUP_NAMES, finish, levels_of, order_queries
from ..options import Options

__all__ = ["RANGE_ROWS", "cut_points", "range_of", "ranked_runs", "part_of", "statistics"]

#: The most pairs of a stream one task sorts (larger streams are cut into ranges of stations).
RANGE_ROWS = 2**22
#: The share of a part's pairs at the shared threshold a value must hold to be named a candidate for the most
#: common residual: any value holding more than CONCENTRATED_SHARE / CONCENTRATED_RATIO of the stream's holds
#: more than that of some part's, and only those can be the most common of a concentration (SPEC §5) or the
#: second most common that would rule it out.
_MODE_SHARE = CONCENTRATED_SHARE / (CONCENTRATED_RATIO + 1)

_COLUMNS = {"station": np.int32, "residual_ns": np.int64, "conf": np.float64, "group": np.int32}


def cut_points(counts: np.ndarray, rows: int = RANGE_ROWS) -> list[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of station indices, in order, each holding at most ``rows`` of the pairs counted per
    station in ``counts`` (a station with more is a range of its own), none empty.

    Examples
    --------
    >>> cut_points(np.array([3, 0, 4, 2, 9, 1]), rows=6)
    [(0, 2), (2, 4), (4, 5), (5, 6)]
    """
    out, lo, held = [], 0, 0
    for s, n in enumerate(np.asarray(counts, dtype=np.int64).tolist()):
        if held and held + n > rows:
            out.append((lo, s))
            lo, held = s, 0
        held += n
    if held:
        out.append((lo, len(counts)))
    return out


def range_of(*shares: dict[str, np.ndarray] | None, lo: int, hi: int, options: Options,
             phase: int) -> tuple[dict[str, np.ndarray], PartFacts, list[tuple[int, np.ndarray, np.ndarray]]]:
    """The pairs of stations ``lo … hi − 1`` of a stream's shares, in the store's canonical order (station,
    residual, conf, group) with their ranked copy, their facts and their ranked run (:func:`ranked_runs`)."""
    have = [s for s in shares if s is not None]
    cat = {k: np.concatenate([s[k] for s in have]).astype(t, copy=False) for k, t in _COLUMNS.items()}
    keep = (cat["station"] >= lo) & (cat["station"] < hi)
    cat = {k: v[keep] for k, v in cat.items()}
    order = np.lexsort((cat["group"], cat["conf"], cat["residual_ns"], cat["station"]))
    columns = {k: v[order] for k, v in cat.items()}
    runs = ranked_runs(columns, options, whole=True)
    return columns, _facts(columns, options, phase), runs


def ranked_runs(columns: dict[str, np.ndarray], options: Options, *, whole: bool = False
                ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Add to a stream's canonical ``columns`` its *ranked* copy (SPEC §9), run by run: ``ranked_residual_ns``
    ascending, ties by ``ranked_level`` (each pair's level on the grid) ascending; return each run's pairs and
    block table (:func:`~pickscale.metrics.ranked_runs.block_table`).  A stream of more than :data:`RANGE_ROWS`
    pairs is cut into the runs a cluster's ranges make (:func:`cut_points` of its pairs per station), so that a
    store is the same bytes however its streams were held; ``whole``: one run (a range's own pairs).  What an
    extension reads of a stored stream, a block at a time, instead of every pair
    (:class:`~pickscale.metrics.ranked_runs.RankedStream`)."""
    e = np.asarray(columns["residual_ns"], dtype=np.int64)
    level = levels_of(columns["conf"], options.grid)
    station = np.asarray(columns["station"])
    bounds = [(0, e.size)]
    if not whole and e.size > RANGE_ROWS:  # (canonical order: station first, so a range of stations is a range of rows)
        bounds = [(int(np.searchsorted(station, lo)), int(np.searchsorted(station, hi)))
                  for lo, hi in cut_points(np.bincount(station))]
    width = options.grid.size + 1
    ranked_e, ranked_level, runs = np.empty_like(e), np.empty(e.size, np.int16), []
    for a, b in bounds:
        x, lv = e[a:b], level[a:b]
        if x.size and int(np.abs(x).max()) < (2**62) // width:  # one key, one sort: (e, level) in order
            order = np.argsort(x * width + lv, kind="stable")
        else:
            order = np.lexsort((lv, x))
        ranked_e[a:b], ranked_level[a:b] = x[order], lv[order]
        runs.append((b - a, *block_table(ranked_e[a:b], ranked_level[a:b], options.grid.size)))
    columns["ranked_residual_ns"], columns["ranked_level"] = ranked_e, ranked_level
    return runs


def part_of(*shares: Any, options: Options, phase: int) -> PartFacts:
    """The facts of some of a stream's pairs in any order (shares as :func:`pickscale.engine.pairs.stream_of`
    takes them, or its results): an extension's stored batches and its new streams."""
    have = [s[0] if isinstance(s, tuple) else s for s in shares if s is not None]
    names = ("residual_ns", "conf", "group") if options.n_groups else ("residual_ns", "conf")
    columns = {k: np.concatenate([s[k] for s in have] or [np.zeros(0, _COLUMNS[k])]) for k in names}
    return _facts(columns, options, phase)


def _facts(columns: dict[str, np.ndarray], options: Options, phase: int) -> PartFacts:
    return facts_of(columns["residual_ns"], columns["conf"], columns.get("group") if options.n_groups else None,
                    thresholds=options.grid, threshold=options.threshold_of(phase), tol=options.tol,
                    n_groups=options.n_groups)


def _on_facts(fn: Callable[..., Any], part: Any, *args: Any) -> Any:
    """``fn`` of a part's facts (a :func:`range_of` result holds its columns too; a stored stream held in
    ranked runs answers with its method of the same name)."""
    if isinstance(part, RankedStream) and hasattr(part, fn.__name__):
        return getattr(part, fn.__name__)(*args)
    return fn(part[1] if isinstance(part, tuple) else part, *args)


def summary(facts: PartFacts | RankedStream) -> tuple[LevelSums, list[LevelSums], int]:
    """A part's additive facts: its sums, its groups' sums and its pairs at the shared threshold (a stored
    stream's sums are the store's, its groups none: an extension's streams have none)."""
    if isinstance(facts, RankedStream):
        assert facts.sums is not None
        return facts.sums, [], facts.n_shared
    return facts.sums, facts.groups, facts.n_shared


def _here(part: Any) -> bool:
    """Whether a part is held by this process (else it is a future on the cluster)."""
    return isinstance(part, (RankedStream, PartFacts, tuple))


def statistics(parts: dict[int, list[Any]], client: Any, *, options: Options) -> dict[int, dict[str, Any]]:
    """Each stream's statistics (:func:`pickscale.metrics.timing.pair_statistics`' form) from its parts:
    ``parts[stream]`` lists :class:`~pickscale.metrics.split_stream.PartFacts` or :func:`range_of` results
    (futures of them on ``client``'s cluster; None: here)."""
    def call(fn: Callable[..., Any], jobs: list[tuple[Any, tuple[Any, ...]]]) -> list[Any]:
        # (a part held here -- a stored stream read by rank, or any part without a cluster -- answers here,
        # while the cluster's parts answer there)
        there = [i for i, (part, _) in enumerate(jobs) if client is not None and not _here(part)]
        sent = [client.submit(_on_facts, fn, jobs[i][0], *jobs[i][1], pure=False, retries=3) for i in there]
        out = [None if i in set(there) else _on_facts(fn, part, *args) for i, (part, args) in enumerate(jobs)]
        for i, got in zip(there, client.gather(sent) if sent else []):
            out[i] = got
        return out

    streams = sorted(parts)
    flat = [(s, p) for s in streams for p in (parts[s] or [part_of(options=options, phase=s % 2)])]
    summaries = call(summary, [(p, ()) for _, p in flat])
    total: dict[int, Any] = {}
    for (s, _), (sums, groups, n) in zip(flat, summaries):
        t = total.get(s)
        total[s] = (sums, groups, n) if t is None else (
            t[0] + sums, [a + b for a, b in zip(t[1], groups)], t[2] + n)
    values = _order_statistics(streams, flat, total, call, options)
    modes = _modes(streams, flat, total, call)
    grids = _grids(streams, flat, total, call)
    out = {}
    for s in streams:
        sums, groups, _n = total[s]
        by_group: dict[str, np.ndarray] = {}
        if options.n_groups:
            per = [finish(g, values[(s, k)]) for k, g in enumerate(groups)]
            by_group = {name: np.stack([p[name][0] for p in per]) for name in GROUP_NAMES}
            by_group["n_pairs"] = by_group["n_pairs"].astype(np.int64)
        out[s] = {"sweep": finish(sums, values[(s, -1)]), "mode": modes[s], "grid": grids[s], "by_group": by_group,
                  "sums": encode(sums)}
    return out


def _order_statistics(streams: list[int], flat: list[tuple[int, Any]], total: dict[int, Any],
                      call: Callable[..., list[Any]], options: Options) -> dict[tuple[int, int], dict]:
    """Every order statistic of every stream (and arrival group) by binary search, all in the same rounds."""
    bound = options.residual_tol_ns
    shared = {s: int(np.searchsorted(options.grid, options.threshold_of(s % 2), side="left")) for s in streams}
    queries: list[tuple[int, int, str, int, int]] = []  # (stream, group or -1, kind, j, rank)
    for s in streams:
        sums, groups, _n = total[s]
        queries += [(s, -1, kind, j, r) for kind, j, r in order_queries(sums)]
        for g, gsums in enumerate(groups):
            queries += [(s, g, kind, shared[s], r) for kind, _j, r in order_queries(gsums)]
    kind_a = np.array([q[2] == "a" for q in queries], dtype=bool)
    lo = np.where(kind_a, 0, -bound).astype(np.int64)
    hi = np.full(len(queries), bound, np.int64)
    stream_of = np.array([q[0] for q in queries], dtype=np.int64)
    rows = np.array([[q[3], 0, q[1]] for q in queries], dtype=np.int64).reshape(-1, 3)
    rank = np.array([q[4] for q in queries], dtype=np.int64)
    while queries and (lo < hi).any():
        mid = lo + (hi - lo) // 2
        # For |e| <= v: the pairs at or below v less those below −v.
        asked = np.concatenate([rows, rows[kind_a]])
        asked[:len(queries), 1] = mid
        asked[len(queries):, 1] = -mid[kind_a] - 1
        owner = np.concatenate([stream_of, stream_of[kind_a]])
        counts = np.zeros(len(asked), np.int64)
        jobs = [(p, (asked[owner == s],)) for s, p in flat]
        for (s, _), got in zip(flat, call(count_below, jobs)):
            counts[owner == s] += got
        below = counts[:len(queries)].copy()
        below[kind_a] -= counts[len(queries):]
        enough = below >= rank + 1
        hi = np.where(enough, mid, hi)
        lo = np.where(enough, lo, mid + 1)
    values: dict[tuple[int, int], dict] = {(s, g): {} for s in streams for g in range(-1, options.n_groups)}
    for (s, g, kind, j, r), v in zip(queries, lo.tolist()):
        values[(s, g)][(kind, 0 if g >= 0 else j, r)] = int(v)
    return values


def _modes(streams: list[int], flat: list[tuple[int, Any]], total: dict[int, Any],
           call: Callable[..., list[Any]]) -> dict[int, dict[str, int]]:
    """SPEC §5's most common residual at the shared threshold, exactly where the concentration rule can fire
    (:func:`pickscale.metrics.timing.residual_mode`'s form; ``second`` is exact when above the stream's
    ``_MODE_SHARE``, else a count no larger than the true one: the rule's answer is the same)."""
    named = call(heavy_values, [(p, (_MODE_SHARE,)) for _, p in flat])
    candidates = {s: np.unique(np.concatenate([v for (t, _), v in zip(flat, named) if t == s] or
                                              [np.zeros(0, np.int64)])) for s in streams}
    counted = call(value_counts, [(p, (candidates[s],)) for s, p in flat])
    out = {}
    for s in streams:
        n = int(total[s][2])
        counts = sum((c for (t, _), c in zip(flat, counted) if t == s), np.zeros(candidates[s].size, np.int64))
        if not counts.size:
            out[s] = {"n": n, "residual_ns": 0, "count": 0, "second": 0}
            continue
        top = int(np.argmax(counts))  # the first of the largest: the smallest such value
        rest = np.delete(counts, top)
        out[s] = {"n": n, "residual_ns": int(candidates[s][top]), "count": int(counts[top]),
                  "second": int(rest.max()) if rest.size else 0}
    return out


def _grids(streams: list[int], flat: list[tuple[int, Any]], total: dict[int, Any],
           call: Callable[..., list[Any]]) -> dict[int, dict[str, int]]:
    """SPEC §5's residual grid at the shared threshold (:func:`pickscale.metrics.grid.residual_grid`'s answer):
    a residue holding GRID_SHARE of the stream's pairs holds it in some part, so the parts' own are the
    candidates."""
    named = call(heavy_residues, [(p, (GRID_SHARE,)) for _, p in flat])
    candidates: dict[int, dict[int, list[int]]] = {}
    for (s, _), per in zip(flat, named):
        mine = candidates.setdefault(s, {step: [] for step in GRID_STEPS_NS})
        for step, residues in per.items():
            mine[step] = sorted(set(mine[step]) | set(residues))
    facts = call(residue_facts, [(p, (candidates[s],)) for s, p in flat])
    out = {}
    for s in streams:
        n = int(total[s][2])
        out[s] = {"n": n, "step_ns": 0, "offset_ns": 0, "count": 0, "values": 0}
        found = [f for (t, _), f in zip(flat, facts) if t == s]
        for step in GRID_STEPS_NS:
            best = None
            for r in candidates[s][step]:
                count = sum(f[(step, r)][0] for f in found)
                if best is None or count > best[1]:
                    best = (r, count)
            if best is None or best[1] < GRID_SHARE * n:
                continue
            distinct = int(np.unique(np.concatenate([f[(step, best[0])][1] for f in found])).size)
            if distinct < GRID_MIN_VALUES:
                continue
            c = best[0]
            out[s] = {"n": n, "step_ns": step, "offset_ns": c - step if 2 * c > step else c, "count": best[1],
                      "values": distinct}
            break
    return out
