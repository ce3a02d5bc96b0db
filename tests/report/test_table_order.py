"""The tables' row order: keys sorted as Python compares them (text by code point), ties kept in place.

``report.tables._sorted`` sorts with numpy where numpy orders the values as Python does and falls back on
Python's comparison where it would not (text with trailing NUL characters, NaN, values of mixed types);
both paths are checked here against ``sorted`` over the rows' key tuples.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from pickscale.report.tables import _sort_key, _sorted

TEXT = st.text(alphabet=st.sampled_from(["a", "b", "B", "é", "\U0001f600", "\0", " ", "Z", "ä"]), max_size=3)
KEYS = {
    "text": TEXT,
    "float": st.sampled_from([0.1, 0.2, -0.0, 0.0, 1.0, float("nan")]),
    "int": st.integers(-3, 3),
    "time": st.sampled_from([np.datetime64("2021-01-01T00:00", "ns"), np.datetime64("2020-12-31T23:00", "ns"),
                             np.datetime64("NaT", "ns")]),
}


def python_order(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = sorted(range(len(frame)), key=lambda i: tuple(frame[k].iat[i] for k in keys))
    return frame.iloc[order].reset_index(drop=True)


@st.composite
def frames(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=3))
    n = draw(st.integers(0, 12))
    data = {f"k{j}_{kind}": draw(st.lists(KEYS[kind], min_size=n, max_size=n)) for j, kind in enumerate(kinds)}
    frame = pd.DataFrame(data)
    for name in frame:
        if name.endswith("_text"):
            frame[name] = frame[name].astype(object)
        elif name.endswith("_time"):
            frame[name] = pd.to_datetime(frame[name])
    frame["row"] = np.arange(n)  # which row went where: ties must keep their order
    return frame, [c for c in frame if c != "row"]


@given(frames())
def test_rows_are_in_pythons_order(case):
    frame, keys = case
    pd.testing.assert_frame_equal(_sorted(frame, keys), python_order(frame, keys))


def test_a_hand_worked_order():
    frame = pd.DataFrame({"model": ["b", "a", "B", "a", "é"], "threshold": [0.2, 0.3, 0.1, 0.1, 0.0],
                          "row": range(5)}).astype({"model": object})
    got = _sorted(frame, ["model", "threshold"])
    # Code points: "B" (66) < "a" (97) < "b" (98) < "é" (233); the two "a" rows by threshold.
    assert got["row"].tolist() == [2, 3, 1, 0, 4]
    # Sorted by numpy (no NUL, no NaN); with a trailing NUL or NaN, by Python's comparison.
    assert _sort_key(frame["model"]) is not None and _sort_key(frame["threshold"]) is not None
    assert _sort_key(pd.Series(["a\0"], dtype=object)) is None and _sort_key(pd.Series([np.nan])) is None
