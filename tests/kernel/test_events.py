"""SPEC §19 event detection: the hand-worked case, the K highest levels merged across stations, blocks and
partitions (against a brute-force count per threshold), the engine's exchanges, the store, extend, report, CLI."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.cli import main
from pickscale.kernel import Partial, combine_partials, score_station
from pickscale.kernel.events import merge_events, top_levels
from pickscale.metrics.events import detected_curve, detected_shared
from pickscale.options import Options
from pickscale.report.tables import TABLE_NAMES
from tests.helpers.brute import walk

S = 1_000_000_000
T0 = pd.Timestamp("2024-01-01", tz="UTC")


def _spec_case(extra_model: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SPEC §19's worked example: three events of five P arrivals (one per station), 5, 4 and 3 recovered."""
    ref, picks = [], []
    for e, recovered in enumerate((5, 4, 3)):
        for s in range(5):
            t = T0 + pd.Timedelta(seconds=100 * e + 10 + s)
            ref.append({"station": f"XX.S{s}", "phase": "P", "time": t, "event": f"ev{e}", "magnitude": 1.0 + e})
            if s < recovered:
                picks.append({"station": f"XX.S{s}", "phase": "P", "time": t + pd.Timedelta(seconds=0.1),
                              "conf": 0.8, "model": "m"})
    picks_frame = pd.DataFrame(picks)
    if extra_model:
        picks_frame = pd.concat([picks_frame, picks_frame.assign(model="n", conf=0.5)], ignore_index=True)
    return pd.DataFrame(ref), picks_frame


@pytest.mark.slow
def test_spec_worked_example_two_of_three_events_at_k4():
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False)
    assert int(ds.n_events.sel(dataset="all")) == 3
    assert int(ds.events_detected_at_threshold.sel(dataset="all", model="m")) == 2
    assert float(ds.event_detection_rate_at_threshold.sel(dataset="all", model="m")) == 2 / 3
    # Across thresholds a curve: every pick has conf 0.8, so 2 events up to 0.8 and none above.
    curve = ds.events_detected.sel(dataset="all", model="m")
    assert curve.sel(threshold=0.8).item() == 2 and curve.sel(threshold=0.82).item() == 0
    assert ds.event_levels.sel(dataset="all", event="ev2", model="m", phase="P").values.tolist() == [40, 40, 40, 0]
    table = pickscale.tables(ds)["events"]
    assert table.to_dict("records") == [{"dataset": "all", "model": "m", "group": "all", "n_events": 3,
                                         "detected": 2, "detection_rate": 2 / 3}]
    # K = 3: all three; K = 6 (more than any event has): none.
    three = pickscale.score(ref, picks, progress=False, event_min_arrivals=3)
    assert int(three.events_detected_at_threshold.sel(dataset="all", model="m")) == 3
    six = pickscale.score(ref, picks, progress=False, event_min_arrivals=6)
    assert int(six.events_detected_at_threshold.sel(dataset="all", model="m")) == 0


@pytest.mark.slow
def test_grouped_by_magnitude_and_per_phase_thresholds():
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False, group_by="magnitude:2,3")
    table = pickscale.tables(ds)["events"]
    assert table[["group", "n_events", "detected"]].values.tolist() == [["<2", 1, 1], ["[2,3)", 1, 1],
                                                                        [">=3", 1, 0]]
    # Per phase (SPEC §2): P read at 0.9 finds none of the 0.8 picks; S at 0.3 has no arrival.
    per_phase = pickscale.score(ref, picks, progress=False, threshold={"P": 0.9, "S": 0.3})
    assert int(per_phase.events_detected_at_threshold.sel(dataset="all", model="m")) == 0
    low = pickscale.score(ref, picks, progress=False, threshold={"P": 0.3, "S": 0.9})
    assert int(low.events_detected_at_threshold.sel(dataset="all", model="m")) == 2


@pytest.mark.slow
def test_without_an_event_column_or_with_the_option_off_nothing_changes(tmp_path):
    ref, picks = _spec_case()
    plain = pickscale.score(ref.drop(columns="event"), picks, progress=False)
    off = pickscale.score(ref, picks, progress=False, event_min_arrivals=0)
    on = pickscale.score(ref, picks, progress=False)
    assert not [v for v in plain.variables if "event" in v]
    assert "event_min_arrivals" not in plain.attrs["options"] and "events" not in plain.attrs["options"]
    assert off.attrs["options"]["event_min_arrivals"] == 0 and "events" not in off.attrs["options"]  # as set
    assert on.attrs["options"]["event_min_arrivals"] == 4 and on.attrs["options"]["events"] is True
    for name in plain.data_vars:
        assert plain[name].equals(off[name]) and plain[name].equals(on[name]), name
    assert "events" not in pickscale.tables(plain)
    for name in TABLE_NAMES:
        assert pickscale.tables(plain)[name].equals(pickscale.tables(on)[name])


@pytest.mark.slow
def test_an_event_counts_where_it_has_a_scored_arrival_only():
    ref, picks = _spec_case()
    far = pd.DataFrame([{"station": "YY.GONE", "phase": "P", "time": T0 + pd.Timedelta(seconds=5), "event": "ev9",
                         "magnitude": 1.0}])
    blank = ref.iloc[:1].assign(event=None, time=T0 + pd.Timedelta(seconds=50))  # an arrival of no event
    ds = pickscale.score(pd.concat([ref, far, blank], ignore_index=True), picks, progress=False)
    assert int(ds.n_events.sel(dataset="all")) == 3  # ev9's only arrival is at a station with no pick
    assert "ev9" not in ds.event.values.tolist()


# --------------------------------------------------------------------------- brute force

def _brute(stations, k: int, grid: list[float], n_models: int) -> dict:
    """Per (event, model) and grid threshold: detected, by re-running the §3 walk on the picks >= θ."""
    out: dict = {}
    events = sorted({e for st_ in stations for e in st_["a_event"] if e >= 0})
    for ti, theta in enumerate(grid):
        for m in range(n_models):
            matched: dict = {e: 0 for e in events}
            for st_ in stations:
                for ph in (0, 1):
                    idx = [i for i in range(len(st_["a_time"])) if st_["a_phase"][i] == ph]
                    idx.sort(key=lambda i: (st_["a_time"][i], i))
                    arrivals = [st_["a_time"][i] for i in idx]
                    picks = [(t, c) for t, c, pm, pp in zip(st_["p_time"], st_["p_conf"], st_["p_model"],
                                                            st_["p_phase"]) if pm == m and pp == ph and c >= theta]
                    for taken in walk(arrivals, picks, S // 2):
                        if taken >= 0 and st_["a_event"][idx[taken]] >= 0:
                            matched[st_["a_event"][idx[taken]]] += 1
            for e in events:
                out[(e, m, ti)] = matched[e] >= k
    return out


_station = st.fixed_dictionaries({
    "n_arr": st.integers(1, 6), "n_pick": st.integers(0, 8), "seed": st.integers(0, 2**31 - 1)})


def _draw_station(spec, n_models: int, n_events: int) -> dict:
    rng = np.random.default_rng(spec["seed"])
    n, p = spec["n_arr"], spec["n_pick"]
    # Distinct times per station: a reference holds one arrival per (station, phase, time) (SPEC §1 duplicates).
    a_time = rng.choice(30, n, replace=False) * (S // 4)
    return {"a_time": a_time.tolist(), "a_phase": rng.integers(0, 2, n).tolist(),
            "a_event": rng.integers(-1, n_events, n).tolist(),
            "p_time": (rng.integers(-2, 32, p) * (S // 4)).tolist(), "p_phase": rng.integers(0, 2, p).tolist(),
            "p_model": rng.integers(0, n_models, p).tolist(), "p_conf": (rng.integers(1, 11, p) / 10).tolist()}


def _score(st_, options, n_models):
    return score_station(np.array(st_["a_phase"], np.int64), np.array(st_["a_time"], np.int64),
                         np.array(st_["p_model"], np.int64), np.array(st_["p_phase"], np.int64),
                         np.array(st_["p_time"], np.int64), np.array(st_["p_conf"], np.float64),
                         n_models=n_models, options=options, arrival_event=np.array(st_["a_event"], np.int64))


@pytest.mark.slow
@settings(deadline=None, max_examples=60)
@given(specs=st.lists(_station, min_size=1, max_size=5), n_models=st.integers(1, 2), k=st.integers(1, 4),
       n_events=st.integers(1, 4), n_partials=st.integers(1, 3), seed=st.integers(0, 1000))
def test_event_detection_equals_a_brute_force_count_at_every_threshold(specs, n_models, k, n_events, n_partials,
                                                                       seed):
    grid = [0.1, 0.3, 0.5, 0.7, 0.9]
    options = Options(thresholds=grid, threshold=0.5, event_min_arrivals=k).with_events(True)
    stations = [_draw_station(s, n_models, n_events) for s in specs]
    results = [_score(s, options, n_models) for s in stations]
    # Stations scattered over partials and combined in a random grouping (the engine's reduction tree).
    rng = random.Random(seed)
    where = [rng.randrange(n_partials) for _ in results]
    partials = [Partial.of([(0, key, r) for key, (r, w) in enumerate(zip(results, where)) if w == i], fine={})
                for i in range(n_partials)]
    rng.shuffle(partials)
    split = rng.randint(1, n_partials)
    total = combine_partials(combine_partials(*partials[:split]), *partials[split:])
    rows = total.events.get(0)
    want = _brute(stations, k, grid, n_models)
    codes = [] if rows is None else rows["event_code"].tolist()
    assert codes == sorted({e for s in stations for e in s["a_event"] if e >= 0})
    for i, e in enumerate(codes):
        curve = detected_curve(rows["event_levels"][i], k, len(grid))  # (M, T)
        for m in range(n_models):
            assert curve[m].tolist() == [want[(e, m, t)] for t in range(len(grid))]
            # One shared threshold for both phases: the curve's value there.
            assert bool(detected_shared(rows["event_levels"][i, m], k, (2, 2))) == want[(e, m, 2)]
        n_ref = [sum(1 for s in stations for ev, ph in zip(s["a_event"], s["a_phase"]) if ev == e and ph == p)
                 for p in (0, 1)]
        assert rows["event_n_reference"][i].tolist() == n_ref
    # Row order does not matter: each station's rows reversed give the same rows.
    flipped = [_score({key: list(reversed(v)) for key, v in s.items()}, options, n_models) for s in stations]
    again = Partial.of([(0, key, r) for key, r in enumerate(flipped)], fine={}).events.get(0)
    if rows is not None:
        assert all(np.array_equal(rows[n], again[n]) for n in rows)


def test_merge_keeps_the_k_highest_of_the_union_in_any_order():
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(6):
        codes = np.unique(rng.integers(0, 5, 3))
        levels = -np.sort(-rng.integers(0, 9, (codes.size, 1, 2, 3)), axis=-1)
        parts.append({"event_code": codes, "event_n_reference": np.ones((codes.size, 2), np.int64),
                      "event_levels": levels.astype(np.int16)})
    whole = merge_events(parts)
    nested = merge_events([merge_events(parts[:2]), merge_events(parts[4:]), merge_events(parts[2:4])])
    assert all(np.array_equal(whole[n], nested[n]) for n in whole)
    every = np.concatenate([p["event_levels"][p["event_code"] == 2][..., 0, :].ravel() for p in parts])
    if every.size:
        assert whole["event_levels"][whole["event_code"] == 2][0, 0, 0].tolist() == sorted(every, reverse=True)[:3]
    assert top_levels(np.array([1]), np.array([1, 1]), np.array([0, 0]), np.array([0, 0]), n_slots=1,
                      k=2).tolist() == [[[0, 0]]]


# --------------------------------------------------------------------------- the engine

@pytest.mark.slow
@pytest.mark.parametrize("how", [{"exchange_method": "shuffle"}, {"exchange_method": "direct", "block_picks": 2}])
def test_exchanges_and_partitions_give_the_same_events(how):
    ref, picks = _spec_case(extra_model=True)
    base = pickscale.score(ref, picks, progress=False, exchange_method="direct")
    other = pickscale.score(ref, picks, progress=False, **how)
    for name in ("event_n_reference", "event_levels", "events_detected", "event_detection_rate",
                 "events_detected_at_threshold"):
        assert base[name].equals(other[name]), name
    # Rows in another order: the same numbers.
    shuffled = pickscale.score(ref.sample(frac=1, random_state=1), picks.sample(frac=1, random_state=2),
                               progress=False, **how)
    assert base.event_levels.equals(shuffled.event_levels)


@pytest.mark.cluster
def test_two_stations_of_an_event_on_two_workers():
    from tests.helpers.checks import start_cluster

    ref, picks = _spec_case(extra_model=True)
    local = pickscale.score(ref, picks, progress=False)
    cluster, client = start_cluster(2)
    try:
        for how in ({"exchange_method": "direct"}, {"exchange_method": "shuffle"}):
            far = pickscale.score(ref, picks, progress=False, client=client, block_picks=2, **how)
            for name in ("event_levels", "events_detected", "events_detected_at_threshold"):
                assert local[name].equals(far[name]), name
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_store_round_trip_and_extend_by_a_model_and_a_stretch(tmp_path):
    ref, picks = _spec_case(extra_model=True)
    one = pickscale.score(ref, picks, progress=False)
    pickscale.save(pickscale.score(ref, picks[picks.model == "m"], progress=False), tmp_path / "a.zarr")
    back = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert back.event_levels.dtype == np.int16 and back.attrs["options"]["event_min_arrivals"] == 4
    pickscale.extend(tmp_path / "a.zarr", ref, picks[picks.model == "n"], progress=False)
    merged = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert pickscale.tables(merged)["events"].equals(pickscale.tables(one)["events"])
    assert merged.event_levels.equals(one.event_levels)
    # A later stretch: ev2 alone, extended into the store of ev0 and ev1.
    late = ref.event == "ev2"
    cut = T0 + pd.Timedelta(seconds=150)
    pickscale.save(pickscale.score(ref[~late], picks[picks.time < cut], progress=False), tmp_path / "b.zarr")
    pickscale.extend(tmp_path / "b.zarr", ref[late], picks[picks.time >= cut], progress=False)
    stretch = pickscale.open_results(tmp_path / "b.zarr", lazy=False)
    assert pickscale.tables(stretch)["events"].equals(pickscale.tables(one)["events"])
    with pytest.raises(pickscale.OptionsError, match="event_min_arrivals"):
        pickscale.extend(tmp_path / "b.zarr", ref[late], picks[picks.time >= cut], event_min_arrivals=3)


@pytest.mark.slow
def test_cli_flag_writes_events_csv_and_the_figure(tmp_path):
    ref, picks = _spec_case()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    args = ["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"), "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a"), "--event-min-arrivals", "3"]) == 0
    assert (tmp_path / "a" / "events.csv").read_text().splitlines() == [
        "dataset,model,group,n_events,detected,detection_rate", "all,m,all,3,3,1.0"]
    assert (tmp_path / "a" / "figures" / "event_detection.png").exists()
    assert main([*args, "--out", str(tmp_path / "b"), "--event-min-arrivals", "0", "--no-figures"]) == 0
    assert not (tmp_path / "b" / "events.csv").exists()
    assert main(["report", str(tmp_path / "a" / "results.zarr"), "--out", str(tmp_path / "c"), "--no-figures",
                 "--quiet"]) == 0
    assert (tmp_path / "c" / "events.csv").read_bytes() == (tmp_path / "a" / "events.csv").read_bytes()
    assert main([*args, "--out", str(tmp_path / "d"), "--event-min-arrivals", "-1"]) == 2


@pytest.mark.slow
def test_duplicate_arrivals_take_the_first_event_id_whatever_row_is_kept():
    ref, picks = _spec_case()
    twin = ref.iloc[[0]].assign(event="ev0b")  # the same arrival again, named for another event
    a = pickscale.score(pd.concat([ref, twin], ignore_index=True), picks, progress=False)
    b = pickscale.score(pd.concat([twin, ref], ignore_index=True), picks, progress=False)
    assert a.event.values.tolist() == b.event.values.tolist() == ["ev0", "ev1", "ev2"]
    assert a.event_levels.equals(b.event_levels)
