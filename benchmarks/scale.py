"""Scale benchmark (issue 5): pickscale end to end against the floor and two baselines.

For each size (total picks, 3 models, default grid):

1. generate a realistic synthetic catalogue (``benchmarks/catalogue.py``;
   cached under ``benchmarks/data/`` by its parameters);
2. **floor**: read the picks Parquet and sort them once by (station, phase,
   time) (``baselines.py floor``);
3. **pickscale**: ``pickscale score --no-figures --quiet --workers N`` for
   each N in ``--workers`` (Parquet in; Zarr store and SPEC §8 tables out);
4. **merge_asof**: the pandas loop a user would write, recall only;
5. **seed**: the seed document's per-threshold re-matching loop in Python, on
   sizes up to ``--seed-max`` (on ``--seed-fraction`` of the stations), and
   extrapolated linearly in picks beyond.

Every step runs in its own process group; wall time is measured around it,
memory by sampling the process tree every 0.2 s (psutil, a dependency of
distributed) and reading each process's ``VmHWM`` (its true peak RSS, so
short spikes between samples are not missed) from ``/proc`` — Linux only.
"Per worker" is the largest peak of a Dask worker process (the
``multiprocessing`` children of the CLI); "total" is the largest sampled sum
of RSS over the whole tree (client, scheduler, nannies and workers; shared
pages counted in each process).  A step that runs past ``--timeout`` seconds
or whose worker passes ``--stop-worker-gb`` is stopped and recorded as such.

Run: ``python benchmarks/scale.py --sizes 1e6,1e7 [--write]``.  Results
accumulate (by size) in ``benchmarks/data/scale-results.json``; ``--write``
puts the table of all recorded sizes in ``benchmarks/README.md`` between the
``<!-- scale -->`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import catalogue  # noqa: E402
from record import write_block  # noqa: E402

PY = sys.executable
PICKSCALE = str(Path(PY).with_name("pickscale"))
GB = 1024 ** 3
MARK = "<!-- scale -->"


# ----------------------------------------------------------------- measure

def _hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _busy_cpu() -> float:
    c = psutil.cpu_times()
    return c.user + c.nice + c.system + getattr(c, "irq", 0) + getattr(c, "softirq", 0) + getattr(c, "steal", 0)


def _reaped_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_quiet(max_wait: float, threshold: float = 0.15) -> float:
    """Wait (up to max_wait s) until other jobs use under ``threshold`` of the cores; return the last load seen."""
    deadline = time.time() + max_wait
    while True:
        load = psutil.cpu_percent(interval=2.0) / 100.0
        if load < threshold or time.time() > deadline:
            return load
        print(f"  (waiting: the machine is {load:.0%} busy with other jobs)", flush=True)


def _role(proc: psutil.Process, root_pid: int) -> str:
    if proc.pid == root_pid:
        return "main"
    try:
        cmd = " ".join(proc.cmdline())
    except (psutil.Error, OSError):
        return "other"
    if "resource_tracker" in cmd or "forkserver" in cmd or "semaphore_tracker" in cmd:
        return "helper"
    if "spawn_main" in cmd or "multiprocessing-fork" in cmd:
        return "worker"
    return "other"


def run_measured(cmd: list[str], *, timeout: float, stop_worker_bytes: float = 0, cwd: str | None = None,
                 interval: float = 0.2, quiet_wait: float = 0, env: dict[str, str] | None = None) -> dict:
    """Run ``cmd``; return wall time, exit status, stdout, and peak memory (per role, per worker, total).

    With ``quiet_wait``, first wait (up to that many seconds) for other jobs to leave the cores alone.
    """
    if quiet_wait:
        wait_quiet(quiet_wait)
    busy0 = _busy_cpu()
    ru0 = _reaped_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, text=True, env=env,
                            start_new_session=True)
    cpu_seen: dict[int, float] = {}
    root = psutil.Process(proc.pid)
    peaks: dict[int, dict] = {}
    total_peak = 0
    stopped = None
    out_chunks: list[str] = []
    err_chunks: list[str] = []

    import threading

    def pump(stream, sink):
        for line in stream:
            sink.append(line)

    threads = [threading.Thread(target=pump, args=(proc.stdout, out_chunks), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err_chunks), daemon=True)]
    for t in threads:
        t.start()
    while proc.poll() is None:
        try:
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            procs = []
        total = 0
        for p in procs:
            try:
                rss = p.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            try:
                ct = p.cpu_times()
                cpu_seen[p.pid] = ct.user + ct.system
            except psutil.Error:
                pass
            info = peaks.get(p.pid)
            if info is None:
                info = peaks[p.pid] = {"role": _role(p, proc.pid), "peak": 0}
            info["peak"] = max(info["peak"], rss, _hwm(p.pid))
        total_peak = max(total_peak, total)
        elapsed = time.perf_counter() - t0
        worst_worker = max([i["peak"] for i in peaks.values() if i["role"] == "worker"] or [0])
        if elapsed > timeout:
            stopped = f"stopped after {timeout:.0f} s"
        elif stop_worker_bytes and worst_worker > stop_worker_bytes:
            stopped = f"stopped: a worker passed {stop_worker_bytes / GB:.1f} GB"
        if stopped:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, by its id
            proc.wait()
            break
        time.sleep(interval)
    wall = time.perf_counter() - t0
    # CPU used on this machine by processes outside the measured tree during the run (other jobs
    # sharing the cores), as a fraction of all cores: results with much of it are not clean.
    # CPU seconds of the measured tree: what reaped children report (exact when every process of the
    # tree was waited for), or the sampled sum when that is larger (processes killed or orphaned).
    own = max(sum(cpu_seen.values()), _reaped_cpu() - ru0)
    foreign = max(0.0, (_busy_cpu() - busy0) - own) / (wall * (os.cpu_count() or 1))
    for t in threads:
        t.join(timeout=5)
    workers = [i["peak"] for i in peaks.values() if i["role"] == "worker"]
    main = [i["peak"] for i in peaks.values() if i["role"] == "main"]
    return {
        "cmd": " ".join(cmd),
        "wall_s": wall,
        "returncode": proc.returncode,
        "stopped": stopped,
        "stdout": "".join(out_chunks),
        "stderr": "".join(err_chunks)[-4000:],
        "peak_main_bytes": max(main or [0]),
        "peak_worker_bytes": max(workers or [0]),
        "worker_processes": len(workers),
        "peak_total_bytes": total_peak,
        "foreign_cpu": round(foreign, 3),
        "cpu_s": round(own, 2),
    }


def _json_line(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


# ------------------------------------------------------------------- steps

def ensure_catalogue(size: int, args) -> tuple[Path, dict]:
    params = catalogue.Params(n_picks=size, n_models=args.models, stations=args.stations, days=args.days,
                              picks_per_arrival=args.picks_per_arrival, seed=args.seed, layout=args.layout)
    folder = catalogue.cache_dir(args.data_dir, params)
    t0 = time.perf_counter()
    manifest = catalogue.generate(folder, n_picks=size, n_models=args.models, stations=args.stations,
                                  days=args.days, picks_per_arrival=args.picks_per_arrival, seed=args.seed,
                                  layout=args.layout)
    took = time.perf_counter() - t0
    print(f"catalogue {folder.name}: {manifest['n_picks']:,} picks ({manifest['noise_fraction']:.0%} noise), "
          f"{manifest['n_reference']:,} reference arrivals, {args.stations} stations x {args.days} days, "
          f"{manifest['bytes']['picks'] / 1e6:.0f} MB Parquet ({'cached' if took < 1 else f'{took:.0f} s'})",
          flush=True)
    return folder, manifest


def step_floor(folder: Path, args) -> dict:
    r = run_measured([PY, str(HERE / "baselines.py"), "floor", "--picks", str(folder / "picks")],
                     timeout=args.timeout, quiet_wait=args.quiet_wait)
    r["result"] = _json_line(r["stdout"])
    return r


def step_pickscale(folder: Path, workers: int, args) -> dict:
    out = Path(args.out_dir) / f"{folder.name}-w{workers}"
    if out.exists():
        shutil.rmtree(out)
    cmd = [PICKSCALE, "score", "--reference", str(folder / "reference"), "--picks", str(folder / "picks"),
           "--out", str(out), "--workers", str(workers), "--no-figures", "--quiet"]
    r = run_measured(cmd, timeout=args.timeout, stop_worker_bytes=args.stop_worker_gb * GB,
                     quiet_wait=args.quiet_wait)
    r["out"] = str(out)
    r["ok"] = (r["returncode"] == 0 and (out / "results.zarr").exists() and (out / "sweep.csv").exists())
    return r


def step_merge_asof(folder: Path, args, detection_csv: str | None) -> dict:
    cmd = [PY, str(HERE / "baselines.py"), "merge_asof", "--picks", str(folder / "picks"),
           "--reference", str(folder / "reference")]
    if detection_csv:
        cmd += ["--detection-csv", detection_csv]
    r = run_measured(cmd, timeout=args.timeout, quiet_wait=args.quiet_wait)
    r["result"] = _json_line(r["stdout"])
    return r


def step_seed(folder: Path, args, sweep_csv: str | None) -> dict:
    cmd = [PY, str(HERE / "baselines.py"), "seed", "--picks", str(folder / "picks"),
           "--reference", str(folder / "reference"), "--stations-fraction", str(args.seed_fraction)]
    if sweep_csv:
        cmd += ["--sweep-csv", sweep_csv]
    r = run_measured(cmd, timeout=args.timeout, quiet_wait=args.quiet_wait)
    r["result"] = _json_line(r["stdout"])
    return r


def _load(r: dict) -> str:
    return f"; other jobs used {r.get('foreign_cpu', 0):.0%} of the cores" if r.get("foreign_cpu", 0) >= 0.05 else ""


def _slim(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in ("stdout",)}


def run_size(size: int, args) -> dict:
    folder, manifest = ensure_catalogue(size, args)
    n = manifest["n_picks"]
    rec: dict = {"size": size, "n_picks": n, "catalogue": folder.name, "manifest": manifest,
                 "machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M"), "pickscale_commit": git_state()}
    if not args.skip_baselines:
        r = step_floor(folder, args)
        rec["floor"] = _slim(r)
        res = r["result"]
        print(f"  floor: {r['wall_s']:.1f} s process ({res.get('read_s', float('nan')):.1f} s read + "
              f"{res.get('sort_s', float('nan')):.1f} s sort), {r['cpu_s']:.1f} CPU s, peak {r['peak_main_bytes'] / GB:.2f} GB{_load(r)}",
              flush=True)
    rec["pickscale"] = {}
    for w in args.workers:
        runs = [step_pickscale(folder, w, args) for _ in range(max(1, args.repeat))]
        ok = [x for x in runs if x["ok"]]
        r = min(ok, key=lambda x: x["wall_s"]) if ok else runs[-1]
        r["walls_s"] = [round(x["wall_s"], 2) for x in runs]
        rec["pickscale"][str(w)] = _slim(r)
        status = "ok" if r["ok"] else (r["stopped"] or f"FAILED (exit {r['returncode']}): {r['stderr'][-600:]}")
        rate = f" = {n / r['wall_s'] / 1e6:.2f} M picks/s" if r["ok"] else ""
        print(f"  pickscale --workers {w}: {r['wall_s']:.1f} s{rate}, "
              f"peak worker {r['peak_worker_bytes'] / GB:.2f} GB, main {r['peak_main_bytes'] / GB:.2f} GB, "
              f"total {r['peak_total_bytes'] / GB:.2f} GB, {r['cpu_s']:.0f} CPU s [{status}]; walls {r['walls_s']}{_load(r)}",
              flush=True)
    ok_runs = [rec["pickscale"][str(w)] for w in args.workers if rec["pickscale"][str(w)]["ok"]]
    det = str(Path(ok_runs[-1]["out"]) / "detection.csv") if ok_runs else None
    sweep = str(Path(ok_runs[-1]["out"]) / "sweep.csv") if ok_runs else None
    if not args.skip_baselines:
        r = step_merge_asof(folder, args, det)
        rec["merge_asof"] = _slim(r)
        res = r["result"]
        print(f"  merge_asof loop: {r['wall_s']:.1f} s process ({res.get('read_s', float('nan')):.1f} s read + "
              f"{res.get('loop_s', float('nan')):.1f} s loop, {res.get('merges', '?')} merges), {r['cpu_s']:.1f} CPU s, "
              f"peak {r['peak_main_bytes'] / GB:.2f} GB {r['stopped'] or ''}{_load(r)}", flush=True)
        if size <= args.seed_max:
            r = step_seed(folder, args, sweep if args.seed_fraction >= 1 else None)
            rec["seed"] = _slim(r)
            res = r["result"]
            print(f"  seed loop: {r['wall_s']:.1f} s process on {res.get('n_picks_run', 0):,} picks; loop "
                  f"{res.get('loop_s_extrapolated_to_all', float('nan')):.0f} s for all {n:,} picks "
                  f"{r['stopped'] or ''} {res.get('rows_equal_to_pickscale_sweep', '')}", flush=True)
        else:
            rec["seed"] = {"extrapolated": True}
    return rec


def seed_estimate(rec: dict, all_recs: dict) -> tuple[float, bool]:
    """Seed loop seconds (read + loop) for this size: measured, or linear in picks from the largest measured."""
    s = rec.get("seed", {})
    res = s.get("result") or {}
    if res.get("loop_s_extrapolated_to_all") is not None:
        return res["read_s"] + res["loop_s_extrapolated_to_all"], res.get("stations_fraction", 1.0) < 1.0
    measured = [r for r in all_recs.values() if (r.get("seed", {}).get("result") or {}).get("loop_s_extrapolated_to_all")]
    if not measured:
        return float("nan"), True
    base = max(measured, key=lambda r: r["n_picks"])
    br = base["seed"]["result"]
    per_pick = br["loop_s_extrapolated_to_all"] / base["n_picks"]
    read = (rec.get("merge_asof", {}).get("result") or {}).get("read_s", 0.0)
    return read + per_pick * rec["n_picks"], True


def git_state() -> str:
    """The pickscale commit measured, and whether pickscale/ had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "pickscale"], cwd=HERE.parent,
                               capture_output=True, text=True).stdout.split("\n")
        dirty = [line[3:] for line in dirty if line.strip()]
    except OSError:
        return "unknown"
    return head + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else "")


def machine() -> str:
    import numpy
    import pandas
    import pyarrow

    return (f"{platform.machine()}, {os.cpu_count()} cores, {psutil.virtual_memory().total / GB:.0f} GB; "
            f"Python {platform.python_version()}, numpy {numpy.__version__}, pandas {pandas.__version__}, "
            f"pyarrow {pyarrow.__version__}")


# ----------------------------------------------------------------- profile

# Where a sample's time goes: the first stage whose marker is in its stack (py-spy raw format).
STAGES = [
    ("imports", ["_find_and_load"]),
    ("read + normalise (worker)", ["read_part (", "read_files (", "read_reference ("]),
    ("encode to codes (worker)", ["encode_picks ("]),
    ("split by work partition (worker)", ["split_part ("]),
    ("score partitions: kernel", ["score_partition ("]),
    ("scope + plan (client)", ["scope_from_summary", "plan_units", "_combine_outlines"]),
    ("combine + assemble (client)", ["_combine_outputs", "assemble ("]),
    ("save Zarr (client)", ["save (pickscale/store/publish.py"]),
    ("tables (client)", ["write_report", "write_tables"]),
    ("cluster start/stop", ["cluster_client", "local_cluster"]),
    ("serialisation / comms", ["distributed/protocol", "distributed/comm", "distributed/batched"]),
]


def summarise_profile(raw_path: str, top: int = 15) -> str:
    """Stage shares and the top pickscale functions of a ``py-spy record --format raw`` file."""
    import collections
    import re

    total = 0
    stage = collections.Counter()
    inclusive = collections.Counter()
    leaf = collections.Counter()
    for line in open(raw_path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not n.isdigit():
            continue
        n = int(n)
        total += n
        frames = stack.split(";")
        procs = [f for f in frames if f.startswith("process ")]
        role = "worker" if procs and "spawn_main" in procs[-1] else "main"
        name = next((s for s, pats in STAGES if any(pt in stack for pt in pats)), "other (event loops, threads)")
        stage[(role, name)] += n
        fr = [re.sub(r":\d+\)$", ")", f) for f in frames if not f.startswith("process ")]
        for f in set(fr):
            if "pickscale/" in f:
                inclusive[f] += n
        ours = [f for f in fr if "pickscale/" in f]
        if ours:
            leaf[ours[-1]] += n
    out = [f"{total} samples (CPU-active, all processes)", "", "| process | stage | share |", "|---|---|---|"]
    for (role, name), n in stage.most_common():
        out.append(f"| {role} | {name} | {100 * n / total:.1f} % |")
    out += ["", "pickscale functions, inclusive:", ""]
    out += [f"- {100 * n / total:5.1f} %  {f}" for f, n in inclusive.most_common(top)]
    out += ["", "innermost pickscale frame (self time incl. the numpy/pandas calls it makes):", ""]
    out += [f"- {100 * n / total:5.1f} %  {f}" for f, n in leaf.most_common(top)]
    return "\n".join(out)


def profile(size: int, workers: int, args) -> None:
    """py-spy over ``pickscale score`` (all processes); prints where the time goes."""
    spy = shutil.which("py-spy", path=str(Path(PY).parent)) or shutil.which("py-spy")
    if not spy:
        raise SystemExit("--profile needs py-spy: pip install py-spy (a benchmark-only dependency)")
    folder, _ = ensure_catalogue(size, args)
    out = Path(args.out_dir) / f"{folder.name}-profile"
    if out.exists():
        shutil.rmtree(out)
    raw = Path(args.out_dir) / f"profile-{folder.name}-w{workers}.txt"
    cmd = [spy, "record", "-r", "50", "--subprocesses", "--format", "raw", "-o", str(raw), "--",
           PICKSCALE, "score", "--reference", str(folder / "reference"), "--picks", str(folder / "picks"),
           "--out", str(out), "--workers", str(workers), "--no-figures", "--quiet"]
    r = run_measured(cmd, timeout=args.timeout, quiet_wait=args.quiet_wait)
    print(f"pickscale --workers {workers} under py-spy: {r['wall_s']:.1f} s (exit {r['returncode']}); raw: {raw}")
    print(summarise_profile(str(raw)))


# ------------------------------------------------------------------ report

def _fmt_s(x: float | None) -> str:
    if x is None or x != x:
        return "–"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def table(recs: dict) -> str:
    lines = []
    sizes = sorted(recs.values(), key=lambda r: r["n_picks"])
    workers = sorted({int(w) for r in sizes for w in r.get("pickscale", {})})
    head = ["picks", "Parquet MB", "floor s"]
    for w in workers:
        head += [f"pickscale {w}w s", f"M picks/s ({w}w)", f"peak/worker GB ({w}w)", f"peak total GB ({w}w)"]
    head += ["speed-up 1→2w", "pickscale ÷ floor", "merge_asof s", "merge_asof ÷ pickscale", "seed loop s",
             "other jobs' CPU (max)"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in sizes:
        n = r["n_picks"]
        floor = (r.get("floor") or {}).get("wall_s")
        layout = r["manifest"]["params"]["layout"]
        row = [f"{n / 1e6:,.1f} M" + ("" if layout == "flat" else f" ({layout})"), f"{r['manifest']['bytes']['picks'] / 1e6:,.0f}", _fmt_s(floor)]
        walls = {}
        for w in workers:
            p = r.get("pickscale", {}).get(str(w))
            if not p:
                row += ["–"] * 4
                continue
            if p["ok"]:
                walls[w] = p["wall_s"]
                row += [_fmt_s(p["wall_s"]), f"{n / p['wall_s'] / 1e6:.2f}"]
            else:
                row += [f"{p['stopped'] or 'failed'} at {_fmt_s(p['wall_s'])} s", "–"]
            row += [f"{p['peak_worker_bytes'] / GB:.2f}", f"{p['peak_total_bytes'] / GB:.2f}"]
        best = min(walls.values()) if walls else None
        row.append(f"{walls[1] / walls[2]:.2f}×" if 1 in walls and 2 in walls else "–")
        row.append(f"{best / floor:.1f}×" if best and floor else "–")
        ma = r.get("merge_asof")
        if ma and ma.get("returncode") == 0:
            row += [_fmt_s(ma["wall_s"]), f"{ma['wall_s'] / best:.2f}×" if best else "–"]
        elif ma:
            row += [f"{ma.get('stopped') or 'failed'}", "–"]
        else:
            row += ["–", "–"]
        seed_s, extrapolated = seed_estimate(r, recs)
        row.append(("≈ " if extrapolated else "") + _fmt_s(seed_s))
        steps = [r.get("floor"), r.get("merge_asof"), *r.get("pickscale", {}).values()]
        loads = [s["foreign_cpu"] for s in steps if s and "foreign_cpu" in s]
        row.append(f"{max(loads):.0%}" if loads else "?")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def cpu_table(recs: dict) -> str:
    """CPU seconds of every step (all its processes): unlike wall time, barely moved by other jobs."""
    sizes = sorted(recs.values(), key=lambda r: r["n_picks"])
    workers = sorted({int(w) for r in sizes for w in r.get("pickscale", {})})
    head = ["picks", "floor CPU s"] + [f"pickscale {w}w CPU s" for w in workers]
    head += ["pickscale ÷ floor (CPU)", "merge_asof CPU s", "merge_asof ÷ pickscale (CPU)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in sizes:
        fl = (r.get("floor") or {}).get("cpu_s")
        layout = r["manifest"]["params"]["layout"]
        row = [f"{r['n_picks'] / 1e6:,.1f} M" + ("" if layout == "flat" else f" ({layout})"), _fmt_s(fl)]
        cpus = []
        for w in workers:
            p = r.get("pickscale", {}).get(str(w))
            if p and p.get("ok") and p.get("cpu_s") is not None:
                cpus.append(p["cpu_s"])
                row.append(_fmt_s(p["cpu_s"]))
            else:
                row.append("stopped" if p and p.get("stopped") else ("failed" if p and not p.get("ok") else "–"))
        best = min(cpus) if cpus else None
        row.append(f"{best / fl:.1f}×" if best and fl else "–")
        ma = (r.get("merge_asof") or {})
        mc = ma.get("cpu_s") if ma.get("returncode") == 0 else None
        row += [_fmt_s(mc), f"{mc / best:.2f}×" if mc and best else "–"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_readme(recs: dict) -> None:
    first = min(recs.values(), key=lambda r: r["n_picks"])
    commits = sorted({r.get("pickscale_commit", "?") for r in recs.values()})
    body = (f"{table(recs)}\n\n{cpu_table(recs)}\n\nMachine: {first['machine']}. Recorded {max(r['when'] for r in recs.values())}; "
            f"pickscale at {'; '.join(commits)}.")
    write_block(MARK, body, heading="Scale")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,5e7", help="total picks per catalogue, comma-separated")
    ap.add_argument("--workers", default="1,2", help="pickscale --workers values, comma-separated")
    ap.add_argument("--skip-baselines", action="store_true", help="only generate and run pickscale")
    ap.add_argument("--seed-max", type=float, default=1e6,
                    help="run the seed loop on sizes up to this; extrapolate beyond (default 1e6)")
    ap.add_argument("--seed-fraction", type=float, default=1.0,
                    help="run the seed loop on this fraction of the stations and extrapolate (default 1)")
    catalogue.add_shape_arguments(ap)
    ap.add_argument("--data-dir", default=str(HERE / "data"))
    ap.add_argument("--out-dir", default=None, help="pickscale outputs (default DATA_DIR/out)")
    ap.add_argument("--quiet-wait", type=float, default=120,
                    help="before each step, wait up to this many seconds for other jobs to leave the cores idle")
    ap.add_argument("--repeat", type=int, default=1, help="run pickscale this many times, keep the fastest")
    ap.add_argument("--timeout", type=float, default=1200, help="stop a step after this many seconds")
    ap.add_argument("--stop-worker-gb", type=float, default=0, help="stop pickscale when a worker passes this")
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    ap.add_argument("--profile", action="store_true",
                    help="instead: run pickscale under py-spy on the first size and first --workers value "
                         "and print where the time goes (needs py-spy)")
    args = ap.parse_args(argv)
    args.workers = [int(w) for w in args.workers.split(",")]
    args.out_dir = args.out_dir or str(Path(args.data_dir) / "out")
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    results_path = Path(args.data_dir) / "scale-results.json"
    recs = json.loads(results_path.read_text()) if results_path.exists() else {}
    print(machine())
    print(f"pickscale at {git_state()}")
    if args.profile:
        profile(int(float(args.sizes.split(",")[0])), args.workers[0], args)
        return
    for text in args.sizes.split(","):
        size = int(float(text))
        rec = run_size(size, args)
        key = f"{size}-{args.layout}"
        old = recs.get(key, {})
        if old.get("catalogue") == rec["catalogue"]:  # keep earlier steps of the same catalogue not run now
            for k in ("floor", "merge_asof", "seed"):
                if k in old and k not in rec:
                    rec[k] = old[k]
            for w, r in old.get("pickscale", {}).items():
                rec["pickscale"].setdefault(w, r)
        recs[key] = rec
        results_path.write_text(json.dumps(recs, indent=1, default=str))
    print()
    print(table(recs))
    print()
    print(cpu_table(recs))
    if args.write:
        write_readme(recs)
        print(f"\nrecorded in {HERE / 'README.md'}")


if __name__ == "__main__":
    main()
