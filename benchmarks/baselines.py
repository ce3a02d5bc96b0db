"""Baselines the scale benchmark compares pickscale with, on the same Parquet files.

* ``floor`` — the least any scorer must do: read the picks' six SPEC §1
  columns from Parquet (pyarrow, all cores) and sort them once by (station,
  phase, time).  Nothing is matched.
* ``merge_asof`` — what a user writes instead: for each model and each of
  the 48 grid thresholds (SPEC §2 default grid, 0.3 included), keep picks with
  ``conf >= θ`` and, per phase, ``pd.merge_asof(arrivals, picks, by="station",
  direction="nearest", tolerance=tol)``; recall = arrivals that found a pick.
  Recall only: no precision, duplicates, swaps, residual statistics or
  calibration.  **Not one-to-one**: one pick may serve two arrivals, so this
  recall is an upper bound on SPEC §3's (the run prints both at 0.3 when a
  pickscale ``detection.csv`` is given).
* ``seed`` — the per-threshold re-matching loop of the seed document (§2
  there): per (dataset, phase, model), per threshold, per station, take that
  station's reference arrivals and the surviving picks as sorted Python lists
  and match them in Python (here: SPEC §3's greedy walk, confidence order,
  nearest free arrival within ``tol``); emitted and matched per threshold.
  Too slow for big inputs: ``--stations-fraction`` runs it on every k-th
  station and extrapolates linearly in picks.

Each prints one JSON object (timings in seconds).  Run as
``python benchmarks/baselines.py floor|merge_asof|seed --picks P [--reference R]``;
``benchmarks/scale.py`` runs each in its own process so that its peak memory
is measured alone.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads

PICK_COLUMNS = ["dataset", "model", "station", "phase", "time", "conf"]
REF_COLUMNS = ["dataset", "station", "phase", "time"]
TOL = 0.5
SHARED = 0.3


def default_grid() -> list[float]:
    grid = sorted({round(0.02 * k, 3) for k in range(1, 48)} | {SHARED})
    return grid


def _dataset(path: str) -> pads.Dataset:
    # The hive layout keeps ``station`` inside the files as well: no partitioning needed.
    return pads.dataset(path, format="parquet")


def read_table(path: str, columns: list[str]) -> pa.Table:
    return _dataset(path).to_table(columns=columns, use_threads=True)


def read_frame(path: str, columns: list[str]) -> pd.DataFrame:
    """What a user does: the whole table into pandas (strings as Python/pyarrow strings)."""
    return read_table(path, columns).to_pandas()


# ------------------------------------------------------------------- floor

def floor(picks: str) -> dict:
    t0 = time.perf_counter()
    # Text columns read straight as dictionaries (codes + a small list of names), as a careful reader would.
    fmt = pads.ParquetFileFormat(read_options=pads.ParquetReadOptions(dictionary_columns=["dataset", "model", "station", "phase"]))
    table = pads.dataset(picks, format=fmt).to_table(columns=PICK_COLUMNS, use_threads=True).combine_chunks()
    t1 = time.perf_counter()
    # Sort keys as integers: station and phase codes ranked in code-point order of their names, time in ns.
    table = table.unify_dictionaries().combine_chunks()

    def ranked_codes(name: str) -> np.ndarray:
        col = table.column(name).chunk(0) if table.column(name).num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
        names = col.dictionary.to_numpy(zero_copy_only=False)
        rank = np.argsort(np.argsort(names, kind="stable"), kind="stable")
        return rank[col.indices.to_numpy()]

    t_ns = table.column("time").combine_chunks().cast(pa.int64()).to_numpy()
    order = np.lexsort((t_ns, ranked_codes("phase"), ranked_codes("station")))
    sorted_table = table.take(pa.array(order))
    t2 = time.perf_counter()
    return {"name": "floor", "n_picks": table.num_rows, "read_s": t1 - t0, "sort_s": t2 - t1,
            "total_s": t2 - t0, "check": int(sorted_table.num_rows)}


# -------------------------------------------------------------- merge_asof

def merge_asof_recall(reference: str, picks: str, *, tol: float = TOL, detection_csv: str | None = None) -> dict:
    t0 = time.perf_counter()
    ref = read_frame(reference, REF_COLUMNS)
    pk = read_frame(picks, PICK_COLUMNS)
    t1 = time.perf_counter()
    grid = default_grid()
    tolerance = pd.Timedelta(seconds=tol)
    recall: dict[str, float] = {}
    n_merges = 0
    for dataset, ref_d in ref.groupby("dataset", sort=True):
        pk_d = pk[pk["dataset"] == dataset]
        arrivals = {ph: ref_d[ref_d["phase"] == ph].sort_values("time")[["station", "time"]]
                    for ph in ("P", "S")}
        for model, pm in pk_d.groupby("model", sort=True):
            by_phase = {ph: pm[pm["phase"] == ph].sort_values("time")[["station", "time", "conf"]]
                        .rename(columns={"time": "pick_time"}) for ph in ("P", "S")}
            for thr in grid:
                for ph in ("P", "S"):
                    cand = by_phase[ph]
                    cand = cand[cand["conf"] >= thr]
                    merged = pd.merge_asof(arrivals[ph], cand, left_on="time", right_on="pick_time",
                                           by="station", direction="nearest", tolerance=tolerance)
                    n_merges += 1
                    n_ref = len(merged)
                    recall[f"{dataset}|{model}|{ph}|{thr}"] = float(merged["pick_time"].notna().sum() / n_ref) if n_ref else float("nan")
    t2 = time.perf_counter()
    out = {"name": "merge_asof", "n_picks": len(pk), "read_s": t1 - t0, "loop_s": t2 - t1, "total_s": t2 - t0,
           "merges": n_merges, "thresholds": len(grid)}
    if detection_csv and Path(detection_csv).exists():
        # merge_asof is not one-to-one: its recall is at least SPEC §3's.
        det = pd.read_csv(detection_csv)
        diffs = []
        for _, row in det.iterrows():
            key = f"{row['dataset']}|{row['model']}|{row['phase']}|{SHARED}"
            if key in recall:
                diffs.append(recall[key] - row["recall"])
        if diffs:
            out["recall_excess_vs_pickscale_at_0.3"] = {"min": float(min(diffs)), "max": float(max(diffs))}
    return out


# --------------------------------------------------------------------- seed

def greedy_match_py(arrivals: list[float], times: list[float], confs: list[float], tol: float) -> int:
    """Pure-Python SPEC §3 walk over sorted lists; returns the number of pairs.

    Picks in confidence order (conf descending, time ascending); each takes the
    nearest arrival within ``tol`` that is still free (the earlier one at equal
    distance).
    """
    taken = [False] * len(arrivals)
    order = sorted(range(len(times)), key=lambda j: (-confs[j], times[j]))
    n = len(arrivals)
    pairs = 0
    for j in order:
        t = times[j]
        k = bisect.bisect_left(arrivals, t - tol)
        best, best_d = -1, tol
        while k < n and arrivals[k] <= t + tol:
            if not taken[k]:
                d = abs(t - arrivals[k])
                if d < best_d or (best < 0 and d <= best_d):
                    best, best_d = k, d
            k += 1
        if best >= 0:
            taken[best] = True
            pairs += 1
    return pairs


def seed_loop(reference: str, picks: str, *, tol: float = TOL, stations_fraction: float = 1.0,
              sweep_csv: str | None = None) -> dict:
    t0 = time.perf_counter()
    ref = read_frame(reference, REF_COLUMNS)
    pk = read_frame(picks, PICK_COLUMNS)
    n_all = len(pk)
    if stations_fraction < 1.0:
        names = np.sort(pk["station"].unique())
        step = max(1, int(round(1 / stations_fraction)))
        keep = set(names[::step])
        pk = pk[pk["station"].isin(keep)]
        ref = ref[ref["station"].isin(keep)]
    t1 = time.perf_counter()
    grid = default_grid()
    rows = []
    for (dataset, phase, model), g in pk.groupby(["dataset", "phase", "model"], sort=True):
        r_dp = ref[(ref["dataset"] == dataset) & (ref["phase"] == phase)]
        for thr in grid:
            keep_t = g[g["conf"] >= thr]
            tp = 0
            for sta, gs in keep_t.groupby("station"):
                rr = sorted(r_dp[r_dp["station"] == sta]["time"].astype("int64") / 1e9)
                gs = gs.sort_values("time")
                tt = list(gs["time"].astype("int64") / 1e9)
                cc = list(gs["conf"].astype(float))
                tp += greedy_match_py(rr, tt, cc, tol)
            rows.append((dataset, phase, model, thr, len(keep_t), tp))
    t2 = time.perf_counter()
    scale = n_all / max(len(pk), 1)
    out = {"name": "seed", "n_picks": n_all, "n_picks_run": len(pk), "stations_fraction": stations_fraction,
           "read_s": t1 - t0, "loop_s": t2 - t1, "total_s": t2 - t0,
           "loop_s_extrapolated_to_all": (t2 - t1) * scale, "rows": len(rows)}
    if sweep_csv and stations_fraction >= 1.0 and Path(sweep_csv).exists():
        # Same walk, same answer: emitted and matched equal pickscale's sweep.csv (float seconds vs
        # integer ns can differ only for a pick exactly at the tolerance).
        sw = pd.read_csv(sweep_csv).set_index(["dataset", "phase", "model", "threshold"])
        same = sum(1 for d, ph, m, thr, e, tp in rows
                   if (d, ph, m, thr) in sw.index and int(sw.loc[(d, ph, m, thr), "emitted"]) == e
                   and int(sw.loc[(d, ph, m, thr), "matched"]) == tp)
        out["rows_equal_to_pickscale_sweep"] = f"{same}/{len(rows)}"
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", choices=("floor", "merge_asof", "seed"))
    ap.add_argument("--picks", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--stations-fraction", type=float, default=1.0)
    ap.add_argument("--detection-csv", help="pickscale's detection.csv, to compare recall at 0.3")
    ap.add_argument("--sweep-csv", help="pickscale's sweep.csv, to compare the seed loop's counts")
    a = ap.parse_args(argv)
    if a.which == "floor":
        out = floor(a.picks)
    elif a.which == "merge_asof":
        out = merge_asof_recall(a.reference, a.picks, tol=a.tol, detection_csv=a.detection_csv)
    else:
        out = seed_loop(a.reference, a.picks, tol=a.tol, stations_fraction=a.stations_fraction,
                        sweep_csv=a.sweep_csv)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
