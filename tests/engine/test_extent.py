"""SPEC §11: the facts a run records for extend (``reference_digest``, ``arrival_spans``) against a brute force,
whatever the columns' dtypes (text or categorical, as the engine's normalised reference holds it)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.engine.extent import arrival_spans, reference_digest

STATIONS = ["A", "B", "Ä", "a", "Z9", "ß", "AB"]


def _brute_digest(frame, dataset, stations=None, span=None):
    rows = {(str(s), int(p == "S"), int(t)) for d, s, p, t in frame[["dataset", "station", "phase", "time"]]
            .itertuples(index=False) if d == dataset and (stations is None or s in stations)
            and (span is None or span[0] <= t <= span[1])}
    names = sorted({s for s, _, _ in rows})
    index = {n: i for i, n in enumerate(names)}
    ordered = sorted((index[s], p, t) for s, p, t in rows)
    h = hashlib.sha256(json.dumps(names, ensure_ascii=False).encode("utf-8"))
    for k, dtype in enumerate(("<i4", "<i1", "<i8")):
        h.update(np.array([r[k] for r in ordered], dtype=dtype).tobytes())
    return h.hexdigest(), len(ordered)


frames = st.lists(st.tuples(st.sampled_from(["d", "e"]), st.sampled_from(STATIONS), st.sampled_from(["P", "S"]),
                            st.integers(0, 20)), max_size=40).map(
    lambda rows: pd.DataFrame(rows, columns=["dataset", "station", "phase", "time"]).astype({"time": np.int64}))


@pytest.mark.slow
@given(frame=frames, categorical=st.booleans(), stations=st.none() | st.sets(st.sampled_from(STATIONS + ["Q"])),
       span=st.none() | st.tuples(st.integers(0, 20), st.integers(0, 20)).map(sorted))
@settings(max_examples=150, deadline=None)
def test_digest_and_spans_against_brute_force(frame, categorical, stations, span):
    if categorical:
        frame = frame.astype({"dataset": "category", "station": "category", "phase": "category"})
    for dataset in ("d", "e", "x"):
        kept = None if stations is None else sorted(stations)
        assert reference_digest(frame, dataset, stations=kept, span=span) == _brute_digest(
            pd.DataFrame(frame).astype(object), dataset, stations, span)
        want = []
        for name in STATIONS + ["Q"]:
            t = [int(r.time) for r in frame.astype(object).itertuples() if r.dataset == dataset and r.station == name]
            want.append([min(t), max(t)] if t else None)
        assert arrival_spans(frame, dataset, STATIONS + ["Q"]) == want
