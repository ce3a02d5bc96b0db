"""SPEC §16: a model with no pick in one part of the inputs has NaN out-of-sample readings there -- said in a
warning (and kept with the run's warnings), not left to be read as a result."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pickscale


@pytest.mark.slow
def test_a_model_only_in_one_part_is_said():
    t0 = pd.Timestamp("2023-12-01T00:00:00Z")
    times = [t0 + pd.Timedelta(days=3 * i) for i in range(20)]  # 10 before 2024-01-01, 10 after
    ref = pd.DataFrame({"station": "XX.A", "phase": "P", "time": times})
    early = ref[ref["time"] < pd.Timestamp("2024-01-01T00:00:00Z")]
    picks = pd.concat([ref.assign(model="everywhere", conf=0.8), early.assign(model="before_only", conf=0.7)],
                      ignore_index=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = pickscale.score(ref, picks, select_on="before:2024-01-01", progress=False)
    said = [str(w.message) for w in seen if "select_on" in str(w.message) and "no pick" in str(w.message)]
    assert said == ["select_on before:2024-01-01T00:00:00Z: model 'before_only' has no pick in the report part of "
                    "dataset 'all': the *_oos readings are NaN (nothing to read the choice on) there (SPEC §16)."]
    assert said[0] in ds.attrs["warnings"]
    oos = ds["recall_at_best_oos"].sel(dataset="all", phase="P")
    assert np.isnan(float(oos.sel(model="before_only"))) and not np.isnan(float(oos.sel(model="everywhere")))
