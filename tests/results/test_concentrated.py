"""SPEC §5, "Concentrated residuals": the worked example, the rule's edges and the warning a run gives."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.metrics.timing import concentrated, residual_mode

MS = 1_000_000


def test_worked_example_of_spec():
    spike = [0] * 18 + [10 * MS] * 3 + [-10 * MS] * 2 + [20 * MS] * 2
    mode = residual_mode(spike)
    assert mode == {"n": 25, "residual_ns": 0, "count": 18, "second": 3}
    assert concentrated(mode)
    tight = [0] * 40 + [10 * MS] * 24 + [-10 * MS] * 24 + [20 * MS] * 6 + [-20 * MS] * 6
    assert residual_mode(tight)["count"] == 40 and residual_mode(tight)["second"] == 24
    assert not concentrated(residual_mode(tight))


def test_the_rule_at_its_edges():
    # 19 pairs: too few, however concentrated.
    assert not concentrated(residual_mode([0] * 19))
    assert concentrated(residual_mode([0] * 20))
    # Share exactly 20 %: not more than 0.2 n.
    assert not concentrated(residual_mode([0] * 4 + list(range(1, 17))))
    # Exactly three times the next value: concentrated; one fewer: not.
    assert concentrated(residual_mode([0] * 9 + [5] * 3 + list(range(10, 18))))
    assert not concentrated(residual_mode([0] * 8 + [5] * 3 + list(range(10, 19))))
    # Equally common values: the smallest is the mode.
    assert residual_mode([7, 7, 3, 3])["residual_ns"] == 3


@pytest.mark.slow
@given(values=st.lists(st.integers(-5, 5), min_size=0, max_size=80))
@settings(max_examples=100, deadline=None)
def test_mode_against_brute_force(values):
    mode = residual_mode(values)
    counts = {v: values.count(v) for v in set(values)}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert mode["n"] == len(values)
    if values:
        assert (mode["residual_ns"], mode["count"]) == ranked[0]
        assert mode["second"] == (ranked[1][1] if len(ranked) > 1 else 0)
    want = (len(values) >= 20 and bool(ranked) and ranked[0][1] > 0.2 * len(values)
            and ranked[0][1] >= 3 * (ranked[1][1] if len(ranked) > 1 else 0))
    assert concentrated(mode) == want


def _catalogue(n: int = 30):
    """One station: ``exact`` picks every arrival at exactly its time, ``jitter`` 3–40 ms off, all different."""
    t0 = pd.Timestamp("2024-01-01T00:00:00Z")
    times = [t0 + pd.Timedelta(seconds=60 * i) for i in range(n)]
    ref = pd.DataFrame({"station": "XX.A", "phase": "P", "time": times})
    jitter = [pd.Timedelta(milliseconds=3 + i * 37 % 38) for i in range(n)]
    picks = pd.concat([
        pd.DataFrame({"model": "exact", "station": "XX.A", "phase": "P", "time": times, "conf": 0.9}),
        pd.DataFrame({"model": "jitter", "station": "XX.A", "phase": "P",
                      "time": [t + j for t, j in zip(times, jitter)], "conf": 0.9}),
    ], ignore_index=True)
    return ref, picks


@pytest.mark.slow
def test_a_run_warns_of_concentrated_residuals_once_per_model():
    ref, picks = _catalogue()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = pickscale.score(ref, picks)
    said = [str(w.message) for w in seen if "concentrated on one value" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("exact:") and "all P (100% of 30 at +0.000 s)" in said[0]
    assert said[0] in ds.attrs["warnings"]
    assert float(ds.medae.sel(dataset="all", model="exact", phase="P", threshold=0.3)) == 0.0  # what it warns of


@pytest.mark.slow
def test_the_warning_is_kept_in_the_store_and_not_said_twice(tmp_path):
    ref, picks = _catalogue()
    with pytest.warns(pickscale.errors.PickscaleWarning):
        ds = pickscale.score(ref, picks)
    back = pickscale.open_results(pickscale.store.save(ds, tmp_path / "results.zarr"))
    assert sum("concentrated on one value" in w for w in back.attrs["warnings"]) == 1
    assert np.array_equal(back.medae.values, ds.medae.values, equal_nan=True)
