"""SPEC §20 pick rates, the kernel: counts at each threshold and distinct UTC days, merged exactly in any
split of the picks (against a brute force)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import rates
from pickscale.kernel.rates import DAY_NS, count_rates, merge_rates
from tests.helpers.examples import examples

S = 1_000_000_000


def _combos(keys: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(keys, columns=["dataset", "station", "model"])


def test_spec_worked_example() -> None:
    """SPEC §20's example: station B, model m: P picks at 0.9, 0.4 (day 1) and 0.8 (day 2), an S pick at 0.6
    on day 2 just before midnight, one at 0.2 at 00:00:00 of day 3 (a day of its own)."""
    day = DAY_NS
    combos = _combos([("d", "B", "m")])
    time = np.array([5 * 3600 * S, 7 * 3600 * S, day + 5 * 3600 * S, 2 * day - 1, 2 * day])
    phase = np.array([0, 0, 0, 1, 1], np.int8)
    conf = np.array([0.9, 0.4, 0.8, 0.6, 0.2])
    r = count_rates(combos, np.zeros(5, np.int16), phase, time, conf, np.array([0.1, 0.5]))
    assert r.at.tolist() == [[[3, 2], [2, 1]]]
    assert r.day.tolist() == [0, 1, 2] and r.day_key.tolist() == [0, 0, 0]
    # A pick before 1970 falls on a negative day (floor, not truncation).
    r = count_rates(combos, np.zeros(1, np.int16), np.zeros(1, np.int8), np.array([-1]), np.array([0.5]),
                    np.array([0.5]))
    assert r.day.tolist() == [-1]


def test_threshold_rule_is_conf_at_or_above() -> None:
    """A pick exactly at a threshold counts there (conf >= θ, compared in float64 as float32 widens)."""
    conf = np.array([0.3, 0.5, 0.2999999], np.float32)  # float32(0.3) is 0.30000001…, float32(0.2999999) below
    r = count_rates(_combos([("d", "A", "m")]), np.zeros(3, np.int16), np.zeros(3, np.int8), np.zeros(3, np.int64),
                    conf, np.array([0.3, 0.5]))
    assert r.at[0, 0].tolist() == [2, 1]


def _brute(keys: list[tuple[str, str, str]], combo, phase, time, conf, grid) -> tuple[dict, dict]:
    at, days = {}, {}
    for c, p, t, q in zip(combo, phase, time, conf):
        k = keys[c]
        for g, theta in enumerate(grid):
            if float(q) >= float(theta):
                at[(k, int(p), g)] = at.get((k, int(p), g), 0) + 1
        days.setdefault(k, set()).add(int(t) // DAY_NS)
    return at, days


def _as_dicts(r) -> tuple[dict, dict]:
    keys = list(r.keys.itertuples(index=False, name=None))
    assert keys == sorted(keys)  # the kernel's key order
    at = {(keys[i], p, g): int(r.at[i, p, g]) for i in range(len(keys)) for p in range(2)
          for g in range(r.at.shape[2]) if r.at[i, p, g]}
    days: dict = {}
    for i, d in zip(r.day_key, r.day):
        days.setdefault(keys[i], set()).add(int(d))
    pairs = list(zip(r.day_key.tolist(), r.day.tolist()))
    assert pairs == sorted(set(pairs))  # distinct, sorted
    return at, days


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_split_merges_to_the_brute_force(data) -> None:
    keys = data.draw(st.lists(st.tuples(st.sampled_from(["d1", "d2"]), st.sampled_from(["A", "B", "C"]),
                                        st.sampled_from(["m", "n"])), min_size=1, max_size=6, unique=True))
    n = data.draw(st.integers(0, 60))
    combo = np.array(data.draw(st.lists(st.integers(0, len(keys) - 1), min_size=n, max_size=n)), dtype=np.int64)
    phase = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int8)
    # Times within a few days of each other, or far apart (the sorted path), around midnight too.
    span = data.draw(st.sampled_from([4, 10**5])) * DAY_NS
    time = np.array(data.draw(st.lists(st.integers(-span, span), min_size=n, max_size=n)), dtype=np.int64)
    conf = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 1.0]), min_size=n, max_size=n)))
    grid = np.array(sorted(data.draw(st.sets(st.sampled_from([0.1, 0.3, 0.5, 0.9]), min_size=1))))
    # Split the picks into parts; each part has its own combos table (its keys in its own order).
    n_parts = data.draw(st.integers(1, 4))
    part_of = np.array(data.draw(st.lists(st.integers(0, n_parts - 1), min_size=n, max_size=n)), dtype=np.int64)
    parts = []
    for j in range(n_parts):
        rows = np.flatnonzero(part_of == j)
        used = sorted(set(combo[rows].tolist()), reverse=True)  # not in key order
        local = {c: i for i, c in enumerate(used)}
        parts.append(count_rates(_combos([keys[c] for c in used]),
                                 np.array([local[c] for c in combo[rows]], dtype=np.int16), phase[rows],
                                 time[rows], conf[rows], grid))
    order = data.draw(st.permutations(range(n_parts)))
    merged = merge_rates([parts[j] for j in order])
    # Days found by sorting instead of marking (a part over many days) give the same.
    with mock.patch.object(rates, "_DENSE_CELLS", 0):
        sorted_path = count_rates(_combos(keys), combo.astype(np.int16), phase, time, conf, grid)
    # Merging in a tree gives the same as all at once.
    tree = merge_rates([merge_rates([parts[j] for j in order[:1]]), merge_rates([parts[j] for j in order[1:]])
                        if n_parts > 1 else parts[order[0]]]) if n_parts > 1 else merged
    assert _as_dicts(merged) == _brute(keys, combo, phase, time, conf, grid)
    assert _as_dicts(tree) == _as_dicts(merged)
    assert _as_dicts(sorted_path) == _as_dicts(merged)


@settings(max_examples=examples(100))
@given(st.lists(st.tuples(st.sampled_from(["", "a", "B", "b", "é", "z1", "z10", "z2"]),
                          st.sampled_from(["x", "X", "y"]), st.integers(-3, 3)), max_size=40))
def test_sorted_groups_numbers_groups_as_pandas_groupby_does(rows) -> None:
    """Issue 27: the groups of equal keys, numbered in sorted order, without pandas' groupby (its ~5 ms a call)."""
    frame = pd.DataFrame(rows, columns=["s", "t", "n"]).astype({"s": object, "t": object, "n": np.int64})
    group, first = rates.sorted_groups(frame, ["s", "t", "n"])
    grouped = frame.groupby(["s", "t", "n"], sort=True)
    assert group.tolist() == grouped.ngroup().tolist()
    want = grouped.size().reset_index()[["s", "t", "n"]]
    assert frame.iloc[first].to_numpy(object).tolist() == want.to_numpy(object).tolist()
