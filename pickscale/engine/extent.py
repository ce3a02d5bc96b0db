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

:func:`pickscale.extend` also compares the new run's normalised reference with the one stored: it keeps it
from the run's :func:`~pickscale.engine.stages.prepare` (:attr:`~pickscale.engine.stages.Run.reference`).

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
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["facts_of", "reference_digest", "arrival_spans"]

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


def reference_digest(frame: pd.DataFrame, dataset: str, *, stations: Sequence[str] | None = None,
                     span: Sequence[int] | None = None) -> tuple[str, int]:
    """SHA-256 of a dataset's reference rows (deduplicated, sorted, canonical), and how many there are.

    Rows of ``dataset`` (at ``stations`` and inside the inclusive ``span`` if
    given), as ``(station, phase, time)``: the distinct stations' names, then
    each distinct row (station index int32, phase int8 0 = P 1 = S, time int64
    ns, little-endian), sorted.  Row order and duplicates do not matter.
    """
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
    code = code.astype("<i4")
    order = np.lexsort((time, phase, code))
    code, phase, time = code[order], phase[order], time[order].astype("<i8")
    if code.size:
        distinct = np.r_[True, (np.diff(code) != 0) | (np.diff(phase) != 0) | (np.diff(time) != 0)]
        code, phase, time = code[distinct], phase[distinct], time[distinct]
    h = hashlib.sha256()
    h.update(json.dumps(names, ensure_ascii=False).encode("utf-8"))
    for values in (code, phase, time):
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest(), int(code.size)


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
        digest, n = reference_digest(scope.reference, d)
        stations = [str(s) for s in scope.stations[d]]
        datasets[d] = [{"picks": [int(rows["t_min"].min()), int(rows["t_max"].max())],
                        "scored": [int(scope.spans[d][0]), int(scope.spans[d][1])],
                        "stations": stations, "arrivals": n, "reference_sha256": digest,
                        "arrival_spans": arrival_spans(scope.reference, d, stations)}]
        per_model = rows.groupby("model", observed=True).agg(lo=("t_min", "min"), hi=("t_max", "max"))
        # Columns as lists (plain ints), not a Series per row (iterrows): 16,000 models were seconds.
        models[d] = {str(m): [[lo, hi]] for m, lo, hi in zip(per_model.index.tolist(), per_model["lo"].tolist(),
                                                             per_model["hi"].tolist())}
    return {"datasets": datasets, "models": models, "station_key": station_key}
