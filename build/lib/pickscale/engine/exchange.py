"""Moving picks from the parts they were read in to the work partitions that score them.

Two ways, both ending in the same scoring (:func:`pickscale.engine.scoring.score_units`)
and the same reduction tree, so they give identical results:

- **shuffle** — the picks become a Dask DataFrame (one encoded frame per read
  part, the scored arrivals alongside them: :data:`EXCHANGE_COLUMNS` on the
  index :data:`EXCHANGE_INDEX`, and the :data:`OPTIONAL_COLUMNS` a run needs)
  and Dask's shuffle moves it by the ``code`` column (``method="p2p"`` on a
  distributed cluster: disk-backed buffers bound every worker's memory,
  whatever the number of picks).  Its graph grows like P + Q (read parts +
  work partitions).
- **direct** — each part is cut into one piece per partition and each scoring
  task takes its piece of every part: no DataFrame machinery and no disk, the
  fastest on one machine, but P × Q graph edges.  Used while P × Q is small.

A row of the shuffle frame names its work unit and its *stream* — a pick's
``model index * 2 + phase`` (:mod:`pickscale.kernel.streams`), an arrival's
``-1 - phase`` — by one integer, its ``code`` (:mod:`.shuffle_codes`): each (unit,
stream) *slot* has a code of its own, chosen so that Dask's own hash of it
sends it to the unit's work partition (:func:`codes_for`), so the code is
also the shuffle key and the plan's packing (which balances the picks) holds.
Scoring decodes it (:meth:`Codes.decode`) and checks that every row arrived
where its unit is planned: a unit is scored whole.  When a plan has too many
slots for such codes (:data:`.shuffle_codes.KEYED_SLOTS`), the code is the slot number and a
``label`` column is the key, as many partitions' labels as there are
partitions (:func:`labels_for`).  The row's time is the frame's index: Dask's
p2p shuffle writes a frame's index as a column whatever it is, a default
index too (8 bytes a row).  SPEC §14's group of an arrival and §19's event
have their own columns, there only when the run has them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from dask import delayed

from .parts import PickPart, part_cells
from .scoring import Piece, score_partition, score_shuffled
from .shuffle_codes import Codes, carried, codes_for, labels_for

__all__ = ["direct", "shuffle", "labels_for", "DIRECT_EDGES", "choose", "Piece", "split_part", "encode_for_plan",
           "arrivals_frame", "exchange_frame", "exchange_meta", "optional_columns", "EXCHANGE_COLUMNS",
           "EXCHANGE_INDEX", "OPTIONAL_COLUMNS", "split_arrivals", "Codes", "codes_for", "carried",
           "part_groups", "GROUP_PICKS"]

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
    skey_of, mcode_of = plan.codes_of(part.combos)
    scored = skey_of >= 0
    if cover is None:
        rows = np.flatnonzero(scored[part.combo])
    else:  # picks outside the common coverage are dropped here, on the worker
        rows = np.flatnonzero(scored[part.combo] & _in_coverage(part, cover))
    combo = part.combo[rows]
    unit = plan.units_of(skey_of[combo], part.time[rows])
    stream_of = np.where(scored, mcode_of, 0) * 2
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


#: Columns of the frame the shuffle exchange moves: picks and arrivals together, each row's (unit, stream) as one
#: ``code`` (:class:`Codes`), an arrival's conf 0 (or its event: :func:`carried`).
EXCHANGE_COLUMNS = ("code", "conf")
#: The frame's index: each row's time (int64 ns).
EXCHANGE_INDEX = "time"
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


def exchange_meta(conf_dtype: Any, codes: Codes, optional: dict[str, Any] | None = None) -> pd.DataFrame:
    """The empty frame with the exchange's columns, index and dtypes (Dask's ``meta``); ``optional``: the
    :data:`OPTIONAL_COLUMNS` present and their dtypes (:func:`optional_columns`), none by default."""
    return _frame(codes, None, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, conf_dtype),
                  {name: np.zeros(0, dtype) for name, dtype in (optional or {}).items()}, code=np.zeros(0, codes.dtype))


def _frame(codes: Codes, part: np.ndarray | None, unit: np.ndarray, time_ns: np.ndarray, conf: np.ndarray,
           optional: dict[str, np.ndarray], *, code: np.ndarray) -> pd.DataFrame:
    """A frame of the exchange: [label,] code, conf, the optional columns; the time as its index."""
    columns: dict[str, np.ndarray] = {}
    if not codes.keyed:
        assert codes.labels is not None
        columns["label"] = codes.labels[part] if part is not None else np.zeros(0, np.int32)
    columns["code"] = code
    columns["conf"] = conf
    columns.update(optional)
    return pd.DataFrame(columns, index=pd.Index(time_ns, dtype=np.int64, name=EXCHANGE_INDEX, copy=False))


def encode_for_plan(part: PickPart, plan: Any, codes: Codes, conf_dtype: Any, cover: Any = None,
                    optional: dict[str, Any] | None = None) -> pd.DataFrame:
    """One part's scored picks as rows of the exchange frame.

    ``optional`` (:func:`optional_columns`): the arrivals' columns the frame has besides
    :data:`EXCHANGE_COLUMNS`, each -1 for a pick (a pick has no group of arrivals and no event).
    """
    rows, unit, stream = _plan_codes(part, plan, cover)
    n = rows.size
    return _frame(codes, None if codes.keyed else plan.unit_part[unit], unit, part.time[rows],
                  part.conf[rows].astype(conf_dtype, copy=False),
                  {name: np.full(n, -1, dtype) for name, dtype in (optional or {}).items()},
                  code=codes.encode(unit, stream))


def arrivals_frame(ref_codes: pd.DataFrame, plan: Any, codes: Codes, conf_dtype: Any,
                   optional: dict[str, Any] | None = None) -> pd.DataFrame:
    # (one bucket's arrivals, on the worker that holds them: pickscale.engine.encoding.encode_bucket)
    """Scored arrivals as rows of the exchange frame: stream ``-1 - phase``, conf 0 (an arrival has none; its
    event, with ``codes.events_in_conf``: :func:`carried`).

    ``optional`` (:func:`optional_columns`): each arrival's code in those columns, in their dtypes: its group
    of arrivals (SPEC §14: ``ref_codes["arrival_group"]``) and its event (SPEC §19: ``ref_codes["event"]``).
    """
    unit = ref_codes["unit"].to_numpy(np.int64)
    stream = -1 - ref_codes["phase"].to_numpy(np.int64)
    conf = (ref_codes["event"].to_numpy().astype(conf_dtype) if codes.events_in_conf
            else np.zeros(len(ref_codes), conf_dtype))
    return _frame(codes, None if codes.keyed else ref_codes["part"].to_numpy(np.int64), unit,
                  ref_codes["time"].to_numpy(np.int64), conf,
                  {name: ref_codes[name].to_numpy().astype(dtype) for name, dtype in (optional or {}).items()},
                  code=codes.encode(unit, stream))


def choose(method: str, n_read: int, n_parts: int) -> str:
    """``"direct"`` or ``"shuffle"`` for ``method`` (``"auto"``, ``"direct"`` or ``"shuffle"``)."""
    if method == "auto":
        return "direct" if n_read * n_parts <= DIRECT_EDGES else "shuffle"
    return method


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


#: Read parts this small are encoded together: consecutive parts, up to this many picks in all (and up to
#: :data:`_GROUP_PARTS` parts), in one task (:func:`part_groups`) — so one shuffle input where there were many.
GROUP_PICKS = 1 << 18
_GROUP_PARTS = 64


def part_groups(sizes: Any, n_workers: int = 1) -> list[tuple[int, int]]:
    """Consecutive read parts encoded together, as ``[start, stop)`` ranges of their indices, in order.

    A group holds up to ``min(GROUP_PICKS, total / (2 * n_workers))`` picks (``sizes``: each part's) and up to
    :data:`_GROUP_PARTS` parts; a larger part is a group of its own.  Consecutive, so that the frame's rows keep
    their order and each work partition receives its rows as before, in the same order; a function of the
    sizes alone.  ``sizes`` None: one group per part.

    Examples
    --------
    >>> part_groups([10, 10, 10, 500, 10, 10], n_workers=1)
    [(0, 3), (3, 4), (4, 6)]
    >>> part_groups([10, 10, 10, 500, 10, 10], n_workers=8)  # at most 550 / 16 = 34 picks a group
    [(0, 3), (3, 4), (4, 6)]
    >>> part_groups(None), part_groups([])
    ([], [])
    """
    if sizes is None:
        return []
    sizes = np.asarray(sizes, dtype=np.int64)
    target = max(1, min(GROUP_PICKS, -(-int(sizes.sum()) // (2 * max(1, int(n_workers))))))
    groups: list[tuple[int, int]] = []
    start, held = 0, 0
    for i, n in enumerate(sizes.tolist()):  # one step per read part
        if i > start and (held + n > target or i - start >= _GROUP_PARTS):
            groups.append((start, i))
            start, held = i, 0
        held += n
    if sizes.size:
        groups.append((start, int(sizes.size)))
    return groups


def exchange_frame(pick_parts: list[Any], ref_codes: list[Any], plan: Any, shared_plan: Any, options: Any, *,
                   conf_dtype: Any, cover: Any = None, optional: dict[str, Any] | None = None,
                   codes: Codes | None = None, shared_codes: Any = None, sizes: Any = None,
                   n_workers: int = 1) -> Any:
    """The Dask DataFrame the shuffle exchange moves: the scored picks of every group of read parts
    (:func:`part_groups` of their ``sizes``: one part a partition without them), then the scored arrivals (one
    partition per bucket of the reference, made where it is).

    Its columns are :data:`EXCHANGE_COLUMNS` (after a ``label`` when the codes are not keyed), then the
    :data:`OPTIONAL_COLUMNS` the run has (:func:`optional_columns`); its index is :data:`EXCHANGE_INDEX`.
    ``codes``: :func:`codes_for` ``(plan)`` unless given.  Parts, buckets, ``shared_plan`` and ``shared_codes``
    given as futures (a cluster's): each partition is made by a task of ``dd.from_map``, which Dask fuses with
    the shuffle's hashing (one task a group, not four).
    """
    import dask.dataframe as dd

    if codes is None:
        codes, optional = carried(codes_for(plan), optional, conf_dtype)
    # SPEC §14's arrival_group and §19's event join the frame (picks: -1) only when the run has them, each as
    # narrow as its codes allow: by default the frame is EXCHANGE_COLUMNS alone.
    meta = exchange_meta(conf_dtype, codes, optional)
    groups = [list(pick_parts[a:b]) for a, b in part_groups(sizes, n_workers)] if sizes is not None and len(
        sizes) == len(pick_parts) else [[p] for p in pick_parts]
    inputs = [("picks", g) for g in groups] + [("arrivals", [c]) for c in ref_codes]
    if shared_codes is not None:  # futures: one task a partition, each input an argument of its own
        width = max(len(items) for _, items in inputs) if inputs else 1
        columns = [[items[j] if j < len(items) else None for _, items in inputs] for j in range(width)]
        return dd.from_map(_encoded, [kind for kind, _ in inputs], *columns,
                           args=[shared_plan, shared_codes, conf_dtype, cover, optional], meta=meta,
                           enforce_metadata=False, label="encode-exchange")
    shared_codes = delayed(codes, pure=True)
    frames = [delayed(_encoded)(kind, *items, shared_plan, shared_codes, conf_dtype, cover, optional)
              for kind, items in inputs]
    return dd.from_delayed(frames, meta=meta, verify_meta=False)


def _encoded(kind: str, *items_and_args: Any) -> pd.DataFrame:
    """One partition of the exchange frame: ``items`` (read parts, or one bucket's arrival codes; None: no more)
    encoded, in order; then the shared arguments (plan, codes, conf dtype, cover, optional columns)."""
    plan, codes, conf_dtype, cover, optional = items_and_args[-5:]
    items = [item for item in items_and_args[:-5] if item is not None]
    if kind == "picks":
        frames = [encode_for_plan(p, plan, codes, conf_dtype, cover, optional) for p in items]
    else:
        frames = [arrivals_frame(c, plan, codes, conf_dtype, optional) for c in items]
    return frames[0] if len(frames) == 1 else pd.concat(frames)


def shuffle(pick_parts: list[Any], ref_codes: list[Any], plan: Any, shared_plan: Any, options: Any, *,
            conf_dtype: Any, client: Any = None, cover: Any = None, optional: dict[str, Any] | None = None,
            sizes: Any = None, n_workers: int = 1) -> list[Any]:
    """One delayed :class:`~pickscale.kernel.stacks.Partial` per work partition, through Dask's shuffle.

    ``sizes``: each read part's picks (:attr:`pickscale.engine.parts.PickPart.sizes`), so that small consecutive
    parts are encoded together (:func:`part_groups`, for ``n_workers``).
    """
    codes, optional = carried(codes_for(plan), optional, conf_dtype)
    if client is not None:
        from distributed import futures_of  # lazy: a cluster's module, on a cluster only

        shared_plan, shared_codes = client.compute([shared_plan, delayed(codes, pure=True)])
        if cover is not None:
            cover = client.compute(cover)
        pick_parts = [futures_of(p)[0] for p in pick_parts]
        ref_codes = [futures_of(c)[0] for c in ref_codes]
    else:
        shared_codes = delayed(codes, pure=True)
    frame = exchange_frame(pick_parts, ref_codes, plan, shared_plan, options, conf_dtype=conf_dtype, cover=cover,
                           optional=optional, codes=codes, shared_codes=shared_codes if client is not None else None,
                           sizes=sizes, n_workers=n_workers)
    # The index (each row's time) is kept: ignore_index=False.
    moved = frame.shuffle(on=codes.key, npartitions=plan.n_parts, ignore_index=False,
                          shuffle_method="p2p" if client is not None else "tasks")
    return [delayed(score_shuffled)(part, shared_plan, shared_codes, options, i)
            for i, part in enumerate(moved.to_delayed())]
