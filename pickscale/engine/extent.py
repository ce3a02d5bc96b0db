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

:func:`pickscale.extend` also needs the new run's normalised reference (to compare it with the one stored):
:func:`pickscale.score` hands it to :func:`capture_reference`, kept only inside :func:`capturing`.

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"dataset": ["d", "d", "d"], "station": ["B", "A", "A"], "phase": ["S", "P", "P"],
...                       "time": [5, 3, 3]})
>>> reference_digest(frame, "d")[1], reference_digest(frame, "d") == reference_digest(frame.iloc[::-1], "d")
(2, True)
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["facts_of", "reference_digest", "arrival_spans", "capture_reference", "capturing"]

_CAPTURE: contextvars.ContextVar[list | None] = contextvars.ContextVar("pickscale_extend_capture", default=None)


def capture_reference(frame: pd.DataFrame) -> None:
    """Called by :func:`pickscale.score` with the normalised reference: kept while :func:`extended` runs."""
    sink = _CAPTURE.get()
    if sink is not None:
        sink.append(frame)


@contextlib.contextmanager
def capturing() -> Iterator[list]:
    sink: list = []
    token = _CAPTURE.set(sink)
    try:
        yield sink
    finally:
        _CAPTURE.reset(token)


def reference_digest(frame: pd.DataFrame, dataset: str, *, stations: Sequence[str] | None = None,
                     span: Sequence[int] | None = None) -> tuple[str, int]:
    """SHA-256 of a dataset's reference rows (deduplicated, sorted, canonical), and how many there are.

    Rows of ``dataset`` (at ``stations`` and inside the inclusive ``span`` if
    given), as ``(station, phase, time)``: the distinct stations' names, then
    each distinct row (station index int32, phase int8 0 = P 1 = S, time int64
    ns, little-endian), sorted.  Row order and duplicates do not matter.
    """
    rows = frame[np.asarray(frame["dataset"].astype(object) == dataset)]
    station = np.asarray(rows["station"].astype(object), dtype=object).astype(str)
    time = np.asarray(rows["time"], dtype=np.int64)
    keep = np.ones(station.size, dtype=bool)
    if stations is not None:
        keep &= np.isin(station, np.asarray(list(stations), dtype=str))
    if span is not None:
        keep &= (time >= int(span[0])) & (time <= int(span[1]))
    station, time = station[keep], time[keep]
    phase = (np.asarray(rows["phase"].astype(object), dtype=object)[keep] == "S").astype(np.int8)
    names, code = np.unique(station, return_inverse=True)
    code = code.astype("<i4")
    order = np.lexsort((time, phase, code))
    code, phase, time = code[order], phase[order], time[order].astype("<i8")
    if code.size:
        distinct = np.r_[True, (np.diff(code) != 0) | (np.diff(phase) != 0) | (np.diff(time) != 0)]
        code, phase, time = code[distinct], phase[distinct], time[distinct]
    h = hashlib.sha256()
    h.update(json.dumps(names.tolist(), ensure_ascii=False).encode("utf-8"))
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
    rows = frame[np.asarray(frame["dataset"].astype(object) == dataset)]
    station = np.asarray(rows["station"].astype(object), dtype=object).astype(str)
    time = np.asarray(rows["time"], dtype=np.int64)
    # One pass over the rows (a catalogue has 10^5 stations): min and max per station by sorting once.
    names, code = np.unique(station, return_inverse=True)
    order = np.lexsort((time, code))
    code, time = code[order], time[order]
    starts = np.flatnonzero(np.r_[True, np.diff(code) != 0]) if code.size else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], code.size] - 1 if code.size else starts
    found = {str(names[code[a]]): [int(time[a]), int(time[b])] for a, b in zip(starts, ends)}
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
        models[d] = {str(m): [[int(r.lo), int(r.hi)]] for m, r in per_model.iterrows()}
    return {"datasets": datasets, "models": models, "station_key": station_key}
