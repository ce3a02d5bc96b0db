"""Support for the engine, determinism and CLI tests (imported by them; not a pytest conftest).

- :func:`expected_scope`: SPEC §2 written again from the text, on canonical rows
  (pandas, row based; shares no code with :mod:`pickscale.scope`).
- :func:`expected_results`: SPEC §3–§7 per station with ``tests/brute.py``,
  summed over stations, and the SPEC §8 tables built from those sums.
- :func:`assert_tables_equal`, :func:`assert_same_results`: the comparisons.
- :func:`read_plain`: a plain pandas reader for files with canonical columns
  and ISO UTC times (the real data sets), independent of pickscale's reader.
- :func:`start_cluster`: the LocalCluster of the cluster tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tests.helpers import brute

PHASES = ("P", "S")
TIMING = brute.TIMING_NAMES

DETECTION_COLUMNS = [
    "dataset", "phase", "model", "n_reference", "emitted", "matched", "recall", "precision_lb", "f1_lb",
    "extra_rate", "duplicate_rate", "recall_at_budget", "matched_budget", "best_threshold", "best_on_edge",
    "f1_lb_at_best", "recall_at_best", "ap_lb",
]
TIMING_COLUMNS = ["dataset", "phase", "model", *TIMING, *brute.QUANTILE_NAMES]
CALIBRATION_COLUMNS = ["dataset", "phase", "model", "n_picks", "ece_lb", "brier_lb"]
RELIABILITY_COLUMNS = ["dataset", "phase", "model", "bin", "n_picks", "mean_conf", "observed_lb"]
PHASE_QUALITY_COLUMNS = ["dataset", "model", "P_n_reference", "P_matched_as_S", "S_n_reference", "S_matched_as_P",
                         "swap_rate", "duplicate_rate"]
SWEEP_COLUMNS = ["dataset", "phase", "model", "threshold", "n_reference", "emitted", "matched", "extra",
                 "duplicates", "swapped", "recall", "precision_lb", "f1_lb", "extra_rate", "duplicate_rate",
                 *TIMING]
TABLE_NAMES = ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep")
EXCLUSION_KEYS = (
    "picks_below_floor", "reference_duplicates", "reference_outside_coverage", "picks_outside_coverage",
    "reference_in_datasets_without_picks",
    "picks_in_datasets_without_reference", "reference_at_unpicked_stations", "picks_at_unreferenced_stations",
    "reference_outside_span",
)


# --------------------------------------------------------------------------- reading

def read_plain(path, role: str) -> pd.DataFrame:
    """A canonical-column CSV with ISO UTC times, read with pandas alone.

    Stations stripped of blanks and trailing dots, phases mapped as SPEC §1 says,
    other phases dropped.
    """
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    p_names, s_names = set(brute_phase_names("P")), set(brute_phase_names("S"))
    phase = raw["phase"].str.strip().map(lambda x: "P" if x in p_names else ("S" if x in s_names else None))
    out = pd.DataFrame({
        "dataset": raw["dataset"].str.strip() if "dataset" in raw else "all",
        "station": raw["station"].str.strip().str.rstrip(".").str.strip(),
        "phase": phase,
        "time": _iso_to_ns(raw["time"]),
    })
    if role == "picks":
        out.insert(1, "model", raw["model"].str.strip() if "model" in raw else "model")
        out["conf"] = raw["conf"].astype(np.float64)
    return out[out["phase"].notna()].reset_index(drop=True)


def _iso_to_ns(col: pd.Series) -> np.ndarray:
    t = pd.to_datetime(col, utc=True, format="ISO8601")
    return t.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]").to_numpy().view(np.int64)


def brute_phase_names(p: str) -> tuple[str, ...]:
    return tuple(p + x for x in ("", "g", "n", "b", "*"))


# --------------------------------------------------------------------------- SPEC §2

@dataclass
class ExpectedScope:
    reference: pd.DataFrame  # scored arrivals
    picks: pd.DataFrame  # scored picks (>= floor, at scored stations)
    stations: dict[str, list[str]]
    models: dict[str, list[str]]
    spans: dict[str, tuple[int, int]]
    exclusions: dict[str, int]
    exclusions_by_dataset: dict[str, dict[str, int]]


def expected_scope(ref: pd.DataFrame, picks: pd.DataFrame, *, floor: float, residual_tol_ns: int) -> ExpectedScope:
    """SPEC §2 on canonical rows (``time`` int64 ns, phases already P/S)."""
    by_ds: dict[str, dict[str, int]] = {}

    def bump(d, key, n):
        if n:
            by_ds.setdefault(d, {}).setdefault(key, 0)
            by_ds[d][key] += int(n)

    below = picks["conf"].to_numpy(np.float64) < floor
    for d, n in picks.loc[below, "dataset"].value_counts().items():
        bump(d, "picks_below_floor", n)
    above = picks.loc[~below]
    dup = ref.duplicated(["dataset", "station", "phase", "time"], keep="first")
    for d, n in ref.loc[dup, "dataset"].value_counts().items():
        bump(d, "reference_duplicates", n)
    ref = ref.loc[~dup]

    ref_ds, pick_ds = set(ref["dataset"]), set(above["dataset"])
    for d in ref_ds - pick_ds:
        bump(d, "reference_in_datasets_without_picks", int((ref["dataset"] == d).sum()))
    for d in pick_ds - ref_ds:
        bump(d, "picks_in_datasets_without_reference", int((above["dataset"] == d).sum()))

    stations, models, spans = {}, {}, {}
    ref_parts, pick_parts = [], []
    for d in sorted(ref_ds & pick_ds):
        r = ref[ref["dataset"] == d]
        p = above[above["dataset"] == d]
        scored = sorted(set(r["station"]) & set(p["station"]))
        assert scored, f"the catalogue should share a station in {d!r}"
        bump(d, "reference_at_unpicked_stations", int((~r["station"].isin(scored)).sum()))
        bump(d, "picks_at_unreferenced_stations", int((~p["station"].isin(scored)).sum()))
        r = r[r["station"].isin(scored)]
        p = p[p["station"].isin(scored)]
        lo, hi = int(p["time"].min()) - residual_tol_ns, int(p["time"].max()) + residual_tol_ns
        inside = (r["time"] >= lo) & (r["time"] <= hi)
        bump(d, "reference_outside_span", int((~inside).sum()))
        stations[d] = scored
        models[d] = sorted(set(p["model"]))
        spans[d] = (lo, hi)
        ref_parts.append(r[inside])
        pick_parts.append(p)
    by_ds = {d: {k: int(c.get(k, 0)) for k in EXCLUSION_KEYS} for d, c in by_ds.items()}
    totals = {k: sum(c[k] for c in by_ds.values()) for k in EXCLUSION_KEYS}
    return ExpectedScope(pd.concat(ref_parts, ignore_index=True), pd.concat(pick_parts, ignore_index=True),
                         stations, models, spans, totals, by_ds)


# --------------------------------------------------------------------------- SPEC §3–§8

def grid_of(threshold: float, thresholds=None) -> list[float]:
    if thresholds is None:
        return brute.default_grid(threshold)
    return sorted(set(float(t) for t in thresholds) | {float(threshold)})


@dataclass
class Expected:
    tables: dict[str, pd.DataFrame]
    scope: ExpectedScope
    grid: list[float]
    fine: list[float]
    stations: dict[tuple[str, str], Any] = field(default_factory=dict)  # (dataset, station) -> BruteStation
    totals: dict[str, dict] = field(default_factory=dict)  # dataset -> summed counts


def expected_results(ref: pd.DataFrame, picks: pd.DataFrame, *, threshold: float = 0.3, tol: float = 0.5,
                     residual_tol: float = 2.0, thresholds=None, budget=None,
                     with_sweep: bool = True) -> Expected:
    """Every SPEC §8 table, computed with brute.py station by station and summed over stations."""
    grid = grid_of(threshold, thresholds)
    floor = grid[0]
    ti = grid.index(float(threshold))
    tol_ns, rtol_ns = int(brute.ns(tol)), int(brute.ns(residual_tol))
    scope = expected_scope(ref, picks, floor=floor, residual_tol_ns=rtol_ns)
    fine = brute.fine_grid(floor)
    out = Expected(tables={}, scope=scope, grid=grid, fine=fine)

    rows = {name: [] for name in TABLE_NAMES}
    for d in sorted(scope.stations):
        models = scope.models[d]
        M, T = len(models), len(grid)
        mcode = {m: i for i, m in enumerate(models)}
        tot = dict(
            n_reference=np.zeros(2, np.int64),
            emitted=np.zeros((M, 2, T), np.int64), matched=np.zeros((M, 2, T), np.int64),
            duplicates=np.zeros((M, 2, T), np.int64), swapped=np.zeros((M, 2, T), np.int64),
            fine_emitted=np.zeros((M, 2, len(fine)), np.int64), fine_matched=np.zeros((M, 2, len(fine)), np.int64),
            cal_n=np.zeros((M, 2, 10), np.int64), cal_hits=np.zeros((M, 2, 10), np.int64),
            cal_conf=np.zeros((M, 2, 10), np.float64), brier_sum=np.zeros((M, 2), np.float64),
        )
        residuals = {(m, p, t): [] for m in range(M) for p in range(2) for t in range(T)}
        lowest: dict[tuple[int, int], float] = {}
        rd = scope.reference[scope.reference["dataset"] == d]
        pd_ = scope.picks[scope.picks["dataset"] == d]
        for st in scope.stations[d]:  # sorted by name: the canonical order of SPEC §9
            r = rd[rd["station"] == st]
            p = pd_[pd_["station"] == st]
            # SPEC §7's best_on_edge, brute force: the lowest confidence emitted, from the picks themselves.
            for (mi, pi), c in zip(zip(p["model"].map(mcode), p["phase"].map({"P": 0, "S": 1})),
                                   p["conf"].to_numpy(np.float64)):
                if c >= floor:
                    lowest[(int(mi), int(pi))] = min(lowest.get((int(mi), int(pi)), math.inf), float(c))
            res = brute.score_station(
                r["phase"].map({"P": 0, "S": 1}).to_numpy(), r["time"].to_numpy(np.int64),
                p["model"].map(mcode).to_numpy(), p["phase"].map({"P": 0, "S": 1}).to_numpy(),
                p["time"].to_numpy(np.int64), p["conf"].to_numpy(np.float64),
                n_models=M, grid=grid, tol_ns=tol_ns, residual_tol_ns=rtol_ns,
            )
            out.stations[(d, st)] = res
            for k in tot:
                tot[k] = tot[k] + getattr(res, k)
            for key, pairs in res.residuals.items():
                residuals[key].extend(x for x, _c in pairs)
        out.totals[d] = tot

        n_ref = tot["n_reference"]
        if budget is None:
            budgets = [brute.default_budget(n_ref[p], [tot["emitted"][m, p, 0] for m in range(M)]) for p in range(2)]
        else:
            budgets = [int(budget)] * 2

        def rates(m, p, t):  # called within this iteration only
            e, mt, du = (int(tot["emitted"][m, p, t]), int(tot["matched"][m, p, t]),  # noqa: B023
                         int(tot["duplicates"][m, p, t]))  # noqa: B023
            n = int(n_ref[p])  # noqa: B023
            return dict(recall=brute.recall(mt, n), precision_lb=brute.precision_lb(mt, e, n),
                        f1_lb=brute.f1_lb(mt, n, e), extra_rate=brute.extra_rate(e, mt, n),
                        duplicate_rate=brute.duplicate_rate(du, mt))

        for pi, ph in enumerate(PHASES):
            for m, model in enumerate(models):
                n = int(n_ref[pi])
                r_all = [rates(m, pi, t) for t in range(T)]
                best = brute.best_threshold(grid, [x["f1_lb"] for x in r_all], [x["recall"] for x in r_all],
                                            [x["precision_lb"] for x in r_all])
                rab = brute.recall_at_budget(tot["fine_emitted"][m, pi], tot["fine_matched"][m, pi], n, budgets[pi])
                ap = brute.average_precision(tot["fine_emitted"][m, pi], tot["fine_matched"][m, pi], n)
                rs = r_all[ti]
                rows["detection"].append([
                    d, ph, model, n, int(tot["emitted"][m, pi, ti]), int(tot["matched"][m, pi, ti]),
                    rs["recall"], rs["precision_lb"], rs["f1_lb"], rs["extra_rate"], rs["duplicate_rate"],
                    rab, budgets[pi], best[0],
                    brute.best_on_edge(grid, best[0], lowest.get((m, pi), math.inf)), best[1], best[2], ap,
                ])
                tstats = [brute.timing_stats(residuals[(m, pi, t)], tol) for t in range(T)]
                rows["timing"].append([d, ph, model, *[tstats[ti][k] for k in (*TIMING, *brute.QUANTILE_NAMES)]])
                cn, cc, ch = tot["cal_n"][m, pi], tot["cal_conf"][m, pi], tot["cal_hits"][m, pi]
                N = int(cn.sum())
                rows["calibration"].append([d, ph, model, N, brute.ece(cn, cc, ch, n_reference=n),
                                            brute.brier(tot["brier_sum"][m, pi], N, n_reference=n)])
                nb, mc, ob = brute.reliability(cn, cc, ch, n_reference=n)
                for b in range(10):
                    rows["reliability"].append([d, ph, model, b, nb[b], mc[b], ob[b]])
                if with_sweep:
                    for t in range(T):
                        e, mt = int(tot["emitted"][m, pi, t]), int(tot["matched"][m, pi, t])
                        rows["sweep"].append([
                            d, ph, model, grid[t], n, e, mt, e - mt, int(tot["duplicates"][m, pi, t]),
                            int(tot["swapped"][m, pi, t]), *[r_all[t][k] for k in
                                                             ("recall", "precision_lb", "f1_lb", "extra_rate",
                                                              "duplicate_rate")],
                            *[tstats[t][k] for k in TIMING],
                        ])
        for m, model in enumerate(models):
            sw = tot["swapped"][m, :, ti]
            du = int(tot["duplicates"][m, :, ti].sum())
            mt = int(tot["matched"][m, :, ti].sum())
            rows["phase_quality"].append([
                d, model, int(n_ref[0]), int(sw[0]), int(n_ref[1]), int(sw[1]),
                brute.swap_rate(int(sw[0]), int(sw[1]), int(n_ref[0]), int(n_ref[1])), brute.duplicate_rate(du, mt),
            ])

    columns = dict(detection=DETECTION_COLUMNS, timing=TIMING_COLUMNS, calibration=CALIBRATION_COLUMNS,
                   reliability=RELIABILITY_COLUMNS, phase_quality=PHASE_QUALITY_COLUMNS, sweep=SWEEP_COLUMNS)
    for name in TABLE_NAMES:
        frame = pd.DataFrame(rows[name], columns=columns[name])
        frame = _sort_rows(frame, _keys(name))
        for c in frame.columns:
            if c in ("dataset", "phase", "model"):
                frame[c] = frame[c].astype(object)
            elif c in ("n_reference", "emitted", "matched", "matched_budget", "n_pairs", "n_picks", "bin",
                       "P_n_reference", "P_matched_as_S", "S_n_reference", "S_matched_as_P", "extra", "duplicates",
                       "swapped"):
                frame[c] = frame[c].astype(np.int64)
            elif c == "best_on_edge":
                frame[c] = frame[c].astype(bool)
            else:
                frame[c] = frame[c].astype(np.float64)
        out.tables[name] = frame
    return out


def _keys(name: str) -> list[str]:
    return {"reliability": ["dataset", "phase", "model", "bin"], "phase_quality": ["dataset", "model"],
            "sweep": ["dataset", "phase", "model", "threshold"]}.get(name, ["dataset", "phase", "model"])


def _sort_rows(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    # Strings in code-point order (Python's str comparison), numbers ascending.
    order = sorted(range(len(frame)), key=lambda i: tuple(frame[k].iat[i] for k in keys))
    return frame.iloc[order].reset_index(drop=True)


# --------------------------------------------------------------------------- comparisons

def assert_tables_equal(got: dict, exp: dict, names=TABLE_NAMES, *, rtol: float = 1e-12) -> None:
    """Every column of every table: integers exactly, floats to rtol with NaN in the same places."""
    for name in names:
        g, e = got[name], exp[name]
        assert list(g.columns) == list(e.columns), (name, list(g.columns))
        assert len(g) == len(e), (name, len(g), len(e))
        keys = _keys(name)
        for c in e.columns:
            gv, ev = g[c].to_numpy(), e[c].to_numpy()
            where = f"{name}.{c}"
            if e[c].dtype == object:
                assert all(type(v) is str for v in gv), where
                same = gv.tolist() == ev.tolist()
                if not same:
                    bad = [i for i, (x, y) in enumerate(zip(gv, ev)) if x != y][:5]
                    raise AssertionError(f"{where} differs at rows {bad}: got {gv[bad].tolist()}, "
                                         f"expected {ev[bad].tolist()}")
            elif e[c].dtype.kind == "b":  # flags (best_on_edge, SPEC §7): exactly
                assert g[c].dtype.kind == "b", (where, g[c].dtype)
                if not np.array_equal(gv, ev):
                    bad = np.flatnonzero(gv != ev)[:5]
                    raise AssertionError(f"{where} differs at rows {bad.tolist()}: got {gv[bad].tolist()}, "
                                         f"expected {ev[bad].tolist()}; keys {e.loc[bad, keys].values.tolist()}")
            elif e[c].dtype.kind == "i":
                assert g[c].dtype.kind in "iu", (where, g[c].dtype)
                if not np.array_equal(gv, ev):
                    bad = np.flatnonzero(gv != ev)[:5]
                    raise AssertionError(f"{where} differs at rows {bad.tolist()}: got {gv[bad].tolist()}, "
                                         f"expected {ev[bad].tolist()}; keys {e.loc[bad, keys].values.tolist()}")
            else:
                assert g[c].dtype.kind == "f", (where, g[c].dtype)
                gn, en = np.isnan(gv), np.isnan(ev)
                if not np.array_equal(gn, en):
                    bad = np.flatnonzero(gn != en)[:5]
                    raise AssertionError(f"{where}: NaN positions differ at rows {bad.tolist()}: got "
                                         f"{gv[bad].tolist()}, expected {ev[bad].tolist()}; keys "
                                         f"{e.loc[bad, keys].values.tolist()}")
                if c in keys:
                    assert np.array_equal(gv, ev), where
                else:
                    try:
                        np.testing.assert_allclose(gv, ev, rtol=rtol, atol=0, equal_nan=True)
                    except AssertionError as exc:
                        ok = np.isclose(gv, ev, rtol=rtol, atol=0, equal_nan=True)
                        bad = np.flatnonzero(~ok)[:5]
                        raise AssertionError(f"{where}: keys {e.loc[bad, keys].values.tolist()} got "
                                             f"{gv[bad].tolist()} expected {ev[bad].tolist()}\n{exc}") from None


def assert_store_matches(ds, exp: Expected, *, rtol: float = 1e-12) -> None:
    """The store's coordinates, coverage, per-station counts, fine curves and pairs against brute force."""
    scope = exp.scope
    datasets = sorted(scope.stations)
    models = sorted({m for ms in scope.models.values() for m in ms})
    stations = sorted({s for ss in scope.stations.values() for s in ss})
    assert ds["dataset"].values.tolist() == datasets
    assert ds["model"].values.tolist() == models
    assert ds["station"].values.tolist() == stations
    assert ds["phase"].values.tolist() == list(PHASES)
    assert ds["threshold"].values.tolist() == exp.grid
    assert ds["bin"].values.tolist() == list(range(10))
    np.testing.assert_array_equal(ds["fine_threshold"].values, np.array(exp.fine))

    nd, nm, ns, nt, nf = len(datasets), len(models), len(stations), len(exp.grid), len(exp.fine)
    want = {
        "n_reference": np.zeros((nd, 2, ns), np.int64),
        "model_present": np.zeros((nd, nm), bool),
        "station_scored": np.zeros((nd, ns), bool),
        "fine_emitted": np.zeros((nd, nm, 2, nf), np.int64),
        "fine_matched": np.zeros((nd, nm, 2, nf), np.int64),
        "cal_conf": np.zeros((nd, nm, 2, 10, ns), np.float64),
        "brier_sum": np.zeros((nd, nm, 2, ns), np.float64),
    }
    for k in ("emitted", "matched", "duplicates", "swapped"):
        want[k] = np.zeros((nd, nm, 2, nt, ns), np.int64)
    for k in ("cal_n", "cal_hits"):
        want[k] = np.zeros((nd, nm, 2, 10, ns), np.int64)
    pairs = []
    for di, d in enumerate(datasets):
        mi = [models.index(m) for m in scope.models[d]]
        want["model_present"][di, mi] = True
        want["fine_emitted"][di, mi] = exp.totals[d]["fine_emitted"]
        want["fine_matched"][di, mi] = exp.totals[d]["fine_matched"]
        for st in scope.stations[d]:
            si = stations.index(st)
            res = exp.stations[(d, st)]
            want["station_scored"][di, si] = True
            want["n_reference"][di, :, si] = res.n_reference
            for k in ("emitted", "matched", "duplicates", "swapped", "cal_n", "cal_hits", "cal_conf", "brier_sum"):
                want[k][(di, mi, Ellipsis, si)] = getattr(res, k)
            for m, p, r_ns, c in res.floor_pairs:
                pairs.append((di, mi[m], p, si, r_ns, c))
    for name, w in want.items():
        got = ds[name].transpose(*_dims(name)).values
        assert got.dtype.kind == w.dtype.kind, (name, got.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(got, w, rtol=rtol, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got, w, err_msg=name)
    pairs.sort()
    arr = np.array(pairs, dtype=object).reshape(-1, 6)
    for j, name in enumerate(("pair_dataset", "pair_model", "pair_phase", "pair_station")):
        np.testing.assert_array_equal(ds[name].values.astype(np.int64), arr[:, j].astype(np.int64), err_msg=name)
    np.testing.assert_array_equal(ds["residual"].values, arr[:, 4].astype(np.int64) / 1e9)
    np.testing.assert_array_equal(ds["pair_conf"].values, arr[:, 5].astype(np.float64))


def _dims(name: str) -> tuple[str, ...]:
    return {
        "n_reference": ("dataset", "phase", "station"),
        "model_present": ("dataset", "model"),
        "station_scored": ("dataset", "station"),
        "fine_emitted": ("dataset", "model", "phase", "fine_threshold"),
        "fine_matched": ("dataset", "model", "phase", "fine_threshold"),
        "brier_sum": ("dataset", "model", "phase", "station"),
        "cal_n": ("dataset", "model", "phase", "bin", "station"),
        "cal_hits": ("dataset", "model", "phase", "bin", "station"),
        "cal_conf": ("dataset", "model", "phase", "bin", "station"),
    }.get(name, ("dataset", "model", "phase", "threshold", "station"))


def first_difference(a: bytes, b: bytes) -> str:
    """Where two CSV byte strings first differ (a short message; pytest's own diff of big bytes is very slow)."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}:\n  got      {x[:300]!r}\n  expected {y[:300]!r}"
    return f"{len(la)} lines vs {len(lb)} lines"


def assert_same_csv(got: dict[str, bytes], want: dict[str, bytes]) -> None:
    """Byte-identical tables, reported table by table with the first differing line."""
    same_names = sorted(got) == sorted(want)
    assert same_names, (sorted(got), sorted(want))
    for name in want:
        same = got[name] == want[name]
        assert same, f"{name}.csv differs at {first_difference(got[name], want[name])}"


def csv_bytes(frames: dict) -> dict[str, bytes]:
    from pickscale.report.tables import to_csv_bytes

    return {name: to_csv_bytes(frames[name]) for name in TABLE_NAMES}


# Attributes that name the inputs or the time of the run, not the results.
_RUN_ATTRS = ("created", "inputs", "warnings")


def assert_same_results(a, b, *, attrs: bool = True, ranked: bool = True) -> None:
    """Bit-identical results: every variable and coordinate (dtype, values, float bytes), and attrs; not
    ``ranked``: but for the ranked runs of the pairs (SPEC §9: cut as their streams were)."""
    assert sorted(a.variables) == sorted(b.variables)
    for name in a.variables:
        if not ranked and (str(name).startswith("ranked_") or name == "pair_runs"):
            continue
        va, vb = a[name].variable, b[name].variable
        assert va.dims == vb.dims, name
        xa, xb = np.asarray(va.values), np.asarray(vb.values)
        assert xa.dtype == xb.dtype, (name, xa.dtype, xb.dtype)
        assert xa.shape == xb.shape, name
        if xa.dtype.kind == "f":
            assert xa.tobytes() == xb.tobytes(), f"{name}: float bits differ"
        elif xa.dtype.kind in "OT":  # text: compare values (object or StringDType)
            same = xa.tolist() == xb.tolist()
            assert same, f"{name}: values differ"
            assert all(type(v) is str for v in xa.ravel()), name
        else:
            same = bool(np.array_equal(xa, xb))
            assert same, f"{name}: values differ"
    if attrs:
        skip = _RUN_ATTRS if ranked else (*_RUN_ATTRS, "pair_runs")
        ka = {k: v for k, v in a.attrs.items() if k not in skip}
        kb = {k: v for k, v in b.attrs.items() if k not in skip}
        same = nan_equal_json(ka, kb)
        assert same, {k: (ka.get(k), kb.get(k)) for k in set(ka) | set(kb) if ka.get(k) != kb.get(k)}


def nan_equal_json(a, b) -> bool:
    """Equality of JSON-like values where NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(nan_equal_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(nan_equal_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- CLI

def cli_flags(command: str, *flags: str) -> list[str]:
    """Those of ``flags`` that ``pickscale <command>`` accepts (e.g. ``--no-figures``, to keep runs fast
    where figures are not what is tested)."""
    import argparse

    from pickscale.cli import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    known = {o for a in sub.choices[command]._actions for o in a.option_strings}
    return [f for f in flags if f in known]


# --------------------------------------------------------------------------- cluster

def start_cluster(n_workers: int = 2):
    """A LocalCluster of worker processes and a Client that is *not* made the default client.

    (A default client would silently turn every ``pickscale.score(...)`` of the other
    tests into a cluster run.)
    """
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=":0", silence_logs=40)
    client = Client(cluster, set_as_default=False)
    return cluster, client


def no_default_client() -> bool:
    from pickscale.engine.graph import scheduler as _scheduler

    return _scheduler(None) is None
