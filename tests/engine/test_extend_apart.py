"""An extension that adds no pair to a stored stream (new models, new datasets) times no stored pair (SPEC §11).

Each merged stream is then on one side only, and its statistics are that side's as stored: the timing readings,
and what SPEC §5's rules found where they fire (``concentrated_*``, ``grid_*``: metrics/flags.py).  Hand-worked
on SPEC §5's two examples: model ``m``'s residuals concentrated on 0 (18 of 25), model ``n``'s on a 0.1 s grid
(23 of 25 at residue 0, four distinct values).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
import pickscale.engine.extension as extension
from pickscale.engine import ranged
from pickscale.metrics.flags import FLAG_NAMES
from tests.helpers.stores import unranked

#: SPEC §5's worked examples, in seconds: concentrated (18 at 0.000 s) and on a grid (0.1 s, offset 0).
CONCENTRATED = [0.0] * 18 + [0.010] * 3 + [-0.010] * 2 + [0.020] * 2
GRIDDED = [-0.1] * 5 + [0.0] * 9 + [0.1] * 6 + [0.2] * 3 + [0.013, -0.047]


def _inputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    arrivals = 100.0 + 10.0 * np.arange(25)
    ref = pd.DataFrame({"station": "A", "phase": "P", "time": arrivals})
    picks = pd.concat([pd.DataFrame({"model": model, "station": "A", "phase": "P", "time": arrivals + np.array(e),
                                     "conf": 0.9}) for model, e in (("m", CONCENTRATED), ("n", GRIDDED))])
    return ref, picks


def _same_as_one_run(extended, one_run) -> bool:
    """The extended results say what one run says: its tables byte for byte, what §5's rules found, the records,
    and every warning of theirs (asserted; True)."""
    for name, table in pickscale.tables(one_run).items():
        assert pickscale.tables(extended)[name].to_csv() == table.to_csv(), name
    for name in FLAG_NAMES:
        assert extended[name].values.tolist() == one_run[name].values.tolist(), name
    assert extended.attrs["data_quality"] == one_run.attrs["data_quality"]
    said = [w for w in one_run.attrs["warnings"] if "concentrated" in w or "grid" in w]
    assert all(w in extended.attrs["warnings"] for w in said)
    return True


def test_the_rules_findings_are_kept_where_they_fire():
    ref, picks = _inputs()
    ds = pickscale.score(ref, picks)
    at = {name: ds[name].sel(dataset="all", phase="P").values.tolist() for name in FLAG_NAMES}
    assert at["concentrated_residual"] == [0, 0] and at["concentrated_count"] == [18, 0]  # m: 18 of 25 at 0
    assert at["grid_step"] == [0, 100_000_000] and at["grid_offset"] == [0, 0]  # n: on the 0.1 s grid …
    assert at["grid_count"] == [0, 23] and at["grid_values"] == [0, 4]  # … 23 of 25, at four values
    assert [r["flag"] for r in ds.attrs["data_quality"]] == ["concentrated", "pick_grid", "reference_offset"]


@pytest.mark.parametrize("lazy", [True, False])
def test_a_store_gives_back_what_the_rules_found(lazy, tmp_path):
    ref, picks = _inputs()
    ds = pickscale.score(ref, picks)
    back = pickscale.open_results(pickscale.save(ds, tmp_path / "results.zarr"), lazy=lazy)
    for name in FLAG_NAMES:
        assert back[name].values.tolist() == ds[name].values.tolist()


def test_an_extension_by_a_new_model_times_no_stored_pair_and_equals_one_run(tmp_path, monkeypatch):
    ref, picks = _inputs()
    one_run = pickscale.score(ref, picks)
    store = pickscale.save(pickscale.score(ref, picks[picks.model == "m"]), tmp_path / "results.zarr")

    def refused(*args, **kwargs):
        raise AssertionError("a stored stream was timed again")

    class Untaken(extension.StoredShares):  # (read ahead while the new inputs are scored, then let go)
        def result(self, **kwargs):
            refused()

    monkeypatch.setattr(extension, "_merged_statistics", refused)
    monkeypatch.setattr(extension, "StoredShares", Untaken)
    extended = pickscale.extend(store, ref, picks[picks.model == "n"])
    # The stored model's concentration is said again of the merged results, in the words of one run.
    assert _same_as_one_run(extended, one_run) and any("concentrated" in w for w in one_run.attrs["warnings"])


@pytest.mark.parametrize("ranked", [True, False])
def test_a_later_stretch_of_a_stored_model_times_its_stored_streams_again(tmp_path, monkeypatch, ranked):
    # A store that keeps its pairs ranked (SPEC §9) has its streams timed by rank, reading no stored pair; one
    # written before, from its pairs.
    ref, picks = _inputs()
    stored = pickscale.score(ref, picks[picks.model == "m"])
    store = pickscale.save(stored if ranked else unranked(stored), tmp_path / "results.zarr")
    later = picks[picks.model == "m"].assign(time=lambda f: f["time"] + 10_000.0)
    timed: list[str] = []
    for name in ("_merged_statistics", "ranked_statistics"):
        original = getattr(extension, name)
        monkeypatch.setattr(extension, name, lambda *a, _n=name, _o=original, **k: timed.append(_n) or _o(*a, **k))
    if ranked:
        monkeypatch.setattr(extension, "StoredShares", _refused)
    extended = pickscale.extend(store, ref.assign(time=ref["time"] + 10_000.0), later)
    assert timed == ["ranked_statistics" if ranked else "_merged_statistics"]
    assert int(extended["concentrated_count"].sel(dataset="all", model="m", phase="P")) == 36  # 18 + 18 of 50
    one_run = pickscale.score(pd.concat([ref, ref.assign(time=ref["time"] + 10_000.0)]),
                              pd.concat([picks[picks.model == "m"], later]))
    assert _same_as_one_run(extended, one_run)


def _refused(*args, **kwargs):
    raise AssertionError("a stored pair was read")


def test_a_store_without_the_rules_findings_is_extended_from_its_pairs(tmp_path, monkeypatch):
    # (a store written before they were kept: the stored streams are timed again, as before)
    ref, picks = _inputs()
    stored = pickscale.score(ref, picks[picks.model == "m"]).drop_vars(list(FLAG_NAMES))
    store = pickscale.save(stored, tmp_path / "results.zarr")
    timed = []
    original = extension._merged_statistics
    monkeypatch.setattr(extension, "_merged_statistics", lambda *a, **k: timed.append(1) or original(*a, **k))
    extended = pickscale.extend(store, ref, picks[picks.model == "n"])
    assert timed == [1]
    one_run = pickscale.score(ref, picks)
    assert extended.attrs["data_quality"] == one_run.attrs["data_quality"]
    for name in FLAG_NAMES:
        assert extended[name].values.tolist() == one_run[name].values.tolist(), name


# A property: a store of one model extended by another equals one run of both, whatever their residuals
# (spikes, grids, spreads) -- its tables, what §5's rules found, the records and the warnings.

_RESIDUAL = st.one_of(st.sampled_from([0.0, 0.0, 0.01, -0.01, 0.1, -0.1, 0.2, 0.3]),
                      st.floats(-1.5, 1.5, allow_nan=False).map(lambda x: round(x, 6)))
_PICK = st.one_of(st.none(), st.tuples(_RESIDUAL, st.sampled_from([0.1, 0.3, 0.5, 0.8, 1.0])))


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["P", "S"]), _PICK, _PICK), min_size=1, max_size=60))
def test_a_model_added_to_a_store_is_one_run_of_both(rows):
    ref, picks = [], []
    for k, (station, phase, a, b) in enumerate(rows):
        t = 1000.0 + 10.0 * k
        ref.append((f"S{station}", phase, t))
        for model, pick in (("a", a), ("b", b)):
            if pick is not None:
                picks.append((model, f"S{station}", phase, t + pick[0], pick[1]))
    for model in ("a", "b"):  # (both models span the same stretch at every station: the same arrivals scored)
        for station in range(3):
            for t in (900.0, 1100.0 + 10.0 * len(rows)):
                picks.append((model, f"S{station}", "P", t, 0.1))
    ref = pd.DataFrame(ref, columns=["station", "phase", "time"])
    picks = pd.DataFrame(picks, columns=["model", "station", "phase", "time", "conf"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one_run = pickscale.score(ref, picks)
        with tempfile.TemporaryDirectory() as folder:
            store = pickscale.save(pickscale.score(ref, picks[picks.model == "a"]), Path(folder) / "results.zarr")
            assert extension.shares_no_stream(pickscale.open_results(store), {"all": ["b"]})  # (the path tested)
            extended = pickscale.extend(store, ref, picks[picks.model == "b"])
    _same_as_one_run(extended, one_run)


def test_a_later_stretch_of_one_stored_model_times_only_its_streams(monkeypatch, tmp_path):
    # Store: m1 and m2 over the first stretch; extension: the second stretch of m1 alone.  m2's streams have pairs
    # on the stored side only: they keep their statistics as stored, and only m1's are timed again.
    from tests.helpers.extend import DAY, START, stretches

    ref, picks = stretches(2)
    cut = START + DAY
    later = (picks.time >= cut) & (picks.model == "m1")
    store = pickscale.save(pickscale.score(ref[ref.time < cut], picks[picks.time < cut]), tmp_path / "results.zarr")
    timed = []
    real = ranged.statistics

    def statistics(parts, *args, **kwargs):
        timed.extend(parts)
        return real(parts, *args, **kwargs)

    monkeypatch.setattr(ranged, "statistics", statistics)
    extended = pickscale.extend(store, ref[ref.time >= cut], picks[later])
    assert sorted(timed) == [0, 1]  # (dataset d, model m1: P and S)
    one_run = pickscale.score(ref, picks[(picks.time < cut) | later])
    assert _same_as_one_run(extended, one_run)
    assert int(extended["n_pairs"].sel(dataset="d", model="m2", phase="P").isel(threshold=0)) == 4  # (stretch 1)
