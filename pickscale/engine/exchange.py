"""Moving picks from the parts they were read in to the work partitions that score them.

Two ways, both ending in the same scoring (:func:`pickscale.engine.scoring.score_units`)
and the same reduction tree, so they give identical results:

- **shuffle** — the picks become a Dask DataFrame (one encoded frame per read
  part, the scored arrivals alongside them: :data:`EXCHANGE_COLUMNS`, and the
  :data:`OPTIONAL_COLUMNS` a run needs) and Dask's shuffle moves it by the
  work partition (``method="p2p"`` on a distributed cluster: disk-backed
  buffers bound every worker's memory, whatever the number of picks).  Its
  graph grows like P + Q (read parts + work partitions).
- **direct** — each part is cut into one piece per partition and each scoring
  task takes its piece of every part: no DataFrame machinery and no disk, the
  fastest on one machine, but P × Q graph edges.  Used while P × Q is small.

Dask hashes the shuffle key to pick an output partition.  Each work partition
is given a *label* that Dask's own hash sends to the output partition of the
same number, so the plan's packing (which balances the picks) holds; the
scoring does not rely on it — it scores whatever units arrive, with their
arrivals, which travel with them.

A pick travels with its *stream*, ``model index * 2 + phase``
(:mod:`pickscale.kernel.streams`), an arrival with ``-1 - phase`` in the same
column; SPEC §14's group of an arrival has its own column, ``arrival_group``,
there only when the run has groups of arrivals (``group_by``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from dask import delayed

from .parts import PickPart, part_cells
from .scoring import Piece, score_partition, score_shuffled

__all__ = ["direct", "shuffle", "labels_for", "DIRECT_EDGES", "choose", "Piece", "split_part", "encode_for_plan",
           "arrivals_frame", "exchange_frame", "exchange_meta", "optional_columns", "EXCHANGE_COLUMNS",
           "OPTIONAL_COLUMNS", "split_arrivals"]

#: The direct exchange is used while (read parts) × (work partitions) is at most this.
DIRECT_EDGES = 4096


def _in_coverage(part: PickPart, cover: tuple[Any, pd.DataFrame]) -> np.ndarray:
    """Per pick: inside its dataset's common coverage (``cover`` = (Coverage, the kept cells of the scope))."""
    coverage, keep = cover
    width = np.int64(coverage.n_cells + 1)
    combos = part.combos[["dataset", "station", "model"]].reset_index(names="combo")
    pairs = combos.merge(keep, on=["dataset", "station", "model"], how="inner", sort=False)
    kept = np.sort(pairs["combo"].to_numpy(np.int64) * width + pairs["cell"].to_numpy(np.int64) + 1)
    key = part.combo.astype(np.int64) * width + part_cells(part, coverage) + 1
    pos = np.minimum(np.searchsorted(kept, key), max(kept.size - 1, 0))
    return (kept[pos] == key) if kept.size else np.zeros(key.size, dtype=bool)


def _plan_codes(part: PickPart, plan: Any, cover: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows at scored stations — and inside the coverage —, their work unit, their stream = model * 2 + phase)."""
    combos = part.combos[["dataset", "station", "model"]]
    codes = combos.merge(plan.keys, on=["dataset", "station", "model"], how="left", sort=False)
    skey_of = codes["skey"].to_numpy(np.float64)
    mcode_of = codes["mcode"].to_numpy(np.float64)
    scored = ~np.isnan(skey_of)
    if cover is None:
        rows = np.flatnonzero(scored[part.combo])
    else:  # picks outside the common coverage are dropped here, on the worker
        rows = np.flatnonzero(scored[part.combo] & _in_coverage(part, cover))
    combo = part.combo[rows]
    unit = plan.units_of(skey_of[combo].astype(np.int64), part.time[rows])
    stream_of = np.where(scored, mcode_of, 0).astype(np.int64) * 2
    stream = (stream_of[combo] + part.phase[rows]).astype(plan.stream_dtype)
    return rows, unit, stream


def split_part(part: PickPart, plan: Any, cover: Any = None) -> tuple[Piece, ...]:
    """Cut one part into one :class:`Piece` per work partition (picks of unscored stations dropped).

    ``plan`` is a :class:`pickscale.engine.units.UnitPlan`.  The direct exchange: each
    scoring task takes one piece of every part (see :mod:`pickscale.engine.exchange`).
    ``cover``: None, or (Coverage, the scope's kept cells): picks outside the coverage are dropped too.
    """
    rows, unit, stream = _plan_codes(part, plan, cover)
    # One sort by (partition, unit): units are numbered so that this is one integer key.
    rank = plan.unit_rank[unit]
    order = np.argsort(rank)
    rank = rank[order]
    rows, stream = rows[order], stream[order]
    time_ns = part.time[rows]
    conf = part.conf[rows]
    bounds = np.searchsorted(rank, plan.part_rank_bounds)
    pieces = []
    for i in range(plan.n_parts):  # one step per partition, not per pick
        lo, hi = bounds[i], bounds[i + 1]
        ranks, counts = np.unique(rank[lo:hi], return_counts=True)
        pieces.append(Piece(units=plan.unit_of_rank[ranks], counts=counts.astype(np.int64),
                            stream=stream[lo:hi].copy(), time=time_ns[lo:hi].copy(), conf=conf[lo:hi].copy()))
    return tuple(pieces)


#: Columns of the frame the shuffle exchange moves: picks and arrivals together, arrivals with a negative stream
#: (``-1 - phase``) and conf 0.
EXCHANGE_COLUMNS = ("label", "unit", "stream", "time", "conf")
#: Columns that join the frame only when the run needs them (:func:`optional_columns`), after those: each
#: arrival's group of arrivals (SPEC §14, with ``group_by``) and its event (SPEC §19, with events); a pick's is -1.
OPTIONAL_COLUMNS = ("arrival_group", "event")


def optional_columns(options: Any, *, groups: bool = False, events: Any = None) -> dict[str, np.dtype]:
    """The :data:`OPTIONAL_COLUMNS` of this run's exchange frame and their dtypes: none by default.

    ``arrival_group``: when the arrivals carry groups of arrivals (``groups``, SPEC §14), the narrowest of
    int8, int16 and int32 holding ``options.n_groups - 1`` (every code, and a pick's -1): one byte a row up to
    128 groups.  ``event``: when they carry events (``events``: :class:`pickscale.scope.events.Events`, SPEC §19),
    int16 while the codes (each dataset's events numbered from 0) allow, else int32.
    """
    columns: dict[str, np.dtype] = {}
    if groups:
        most = max(int(options.n_groups) - 1, 0)
        columns["arrival_group"] = next(np.dtype(t) for t in (np.int8, np.int16, np.int32)
                                        if most <= np.iinfo(t).max)
    if events is not None:
        most = max((len(names) - 1 for names in events.names.values()), default=0)
        columns["event"] = np.dtype(np.int16 if most < np.iinfo(np.int16).max else np.int32)
    return columns


def exchange_meta(conf_dtype: Any, stream_dtype: Any, optional: dict[str, Any] | None = None) -> pd.DataFrame:
    """The empty frame with the exchange's columns and dtypes (Dask's ``meta``); ``optional``: the
    :data:`OPTIONAL_COLUMNS` present and their dtypes (:func:`optional_columns`), none by default."""
    meta = pd.DataFrame({"label": np.zeros(0, np.int32), "unit": np.zeros(0, np.int32),
                         "stream": np.zeros(0, stream_dtype), "time": np.zeros(0, np.int64),
                         "conf": np.zeros(0, conf_dtype)})
    for name, dtype in (optional or {}).items():
        meta[name] = np.zeros(0, dtype)
    return meta


def encode_for_plan(part: PickPart, plan: Any, labels: np.ndarray, conf_dtype: Any,
                    cover: Any = None, optional: dict[str, Any] | None = None) -> pd.DataFrame:
    """One part's scored picks as rows of the exchange frame (``label`` = the shuffle key of its partition).

    ``optional`` (:func:`optional_columns`): the arrivals' columns the frame has besides
    :data:`EXCHANGE_COLUMNS`, each -1 for a pick (a pick has no group of arrivals and no event).
    """
    rows, unit, stream = _plan_codes(part, plan, cover)
    frame = pd.DataFrame({"label": labels[plan.unit_part[unit]].astype(np.int32), "unit": unit.astype(np.int32),
                          "stream": stream, "time": part.time[rows],
                          "conf": part.conf[rows].astype(conf_dtype, copy=False)})
    for name, dtype in (optional or {}).items():
        frame[name] = np.full(len(frame), -1, dtype)
    return frame


def arrivals_frame(ref_codes: pd.DataFrame, plan: Any, labels: np.ndarray, conf_dtype: Any,
                   optional: dict[str, Any] | None = None) -> pd.DataFrame:
    # (one bucket's arrivals, on the worker that holds them: pickscale.engine.encoding.encode_bucket)
    """Scored arrivals as rows of the exchange frame: stream ``-1 - phase``, conf 0 (an arrival has none).

    ``optional`` (:func:`optional_columns`): each arrival's code in those columns, in their dtypes: its group
    of arrivals (SPEC §14: ``ref_codes["arrival_group"]``) and its event (SPEC §19: ``ref_codes["event"]``).
    """
    frame = pd.DataFrame({"label": labels[ref_codes["part"].to_numpy(np.int64)].astype(np.int32),
                          "unit": ref_codes["unit"].to_numpy(np.int32),
                          "stream": (-1 - ref_codes["phase"].to_numpy(np.int32)).astype(plan.stream_dtype),
                          "time": ref_codes["time"].to_numpy(np.int64),
                          "conf": np.zeros(len(ref_codes), conf_dtype)})
    for name, dtype in (optional or {}).items():
        frame[name] = ref_codes[name].to_numpy().astype(dtype)  # (the reference codes' column of that name)
    return frame


def choose(method: str, n_read: int, n_parts: int) -> str:
    """``"direct"`` or ``"shuffle"`` for ``method`` (``"auto"``, ``"direct"`` or ``"shuffle"``)."""
    if method == "auto":
        return "direct" if n_read * n_parts <= DIRECT_EDGES else "shuffle"
    return method


def labels_for(n_parts: int) -> np.ndarray:
    """For each work partition i, a shuffle key that Dask's hash partitioning sends to output partition i.

    Examples
    --------
    >>> labels = labels_for(5)
    >>> from dask.dataframe.shuffle import partitioning_index
    >>> partitioning_index(pd.DataFrame({"label": labels.astype(float)}), 5).tolist()
    [0, 1, 2, 3, 4]
    """
    from dask.dataframe.shuffle import partitioning_index

    labels = np.full(n_parts, -1, dtype=np.int64)
    start, width = 0, 64 * n_parts
    while (labels < 0).any():
        candidates = np.arange(start, start + width, dtype=np.int64)
        # Dask casts a numeric key to float64 before hashing it.
        target = np.asarray(partitioning_index(pd.DataFrame({"label": candidates.astype(np.float64)}), n_parts))
        first = np.full(n_parts, -1, dtype=np.int64)
        # The smallest candidate of each bucket: candidates ascend, so the first seen wins.
        rev = np.arange(candidates.size)[::-1]
        first[target[rev]] = candidates[rev]
        labels = np.where(labels < 0, first, labels)
        start += width
    if labels.max() > np.iinfo(np.int32).max:  # pragma: no cover - needs ~10^9 partitions
        raise RuntimeError("internal error: shuffle labels exceed int32")
    return labels


def split_arrivals(ref_codes: pd.DataFrame, n_parts: int) -> tuple[dict[str, np.ndarray], ...]:
    """One bucket's arrivals cut into one piece per work partition (columns in the dtypes scoring reads).

    The direct exchange: each scoring task takes its piece of every bucket.
    """
    part_of = ref_codes["part"].to_numpy(np.int64)
    order = np.argsort(part_of, kind="stable")
    bounds = np.searchsorted(part_of[order], np.arange(n_parts + 1))
    del part_of
    # Each column put in partition order once; a partition's arrivals are views of it (one copy in all).
    # arrival_group: SPEC §14; event: SPEC §19 (each only when the reference codes carry it)
    dtypes = {"unit": np.int64, "phase": np.int8, "time": np.int64, "arrival_group": np.int32, "event": np.int32}
    columns = {name: ref_codes[name].to_numpy(dtype)[order] for name, dtype in dtypes.items() if name in ref_codes}
    return tuple({name: values[bounds[i]:bounds[i + 1]] for name, values in columns.items()} for i in range(n_parts))


def direct(pick_parts: list[Any], ref_codes: list[Any], plan: Any, shared_plan: Any, options: Any, *,
           cover: Any = None) -> list[Any]:
    """One delayed :class:`~pickscale.kernel.stacks.Partial` per work partition, by the direct exchange.

    ``ref_codes``: the scored arrivals' codes, one frame per bucket of the reference (where it is).
    """
    pieces = [delayed(split_part)(p, shared_plan, cover) for p in pick_parts]
    arrivals = [delayed(split_arrivals, nout=plan.n_parts)(c, plan.n_parts) for c in ref_codes]
    tasks = []
    for i in range(plan.n_parts):
        tasks.append(delayed(score_partition)([a[i] for a in arrivals], shared_plan, options,
                                              *[p[i] for p in pieces]))
    return tasks


def exchange_frame(pick_parts: list[Any], ref_codes: list[Any], plan: Any, shared_plan: Any, options: Any, *,
                   conf_dtype: Any, cover: Any = None, optional: dict[str, Any] | None = None) -> Any:
    """The Dask DataFrame the shuffle exchange moves: every part's scored picks, then the scored arrivals (one
    partition per bucket of the reference, made where it is).

    Its columns are :data:`EXCHANGE_COLUMNS`, then the :data:`OPTIONAL_COLUMNS` the run has
    (:func:`optional_columns`); ``label`` is the shuffle key of each row's work partition.
    """
    import dask.dataframe as dd

    labels = labels_for(plan.n_parts)
    # SPEC §14's arrival_group and §19's event join the frame (picks: -1) only when the run has them, each as
    # narrow as its codes allow: by default the frame is EXCHANGE_COLUMNS alone.
    meta = exchange_meta(conf_dtype, plan.stream_dtype, optional)
    shared_labels = delayed(labels, pure=True)
    picks = dd.from_delayed([delayed(encode_for_plan)(p, shared_plan, shared_labels, conf_dtype, cover, optional)
                             for p in pick_parts], meta=meta, verify_meta=False)
    arrivals = dd.from_delayed([delayed(arrivals_frame)(c, shared_plan, shared_labels, conf_dtype, optional)
                                for c in ref_codes], meta=meta, verify_meta=False)
    return dd.concat([picks, arrivals])


def shuffle(pick_parts: list[Any], ref_codes: list[Any], plan: Any, shared_plan: Any, options: Any, *,
            conf_dtype: Any, distributed: bool, cover: Any = None, optional: dict[str, Any] | None = None) -> list[Any]:
    """One delayed :class:`~pickscale.kernel.stacks.Partial` per work partition, through Dask's shuffle."""
    frame = exchange_frame(pick_parts, ref_codes, plan, shared_plan, options, conf_dtype=conf_dtype, cover=cover,
                           optional=optional)
    moved = frame.shuffle(on="label", npartitions=plan.n_parts, ignore_index=True,
                          shuffle_method="p2p" if distributed else "tasks")
    return [delayed(score_shuffled)(part, shared_plan, options) for part in moved.to_delayed()]
