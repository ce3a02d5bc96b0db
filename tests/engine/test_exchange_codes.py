"""Issue 27: the shuffle exchange's codes — one integer per (work unit, stream) that is also the shuffle key.

Each slot's code is a number Dask's own hash partitioning sends to its unit's work partition
(``shuffle_codes.codes_for``), so the frame needs no ``label`` column and no separate ``unit`` and ``stream``: a pick
is ``code, conf`` on a time index (16 bytes with float32 confidences).  Checked here: a hand-worked plan, Dask's
real shuffle placing every row where the plan puts its unit, the codes the same whatever the hash seed, and —
for any plan, rows, conf dtype and optional columns, keyed or not — encode → regrouping as the shuffle does →
unpack gives the kernel exactly the inputs the earlier frame gave it, small consecutive read parts encoded
together or not (``exchange.part_groups``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.engine import exchange, shuffle_codes
from pickscale.engine.parts import PickPart
from pickscale.engine.scoring import unpack_shuffled
from pickscale.engine.units import UnitPlan
from tests.helpers.examples import examples

ROOT = Path(__file__).resolve().parents[2]


def _plan(n_models: list[int], unit_part: list[int]) -> UnitPlan:
    """A plan of one dataset ``d``, station ``s<i>`` with ``n_models[i]`` models ``m<j>``, one unit each, in
    partitions ``unit_part``."""
    n = len(n_models)
    stations = pd.DataFrame({"dataset": ["d"] * n, "station": [f"s{i}" for i in range(n)], "dcode": 0,
                             "n_models": n_models, "picks": 1, "t_min": 0, "t_max": 0, "n_units": 1,
                             "first_unit": np.arange(n, dtype=np.int64)})
    keys = pd.DataFrame([("d", f"s{i}", f"m{j}", i, j) for i in range(n) for j in range(n_models[i])],
                        columns=["dataset", "station", "model", "skey", "mcode"])
    return UnitPlan(stations=stations, keys=keys, cuts={}, unit_station=np.arange(n, dtype=np.int64),
                    unit_part=np.asarray(unit_part, dtype=np.int64))


# --------------------------------------------------------------------------- a hand-worked plan

def test_a_hand_worked_plan():
    """Stations A (1 model, partition 1), B (2 models, partition 0), C (1 model, partition 1); 2 partitions.

    A unit has a slot per arrival phase and per model × phase: ``slot = unit * width + stream + 2`` with
    ``width = 2 + 2 * 2`` (B's two models) — A's slots 0–3, B's 6–11, C's 12–15.  Dask's hash sends
    0, 1 → 1; 2, 3 → 0; 4, 5, 6 → 1; 7 → 0; 8–11 → 1; 12, 13 → 0; … 20 → 0.  Partition 0 takes the six smallest
    numbers it receives (2, 3, 7, 12, 13, 20) for B's six slots in order; partition 1 the eight smallest of its
    own (0, 1, 4, 5, 6, 8, 9, 10) for A's slots then C's.
    """
    plan = _plan([1, 2, 1], [1, 0, 1])
    codes = shuffle_codes.codes_for(plan)
    assert codes.keyed and codes.key == "code" and codes.width == 6
    assert shuffle_codes.partitions_of(np.arange(21), 2).tolist() == [1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1,
                                                                   1, 1, 1, 0]
    assert codes.code_of_slot.tolist() == [0, 1, 4, 5, -1, -1, 2, 3, 7, 12, 13, 20, 6, 8, 9, 10, -1, -1]
    assert codes.dtype == np.int8  # (the largest code is 20)
    # B's model 1 P pick (stream 1 * 2 + 0 = 2): slot 6 + 2 + 2 = 10, code 13; C's S arrival (stream -2): slot 12,
    # code 6; A's P arrival (stream -1): slot 1, code 1.
    unit, stream = np.array([1, 2, 0]), np.array([2, -2, -1])
    assert codes.encode(unit, stream).tolist() == [13, 6, 1]
    back = codes.decode(codes.encode(unit, stream))
    assert back[0].tolist() == [1, 2, 0] and back[1].tolist() == [2, -2, -1]
    assert back[0].dtype == back[1].dtype == np.int64


def test_the_hand_worked_plan_through_dasks_own_shuffle():
    """Dask's shuffle (its hash partitioning, as on a cluster) puts every row in its unit's partition."""
    import dask
    import dask.dataframe as dd

    plan = _plan([1, 2, 1], [1, 0, 1])
    codes = shuffle_codes.codes_for(plan)
    unit = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2])
    stream = np.array([-2, -1, 0, 1, -2, -1, 0, 1, 2, 3, -2, -1, 0, 1])
    frame = exchange._frame(codes, None, unit, np.arange(unit.size, dtype=np.int64) * 10**9,
                            np.full(unit.size, 0.5, np.float32), {}, code=codes.encode(unit, stream))
    moved = dd.from_pandas(frame, npartitions=3, sort=False).shuffle(on=codes.key, npartitions=2, ignore_index=False,
                                                                     shuffle_method="tasks")
    with dask.config.set(scheduler="sync"):
        parts = [d.compute() for d in moved.to_delayed()]
    for p, got in enumerate(parts):
        u, s = codes.decode(got["code"].to_numpy())
        assert set(u.tolist()) == set(np.flatnonzero(plan.unit_part == p).tolist())
        assert got.index.name == "time" and got.index.dtype == np.int64
    assert sum(len(p) for p in parts) == unit.size


def test_a_row_at_the_wrong_partition_is_an_error():
    """Scoring checks where the rows arrived (a unit is scored whole or not at all)."""
    plan = _plan([1, 2, 1], [1, 0, 1])
    codes = shuffle_codes.codes_for(plan)
    frame = exchange._frame(codes, None, np.array([1]), np.array([5], np.int64), np.array([0.5], np.float32), {},
                            code=codes.encode(np.array([1]), np.array([0])))
    unpack_shuffled(frame, plan, codes, 0)
    with pytest.raises(RuntimeError, match="work partition 1"):
        unpack_shuffled(frame, plan, codes, 1)


# --------------------------------------------------------------------------- layouts and bytes

def test_the_frame_costs_at_most_16_bytes_a_pick_with_float32_confidences():
    """code (int8/16/32) + conf (float32) + time (the int64 index) — was 21 (label, unit, stream, time, conf) — and
    a plan large enough for int32 codes (10,000 stations × 3 models in 64 partitions) stays at 16."""
    plan = _plan([3] * 10_000, [i % 64 for i in range(10_000)])
    codes = shuffle_codes.codes_for(plan)
    assert codes.keyed and codes.dtype == np.int32
    meta = exchange.exchange_meta(np.float32, codes)
    assert tuple(meta.columns) == exchange.EXCHANGE_COLUMNS == ("code", "conf")
    assert meta.index.name == exchange.EXCHANGE_INDEX and meta.index.dtype == np.int64
    row = sum(d.itemsize for d in meta.dtypes) + meta.index.dtype.itemsize
    assert row == 16
    assert exchange.exchange_meta(np.float64, codes).dtypes["conf"] == np.float64  # exact: 20 bytes
    # Small plans take narrower codes.
    small = shuffle_codes.codes_for(_plan([3] * 100, [i % 4 for i in range(100)]))
    assert small.dtype == np.int16
    assert sum(d.itemsize for d in exchange.exchange_meta(np.float32, small).dtypes) + 8 == 14


def test_events_ride_in_the_arrivals_conf_where_it_holds_them_exactly():
    """SPEC §19's event of an arrival in its conf (an arrival has no confidence): no event column, 2 bytes a pick
    fewer -- while the conf's dtype holds every code exactly (int16 codes; int32 ones in float64 confidences)."""
    codes = shuffle_codes.codes_for(_plan([3] * 10_000, [i % 64 for i in range(10_000)]))
    for events, conf, inside in ((np.int16, np.float32, True), (np.int16, np.float64, True),
                                 (np.int32, np.float64, True), (np.int32, np.float32, False)):
        got, columns = shuffle_codes.carried(codes, {"event": np.dtype(events)}, conf)
        assert got.events_in_conf is inside and ("event" in columns) is not inside
        meta = exchange.exchange_meta(conf, got, columns)
        assert sum(d.itemsize for d in meta.dtypes) + 8 == (16 if conf == np.float32 else 20) + (0 if inside else 4)
    # The largest int16 code and -1 (no event) come back exactly from float32.
    plan = _plan([1, 1], [0, 1])
    got, columns = shuffle_codes.carried(shuffle_codes.codes_for(plan), {"event": np.dtype(np.int16)}, np.float32)
    bucket = pd.DataFrame({"part": [0, 0, 1], "unit": [0, 0, 1], "phase": np.array([0, 1, 0], np.int8),
                           "time": [5, 6, 7], "event": np.array([32_766, -1, 0], np.int32)})
    frame = exchange.arrivals_frame(bucket, plan, got, np.float32, columns)
    assert "event" not in frame
    moved = frame[plan.unit_part[np.array([0, 0, 1])] == 0]
    _, arrivals = unpack_shuffled(moved, plan, got, 0)
    assert arrivals[4].tolist() == [32_766, -1] and arrivals[4].dtype == np.int64


def test_past_the_keyed_bounds_a_label_column_is_the_key(monkeypatch):
    """A plan with too many slots for codes of their own: the code is the slot, a label per partition the key."""
    plan = _plan([1, 2, 1], [1, 0, 1])
    monkeypatch.setattr(shuffle_codes, "KEYED_SLOTS", 10)
    codes = shuffle_codes.codes_for(plan)
    assert not codes.keyed and codes.key == "label" and codes.dtype == np.int16
    assert codes.labels.tolist() == shuffle_codes.labels_for(2).tolist()
    assert codes.encode(np.array([1, 2]), np.array([2, -2])).tolist() == [10, 12]  # the slots themselves
    meta = exchange.exchange_meta(np.float32, codes)
    assert tuple(meta.columns) == ("label", "code", "conf")


def test_codes_grown_too_sparse_fall_back_to_labels(monkeypatch):
    """A partition with many slots among many partitions pushes its codes far out (about slots × partitions):
    past ``_CODES_PER_SLOT`` codes per slot (and the floor) the layout with labels is used."""
    monkeypatch.setattr(shuffle_codes, "_KEYED_FLOOR", 0)
    crowded = _plan([1] * 40 + [1] * 99, [0] * 40 + list(range(1, 100)))  # 160 slots in partition 0 of 100
    assert not shuffle_codes.codes_for(crowded).keyed
    even = _plan([1] * 200, [i % 100 for i in range(200)])
    assert shuffle_codes.codes_for(even).keyed


_CODES_SCRIPT = """
import hashlib, numpy as np, pandas as pd, sys
sys.path.insert(0, {root!r})
from tests.engine.test_exchange_codes import _plan
from pickscale.engine import exchange, shuffle_codes
c = shuffle_codes.codes_for(_plan([3, 1, 2] * 300, [(7 * i) % 37 for i in range(900)]))
print(hashlib.sha256(c.code_of_slot.tobytes() + c.slot_of_code.tobytes()).hexdigest())
"""


@pytest.mark.slow
def test_the_codes_are_the_same_whatever_the_hash_seed():
    """A function of the plan alone: Python's string hash seed (PYTHONHASHSEED) changes nothing."""
    digests = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _CODES_SCRIPT.format(root=str(ROOT))], env=env,
                             capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    here = shuffle_codes.codes_for(_plan([3, 1, 2] * 300, [(7 * i) % 37 for i in range(900)]))
    digests.add(hashlib.sha256(here.code_of_slot.tobytes() + here.slot_of_code.tobytes()).hexdigest())
    assert len(digests) == 1


# --------------------------------------------------------------------------- encode → shuffle → unpack

@st.composite
def _exchanges(draw):
    n_stations = draw(st.integers(1, 12))
    n_parts = draw(st.integers(1, 6))
    n_models = draw(st.lists(st.integers(1, 4), min_size=n_stations, max_size=n_stations))
    unit_part = draw(st.lists(st.integers(0, n_parts - 1), min_size=n_stations, max_size=n_stations))
    unit_part[0] = n_parts - 1  # (the plan's partitions are as many as its largest number says)
    plan = _plan(n_models, unit_part)
    conf_dtype = draw(st.sampled_from([np.float32, np.float64]))
    optional = {}
    if draw(st.booleans()):
        optional["arrival_group"] = np.dtype(draw(st.sampled_from([np.int8, np.int16])))
    if draw(st.booleans()):
        optional["event"] = np.dtype(np.int16)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        n = int(rng.integers(0, 30))
        combos = plan.keys[["dataset", "station", "model"]].copy()
        combo = rng.integers(0, len(combos), n).astype(np.int16)
        conf = rng.random(n)
        parts.append(PickPart(report=None, combos=combos, below_floor={}, combo=combo,  # type: ignore[arg-type]
                              phase=rng.integers(0, 2, n).astype(np.int8),
                              time=rng.integers(-10**18, 10**18, n), conf=conf.astype(conf_dtype)))
    buckets = []
    for _ in range(draw(st.integers(1, 3))):
        n = int(rng.integers(0, 12))
        unit = rng.integers(0, n_stations, n)
        bucket = pd.DataFrame({"part": plan.unit_part[unit], "unit": unit,
                               "phase": rng.integers(0, 2, n).astype(np.int8),
                               "time": rng.integers(-10**18, 10**18, n)})
        if "arrival_group" in optional:
            bucket["arrival_group"] = rng.integers(0, 100, n).astype(np.int32)
        if "event" in optional:
            bucket["event"] = rng.integers(-1, 1000, n).astype(np.int32)
        buckets.append(bucket)
    cuts = sorted(draw(st.sets(st.integers(1, max(len(parts) - 1, 1)), max_size=len(parts) - 1)))
    groups = list(zip([0, *cuts], [*cuts, len(parts)]))  # consecutive parts encoded together
    return plan, parts, buckets, conf_dtype, optional, draw(st.booleans()), groups


def _earlier_kernel_inputs(plan, parts, buckets, optional, p):
    """What the kernel was given for partition ``p`` by the frame of ``label, unit, stream, time, conf`` (rows in
    input order — parts, then buckets — picks stably sorted by unit)."""
    unit, stream, time, conf = [], [], [], []
    for part in parts:
        skey = plan.keys["skey"].to_numpy(np.int64)[part.combo]
        here = plan.unit_part[skey] == p
        unit.append(skey[here])
        stream.append(plan.keys["mcode"].to_numpy(np.int64)[part.combo][here] * 2 + part.phase[here])
        time.append(part.time[here])
        conf.append(part.conf[here].astype(np.float64))
    unit, stream, time, conf = (np.concatenate(c) for c in (unit, stream, time, conf))
    order = np.argsort(unit, kind="stable")
    picks = [unit[order], stream[order].astype(np.int64), time[order], conf[order]]
    refs = pd.concat(buckets, ignore_index=True)
    refs = refs[refs["part"] == p]
    arrivals = (refs["unit"].to_numpy(np.int64), refs["phase"].to_numpy(np.int8), refs["time"].to_numpy(np.int64),
                refs["arrival_group"].to_numpy(np.int32) if "arrival_group" in optional else None,
                refs["event"].to_numpy(np.int64) if "event" in optional else None)
    return picks, arrivals


@settings(max_examples=examples(60))
@given(_exchanges())
def test_encode_shuffle_unpack_gives_the_kernel_the_same_inputs(case):
    plan, parts, buckets, conf_dtype, optional, keyed, groups = case
    codes, columns = shuffle_codes.carried(shuffle_codes.codes_for(plan, keyed=keyed), optional, conf_dtype)
    assert codes.events_in_conf == ("event" in optional) and "event" not in columns  # (int16 events here)
    shared = (plan, codes, conf_dtype, None, columns)
    frames = [exchange._encoded("picks", *parts[a:b], *shared) for a, b in groups]
    frames += [exchange._encoded("arrivals", b, *shared) for b in buckets]
    meta = exchange.exchange_meta(conf_dtype, codes, columns)
    for f in frames:
        assert f.dtypes.equals(meta.dtypes) and f.index.dtype == meta.index.dtype and f.index.name == "time"
    # The shuffle: each frame's rows to the partition Dask's hash gives their key, in input order.
    sent = [shuffle_codes.partitions_of(f[codes.key].to_numpy(), plan.n_parts) for f in frames]
    for p in range(plan.n_parts):
        moved = pd.concat([f[s == p] for f, s in zip(frames, sent)])
        picks, arrivals = unpack_shuffled(moved, plan, codes, p)
        want_picks, want_arrivals = _earlier_kernel_inputs(plan, parts, buckets, optional, p)
        for got, want in zip(picks, want_picks):
            assert got.dtype == want.dtype and np.array_equal(got, want)
        for got, want in zip(arrivals, want_arrivals):
            assert (got is None) == (want is None)
            if want is not None:
                assert got.dtype == want.dtype and np.array_equal(got, want)


def test_small_consecutive_parts_are_encoded_together():
    """Groups are consecutive, up to GROUP_PICKS picks (and a share of the total per worker), in order."""
    sizes = [700] * 300
    groups = exchange.part_groups(sizes, n_workers=2)  # 210,000 picks: groups of up to 52,500, 64 parts
    assert [b - a for a, b in groups] == [64, 64, 64, 64, 44]
    assert groups[0][0] == 0 and all(b == c for (_, b), (c, _) in zip(groups, groups[1:])) and groups[-1][1] == 300
    big = [exchange.GROUP_PICKS] * 3 + [5, 5]  # a large part is a group of its own
    assert exchange.part_groups(big, n_workers=1) == [(0, 1), (1, 2), (2, 3), (3, 5)]
