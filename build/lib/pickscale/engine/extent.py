"""What a run records for later extensions (SPEC §11): the store's ``attrs["extent"]``, and the run's reference.

``attrs["extent"]`` (plain JSON, times as int64 ns) is written by every run
(:func:`facts_of`) and kept up to date by every extension; it also carries, per
stretch and scored station, the first and last scored arrival
(``arrival_spans``) and how station names were read (``station_key``):

``datasets[d]``
    one entry per scored stretch of dataset ``d``: ``picks`` (first and last
    scored pick, all models), ``scored`` (the scored span of SPEC §2),
    ``stations`` (its scored stations), ``arrivals`` and ``reference_sha256``,
    a content hash of its scored reference rows (:func:`reference_digest`);
``models[d][m]``
    the ``[first pick, last pick]`` spans of model ``m`` in dataset ``d``.

:func:`pickscale.extend` also compares the new run's normalised reference with the one stored: the run's
:func:`~pickscale.engine.stages.prepare` keeps it as buckets where they are
(:attr:`~pickscale.engine.stages.Run.reference`), and :func:`digest_of` hashes them there, bucket by bucket.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"dataset": ["d", "d", "d"], "station": ["B", "A", "A"], "phase": ["S", "P", "P"],
...                       "time": [5, 3, 3]})
>>> reference_digest(frame, "d")[1], reference_digest(frame, "d") == reference_digest(frame.iloc[::-1], "d")
(2, True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..scope.arrivals import Arrivals

__all__ = ["facts_of", "reference_digest", "arrival_spans", "digest_of", "digest_rows"]

def _rows_of(frame: pd.DataFrame, dataset: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """A dataset's rows as (its distinct station names sorted, each row's index into them, phase, time).

    On the columns' own codes (the normalised reference holds its text as categoricals): a row costs a few
    integers here, never a Python string (5·10^6 arrivals made 1.3 GB of strings at the client's peak).
    """
    mask = np.asarray(frame["dataset"] == dataset)
    rows = frame if mask.all() else frame[mask]  # (one dataset: its rows, not a copy of them)
    column = rows["station"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, categories = column.cat.codes.to_numpy(np.int64), column.cat.categories
    else:
        codes, categories = pd.factorize(column.astype(object))
        codes = np.asarray(codes, dtype=np.int64)
    used = np.unique(codes)
    names = [str(categories[u]) for u in used]
    rank = np.argsort(np.array(names, dtype=object), kind="stable")  # code-point order, as np.unique of str
    lookup = np.zeros(int(used.max()) + 1 if used.size else 0, dtype=np.int32)
    lookup[used[rank]] = np.arange(used.size, dtype=np.int32)
    return ([names[i] for i in rank], lookup[codes],
            np.asarray(rows["phase"] == "S").astype(np.int8), np.asarray(rows["time"], dtype=np.int64))


def digest_rows(bucket: Any, dataset: str, stations: Sequence[str] | None = None, span: Sequence[int] | None = None,
                times: bool = True) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """A bucket's share of :func:`reference_digest`: the rows of ``dataset`` (at ``stations`` and inside the
    inclusive ``span`` if given), deduplicated and sorted by (station, phase, time) as the digest hashes them.

    Returns the distinct stations' names (sorted), per station its number of distinct P rows then S rows
    (shape (stations, 2)) and, with ``times``, the rows' times (int64, in that order).  Every station's rows are
    in one bucket, and the buckets hold ranges of stations in order: the digest of the whole reference hashes
    the buckets' shares one after the other (:func:`digest_of`).
    """
    frame = bucket.frame if hasattr(bucket, "frame") else bucket
    names, code, phase, time = _rows_of(frame, dataset)
    keep = np.ones(code.size, dtype=bool)
    if stations is not None:
        keep &= np.isin(np.asarray(names, dtype=object), list(stations))[code]
    if span is not None:
        keep &= (time >= int(span[0])) & (time <= int(span[1]))
    code, phase, time = code[keep], phase[keep], time[keep]
    if not keep.all():  # the names of the stations kept, renumbered (``present`` is sorted: a rank)
        present = np.unique(code)
        names = [names[i] for i in present]
        code = np.searchsorted(present, code)
    order = np.lexsort((time, phase, code))
    code, phase, time = code[order], phase[order], time[order]
    if code.size:
        distinct = np.r_[True, (np.diff(code) != 0) | (np.diff(phase) != 0) | (np.diff(time) != 0)]
        code, phase, time = code[distinct], phase[distinct], time[distinct]
    counts = np.zeros((len(names), 2), dtype=np.int64)
    np.add.at(counts, (code.astype(np.int64), phase.astype(np.int64)), 1)
    return names, counts, (time.astype("<i8") if times else None)


def _digest(shares: Sequence[tuple[list[str], np.ndarray]], times: Any) -> tuple[str, int]:
    """SHA-256 of the shares' rows (:func:`digest_rows`, in bucket order): the names, then every row's station
    index (int32), then every phase (int8), then every time (int64 ns, little-endian, fetched by ``times``, an
    iterable of the buckets' arrays in order)."""
    names = [n for share in shares for n in share[0]]
    counts = np.concatenate([share[1] for share in shares]) if shares else np.zeros((0, 2), np.int64)
    h = hashlib.sha256()
    h.update(json.dumps(names, ensure_ascii=False).encode("utf-8"))
    per_station = counts.sum(axis=1)
    step = 1 << 16  # stations at a time: the codes and phases made (and hashed) a piece at a time
    for lo in range(0, len(names), step):
        n = per_station[lo:lo + step]
        h.update(np.repeat(np.arange(lo, lo + n.size, dtype="<i4"), n).tobytes())
    for lo in range(0, len(names), step):
        c = counts[lo:lo + step]
        h.update(np.repeat(np.tile(np.array([0, 1], dtype=np.int8), c.shape[0]), c.reshape(-1)).tobytes())
    for t in times:
        h.update(np.ascontiguousarray(t).tobytes())
    return h.hexdigest(), int(counts.sum())


def reference_digest(frame: pd.DataFrame, dataset: str, *, stations: Sequence[str] | None = None,
                     span: Sequence[int] | None = None) -> tuple[str, int]:
    """SHA-256 of a dataset's reference rows (deduplicated, sorted, canonical), and how many there are.

    Rows of ``dataset`` (at ``stations`` and inside the inclusive ``span`` if
    given), as ``(station, phase, time)``: the distinct stations' names, then
    each distinct row (station index int32, phase int8 0 = P 1 = S, time int64
    ns, little-endian), sorted.  Row order and duplicates do not matter.
    """
    names, counts, times = digest_rows(frame, dataset, stations, span)
    return _digest([(names, counts)], [times])


def _share(bucket: Any, dataset: str, stations: Sequence[str] | None, span: Sequence[int] | None
           ) -> tuple[list[str], np.ndarray]:
    names, counts, _ = digest_rows(bucket, dataset, stations, span, times=False)
    return names, counts


def _times(bucket: Any, dataset: str, stations: Sequence[str] | None, span: Sequence[int] | None) -> np.ndarray:
    times = digest_rows(bucket, dataset, stations, span)[2]
    assert times is not None
    return times


def digest_of(arrivals: Arrivals, dataset: str, *, stations: Sequence[str] | None = None,
              span: Sequence[int] | None = None) -> tuple[str, int]:
    """:func:`reference_digest` of the reference held as buckets (:class:`pickscale.scope.arrivals.Arrivals`),
    the same bytes hashed: each bucket sorts and deduplicates its rows where it is; the names and counts come
    back, then the times one bucket after the other (this process holds one bucket's times at a time)."""
    shares = arrivals.map(_share, dataset, stations, span)
    return _digest(shares, arrivals.stream(_times, dataset, stations, span))


def arrival_spans(frame: pd.DataFrame, dataset: str, stations: Sequence[str]) -> list[list[int] | None]:
    """Per station of ``stations`` (in that order), ``[first, last]`` arrival time (int64 ns) of ``dataset``'s
    rows in ``frame``, or None where the station has none.

    What a stretch records so that a later extension can tell whether the store holds arrivals inside the new
    part's scored span (SPEC §11) without the stored reference.

    Examples
    --------
    >>> frame = pd.DataFrame({"dataset": ["d", "d", "d"], "station": ["A", "A", "B"], "phase": ["P", "S", "P"],
    ...                       "time": [7, 3, 5]})
    >>> arrival_spans(frame, "d", ["A", "B", "C"])
    [[3, 7], [5, 5], None]
    """
    names, code, _, time = _rows_of(frame, dataset)
    # One pass over the rows (a catalogue has 10^5 stations): min and max per station.
    first = np.full(len(names), np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(len(names), np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, code, time)
    np.maximum.at(last, code, time)
    found = {name: [int(first[i]), int(last[i])] for i, name in enumerate(names)}
    return [found.get(str(name)) for name in stations]


def _spans(scored: pd.DataFrame, dataset: str, stations: Sequence[str]) -> list[list[int] | None]:
    """:func:`arrival_spans` of the scored reference, from its per-(dataset, station) summary."""
    rows = scored[scored["dataset"] == dataset]
    found = {str(s): [int(lo), int(hi)] for s, lo, hi in zip(rows["station"].tolist(), rows["t_min"].tolist(),
                                                             rows["t_max"].tolist())}
    return [found.get(str(name)) for name in stations]


def facts_of(scope: Any, pick_summary: pd.DataFrame, *, station_key: str = "as-is") -> dict[str, Any]:
    """What a run records for later extensions (``attrs["extent"]``): per dataset its scored stretch, per
    (dataset, model) its pick span, and how station names were read (``station_key``)."""
    datasets: dict[str, list[dict[str, Any]]] = {}
    models: dict[str, dict[str, list[list[int]]]] = {}
    for d in scope.datasets:
        rows = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(scope.stations[d])
                            & pick_summary["model"].isin(scope.models[d])]
        if not len(rows):
            continue
        digest, n = digest_of(scope.arrivals, d)
        stations = [str(s) for s in scope.stations[d]]
        datasets[d] = [{"picks": [int(rows["t_min"].min()), int(rows["t_max"].max())],
                        "scored": [int(scope.spans[d][0]), int(scope.spans[d][1])],
                        "stations": stations, "arrivals": n, "reference_sha256": digest,
                        "arrival_spans": _spans(scope.scored_summary, d, stations)}]
        per_model = rows.groupby("model", observed=True).agg(lo=("t_min", "min"), hi=("t_max", "max"))
        # Columns as lists (plain ints), not a Series per row (iterrows): 16,000 models were seconds.
        models[d] = {str(m): [[lo, hi]] for m, lo, hi in zip(per_model.index.tolist(), per_model["lo"].tolist(),
                                                             per_model["hi"].tolist())}
    return {"datasets": datasets, "models": models, "station_key": station_key}
