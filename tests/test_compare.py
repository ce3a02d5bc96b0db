"""SPEC §18: ``pickscale compare`` — two pick sets of one model matched one to one per station-day.

Hand-worked cases (the SPEC's worked example among them), a property test of the kernel against a brute force
written here from the SPEC's words (a loop over the ranked pairs, and for small inputs the largest matching by
enumeration), invariances (row order, files, the two sides swapped), and the command (in-process and once as a
subprocess).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pickscale
from pickscale.cli import main
from pickscale.compare import COLUMNS, KEYS, check_tol, compare, describe
from pickscale.errors import InputError, OptionsError
from pickscale.io import parse_time
from pickscale.metrics.reproducibility import COUNT_NAMES, candidate_pairs, compare_counts, match
from pickscale.report.tables import to_csv_bytes

S = 10**9
MS = 10**6
DAY = "2020-01-01"


def picks(rows, *, model="m", dataset="all") -> pd.DataFrame:
    """A picks frame from (station, phase, time, conf) rows; a time without a date is on 2020-01-01."""
    out = pd.DataFrame(rows, columns=["station", "phase", "time", "conf"])
    out["time"] = [t if "T" in t else f"{DAY}T{t}Z" for t in out["time"]]
    out.insert(0, "model", model)
    out.insert(0, "dataset", dataset)
    return out


def row(table: pd.DataFrame, **keys) -> dict:
    """The one row of ``table`` with these key values, as a dict."""
    mask = np.ones(len(table), dtype=bool)
    for k, v in keys.items():
        mask &= (table[k] == v).to_numpy()
    assert mask.sum() == 1, (keys, table)
    return table[mask].iloc[0].to_dict()


# The SPEC §18 worked example: station CI.CLC, phase P, tol 0.1 s.
SPEC_A = picks([("CI.CLC", "P", "10:00:00.000", 0.875), ("CI.CLC", "P", "10:00:05.000", 0.8),
                ("CI.CLC", "P", "10:00:05.080", 0.5), ("CI.CLC", "P", "10:00:10.000", 0.5),
                ("CI.CLC", "P", "23:59:59.980", 0.7)])
SPEC_B = picks([("CI.CLC", "P", "10:00:00.000", 0.75), ("CI.CLC", "P", "10:00:05.060", 0.75),
                ("CI.CLC", "P", "10:00:09.950", 0.5), ("CI.CLC", "P", "10:00:10.050", 0.5),
                ("CI.CLC", "P", "2020-01-02T00:00:00.010Z", 0.7)])
SPEC_CSV = ("dataset,model,station,phase,day,n_a,n_b,matched,only_a,only_b,max_dconf,max_dt\n"
            "all,m,CI.CLC,P,2020-01-01,5,4,3,2,1,0.25,0.05\n"
            "all,m,CI.CLC,P,2020-01-02,0,1,0,0,1,NaN,NaN\n")


# --- hand-worked cases ---------------------------------------------------------------------------------------


def test_spec_worked_example():
    table = compare(SPEC_A, SPEC_B, tol=0.1)
    assert to_csv_bytes(table).decode() == SPEC_CSV
    s = table.attrs["summary"]
    assert (s["differ"], s["station_days"], s["only_a"], s["only_b"], s["identical"]) == (2, 2, 2, 2, False)
    assert describe(table)[0] == ("2 of 2 station-day(s) differ (tol 0.1 s): 2 pick(s) only in A, 2 only in B, "
                                  "of 5 in A and 5 in B")


def test_spec_worked_example_pairs():
    """The pairs themselves: (a1, b1), (a3, b2) closest first, (a4, b3) by the earlier time."""
    a, b = parse_time(SPEC_A["time"])[0], parse_time(SPEC_B["time"])[0]  # int64 ns, as the readers make them
    day_a, day_b = a // (86_400 * S), b // (86_400 * S)
    ia, ib = match(a, SPEC_A["conf"], b, SPEC_B["conf"], tol_ns=100 * MS, group_a=day_a - day_a.min(),
                   group_b=day_b - day_a.min())
    assert list(zip(ia.tolist(), ib.tolist())) == [(0, 0), (2, 1), (3, 2)]


def test_identical_sets_in_any_row_order():
    a = picks([("CI.CLC", "P", "01:00:00.000", 0.9), ("CI.CLC", "S", "01:00:04.000", 0.6),
               ("CI.CLC", "P", "01:00:00.000", 0.3),  # a duplicate pick (kept, SPEC §1) with another conf
               ("CI.SRT", "P", "2020-01-03T05:00:00Z", 0.5)])
    table = compare(a, a.iloc[[3, 2, 1, 0]], tol=0.1)
    assert table["only_a"].sum() == table["only_b"].sum() == 0
    assert (table["max_dconf"] == 0).all() and (table["max_dt"] == 0).all()
    assert table.attrs["summary"]["identical"]
    assert row(table, station="CI.CLC", phase="P")["matched"] == 2  # 0.9 with 0.9, 0.3 with 0.3
    assert describe(table)[0].startswith("identical: 4 pick(s) in 3 station-day(s)")


def test_one_pick_moved_beyond_tol():
    a = picks([("CI.CLC", "P", "01:00:00.000", 0.9), ("CI.CLC", "P", "02:00:00.000", 0.8)])
    b = picks([("CI.CLC", "P", "01:00:00.000", 0.9), ("CI.CLC", "P", "02:00:00.101", 0.8)])
    r = row(compare(a, b, tol=0.1), station="CI.CLC")
    assert (r["n_a"], r["n_b"], r["matched"], r["only_a"], r["only_b"]) == (2, 2, 1, 1, 1)
    assert r["max_dt"] == 0.0
    # At exactly tol the move is a match (inclusive), seen in max_dt only.
    b.loc[1, "time"] = f"{DAY}T02:00:00.100Z"
    r = row(compare(a, b, tol=0.1), station="CI.CLC")
    assert (r["matched"], r["only_a"], r["only_b"], r["max_dt"]) == (2, 0, 0, 0.1)


def test_conf_changed():
    a = picks([("CI.CLC", "P", "01:00:00", 0.9), ("CI.CLC", "P", "02:00:00", 0.5), ("CI.CLC", "S", "02:00:03", 0.4)])
    b = a.assign(conf=[0.875, 0.25, 0.4])
    table = compare(a, b)
    assert row(table, phase="P")["max_dconf"] == abs(0.5 - 0.25)
    assert row(table, phase="S")["max_dconf"] == 0.0
    s = table.attrs["summary"]
    assert s["differ"] == 1 and s["largest"]["max_dconf"] == {"where": ["all", "m", "CI.CLC", "P", DAY],
                                                              "value": 0.25}
    assert "  largest conf difference: all m CI.CLC P 2020-01-01 (0.250)" in describe(table)


def test_ties_at_equal_distance_go_to_the_earlier_time():
    # One pick of A between two of B, 50 ms either side: the pair whose earlier time is earlier is taken.
    ta, tb = np.array([10 * S]), np.array([10 * S - 50 * MS, 10 * S + 50 * MS])
    assert match(ta, [0.5], tb, [0.5, 0.5], tol_ns=100 * MS)[1].tolist() == [0]
    # The same seen from B: B's single pick between two of A goes to A's earlier one.
    assert match(tb, [0.5, 0.5], ta, [0.5], tol_ns=100 * MS)[0].tolist() == [0]
    # At equal distance and time, the closer confidence wins; then the smaller confidence.
    assert match([0], [0.5], [0, 0], [0.25, 0.625], tol_ns=0)[1].tolist() == [1]
    assert match([0, 0], [0.25, 0.75], [0], [0.5], tol_ns=0)[0].tolist() == [0]


def test_closest_first_can_pair_fewer_than_possible():
    """SPEC §18: A at 0.00 and 0.15 s, B at 0.10 and 0.25 s: one pair where two were possible."""
    ia, ib = match([0, 150 * MS], [0.5, 0.5], [100 * MS, 250 * MS], [0.5, 0.5], tol_ns=100 * MS)
    assert list(zip(ia.tolist(), ib.tolist())) == [(1, 0)]


def test_station_day_split_at_midnight_utc():
    a = picks([("CI.CLC", "P", "23:59:59.990", 0.7)])
    b = picks([("CI.CLC", "P", "2020-01-02T00:00:00.000Z", 0.7)])  # 10 ms later, the next day
    table = compare(a, b, tol=0.1)
    assert table["day"].tolist() == ["2020-01-01", "2020-01-02"]
    assert table[["n_a", "n_b", "matched", "only_a", "only_b"]].to_numpy().tolist() == [[1, 0, 0, 1, 0],
                                                                                         [0, 1, 0, 0, 1]]
    # A day starts at 00:00:00 inclusive, before 1970 too.
    early = picks([("X", "P", "1969-12-31T23:59:59.999999999Z", 0.5), ("X", "P", "1970-01-01T00:00:00Z", 0.5)])
    assert compare(early, early)["day"].tolist() == ["1969-12-31", "1970-01-01"]


def test_keys_sorted_and_kept_apart():
    a = pd.concat([picks([("B", "P", "01:00:00", 0.5)], model="n", dataset="d2"),
                   picks([("A", "S", "01:00:00", 0.5), ("A", "P", "01:00:00", 0.5)], model="m", dataset="d2"),
                   picks([("Z", "P", "01:00:00", 0.5)], model="m", dataset="d1")], ignore_index=True)
    table = compare(a, a.iloc[::-1])
    assert list(table.columns) == list(COLUMNS) and list(COLUMNS[len(KEYS):]) == list(COUNT_NAMES)
    assert table[list(KEYS[:4])].to_numpy().tolist() == [["d1", "m", "Z", "P"], ["d2", "m", "A", "P"],
                                                         ["d2", "m", "A", "S"], ["d2", "n", "B", "P"]]
    # A model renamed in B: nothing of it matches, and the summary says so.
    table = compare(a, a.replace({"model": {"n": "n2"}}))
    assert (table.attrs["summary"]["models_only_a"], table.attrs["summary"]["models_only_b"]) == ([["d2", "n"]],
                                                                                                 [["d2", "n2"]])
    assert any("dataset/model only in A" in line and "d2/n" in line for line in describe(table))


def test_swapped_sides_swap_only_columns():
    table, swapped = compare(SPEC_A, SPEC_B), compare(SPEC_B, SPEC_A)
    flipped = swapped.rename(columns={"n_a": "n_b", "n_b": "n_a", "only_a": "only_b", "only_b": "only_a"})
    pd.testing.assert_frame_equal(table, flipped[list(COLUMNS)])


def test_aliases_files_and_formats(tmp_path):
    """Any picks format: a PhaseNet-named CSV against a Parquet file of the same picks, row order shuffled."""
    a = SPEC_A.rename(columns={"station": "station_id", "time": "phase_time", "conf": "phase_score",
                               "phase": "phase_type"})
    a.to_csv(tmp_path / "a.csv", index=False)
    SPEC_B.iloc[::-1].to_parquet(tmp_path / "b.parquet")
    table = compare(tmp_path / "a.csv", str(tmp_path / "b.parquet"))
    assert to_csv_bytes(table).decode() == SPEC_CSV
    assert pickscale.compare is compare and "compare" in pickscale.__all__


def test_bad_inputs(tmp_path):
    with pytest.raises(InputError, match="pick set B: .*missing.csv: no such file"):
        compare(SPEC_A, tmp_path / "missing.csv")
    with pytest.raises(InputError, match="pick set A: .*conf"):
        compare(SPEC_A.drop(columns="conf"), SPEC_B)
    with pytest.raises(InputError, match="neither pick set"):
        compare(SPEC_A.assign(phase="Lg"), SPEC_B.assign(phase="Lg"))
    for bad in (-0.01, 10.5, float("nan"), float("inf"), "x", None):
        with pytest.raises(OptionsError, match=r"tol must be a number of seconds in \[0, 10\]"):
            compare(SPEC_A, SPEC_B, tol=bad)
    assert check_tol(0) == 0.0 and check_tol(10) == 10.0


def test_tol_zero_matches_exact_times_only():
    table = compare(SPEC_A, SPEC_B, tol=0)
    assert row(table, day=DAY)["matched"] == 1  # a1 and b1 only


def test_warnings_of_reading_are_kept():
    b = pd.concat([SPEC_B, picks([("CI.CLC", "Lg", "11:00:00", 0.5)])], ignore_index=True)
    with pytest.warns(pickscale.PickscaleWarning, match="pick set B: .*neither P- nor S-like"):
        table = compare(SPEC_A, b)
    assert len(table.attrs["warnings"]) == 1


# --- the kernel against a brute force of the SPEC's words -------------------------------------------------


def brute_counts(groups_a, ta, ca, groups_b, tb, cb, tol_ns, n_groups):
    """SPEC §18 by a plain loop: rank every candidate pair, walk them, keep a pair whose picks are free."""
    pairs = []
    for i, j in itertools.product(range(len(ta)), range(len(tb))):
        if groups_a[i] == groups_b[j] and abs(ta[i] - tb[j]) <= tol_ns:
            key = (abs(ta[i] - tb[j]), min(ta[i], tb[j]), abs(ca[i] - cb[j]), min(ca[i], cb[j]), max(ca[i], cb[j]))
            pairs.append((key, i, j))
    used_a, used_b, kept = set(), set(), []
    for _, i, j in sorted(pairs, key=lambda p: p[0]):  # fully equal keys join interchangeable picks
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            kept.append((i, j))
    out = {name: [] for name in COUNT_NAMES}
    for g in range(n_groups):
        mine = [(i, j) for i, j in kept if groups_a[i] == g]
        n_a, n_b = sum(1 for x in groups_a if x == g), sum(1 for x in groups_b if x == g)
        out["n_a"].append(n_a)
        out["n_b"].append(n_b)
        out["matched"].append(len(mine))
        out["only_a"].append(n_a - len(mine))
        out["only_b"].append(n_b - len(mine))
        out["max_dconf"].append(max((abs(ca[i] - cb[j]) for i, j in mine), default=float("nan")))
        out["max_dt"].append(max((abs(ta[i] - tb[j]) for i, j in mine), default=None))
    out["max_dt"] = [float("nan") if v is None else v / 1e9 for v in out["max_dt"]]
    return out, kept


def largest_matching(ta, tb, tol_ns) -> int:
    """The most pairs any one-to-one matching within tol can have, by enumeration (small inputs)."""
    best = 0
    for k in range(min(len(ta), len(tb)), 0, -1):
        for chosen_a in itertools.combinations(range(len(ta)), k):
            for chosen_b in itertools.permutations(range(len(tb)), k):
                if all(abs(ta[i] - tb[j]) <= tol_ns for i, j in zip(chosen_a, chosen_b)):
                    return k
    return best


def side(max_size: int):
    # Times on a coarse 10 ms grid within 0.3 s and few confidences: many candidate pairs, ties and duplicates.
    pick = st.tuples(st.integers(0, 1), st.integers(0, 30).map(lambda v: v * 10 * MS),
                     st.sampled_from([0.25, 0.5, 0.75, 0.3, 0.6]))
    return st.lists(pick, max_size=max_size)


def arrays(rows):
    g = [r[0] for r in rows]
    t = [r[1] for r in rows]
    c = [r[2] for r in rows]
    return np.array(g, dtype=np.int64), np.array(t, dtype=np.int64), np.array(c, dtype=np.float64)


def assert_counts_equal(got, want):
    for name in COUNT_NAMES:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)


@pytest.mark.slow
@given(side(12), side(12), st.sampled_from([0, 20 * MS, 50 * MS, 100 * MS]), st.randoms(use_true_random=False))
def test_kernel_equals_brute_force(rows_a, rows_b, tol_ns, rnd):
    ga, ta, ca = arrays(rows_a)
    gb, tb, cb = arrays(rows_b)
    want, kept = brute_counts(ga.tolist(), ta.tolist(), ca.tolist(), gb.tolist(), tb.tolist(), cb.tolist(), tol_ns, 2)
    got = compare_counts(2, ga, ta, ca, gb, tb, cb, tol_ns=tol_ns)
    assert_counts_equal(got, want)
    # The pairs themselves agree up to interchangeable picks (equal group, time and conf).
    ia, ib = match(ta, ca, tb, cb, tol_ns=tol_ns, group_a=ga, group_b=gb)
    as_values = lambda pairs: sorted((ga[i], ta[i], ca[i], tb[j], cb[j]) for i, j in pairs)
    assert as_values(zip(ia, ib)) == as_values(kept)
    # Row order changes nothing; swapping the sides swaps the n_ and only_ columns.
    pa, pb = list(range(len(rows_a))), list(range(len(rows_b)))
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    assert_counts_equal(compare_counts(2, ga[pa], ta[pa], ca[pa], gb[pb], tb[pb], cb[pb], tol_ns=tol_ns), want)
    swapped = compare_counts(2, gb, tb, cb, ga, ta, ca, tol_ns=tol_ns)
    for x, y in (("n_a", "n_b"), ("only_a", "only_b")):
        swapped[x], swapped[y] = swapped[y], swapped[x]
    assert_counts_equal(swapped, want)


@pytest.mark.slow
@given(side(5), side(5), st.sampled_from([0, 20 * MS, 50 * MS, 100 * MS]))
def test_kernel_against_the_largest_matching(rows_a, rows_b, tol_ns):
    """Closest first is a maximal matching: at least half of the largest one, never more."""
    ga, ta, ca = arrays([(0, t, c) for _, t, c in rows_a])
    gb, tb, cb = arrays([(0, t, c) for _, t, c in rows_b])
    matched = int(compare_counts(1, ga, ta, ca, gb, tb, cb, tol_ns=tol_ns)["matched"][0])
    most = largest_matching(ta.tolist(), tb.tolist(), tol_ns)
    assert (most + 1) // 2 <= matched <= most


@pytest.mark.slow
@given(side(12), st.randoms(use_true_random=False))
def test_a_set_against_itself_is_identical(rows, rnd):
    g, t, c = arrays(rows)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    got = compare_counts(2, g, t, c, g[order], t[order], c[order], tol_ns=100 * MS)
    assert (got["only_a"] == 0).all() and (got["only_b"] == 0).all()
    with_pairs = got["matched"] > 0
    assert (got["max_dconf"][with_pairs] == 0).all() and (got["max_dt"][with_pairs] == 0).all()


MIDNIGHT = 1577923200 * S  # 2020-01-02T00:00:00Z


def pick_rows(max_size: int):
    # Around midnight UTC (0.2 s either side), two stations, both phases: days, groups and ties all occur.
    one = st.tuples(st.sampled_from(["CI.A", "CI.B"]), st.sampled_from(["P", "S"]),
                    st.integers(-20, 20).map(lambda v: MIDNIGHT + v * 10 * MS), st.sampled_from([0.25, 0.5, 0.75]))
    return st.lists(one, max_size=max_size)


def as_frame(rows) -> pd.DataFrame:
    # Seconds as a decimal string: read exactly, to the nanosecond (SPEC §1).
    return pd.DataFrame({"station": [r[0] for r in rows], "phase": [r[1] for r in rows],
                         "time": [f"{r[2] // S}.{r[2] % S:09d}" for r in rows], "conf": [r[3] for r in rows]})


@pytest.mark.slow
@given(pick_rows(10), pick_rows(10), st.randoms(use_true_random=False))
def test_table_equals_brute_force_in_any_row_order(rows_a, rows_b, rnd):
    if not rows_a and not rows_b:
        return
    table = compare(as_frame(rows_a), as_frame(rows_b), tol=0.05)
    # Expected: the brute force on groups (station, phase, day) numbered in key order.
    day = lambda t: "2020-01-01" if t < MIDNIGHT else "2020-01-02"
    keys = sorted({(r[0], r[1], day(r[2])) for r in rows_a + rows_b})
    code = {k: i for i, k in enumerate(keys)}
    ga = [code[(r[0], r[1], day(r[2]))] for r in rows_a]
    gb = [code[(r[0], r[1], day(r[2]))] for r in rows_b]
    want, _ = brute_counts(ga, [r[2] for r in rows_a], [r[3] for r in rows_a], gb, [r[2] for r in rows_b],
                           [r[3] for r in rows_b], 50 * MS, len(keys))
    assert table[["station", "phase", "day"]].to_numpy().tolist() == [list(k) for k in keys]
    assert_counts_equal({name: table[name].to_numpy() for name in COUNT_NAMES}, want)
    # The same bytes whatever the row order of either set.
    rnd.shuffle(rows_a)
    rnd.shuffle(rows_b)
    assert to_csv_bytes(compare(as_frame(rows_a), as_frame(rows_b), tol=0.05)) == to_csv_bytes(table)


def test_candidate_pairs_at_the_int64_edges():
    big = np.iinfo(np.int64).max
    ia, ib = candidate_pairs(np.array([big, -big]), np.array([big - 5, -big + 20]), tol_ns=10)
    assert list(zip(ia.tolist(), ib.tolist())) == [(0, 0)]
    assert candidate_pairs(np.zeros(0, np.int64), np.array([1]), tol_ns=5)[0].size == 0


# --- the command --------------------------------------------------------------------------------------------


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    SPEC_A.to_csv(tmp_path / "a.csv", index=False)
    SPEC_B.to_csv(tmp_path / "b.csv", index=False)
    return tmp_path / "a.csv", tmp_path / "b.csv"


@pytest.mark.slow
def test_cli_writes_the_table_and_says_where(files, tmp_path, capsys):
    a, b = files
    code, out, err = run(["compare", a, b, "--out", tmp_path / "out"], capsys)
    assert code == 0, err
    assert (tmp_path / "out" / "compare.csv").read_text() == SPEC_CSV
    assert out.splitlines() == [
        "2 of 2 station-day(s) differ (tol 0.1 s): 2 pick(s) only in A, 2 only in B, of 5 in A and 5 in B",
        "  most only in A: all m CI.CLC P 2020-01-01 (2)",
        "  most only in B: all m CI.CLC P 2020-01-01 (1)",
        "  largest conf difference: all m CI.CLC P 2020-01-01 (0.250)",
        "  largest time difference: all m CI.CLC P 2020-01-01 (0.050 s)",
        f"table: {tmp_path / 'out' / 'compare.csv'}",
    ]
    # --out FILE.csv, and the same file again only with --overwrite.
    target = tmp_path / "diff.csv"
    assert run(["compare", a, a, "--out", target, "--tol", "0.05"], capsys)[0] == 0
    assert target.read_text().splitlines()[1] == "all,m,CI.CLC,P,2020-01-01,5,5,5,0,0,0.0,0.0"
    code, out, err = run(["compare", a, b, "--out", target], capsys)
    assert code == 2 and "exists (replace it with --overwrite)" in err and "Traceback" not in err
    assert target.read_text().splitlines()[1].endswith(",5,5,5,0,0,0.0,0.0")  # untouched
    assert run(["compare", a, b, "--out", target, "--overwrite"], capsys)[0] == 0
    assert target.read_text() == SPEC_CSV


@pytest.mark.parametrize("case, needle", [
    ("missing", "pick set B: "),
    ("no conf", "pick set A: "),
    ("negative tol", "--tol must be a number of seconds in [0, 10]; got -0.5."),
    ("tol not a number", "argument --tol: invalid float value"),
])
def test_cli_bad_input_exits_2(files, tmp_path, capsys, case, needle):
    a, b = files
    argv = ["compare", a, b, "--out", tmp_path / "out"]
    if case == "missing":
        argv[2] = tmp_path / "nowhere.csv"
    elif case == "no conf":
        SPEC_A.drop(columns="conf").to_csv(a, index=False)
    elif case == "negative tol":
        argv += ["--tol", "-0.5"]
    else:
        argv += ["--tol", "abc"]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_cli_subprocess(files, tmp_path):
    a, _ = files
    done = subprocess.run([sys.executable, "-m", "pickscale", "compare", str(a), str(a)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("identical: 5 pick(s) in 1 station-day(s)")
    assert (tmp_path / "compare.csv").read_text().splitlines()[1] == "all,m,CI.CLC,P,2020-01-01,5,5,5,0,0,0.0,0.0"
    done = subprocess.run([sys.executable, "-m", "pickscale", "compare", str(a), "missing.csv", "--overwrite"],
                          cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "pick set B: " in done.stderr and "Traceback" not in done.stderr
