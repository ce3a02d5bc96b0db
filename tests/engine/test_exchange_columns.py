"""Issue 24, item 4: the shuffle exchange's frame names the model × phase stream and the arrival group apart.

The default frame is ``EXCHANGE_COLUMNS`` alone on its time index (its bytes per pick unchanged); with groups of
arrivals (SPEC §14) an ``arrival_group`` column joins it, carrying each arrival's group code (-1 for a pick), and
an arrival's ``conf`` is always 0.  Real inputs, through ``prepare`` and the exchange's own functions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pickscale.engine import exchange, shuffle_codes
from pickscale.engine.run import run_keywords
from pickscale.engine.stages import _conf_dtype, prepare
from pickscale.options import Options
from pickscale.scope.grouping import group_codes, parse_group_by
from tests.helpers.catalogues import plain_catalogue, with_magnitudes

GROUP_BY = "magnitude:0,1,2,3"


@pytest.fixture(scope="module")
def inputs():
    return with_magnitudes(plain_catalogue(11, n_stations=3, n_events=8), seed=5)


def _frame(ref: pd.DataFrame, picks: pd.DataFrame, **keywords) -> tuple[pd.DataFrame, pd.Series, Any]:
    """(the computed exchange frame, the dtypes Dask declares for it, the run), prepared as ``pickscale.score``
    prepares a run."""
    run = prepare(ref, picks, run_keywords({"progress": False, **keywords}))
    optional = exchange.optional_columns(run.options, groups=run.options.group_labels is not None, events=run.events)
    frame = exchange.exchange_frame(run.pick_parts, run.ref_codes.values(), run.plan, run.plan, run.options,
                                    conf_dtype=_conf_dtype(run.outlines), optional=optional)
    computed = frame.compute()
    assert computed.dtypes.equals(frame.dtypes)  # every partition as declared (from_delayed does not verify)
    assert computed.index.dtype == frame.index.dtype == np.int64 and computed.index.name == "time"
    return computed, frame.dtypes, run


def _streams(frame: pd.DataFrame, run: Any) -> np.ndarray:
    """Each row's stream (a pick's model * 2 + phase, an arrival's -1 - phase), decoded."""
    return shuffle_codes.codes_for(run.plan).decode(frame["code"].to_numpy())[1]


def _row_bytes(dtypes: pd.Series) -> int:
    return int(sum(dtype.itemsize for dtype in dtypes)) + 8  # (and the int64 time index)


def test_the_default_frame_has_no_arrival_group_column(inputs):
    ref, picks = inputs
    frame, dtypes, run = _frame(ref, picks)
    assert tuple(frame.columns) == exchange.EXCHANGE_COLUMNS
    assert "arrival_group" not in frame and "group" not in frame
    # code int8 (a small plan: its largest code is below 128), conf (full-precision: float64), the int64 time index
    assert [str(d) for d in dtypes] == ["int8", "float64"]
    assert _row_bytes(dtypes) == 17
    arrivals = frame[_streams(frame, run) < 0]
    assert len(arrivals) and (arrivals["conf"] == 0).all()


def test_with_groups_the_column_carries_each_arrivals_code_and_its_conf_is_zero(inputs):
    ref, picks = inputs
    plain, plain_dtypes, _ = _frame(ref, picks)
    frame, dtypes, run = _frame(ref, picks, group_by=GROUP_BY)
    assert tuple(frame.columns) == (*exchange.EXCHANGE_COLUMNS, "arrival_group")
    assert dtypes["arrival_group"] == np.int8 and dtypes.drop("arrival_group").equals(plain_dtypes)
    assert _row_bytes(dtypes) == _row_bytes(plain_dtypes) + 1
    is_arrival = _streams(frame, run) < 0
    arrivals, picked = frame[is_arrival], frame[~is_arrival]
    assert (arrivals["conf"] == 0).all()
    assert (picked["arrival_group"] == -1).all()  # a pick has no group of arrivals
    # Every pick row is what the default run moves, column for column.
    plain_run = _frame(ref, picks)[2]
    pd.testing.assert_frame_equal(picked[list(exchange.EXCHANGE_COLUMNS)],
                                  plain[_streams(plain, plain_run) >= 0], check_exact=True)

    # Each arrival's code is the group of its magnitude, found here from the reference itself.
    labels = list(run.options.group_labels)
    assert labels == ["<0", "[0,1)", "[1,2)", "[2,3)", ">=3", "missing"]
    codes, own = group_codes(parse_group_by(GROUP_BY), ref["magnitude"].tolist())
    want = Counter(zip(pd.to_datetime(ref["time"]).map(lambda t: t.value), ref["phase"],
                       [own[c] for c in codes]))
    phase = np.where(_streams(arrivals, run) == -1, "P", "S")
    got = Counter(zip(arrivals.index.tolist(), phase.tolist(),
                      [labels[c] for c in arrivals["arrival_group"].tolist()]))
    assert got == want and sum(got.values()) == len(ref)
    assert set(arrivals["arrival_group"].tolist()) == set(range(len(labels)))


@pytest.mark.parametrize(("n_groups", "dtype"), [(1, np.int8), (128, np.int8), (129, np.int16),
                                                 (32_768, np.int16), (32_769, np.int32)])
def test_the_arrival_group_dtype_holds_every_code(n_groups, dtype):
    """The narrowest of int8, int16, int32 holding codes ``0 … n_groups − 1`` and a pick's -1."""
    options = Options(group_by="site").with_group_labels([f"g{i}" for i in range(n_groups)])
    assert exchange.optional_columns(options, groups=True) == {"arrival_group": np.dtype(dtype)}
    assert exchange.optional_columns(options, groups=False) == {}
