"""The reference on the client (issue 10, item 2): read, combine, SPEC §2 scope, plan, encode.

The engine reads the reference in tasks and gathers it; everything after that
runs on the client, serially, while the workers wait.  This script times that
client-side path in one process, stage by stage, for a small and a large
bulletin against the *same* picks summary (so the difference is what the extra
arrivals cost):

    read       engine.parts.read_reference per engine batch (Parquet, text as dictionaries)
    gather     a pickle round trip of each batch's result (what moving it from a worker costs)
    combine    io.Normalised.combine of the batches
    scope      scope.scope_from_summary (dedupe, summaries, SPEC §2 decisions, masks)
    plan       engine.units.plan_units (busy stations cut at quiet gaps of their arrivals)
    encode     UnitPlan.encode_reference

The synthetic bulletin: 2 datasets, 2,000 stations (``XX.S0001`` …, a few
non-ASCII), 365 days, P/Pg/Pn/S/Sg/Sn plus ~1 % PKP (dropped), ~0.5 % exact
duplicates, written as 4 Parquet files (``time`` timestamp[ns, UTC]).  The
picks summary (3 models) covers 95 % of the stations, adds 200 pick-only
stations, and its spans leave ~1 % of the arrivals outside; per-station pick
counts are log-normal (10 M picks in all), so that with ``--block-picks``
(default 100,000) some stations are cut into blocks.

Usage: ``python benchmarks/reference.py [--sizes 1e5,8e5] [--repeat 3] [--write]``.
"""

from __future__ import annotations

import argparse
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

# ``--code DIR``: import pickscale from DIR (e.g. ``git archive <commit> pickscale | tar -x -C DIR``), to time
# an earlier version in the same conditions.
_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, _CODE)

N_STATIONS = 2_000
DATASETS = ("Ñuble", "synth")
MODELS = ("eqtransformer", "gpd", "phasenet")
DAYS = 365
START_NS = int(np.datetime64("2024-01-01T00:00:00", "ns").astype(np.int64))
S = 10**9
N_PICKS = 10_000_000
FILES = 4


def station_names() -> np.ndarray:
    names = np.array([f"XX.S{i:04d}" for i in range(N_STATIONS)], dtype=object)
    names[::97] = [f"CH.Z{i:03d}Ü" for i in range(len(names[::97]))]  # non-ASCII: code-point order
    return names


def write_reference(folder: Path, n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    names = station_names()
    st = rng.integers(0, N_STATIONS, n)
    ds = (st % len(DATASETS)).astype(np.int32)
    t = START_NS + (rng.random(n) * DAYS * 86_400 * 100).astype(np.int64) * (S // 100)
    phases = np.array(["P", "Pg", "Pn", "S", "Sg", "Sn", "PKP"], dtype=object)
    ph = rng.choice(len(phases), n, p=[0.3, 0.15, 0.05, 0.3, 0.14, 0.05, 0.01])
    dup = rng.random(n) < 0.005  # exact copies of the row before
    idx = np.arange(n)
    idx[1:][dup[1:]] = idx[:-1][dup[1:]]
    st, ds, t, ph = st[idx], ds[idx], t[idx], ph[idx]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f, rows in enumerate(np.array_split(np.arange(n), FILES)):
        table = pa.table({
            "dataset": pa.DictionaryArray.from_arrays(pa.array(ds[rows]), pa.array(list(DATASETS))),
            "station": pa.DictionaryArray.from_arrays(pa.array(st[rows].astype(np.int32)), pa.array(list(names))),
            "phase": pa.DictionaryArray.from_arrays(pa.array(ph[rows].astype(np.int32)), pa.array(list(phases))),
            "time": pa.array(t[rows], pa.timestamp("ns", tz="UTC")),
            "event": pa.array(rng.integers(0, 10**6, rows.size)),
        })
        path = folder / f"part-{f:05d}.parquet"
        pq.write_table(table, path)
        paths.append(str(path))
    return paths


def pick_summary(seed: int = 1) -> pd.DataFrame:
    """Per (dataset, station, model): n_picks, t_min, t_max; 95 % of the stations plus 200 pick-only ones."""
    rng = np.random.default_rng(seed)
    names = station_names()
    picked = np.flatnonzero(rng.random(N_STATIONS) < 0.95)
    extra = np.array([f"YY.P{i:03d}" for i in range(200)], dtype=object)
    st = np.concatenate([names[picked], extra])
    dsi = np.concatenate([picked % len(DATASETS), np.arange(200) % len(DATASETS)])
    w = rng.lognormal(0, 1.5, st.size)
    per_station = np.maximum(1, (w / w.sum() * N_PICKS)).astype(np.int64)
    rows = []
    span = DAYS * 86_400 * S
    for m in MODELS:
        lo = START_NS + (0.005 * span * rng.random(st.size)).astype(np.int64)
        hi = START_NS + span - (0.005 * span * rng.random(st.size)).astype(np.int64)
        rows.append(pd.DataFrame({"dataset": np.array(DATASETS, dtype=object)[dsi], "station": st, "model": m,
                                  "n_picks": per_station // len(MODELS), "t_min": lo, "t_max": hi}))
    out = pd.concat(rows, ignore_index=True).sort_values(["dataset", "station", "model"], ignore_index=True)
    return out.astype({"dataset": object, "station": object, "model": object,
                       "n_picks": np.int64, "t_min": np.int64, "t_max": np.int64})


def run_once(paths: list[str], summary: pd.DataFrame, block_picks: int) -> tuple[dict[str, float], object]:
    try:
        from pickscale.engine.inputs import _batches  # the engine's batching of small files into one read task
    except ImportError:
        def _batches(files):
            return [files]
    from pickscale.engine.parts import read_reference
    from pickscale.engine.units import plan_units
    from pickscale.io import Normalised
    from pickscale.options import Options
    from pickscale.scope import scope_from_summary

    options = Options()
    below = {d: 1000 for d in DATASETS}
    times: dict[str, float] = {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    parts = [read_reference(batch, drop_invalid=False) for batch in _batches(paths)]
    tg = time.perf_counter()
    parts = [pickle.loads(pickle.dumps(p, protocol=5)) for p in parts]  # what gathering from a worker costs
    t1 = time.perf_counter()
    ref_all = Normalised.combine(parts)
    t2 = time.perf_counter()
    scope = scope_from_summary(ref_all.frame, summary, below_by_ds=below, floor=options.floor,
                               residual_tol_ns=options.residual_tol_ns, ref_source="reference",
                               picks_source="picks")
    t3 = time.perf_counter()
    plan = plan_units(scope, options, block_picks=block_picks, n_workers=2)
    t4 = time.perf_counter()
    codes = plan.encode_reference(scope.reference)
    t5 = time.perf_counter()
    times.update(read=tg - t0, gather=t1 - tg, combine=t2 - t1, scope=t3 - t2, plan=t4 - t3, encode=t5 - t4,
                 total=t5 - t0, cpu=time.process_time() - c0)
    return times, (scope, plan, codes)


def fingerprint(result) -> str:
    """A digest of everything the path produced (to compare before/after)."""
    import hashlib

    scope, plan, codes = result
    h = hashlib.sha1()
    h.update(repr((scope.models, scope.stations, scope.spans, scope.exclusions, scope.exclusions_by_dataset,
                   scope.warnings)).encode())
    ref = scope.reference
    for c in ("dataset", "station", "phase"):
        h.update("\x00".join(ref[c].astype(object).tolist()).encode())
    h.update(ref["time"].to_numpy(np.int64).tobytes())
    h.update(repr(sorted((k, v.tolist()) for k, v in plan.cuts.items())).encode())
    h.update(plan.unit_part.tobytes())
    for c in codes.columns:
        h.update(codes[c].to_numpy().tobytes())
    return h.hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e5,8e5")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--block-picks", type=int, default=100_000)
    ap.add_argument("--code", default=None, help="import pickscale from this folder instead of the repository")
    ap.add_argument("--label", default="", help="e.g. 'before' or 'after' (shown in the output)")
    ap.add_argument("--write", action="store_true", help="record the numbers in benchmarks/README.md")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    summary = pick_summary()
    best: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            paths = write_reference(Path(tmp) / f"ref-{n}", n)
            runs = []
            for _ in range(args.repeat):
                times, result = run_once(paths, summary, args.block_picks)
                runs.append(times)
            best[n] = {k: min(r[k] for r in runs) for k in runs[0]}
            scope = result[0]
            print(f"{n:>9,} arrivals ({len(scope.reference):,} scored, {sum(map(len, scope.stations.values())):,} "
                  f"stations, {len(result[1].cuts)} cut): "
                  + ", ".join(f"{k} {v:.3f}" for k, v in best[n].items())
                  + f" s (best of {args.repeat}); result {fingerprint(result)}")
    stages = ("read", "gather", "combine", "scope", "plan", "encode", "total", "cpu")
    lines = ["| arrivals | " + " | ".join(f"{k} s" for k in stages) + " |", "|---" * (len(stages) + 1) + "|"]
    for n, b in best.items():
        lines.append(f"| {n:,} | " + " | ".join(f"{b[k]:.3f}" for k in stages) + " |")
    if len(sizes) == 2:
        a, b = sizes
        extra = best[b]["total"] - best[a]["total"]
        lines.append("")
        extra_cpu = best[b]["cpu"] - best[a]["cpu"]
        lines.append(f"Extra {b - a:,} arrivals: {extra:.3f} s ({extra / (b - a) * 1e6:.2f} µs per arrival; "
                     f"CPU {extra_cpu:.3f} s); target < 0.5 s.")
    body = "\n".join(lines)
    print(body)
    if args.write:
        from record import write_block

        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
        meta = (f"\n\n{args.label + ': ' if args.label else ''}best of {args.repeat}; {platform.machine()}, "
                f"numpy {np.__version__}, pandas {pd.__version__}; pickscale at {commit} (+ working tree).")
        write_block("<!-- reference -->", body + meta,
                    heading="Reference on the client: last recorded run")


if __name__ == "__main__":
    main()
