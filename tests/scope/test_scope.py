"""Tests of pickscale.scope (SPEC §2): floor, duplicates, stations, span, fatal mismatches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pickscale.errors import InputError
from pickscale.io import normalise, read_raw
from pickscale.scope import (
    Scope,
    apply_scope,
    dedupe_reference,
    drop_below_floor,
    plan_scope,
    scored_stations,
    span_hint,
    station_hint,
    summarise_picks,
    summarise_reference,
)

DATA = Path("/work/shared/data")
S = 10**9
H = 3600 * S
T = 1577836800 * S  # 2020-01-01T00:00:00Z
TOL = 2 * S
FLOOR = 0.02


def ref(stations, times, *, dataset="d", phase="P") -> pd.DataFrame:
    n = len(stations)
    return pd.DataFrame({
        "dataset": pd.Series([dataset] * n, dtype=object),
        "station": pd.Series(list(stations), dtype=object),
        "phase": pd.Series([phase] * n if isinstance(phase, str) else list(phase), dtype=object),
        "time": np.asarray(times, dtype=np.int64),
    })


def picks(stations, times, *, conf=0.5, dataset="d", model="m", phase="P") -> pd.DataFrame:
    n = len(stations)
    as_list = lambda v: [v] * n if isinstance(v, (str, float, int)) else list(v)  # noqa: E731
    return pd.DataFrame({
        "dataset": pd.Series(as_list(dataset), dtype=object),
        "model": pd.Series(as_list(model), dtype=object),
        "station": pd.Series(list(stations), dtype=object),
        "phase": pd.Series(as_list(phase), dtype=object),
        "time": np.asarray(times, dtype=np.int64),
        "conf": np.asarray(as_list(conf), dtype=np.float64),
    })


def scope(r, p, **kw) -> Scope:
    kw.setdefault("floor", FLOOR)
    kw.setdefault("residual_tol_ns", TOL)
    return apply_scope(r, p, **kw)


# --------------------------------------------------------------------------- #
# Building blocks
# --------------------------------------------------------------------------- #

def test_dedupe_reference_pg_and_p_same_instant():
    # 'Pg' and 'P' at the same instant are both 'P' after normalisation: one arrival.
    r = ref(["A", "A", "A", "B"], [T, T, T + 1, T], phase=["P", "P", "P", "P"])
    out, n = dedupe_reference(r)
    assert n == 1 and len(out) == 3
    assert out.index.tolist() == [0, 1, 2]


def test_dedupe_reference_keys_include_dataset_and_phase():
    r = pd.concat([ref(["A"], [T]), ref(["A"], [T], dataset="e"), ref(["A"], [T], phase="S")])
    out, n = dedupe_reference(r)
    assert n == 0 and len(out) == 3


def test_dedupe_via_readers_pg_p():
    raw = pd.DataFrame({"station": ["A", "A"], "phase": ["Pg", "P"],
                        "time": ["2020-01-01T00:00:00Z", "2020-01-01T01:00:00+01:00"]})
    frame = normalise(raw, role="reference", source="r.csv").frame
    assert len(frame) == 2  # readers keep both ...
    assert dedupe_reference(frame)[1] == 1  # ... scope removes one


def test_drop_below_floor_inclusive():
    p = picks(["A"] * 3, [T] * 3, conf=[0.0199, 0.02, 0.9])
    kept, n = drop_below_floor(p, 0.02)
    assert n == 1 and kept["conf"].tolist() == [0.02, 0.9]


def test_scored_stations_table():
    rc = pd.DataFrame({"dataset": ["d", "d", "e"], "station": ["A", "B", "A"],
                       "n_reference": [2, 1, 4]})
    pc = pd.DataFrame({"dataset": ["d", "d", "d"], "station": ["A", "A", "C"],
                       "model": ["m1", "m2", "m1"], "n_picks": [3, 2, 1]})
    t = scored_stations(rc, pc)
    assert t.to_dict("list") == {
        "dataset": ["d", "d", "d", "e"],
        "station": ["A", "B", "C", "A"],
        "n_reference": [2, 1, 0, 4],
        "n_picks": [5, 0, 1, 0],
        "scored": [True, False, False, False],
    }


def test_summaries_and_plan():
    r = ref(["A", "A", "B"], [T, T + 5 * S, T])
    p = pd.concat([picks(["A"], [T + S], model="m2"), picks(["A", "C"], [T + 3 * S, T])])
    rs, ps = summarise_reference(r), summarise_picks(p)
    assert rs.to_dict("list") == {"dataset": ["d", "d"], "station": ["A", "B"],
                                  "n_reference": [2, 1], "t_min": [T, T],
                                  "t_max": [T + 5 * S, T]}
    assert ps[["station", "model", "n_picks"]].values.tolist() == [
        ["A", "m", 1], ["A", "m2", 1], ["C", "m", 1]]
    plan = plan_scope(rs, ps, residual_tol_ns=TOL)
    assert plan.stations == {"d": ["A"]} and plan.models == {"d": ["m", "m2"]}
    assert plan.pick_spans == {"d": (T + S, T + 3 * S)}
    assert plan.spans == {"d": (T + S - TOL, T + 3 * S + TOL)}
    assert plan.reference_spans == {"d": (T, T + 5 * S)}
    assert plan.reference_mask(r).tolist() == [True, True, False]  # T + 5 s = last + tol
    assert plan.picks_mask(p).tolist() == [True, True, False]


# --------------------------------------------------------------------------- #
# apply_scope: what is kept and every exclusion count
# --------------------------------------------------------------------------- #

def test_everything_kept():
    r = ref(["A", "B"], [T, T])
    p = picks(["A", "B"], [T, T])
    s = scope(r, p)
    assert len(s.reference) == 2 and len(s.picks) == 2
    assert s.stations == {"d": ["A", "B"]} and s.models == {"d": ["m"]}
    assert all(v == 0 for v in s.exclusions.values()) and s.warnings == []
    assert s.datasets == ["d"]


def test_all_exclusion_counts():
    r = pd.concat([
        ref(["A", "A", "B", "B", "C"], [T, T, T, T + S, T]),  # 1 duplicate; C has no pick
        ref(["A"], [T - 10 * S]),                              # outside the span
        ref(["A"], [T], dataset="only_ref"),                   # dataset without picks
    ], ignore_index=True)
    p = pd.concat([
        picks(["A", "B", "D"], [T, T, T], model=["m2", "m1", "m1"]),  # D: no arrival
        picks(["A"], [T], conf=0.01),                                  # below floor
        picks(["C"], [T], conf=0.001),                                 # below floor: C unpicked
        picks(["X"], [T], dataset="only_picks"),                       # dataset without ref
    ], ignore_index=True)
    s = scope(r, p)
    assert s.exclusions == {
        "picks_below_floor": 2,
        "reference_duplicates": 1,
        "reference_outside_coverage": 0,
        "picks_outside_coverage": 0,
        "reference_in_datasets_without_picks": 1,
        "picks_in_datasets_without_reference": 1,
        "reference_at_unpicked_stations": 1,
        "picks_at_unreferenced_stations": 1,
        "reference_outside_span": 1,
    }
    assert s.exclusions_by_dataset["d"]["reference_duplicates"] == 1
    assert s.exclusions_by_dataset["only_ref"]["reference_in_datasets_without_picks"] == 1
    assert s.exclusions_by_dataset["only_picks"]["picks_in_datasets_without_reference"] == 1
    json.dumps(s.exclusions), json.dumps(s.exclusions_by_dataset)  # plain JSON
    assert all(type(v) is int for v in s.exclusions.values())
    assert s.stations == {"d": ["A", "B"]}
    assert s.models == {"d": ["m1", "m2"]}
    assert sorted(zip(s.reference["station"], s.reference["time"])) == [
        ("A", T), ("B", T), ("B", T + S)]
    assert sorted(s.picks["station"]) == ["A", "B"] and (s.picks["conf"] >= FLOOR).all()
    text = "\n".join(s.warnings)
    for needle in ["2 pick(s) with conf below the floor 0.02", "1 duplicate reference row",
                   "dataset 'only_ref': 1 reference arrival(s) excluded",
                   "dataset 'only_picks': 1 pick(s) excluded",
                   "1 reference arrival(s) at 1 station(s) without any pick", "'C'",
                   "1 pick(s) at 1 station(s) without reference arrivals", "'D'",
                   "1 reference arrival(s) outside the picks' span"]:
        assert needle in text, needle


def test_station_scored_by_any_model_any_phase():
    r = ref(["A"], [T], phase="P")
    p = picks(["A"], [T + 100 * S], phase="S", model="zz")  # other phase, far in time: still picks A
    s = scope(r, p, residual_tol_ns=200 * S)
    assert s.stations == {"d": ["A"]} and s.models == {"d": ["zz"]}


def test_model_only_at_unscored_station_is_not_a_model_of_the_dataset():
    r = ref(["A"], [T])
    p = pd.concat([picks(["A"], [T], model="m1"), picks(["Z"], [T], model="m2")])
    assert scope(r, p).models == {"d": ["m1"]}


def test_model_only_below_floor_is_not_a_model():
    r = ref(["A"], [T])
    p = pd.concat([picks(["A"], [T], model="m1"), picks(["A"], [T], model="m2", conf=0.001)])
    assert scope(r, p).models == {"d": ["m1"]}


def test_models_and_stations_sorted_code_point_order():
    r = ref(["b", "B", "a"], [T] * 3)
    p = picks(["b", "B", "a"], [T] * 3, model=["b", "B", "a"])
    s = scope(r, p)
    assert s.stations == {"d": ["B", "a", "b"]} and s.models == {"d": ["B", "a", "b"]}


def test_span_bounds_inclusive():
    first, last = T, T + 60 * S
    r = ref(["A"] * 5, [first - TOL - 1, first - TOL, T + 30 * S, last + TOL, last + TOL + 1])
    p = picks(["A", "A"], [first, last])
    s = scope(r, p)
    assert s.reference["time"].tolist() == [first - TOL, T + 30 * S, last + TOL]
    assert s.exclusions["reference_outside_span"] == 2
    assert s.spans == {"d": (first - TOL, last + TOL)}


def test_span_uses_all_models_and_only_scored_stations():
    r = ref(["A", "A"], [T, T + 100 * S])
    p = pd.concat([picks(["A"], [T], model="m1"), picks(["A"], [T + 100 * S], model="m2"),
                   picks(["Z"], [T + 1000 * S])])  # Z is not scored: does not widen the span
    s = scope(r, p)
    assert s.spans["d"] == (T - TOL, T + 100 * S + TOL)
    assert s.exclusions["reference_outside_span"] == 0


def test_span_per_dataset():
    r = pd.concat([ref(["A"], [T]), ref(["A"], [T + H], dataset="e")])
    p = pd.concat([picks(["A"], [T]), picks(["A"], [T + H], dataset="e")])
    s = scope(r, p)
    assert s.spans == {"d": (T - TOL, T + TOL), "e": (T + H - TOL, T + H + TOL)}
    assert len(s.reference) == 2


def test_input_row_order_does_not_matter():
    r = ref(["A", "B", "A", "C"], [T, T, T + S, T])
    p = picks(["B", "A", "A", "D"], [T, T + S, T, T], model=["x", "y", "x", "x"])
    a = scope(r, p)
    b = scope(r.iloc[::-1], p.iloc[::-1])
    assert a.exclusions == b.exclusions and a.models == b.models and a.stations == b.stations


# --------------------------------------------------------------------------- #
# Fatal mismatches
# --------------------------------------------------------------------------- #

def test_no_shared_station_shows_five_spellings_each_side_and_prefix_hint():
    codes = ["CLC", "JRC2", "WBS", "WCS2", "WMF", "SLA", "TOW2"]
    r = ref(codes, [T] * 7)
    p = picks(["CI." + c for c in codes], [T] * 7)
    with pytest.raises(InputError) as e:
        scope(r, p, ref_source="bulletin.csv", picks_source="phasenet.csv")
    msg = str(e.value)
    assert "dataset 'd': bulletin.csv and phasenet.csv share no station" in msg
    assert "bulletin.csv stations: 'CLC', 'JRC2', 'SLA', 'TOW2', 'WBS' … (7 in all)" in msg
    assert "phasenet.csv stations: 'CI.CLC', 'CI.JRC2', 'CI.SLA', 'CI.TOW2', 'CI.WBS'" in msg
    assert "'WMF'" not in msg
    assert "phasenet.csv has network prefixes ('CI.CLC') where bulletin.csv has none ('CLC')" \
        in msg


def test_no_shared_station_fatal_even_when_another_dataset_is_fine():
    r = pd.concat([ref(["A"], [T]), ref(["X"], [T], dataset="e")])
    p = pd.concat([picks(["A"], [T]), picks(["Y"], [T], dataset="e")])
    with pytest.raises(InputError, match="dataset 'e'.*share no station"):
        scope(r, p)


@pytest.mark.parametrize("ref_st,pick_st,needle", [
    (["clc"], ["CLC"], "differ only in case ('clc' in reference, 'CLC' in picks)"),
    (["CI.CLC"], ["CI.CLC.00"], "different location/channel codes"),
    (["CI_CLC"], ["CI.CLC"], "different separators"),
    (["CI.clc"], ["CLC"], "match once network and case are ignored"),
])
def test_station_hints(ref_st, pick_st, needle):
    with pytest.raises(InputError) as e:
        scope(ref(ref_st, [T]), picks(pick_st, [T]))
    assert needle in str(e.value)


def test_station_hint_none_when_unrelated():
    assert station_hint(["AAA"], ["BBB"]) == ""


def test_disjoint_spans_time_zone():
    r = ref(["A", "A"], [T, T + 30 * S])
    p = picks(["A", "A"], [T + 2 * H, T + 2 * H + 30 * S])
    with pytest.raises(InputError) as e:
        scope(r, p, ref_source="reference.csv", picks_source="picks.csv")
    msg = str(e.value)
    assert "dataset 'd': the time spans do not overlap" in msg
    assert "reference.csv arrivals: 2020-01-01T00:00:00Z … 2020-01-01T00:00:30Z" in msg
    assert "picks.csv picks:        2020-01-01T02:00:00Z … 2020-01-01T02:00:30Z" in msg
    assert "2 h later" in msg and "time-zone offset" in msg


def test_disjoint_spans_relative_times():
    r = ref(["A"], [T])
    p = picks(["A"], [12 * S + 340_000_000])
    with pytest.raises(InputError) as e:
        scope(r, p)
    msg = str(e.value)
    assert "1970-01-01T00:00:12.34Z" in msg and "seconds since a trace or window start" in msg


def test_disjoint_spans_just_outside_tolerance():
    r = ref(["A"], [T])
    p = picks(["A"], [T + TOL + 1])
    with pytest.raises(InputError, match="do not overlap"):
        scope(r, p)
    assert len(scope(r, picks(["A"], [T + TOL])).reference) == 1


def test_spans_overlap_but_no_arrival_inside():
    r = ref(["A", "A"], [T, T + 100 * S])
    p = picks(["A"], [T + 50 * S])
    with pytest.raises(InputError, match="no arrival falls inside the picks' span"):
        scope(r, p)


@pytest.mark.parametrize("ref_span,pick_span,needle", [
    ((T, T + H), (T - 5 * H - 1800 * S, T - 4 * H - 1800 * S), "5.5 h earlier"),
    ((10**12, 2 * 10**12), (10**15, 2 * 10**15), "~1000×"),
    ((T, T + H), (T + 31 * 24 * H, T + 31 * 24 * H + H), "31 whole days later"),
    ((T, T + H), (T + 17 * H + 1200 * S, T + 18 * H + 1200 * S), ""),
    ((T, T + H), (T // 1000, (T + H) // 1000), "~1000×"),
])
def test_span_hints(ref_span, pick_span, needle):
    hint = span_hint(ref_span, pick_span)
    assert (needle in hint) if needle else hint == ""


def test_no_dataset_in_common_hint_missing_dataset_column():
    r = ref(["A"], [T], dataset="all")
    p = picks(["A"], [T], dataset="stead")
    with pytest.raises(InputError) as e:
        scope(r, p, ref_source="ref.csv")
    msg = str(e.value)
    assert "No dataset appears in both inputs" in msg and "'all'" in msg and "'stead'" in msg
    assert "ref.csv seems to have no dataset column" in msg


def test_dataset_only_in_reference_fatal_when_nothing_scored():
    with pytest.raises(InputError, match="No dataset appears in both"):
        scope(ref(["A"], [T], dataset="x"), picks(["A"], [T], dataset="y"))


def test_all_picks_below_floor():
    with pytest.raises(InputError, match=r"picks: no pick has conf >= the floor 0.02"):
        scope(ref(["A"], [T]), picks(["A"], [T], conf=0.01))


def test_empty_inputs():
    with pytest.raises(InputError, match="no reference arrival is left"):
        scope(ref([], []), picks(["A"], [T]))
    with pytest.raises(InputError, match="no pick is left"):
        scope(ref(["A"], [T]), picks([], []))


# --------------------------------------------------------------------------- #
# Real data
# --------------------------------------------------------------------------- #

def _load(folder: str):
    d = DATA / folder
    if not d.exists():
        pytest.skip(f"{d} not available")
    r = normalise(read_raw(str(d / "reference.csv")), role="reference", source="reference.csv")
    p = normalise(read_raw(str(d / "picks.csv")), role="picks", source="picks.csv")
    return r.frame, p.frame


def test_real_stead50():
    r, p = _load("stead50_phasenet")
    s = scope(r, p)
    assert len(s.reference) == 99 and len(s.picks) == 140
    assert s.stations == {"stead50_phasenet": ["TA.109C"]}
    assert s.models == {"stead50_phasenet": ["PhaseNet(190703-214543)"]}
    assert all(v == 0 for v in s.exclusions.values())


@pytest.mark.slow
def test_real_paired_windows():
    r, p = _load("paired_windows")
    s = scope(r, p, floor=0.05)
    assert len(s.reference) == 506 and len(s.picks) == 28_991
    assert sorted(s.stations) == ["ncedc_deepdenoiser_ponly", "ncedc_phasenet", "stead_ta109c"]
    assert {len(v) for v in s.models.values()} == {4}
    assert s.stations["stead_ta109c"] == ["TA.109C"]
    assert len(s.stations["ncedc_phasenet"]) == 108 and len(s.stations["ncedc_deepdenoiser_ponly"]) == 57
    # A floor above some picks drops them and counts them.
    s2 = scope(r, p, floor=0.3)
    assert s2.exclusions["picks_below_floor"] == int((p["conf"] < 0.3).sum())
    assert (s2.picks["conf"] >= 0.3).all()


# --------------------------------------------------------------------------- #
# The reference as codes (issue 10): categorical input, same Scope
# --------------------------------------------------------------------------- #

def _categorical(frame: pd.DataFrame, unused: bool = False) -> pd.DataFrame:
    """Text columns as ``Categorical`` (sorted categories, as ``normalise(..., categorical=True)`` gives)."""
    out = frame.reset_index(drop=True).astype({c: "category" for c in ("dataset", "station", "phase")})
    if unused:  # a frame sliced after reading keeps categories no row uses
        for c, extra in (("dataset", "zz"), ("station", "ZZ.UNUSED"), ("phase", "S")):
            if extra not in out[c].cat.categories:
                out[c] = out[c].cat.add_categories([extra])
    return out


def _same_scope(a: Scope, b: Scope) -> None:
    assert a.stations == b.stations and a.models == b.models and a.spans == b.spans
    assert a.exclusions == b.exclusions and a.exclusions_by_dataset == b.exclusions_by_dataset
    assert a.warnings == b.warnings
    for c in ("dataset", "station", "phase"):
        assert a.reference[c].astype(object).tolist() == b.reference[c].astype(object).tolist()
    assert a.reference["time"].tolist() == b.reference["time"].tolist()


def _mixed_catalogue():
    r = pd.concat([
        ref(["Ü.B", "A", "A", "B", "B", "C", "Ü.B"], [T, T, T, T, T + S, T, T]),  # 2 duplicates; C unpicked
        ref(["A"], [T - 10 * S]),                                                  # outside the span
        ref(["A", "A"], [T, T], phase=["S", "S"]),                                 # same instant, other phase
        ref(["A"], [T], dataset="only_ref"),
        ref(["Ü.B", "A"], [T + H, T + H], dataset="Ñuble"),
    ], ignore_index=True)
    p = pd.concat([
        picks(["A", "B", "D", "Ü.B"], [T, T, T, T], model=["m2", "m1", "m1", "m1"]),
        picks(["C"], [T], conf=0.001),
        picks(["X"], [T], dataset="only_picks"),
        picks(["Ü.B", "A"], [T + H, T + H], dataset="Ñuble"),
    ], ignore_index=True)
    return r, p


@pytest.mark.slow
@pytest.mark.parametrize("unused", [False, True])
def test_categorical_reference_gives_the_same_scope(unused):
    r, p = _mixed_catalogue()
    a = scope(r, p)
    b = scope(_categorical(r, unused), p)
    _same_scope(a, b)
    assert a.exclusions["reference_duplicates"] == 3 and a.exclusions["reference_outside_span"] == 1
    # Row order of the input is kept (first occurrences of duplicates).
    assert list(zip(b.reference["station"].astype(object), b.reference["time"])) == [
        ("Ü.B", T), ("A", T), ("B", T), ("B", T + S), ("A", T), ("Ü.B", T + H), ("A", T + H)]
    # Reversed input: same decisions.
    c = scope(_categorical(r.iloc[::-1], unused), p)
    assert c.exclusions == a.exclusions and c.stations == a.stations and c.spans == a.spans


@pytest.mark.slow
def test_categorical_reference_fatal_messages_unchanged():
    r = ref(["A", "A"], [T, T + 30 * S])
    p = picks(["A", "A"], [T + 2 * H, T + 2 * H + 30 * S])
    msgs = []
    for frame in (r, _categorical(r, unused=True)):
        with pytest.raises(InputError) as e:
            scope(frame, p, ref_source="reference.csv", picks_source="picks.csv")
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "2 h later" in msgs[0]
    codes = ["CLC", "JRC2", "WBS", "WCS2", "WMF", "SLA", "TOW2"]
    msgs = []
    for frame in (ref(codes, [T] * 7), _categorical(ref(codes, [T] * 7))):
        with pytest.raises(InputError) as e:
            scope(frame, picks(["CI." + c for c in codes], [T] * 7))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "network prefixes" in msgs[0]


def test_duplicate_rows_exact_despite_hash_collisions():
    from pickscale.scope.summaries import _duplicate_rows

    # (time 0, group 1_000_003) and (time 1, group 0) hash alike: not duplicates.
    group = np.array([1_000_003, 0, 0, 1_000_003, 5], dtype=np.int64)
    times = np.array([0, 1, 1, 0, 7], dtype=np.int64)
    assert _duplicate_rows(group, times).tolist() == [False, False, True, True, False]
    assert _duplicate_rows(group[:1], times[:1]).tolist() == [False]


def test_combine_keeps_categoricals_with_union_of_categories():
    from pickscale.io import Normalised

    def part(stations):
        raw = pd.DataFrame({"station": stations, "phase": ["P"] * len(stations),
                            "time": ["2020-01-01T00:00:00Z"] * len(stations)})
        return normalise(raw, role="reference", source="r.csv", categorical=True)

    a, b = part(["b", "Ü", "a"]), part(["B", "b."])
    both = Normalised.combine([a, b]).frame
    assert isinstance(both["station"].dtype, pd.CategoricalDtype)
    assert list(both["station"].cat.categories) == ["B", "a", "b", "Ü"]  # code-point order
    assert both["station"].astype(object).tolist() == ["b", "Ü", "a", "B", "b"]
    assert len(both) == 5 and list(both.index) == list(range(5))
    same = Normalised.combine([a, a]).frame  # equal categories: the codes are concatenated
    assert same["station"].dtype == a.frame["station"].dtype
    assert same["station"].astype(object).tolist() == ["b", "Ü", "a"] * 2


@pytest.mark.slow
def test_plan_and_encode_reference_on_codes_match_strings():
    from pickscale.engine.units import plan_units
    from pickscale.options import Options

    rng = np.random.default_rng(3)
    n = 400
    st = np.array(["A", "B", "Ü", "C"], dtype=object)[rng.integers(0, 4, n)]
    times = T + rng.integers(0, 3600, n) * 10 * S
    r = ref(list(st), times, phase=list(np.array(["P", "S"], dtype=object)[rng.integers(0, 2, n)]))
    p = picks(["A", "B", "Ü", "Q"] * 50, T + np.arange(200) * 180 * S, model=["m1", "m2"] * 100)
    options = Options(residual_tol=2.0)
    out = []
    for frame in (r, _categorical(r, unused=True)):
        s = scope(frame, p, residual_tol_ns=options.residual_tol_ns)
        s.pick_summary = summarise_picks(s.picks)
        plan = plan_units(s, options, block_picks=20)
        out.append((plan, plan.encode_reference(s.reference)))
    (pa, ca), (pb, cb) = out
    assert pa.cuts.keys() == pb.cuts.keys() and all(np.array_equal(pa.cuts[k], pb.cuts[k]) for k in pa.cuts)
    assert pa.cuts  # busy stations were cut
    assert np.array_equal(pa.unit_part, pb.unit_part)
    pd.testing.assert_frame_equal(ca, cb)
    assert ca["phase"].dtype == np.int8 and len(ca) == len(s.reference) > 0
