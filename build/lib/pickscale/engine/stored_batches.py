"""One batch of a store's residual pairs read, checked and cut into its streams, on the worker that reads it.

An extension on a cluster has its workers read the stored pairs (issue 22: the client holds none of them):
:func:`read_and_cut` reads pairs ``lo … hi − 1`` from the store's folder (:class:`~pickscale.store.pair_chunks.
PairSource`, every chunk file checked against the manifest the store was opened with), makes SPEC §15's checks
of that batch (:class:`~pickscale.store.pair_rules.PairRules`) and cuts it into the (dataset, model, phase)
streams whose statistics the extension times again; the shares stay where they were cut, for the stream tasks.
What the client needs to make the checks across batches is the batch's :class:`Report`.

Loaded on workers: numpy and Zarr only (no xarray, as for :mod:`pickscale.engine.parts`).

Examples
--------
>>> import pathlib, tempfile, pandas as pd, pickscale
>>> from pickscale.store import open_results
>>> from pickscale.store.consistency import stored_options
>>> from pickscale.store.pair_chunks import PAIR_SOURCE
>>> from pickscale.store.pair_rules import PairRules
>>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"], "time": [10.0, 20.0]})
>>> picks = ref.assign(time=[10.1, 19.9], conf=[0.9, 0.8], model="m")
>>> target = pickscale.save(pickscale.score(ref, picks), pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
>>> stored = open_results(target)
>>> cut = read_and_cut(stored.encoding[PAIR_SOURCE], PairRules(target, stored, stored_options(target, stored.attrs)),
...                    0, 2)
>>> cut[0]["residual_ns"].tolist(), cut[1]["residual_ns"].tolist(), report_of(cut).sizes
([100000000], [-100000000], {0: 1, 1: 1})
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.pair_chunks import PairSource
from ..store.pair_rules import BatchFacts, PairRules

__all__ = ["Report", "Merged", "read_and_cut", "by_stream", "placed", "report_of"]


@dataclass
class Report(BatchFacts):
    """A task's :class:`BatchFacts` without its columns, and its pairs per stream (``sizes``)."""

    sizes: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Merged:
    """Where a batch's pairs go in an extension that merges every pair into one segment again (a stored model
    replaced, SPEC §11): the merged index of each stored dataset, model and station (``d_of``, ``m_of``,
    ``s_of``), the stored (dataset, model)s left out (``dropped``), and the merged models' count."""

    d_of: np.ndarray
    m_of: np.ndarray
    s_of: np.ndarray
    dropped: np.ndarray
    n_models: int


def read_and_cut(source: PairSource, rules: PairRules, lo: int, hi: int, merged: Merged | None = None
                 ) -> dict[Any, Any]:
    """On a worker: pairs ``lo … hi − 1`` read, checked, and cut into their streams (``{stream: share}``), with
    the check's report under ``None``.  Without ``merged``: streams coded on the store's coordinates, each share
    the ``residual_ns`` and ``conf`` a stream's statistics read; with it, on the merged coordinates, the pairs of
    a dropped (dataset, model) left out, and each share every column a stream task puts in canonical order
    (``station`` on the merged stations, ``residual_ns``, ``conf``, ``group``)."""
    batch = source.read(rules.names, lo, hi)
    facts = rules.check(lo, batch)
    d, m, p, s = (facts.derived[k] for k in ("pair_dataset", "pair_model", "pair_phase", "pair_station"))
    columns = {"residual_ns": facts.derived["residual_ns"], "conf": batch["pair_conf"].astype(np.float64)}
    if merged is None:
        stream = (d * rules.nm + m) * 2 + p
    else:
        keep = ~merged.dropped[d, m]
        stream = ((merged.d_of[d] * merged.n_models + merged.m_of[m]) * 2 + p)[keep]
        columns = {"station": merged.s_of[s][keep].astype(np.int32), **{k: v[keep] for k, v in columns.items()},
                   "group": np.zeros(int(keep.sum()), np.int32)}  # (SPEC §14: stores with groups are not extended)
        if stream.size and (stream.min() < 0 or columns["station"].min() < 0):
            raise RuntimeError("internal error: a pair of a model or station the merged results do not hold")
    out: dict[Any, Any] = dict(by_stream(stream, columns))
    out[None] = Report(lo=facts.lo, rows=facts.rows, derived={}, first=facts.first, last=facts.last, at=facts.at,
                       counts=facts.counts, sizes={code: int(share["conf"].size) for code, share in out.items()})
    return out


def by_stream(stream: np.ndarray, columns: dict[str, np.ndarray]) -> list[tuple[int, dict[str, np.ndarray]]]:
    """A batch of pairs cut into its streams: ``(stream, share)`` in stream order, each share the rows of
    ``columns`` of one stream code in ``stream``, in their order (a canonical batch is stream-ordered already,
    its shares slices; segments each begin the order again: then sorted, stably).

    >>> [(code, share["x"].tolist()) for code, share in by_stream(np.array([3, 1, 3]), {"x": np.array([7, 8, 9])})]
    [(1, [8]), (3, [7, 9])]
    """
    if (np.diff(stream) < 0).any():
        order = np.argsort(stream, kind="stable")
        stream, columns = stream[order], {k: v[order] for k, v in columns.items()}
    cuts = np.flatnonzero(np.diff(stream)) + 1
    return [(int(stream[a]), {k: v[a:b] for k, v in columns.items()})
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, stream.size]) if b > a]


def placed(held: Any, s_of: np.ndarray) -> dict[str, np.ndarray]:
    """On a worker: a new run's stream task's pairs (its result: the columns in canonical order, and their
    statistics) with their stations on the merged coordinates (``s_of``: each of the run's stations' merged
    index), as :func:`read_and_cut` gives a stored batch's."""
    columns = held[0] if isinstance(held, tuple) else held
    station = s_of[columns["station"]]
    if station.size and station.min() < 0:
        raise RuntimeError("internal error: a pair of a station the merged results do not hold")
    return {**columns, "station": station.astype(np.int32)}


def report_of(cut: dict[Any, Any]) -> Report:
    """The :class:`Report` of a batch :func:`read_and_cut` cut."""
    return cut[None]
