"""Extending a store by a later stretch of time against scoring that stretch alone (issue 22, item 3).

1. generate a catalogue of ``--months`` months (``benchmarks/catalogue.py``, 3 models, cached under
   ``benchmarks/data/``) and cut it at ``--store-months``: a quiet gap of ``--gap`` seconds is cleared
   around the cut (arrivals and picks dropped there), as SPEC §11 asks of a catalogue cut in time;
2. score the first part into a store (not timed); then, side by side in one run, ``--repeat`` times:
   **extend** a fresh copy of that store by the second part (``pickscale extend --no-figures``) and
   **score** the second part alone (``pickscale score --no-figures``), each in its own process group;
3. score the whole catalogue once and check that the extended store's tables equal it, byte for byte.

The ratio is the median extend time over the median time of scoring the new part alone (the issue's
target: at most 1.2×, 6 months onto a 30-month store).  Client peak (``VmHWM`` of the command's process)
is recorded beside it.

Run: ``python benchmarks/extend.py [--stations 1000 --months 36 --store-months 30] [--write]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import catalogue  # noqa: E402
from client_memory import code_of  # noqa: E402
from record import write_block  # noqa: E402
from scale import run_measured  # noqa: E402

MARK = "<!-- extend -->"
MARK_MODEL = "<!-- extend_model -->"
MB = 2**20
DAY_NS = 86_400 * 10**9
TABLES = ("detection", "timing", "calibration", "phase_quality", "sweep", "budgets")


def _split(cat: Path, out: Path, *, cut_ns: int, gap_ns: int, one_model: bool = False) -> dict[str, Path]:
    """``cat``'s reference and picks as three catalogues: before the cut, after it, and both (the gap cleared);
    ``one_model``: the picks after the cut of the first model alone."""
    parts = {name: out / name for name in ("first", "second", "whole")}
    for kind in ("reference", "picks"):
        table = pa.concat_tables([pq.read_table(p) for p in sorted((cat / kind).glob("*.parquet"))])
        t = pc.cast(table.column("time"), pa.timestamp("ns")).cast(pa.int64()).to_numpy()
        before, after = t < cut_ns - gap_ns, t >= cut_ns + gap_ns
        if one_model and kind == "picks":
            model = table.column("model").to_numpy(zero_copy_only=False).astype(str)
            after &= model == sorted(set(model.tolist()))[0]
        for name, keep in (("first", before), ("second", after), ("whole", before | after)):
            (parts[name] / kind).mkdir(parents=True, exist_ok=True)
            pq.write_table(table.filter(pa.array(keep)), parts[name] / kind / "part-00000.parquet")
    return parts


def _split_by_model(cat: Path, out: Path) -> dict[str, Path]:
    """``cat`` as three catalogues with the whole reference each: every model but the last (the store), the last
    model (an extension by a new model), and every model."""
    parts = {name: out / name for name in ("first", "second", "whole")}
    reference = pa.concat_tables([pq.read_table(p) for p in sorted((cat / "reference").glob("*.parquet"))])
    picks = pa.concat_tables([pq.read_table(p) for p in sorted((cat / "picks").glob("*.parquet"))])
    # Both sides must score the same arrivals (SPEC §11): none within an hour of either end of the picks, where
    # one side's scored span (its first and last pick, ± residual_tol) may end before the other's.
    t = pc.cast(picks.column("time"), pa.timestamp("ns")).cast(pa.int64()).to_numpy()
    a = pc.cast(reference.column("time"), pa.timestamp("ns")).cast(pa.int64()).to_numpy()
    hour = 3_600 * 10**9
    reference = reference.filter(pa.array((a >= t.min() + hour) & (a <= t.max() - hour)))
    model = picks.column("model").to_numpy(zero_copy_only=False).astype(str)
    last = sorted(set(model.tolist()))[-1]
    for name, keep in (("first", model != last), ("second", model == last), ("whole", model == model)):
        for kind, table in (("reference", reference), ("picks", picks.filter(pa.array(keep)))):
            (parts[name] / kind).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, parts[name] / kind / "part-00000.parquet")
    return parts


def _tables_sha(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in TABLES:
        path = folder / f"{name}.csv"
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _run(args: list[str], cwd: Path, code: Path | None, workers: int = 2) -> dict:
    """``pickscale ARGS`` with this tree's code, or (``code``) a commit's unpacked package on PYTHONPATH; on a
    cluster of ``workers`` (0: no ``--workers``, as a user runs it -- small inputs then run in the command's
    process)."""
    cmd = [sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main())", *args,
           "--no-figures", "--quiet", *(["--workers", str(workers)] if workers else [])]
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH", "")]))
    got = run_measured(cmd, timeout=3600, cwd=str(cwd), env=env)
    if got["returncode"] != 0:
        raise SystemExit(f"pickscale {' '.join(args)} failed:\n{got['stderr']}")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stations", type=int, default=1000)
    ap.add_argument("--months", type=int, default=36)
    ap.add_argument("--store-months", type=int, default=30)
    ap.add_argument("--arrival-rate", type=float, default=1.0, help="reference arrivals per station per day")
    ap.add_argument("--gap", type=float, default=30.0, help="seconds cleared either side of the cut")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2,
                    help="the timed commands' --workers (0: none given, as a user runs them; the store is built "
                         "on 2 either way)")
    ap.add_argument("--code", default=None, help="run this commit's package (git archive) or the package in this folder, "
                                                    "not the working tree")
    ap.add_argument("--split", choices=("time", "model", "time-one-model"), default="time",
                    help="extend by the last months (time), by the last model over the whole span (model), or by "
                         "the last months of the first model alone (time-one-model)")
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    a = ap.parse_args()
    days = round(a.months * 365.25 / 12)
    cat = HERE / "data" / f"extend-{a.stations}-{a.months}m-{a.arrival_rate:g}"
    manifest = catalogue.generate(cat, n_models=3, stations=a.stations, days=days, arrival_rate=a.arrival_rate,
                                  picks_per_arrival=1.5)
    first = pq.read_table(sorted((cat / "reference").glob("*.parquet"))[0], columns=["time"])
    t0 = int(np.min(pc.cast(first.column("time"), pa.timestamp("ns")).cast(pa.int64()).to_numpy()))
    start_ns = t0 - t0 % DAY_NS
    cut_ns = start_ns + round(a.store_months * 365.25 / 12) * DAY_NS
    work = Path(tempfile.mkdtemp(prefix="pickscale-extend-"))
    rows = []
    try:
        code = (Path(a.code) if a.code and Path(a.code).is_dir() else  # an unpacked package's folder
                code_of(a.code, work / "code") if a.code else None)
        parts = (_split_by_model(cat, work / "parts") if a.split == "model" else
                 _split(cat, work / "parts", cut_ns=cut_ns, gap_ns=int(a.gap * 1e9),
                        one_model=a.split == "time-one-model"))
        sizes = {name: {kind: pq.ParquetFile(p / kind / "part-00000.parquet").metadata.num_rows
                        for kind in ("reference", "picks")} for name, p in parts.items()}
        print(json.dumps({"catalogue": cat.name, "sizes": sizes}), flush=True)

        def inputs(name: str) -> list[str]:
            return ["--reference", str(parts[name] / "reference"), "--picks", str(parts[name] / "picks")]

        stored = work / "stored"
        built = _run(["score", *inputs("first"), "--out", str(stored)], work, code)
        print(json.dumps({"step": "store (first part)", "wall_s": built["wall_s"]}), flush=True)
        whole = work / "whole"
        _run(["score", *inputs("whole"), "--out", str(whole)], work, code)
        times: dict[str, list[dict]] = {"extend": [], "score new part alone": []}
        same = True
        for i in range(a.repeat):
            target = work / f"extended-{i}"
            shutil.copytree(stored, target)
            times["extend"].append(_run(["extend", *inputs("second"), str(target)], work, code, a.workers))
            same &= _tables_sha(target) == _tables_sha(whole)
            alone = work / f"alone-{i}"
            times["score new part alone"].append(_run(["score", *inputs("second"), "--out", str(alone)], work, code,
                                                      a.workers))
            for label, got in times.items():
                print(json.dumps({"step": label, "wall_s": got[-1]["wall_s"], "cpu_s": got[-1]["cpu_s"],
                                  "client_mb": got[-1]["peak_main_bytes"] / MB,
                                  "other_jobs_cpu": got[-1]["foreign_cpu"]}), flush=True)
        med = {label: statistics.median(g["wall_s"] for g in got) for label, got in times.items()}
        cpu = {label: statistics.median(g["cpu_s"] for g in got) for label, got in times.items()}
        ratio = med["extend"] / med["score new part alone"]
        cpu_ratio = cpu["extend"] / cpu["score new part alone"]
        # Each extend over the scoring run right after it: on a machine whose speed drifts between runs, the
        # pairs' ratios say more than the ratio of medians (both are recorded).
        paired = sorted(e["wall_s"] / s["wall_s"] for e, s in zip(times["extend"], times["score new part alone"]))
        for label, got in times.items():
            rows.append({"step": label, "wall_s": med[label], "cpu_s": cpu[label],
                         "client_mb": max(g["peak_main_bytes"] for g in got) / MB,
                         "worker_mb": max(g["peak_worker_bytes"] for g in got) / MB,
                         "foreign": max(g["foreign_cpu"] for g in got)})
        summary = {"stored_arrivals": sizes["first"]["reference"], "new_arrivals": sizes["second"]["reference"],
                   "new_picks": sizes["second"]["picks"], "ratio": ratio, "cpu_ratio": cpu_ratio,
                   "paired_ratios": paired,
                   "tables_equal_one_run": same, "n_reference_total": manifest["n_reference"]}
        print(json.dumps(summary), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.write:
        head = (f"{a.store_months}-month store ({summary['stored_arrivals']:,} arrivals, {a.stations:,} stations, "
                f"3 models) extended by {a.months - a.store_months} months ({summary['new_arrivals']:,} arrivals, "
                f"{summary['new_picks']:,} picks{', of one model' if a.split != 'time' else ''})"
                if a.split != "model" else
                f"{a.months}-month store of 2 models ({summary['stored_arrivals']:,} arrivals, {a.stations:,} "
                f"stations) extended by a third model over the same months ({summary['new_picks']:,} picks)")
        lines = [f"{head}; median of {a.repeat}, side by side:", "",
                 "| step | wall (s) | CPU (s, every process) | client peak (MB) | peak per worker (MB) | "
                 "other jobs' CPU (max) |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['step']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['client_mb']:,.0f} | "
                  f"{r['worker_mb']:,.0f} | {r['foreign']:.0%} |" for r in rows]
        lines += ["", f"Ratio extend / score the new part alone: **{ratio:.2f}×** wall, {cpu_ratio:.2f}× CPU (target "
                  f"≤ 1.2×); each extend over the scoring run beside it: "
                  f"{', '.join(f'{r:.2f}×' for r in summary['paired_ratios'])} (median "
                  f"{statistics.median(summary['paired_ratios']):.2f}×). Extended tables equal one run over the whole catalogue: {'yes' if same else 'NO'}."]
        if a.workers != 2:
            raise SystemExit("--write records runs on 2 workers only")
        if a.split != "model":  # (time-one-model is not recorded over the time split's block)
            if a.split != "time":
                raise SystemExit("--write records --split time and --split model only")
            write_block(MARK, "\n".join(lines), heading="Extending a store against scoring the new part alone (issue 22)")
        else:
            write_block(MARK_MODEL, "\n".join(lines), heading="Extending a store by a new model (issue 22)")


if __name__ == "__main__":
    main()
