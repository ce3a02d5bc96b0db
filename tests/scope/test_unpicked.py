"""SPEC §2's charged misses per model (``report["unpicked"]`` and its warning lines) against a brute force.

:func:`pickscale.scope.unpicked.unpicked` counts every model of a dataset at once, on codes; here the same
numbers and lines come from the frames directly, one model at a time (scored stations, the span, the
model's stations and its own span by plain comparisons), on small catalogues where models miss stations,
datasets and parts of the span.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.errors import InputError
from pickscale.scope import apply_scope
from pickscale.scope.hints import iso, show_names
from tests.helpers.examples import examples

S = 10**9
T = 1577836800 * S  # 2020-01-01T00:00:00Z
TOL = 2 * S
FLOOR = 0.02
STATIONS = [f"S{i:02d}" for i in range(12)]
MODELS = ["a", "b", "c", "d", "e", "f", "g"]


def _brute(ref: pd.DataFrame, picks: pd.DataFrame) -> tuple[dict, list[str]]:
    """The record and the lines, model by model, from the frames."""
    ref = ref.drop_duplicates(["dataset", "station", "phase", "time"])
    picks = picks[picks["conf"] >= FLOOR]
    record: dict = {}
    lines = []
    for d in sorted(set(ref["dataset"]) & set(picks["dataset"])):
        r, p = ref[ref["dataset"] == d], picks[picks["dataset"] == d]
        sts = sorted(set(r["station"]) & set(p["station"]))
        if not sts:
            continue
        p = p[p["station"].isin(sts)]
        lo, hi = int(p["time"].min()) - TOL, int(p["time"].max()) + TOL
        r = r[r["station"].isin(sts) & (r["time"] >= lo) & (r["time"] <= hi)]
        held = {s: int((r["station"] == s).sum()) for s in sts}
        for m in sorted(set(p["model"])):
            mine = p[p["model"] == m]
            has = set(mine["station"])
            missing = [s for s in sts if s not in has]
            n_missing = sum(held[s] for s in missing)
            without = sum(1 for s in missing if held[s] > 0)
            m_lo, m_hi = int(mine["time"].min()) - TOL, int(mine["time"].max()) + TOL
            at = r[r["station"].isin(has)]
            n_outside = int(((at["time"] < m_lo) | (at["time"] > m_hi)).sum())
            if not (n_missing or n_outside):
                continue
            record.setdefault(d, {})[m] = {"stations_without_picks": without, "reference_there": n_missing,
                                           "reference_outside_its_span": n_outside}
            parts = []
            if n_missing:
                parts.append(f"no pick at {without} of the {len(sts)} scored station(s) "
                             f"(e.g. {show_names(missing)}), which hold {n_missing} of the {len(r)} scored "
                             "arrival(s)")
            if n_outside:
                parts.append(f"{n_outside} arrival(s) at its other stations outside its own span "
                             f"{iso(m_lo)} … {iso(m_hi)} (first/last pick ± residual_tol)")
            lines.append(f"dataset {d!r}: model {m!r} has " + " and ".join(parts) + ": they count as its misses "
                         "(recall) and its fewer picks lower the matched budget of every model. If it was not run "
                         "there, give the windows each model was run on as coverage (--coverage FILE).")
    return record, lines


@st.composite
def catalogues(draw):
    """Up to 3 datasets, 12 stations, 7 models: each model run on some (dataset, station)s and over part of the
    time, some arrivals repeated, some picks below the floor."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_d, n_s, n_m = draw(st.integers(1, 3)), draw(st.integers(1, 12)), draw(st.integers(1, 7))
    n_ref, n_picks = draw(st.integers(1, 80)), draw(st.integers(5, 250))
    # Times on a coarse grid of seconds: arrivals and pick spans meet at their edges (± residual_tol exactly).
    ref = pd.DataFrame({"dataset": rng.choice([f"d{i}" for i in range(n_d)], n_ref),
                        "station": rng.choice(STATIONS[:n_s], n_ref),
                        "phase": rng.choice(["P", "S"], n_ref),
                        "time": T + rng.integers(0, 60, n_ref) * S})
    ref = pd.concat([ref, ref.iloc[: n_ref // 4]], ignore_index=True)  # repeats: kept once
    run = rng.random((n_m, n_d, n_s)) < draw(st.floats(0.3, 1.0))  # which (model, dataset, station) ran
    model = rng.integers(0, n_m, n_picks)
    dataset, station = rng.integers(0, n_d, n_picks), rng.integers(0, n_s, n_picks)
    start, length = rng.integers(0, 40, n_m), rng.integers(0, 45, n_m)  # each model's own part of the time
    time = start[model] + (rng.random(n_picks) * (length[model] + 1)).astype(np.int64)
    keep = run[model, dataset, station]
    picks = pd.DataFrame({"dataset": np.array([f"d{i}" for i in range(n_d)])[dataset],
                          "model": np.array(MODELS)[model], "station": np.array(STATIONS)[station],
                          "phase": rng.choice(["P", "S"], n_picks), "time": T + time * S,
                          "conf": np.where(rng.random(n_picks) < 0.1, 0.01, rng.random(n_picks) * 0.9 + 0.05)})
    return ref, picks[keep].reset_index(drop=True)


@pytest.mark.slow
@settings(max_examples=examples(150))
@given(case=catalogues())
def test_unpicked_equals_the_brute_force(case):
    ref, picks = case
    try:
        s = apply_scope(ref, picks, floor=FLOOR, residual_tol_ns=TOL)
    except InputError:  # nothing in common, or every arrival outside the span: fatal, no report to compare
        return
    record, lines = _brute(ref, picks)
    got = s.report["unpicked"]
    assert got == record
    assert [(d, list(models)) for d, models in got.items()] == [(d, list(models)) for d, models in record.items()]
    assert [w for w in s.warnings if "they count as its misses" in w] == lines


def test_many_missing_stations_name_the_first_five():
    # The first five stations without the model's picks, in name order, and how many in all.
    ref = pd.DataFrame({"dataset": "d", "station": STATIONS, "phase": "P", "time": T})
    picks = pd.DataFrame({"dataset": "d", "model": ["full"] * 12 + ["part"] * 2, "station": [*STATIONS, "S01", "S04"],
                          "phase": "P", "time": T, "conf": 0.9})
    s = apply_scope(ref, picks, floor=FLOOR, residual_tol_ns=TOL)
    assert s.warnings == _brute(ref, picks)[1]
    assert "no pick at 10 of the 12 scored station(s) (e.g. 'S00', 'S02', 'S03', 'S05', 'S06' … (10 in all))" \
        in s.warnings[0]
