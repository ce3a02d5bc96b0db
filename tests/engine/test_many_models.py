"""Issue 15, item 1: many models (one per training checkpoint) never overflow a model or stream code.

A pick's stream code is ``model index * 2 + phase``; its dtype follows the
number of models (:attr:`pickscale.engine.units.UnitPlan.stream_dtype`: int8 up to
63 models, int16 up to 16,383, else int32).  Here one station is scored end to
end with model counts on both sides of each boundary (63 / 64: int8, 16,383 /
16,384 / 16,385: int16, where ``2 · M`` crosses 32,767), by both exchanges, and
checked against a hand-built expectation and against a run of a few of the same
models alone (narrow codes).  Before the adaptive dtype, 16,385 models made the
codes of the last model negative (int16) and the run failed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pickscale
from pickscale.engine.units import UnitPlan

S = 1_000_000_000
BASE = pd.Timestamp("2021-03-01", tz="UTC").value


def _paired(n_models: int) -> list[int]:
    """Models whose picks pair with the arrivals: the first, the last, and those around the boundaries."""
    wanted = {0, 1, 62, 63, 64, 65, n_models // 2, 8191, 16382, 16383, 16384, n_models - 2, n_models - 1}
    return sorted(m for m in wanted if 0 <= m < n_models)


def _residual_ns(m: int) -> int:
    return (m % 5) * S // 10


def _conf(m: int) -> np.float32:
    return np.float32(0.3 + (m % 7) / 10)


def _name(m: int) -> str:
    return f"ckpt{m:05d}"  # sorted names = index order


def catalogue(n_models: int, *, only: list[int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One station, a P arrival at 10 s and an S arrival at 15 s.

    A paired model picks P at ``10 s + r`` (and, if odd, S at ``15 s − r``) at
    conf ``c``; every other model picks P at 30 s (conf 0.5), far from any
    arrival.  ``only``: the models to keep (the others are left out).
    """
    ref = pd.DataFrame({"station": ["XX.ONE", "XX.ONE"], "phase": ["P", "S"],
                        "time": pd.to_datetime([BASE + 10 * S, BASE + 15 * S], utc=True)})
    paired = set(_paired(n_models))
    rows = []
    for m in (range(n_models) if only is None else only):
        if m in paired:
            rows.append((_name(m), "P", BASE + 10 * S + _residual_ns(m), _conf(m)))
            if m % 2:
                rows.append((_name(m), "S", BASE + 15 * S - _residual_ns(m), _conf(m)))
        else:
            rows.append((_name(m), "P", BASE + 30 * S, np.float32(0.5)))
    model, phase, time_ns, conf = zip(*rows)
    picks = pd.DataFrame({"model": list(model), "station": "XX.ONE", "phase": list(phase),
                          "time": pd.to_datetime(np.array(time_ns, dtype=np.int64), utc=True),
                          "conf": np.array(conf, dtype=np.float32)})
    return ref, picks


def _score(ref: pd.DataFrame, picks: pd.DataFrame, way: str) -> xr.Dataset:
    return pickscale.score(ref, picks, exchange_method=way)


def check_expected(ds: xr.Dataset, n_models: int) -> None:
    """The counts and pairs every model must have, worked out from the construction."""
    assert ds.sizes["model"] == n_models
    assert ds.model.values[-1] == _name(n_models - 1)
    grid = ds.threshold.values
    paired = _paired(n_models)
    conf = np.array([np.float64(_conf(m)) if m in set(paired) else 0.5 for m in range(n_models)])
    survives = (conf[:, None] >= grid[None, :]).astype(np.int64)  # (model, threshold)
    emitted = ds.emitted.sum("station").isel(dataset=0).values  # (model, phase, threshold)
    matched = ds.matched.sum("station").isel(dataset=0).values
    np.testing.assert_array_equal(emitted[:, 0], survives)
    expect_matched = np.zeros_like(survives)
    expect_matched[paired] = survives[paired]
    np.testing.assert_array_equal(matched[:, 0], expect_matched)
    odd = [m for m in paired if m % 2]
    expect_s = np.zeros_like(survives)
    expect_s[odd] = survives[odd]
    np.testing.assert_array_equal(matched[:, 1], expect_s)
    np.testing.assert_array_equal(emitted[:, 1], expect_s)
    # Residual pairs: (model, phase, residual) of every paired model, in canonical order.
    want = sorted([(m, 0, _residual_ns(m)) for m in paired] + [(m, 1, -_residual_ns(m)) for m in odd])
    got = list(zip(ds.pair_model.values.tolist(), ds.pair_phase.values.tolist(),
                   np.round(ds.residual.values * 1e9).astype(np.int64).tolist()))
    assert got == want
    assert (ds.pair_model.values >= 0).all() and int(ds.pair_model.values.max()) == paired[-1]
    # SPEC §5 at the lowest threshold, per paired model: one P pair, mae = |r|.
    mae = ds.mae.isel(dataset=0, phase=0, threshold=0).values
    np.testing.assert_array_equal(mae[paired], [_residual_ns(m) / 1e9 for m in paired])
    assert np.isnan(np.delete(mae, paired)).all()


def check_against_subset(ds: xr.Dataset, n_models: int, way: str) -> None:
    """The paired models scored alone (int8 codes; one unpaired model keeps the span) give the same numbers."""
    keep = _paired(n_models) + [m for m in range(n_models) if m not in set(_paired(n_models))][:1]
    small = _score(*catalogue(n_models, only=sorted(keep)), way)
    names = small.model.values
    big = ds.sel(model=names)
    for name, var in small.data_vars.items():
        if "model" in var.dims:
            xr.testing.assert_identical(big[name].drop_vars("model"), var.drop_vars("model"))
    for name in ("residual", "pair_phase", "pair_conf"):
        np.testing.assert_array_equal(ds[name].values, small[name].values)
    np.testing.assert_array_equal(ds.model.values[ds.pair_model.values], names[small.pair_model.values])


@pytest.mark.slow
@pytest.mark.parametrize("way", ["direct", "shuffle"])
@pytest.mark.parametrize("n_models", [63, 64, 65])  # 65: the first whose codes (129) pass int8
def test_int8_boundary(n_models, way):
    ref, picks = catalogue(n_models)
    ds = _score(ref, picks, way)
    check_expected(ds, n_models)
    check_against_subset(ds, n_models, way)


@pytest.mark.slow
@pytest.mark.parametrize("way", ["direct", "shuffle"])
# 16,385 models: the first whose codes (32,769) pass int16 — the count that broke before. The dtype chosen on
# either side of the boundary is pinned by test_stream_dtype_holds_every_code, which needs no scoring.
@pytest.mark.parametrize("n_models", [16_385])
def test_int16_boundary(n_models, way):
    ref, picks = catalogue(n_models)
    ds = _score(ref, picks, way)
    check_expected(ds, n_models)
    check_against_subset(ds, n_models, way)


@pytest.mark.parametrize(("n_models", "dtype"), [(63, np.int8), (64, np.int16), (16_383, np.int16),
                                                 (16_384, np.int32), (17_000, np.int32)])
def test_stream_dtype_holds_every_code(n_models, dtype):
    """The dtype holds the largest stream code, ``2 · (M − 1) + 1``, and the arrivals' ``-1 − phase``."""
    plan = UnitPlan(stations=pd.DataFrame({"n_models": [1, n_models]}), keys=pd.DataFrame(), cuts={},
                    unit_station=np.zeros(1, np.int64), unit_part=np.zeros(1, np.int64))
    assert plan.stream_dtype is dtype
    info = np.iinfo(plan.stream_dtype)
    assert info.min <= -2 and 2 * (n_models - 1) + 1 <= info.max
