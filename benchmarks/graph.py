"""Graph benchmark (issue 10): pickscale at cluster shape, beside Dask's own p2p shuffle of the same rows.

A small catalogue (``--picks`` picks over ``--stations`` stations, 3 models) is
scored with P read parts (the picks as a Dask DataFrame of P partitions) and Q
work partitions (``block_picks`` = picks / Q), P = Q = each of ``--shapes``, on
a real cluster: a ``dask scheduler`` and ``--workers`` ``dask worker``
processes on 127.0.0.1, started here.  Each measurement runs in a fresh client
process, which records:

- **wall** time of the call (``pickscale.score``, or the bare shuffle);
- **tasks** the workers ran (``distributed.get_task_stream``);
- **client peak** RSS of the client process (``ru_maxrss``; the scheduler runs
  in its own process);
- the scheduler's RSS after the run.

Rows: ``pickscale (shuffle)`` — the exchange through Dask's p2p shuffle;
``pickscale (direct)`` — the hand-made exchange (P × Q edges), up to
``--direct-max``; ``bare p2p shuffle`` — the same pick rows shuffled by station
into Q partitions and one task per output partition (``len``), no scoring.

Run: ``python benchmarks/graph.py --shapes 100,300,1000 [--write]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MARK = "<!-- graph -->"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_cmd(*args: str) -> list[str]:
    exe = Path(sys.executable).with_name("dask")
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]]


def _cluster(n_workers: int, log: Path) -> tuple[str, list[subprocess.Popen]]:
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen(_dask_cmd("scheduler", "--host", "127.0.0.1", "--port", str(port),
                                        "--dashboard-address", "127.0.0.1:0"),
                              stdout=(log / "scheduler.log").open("wb"), stderr=subprocess.STDOUT)]
    for i in range(n_workers):
        procs.append(subprocess.Popen(_dask_cmd("worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                                                "--dashboard-address", "127.0.0.1:0"),
                                      stdout=(log / f"worker{i}.log").open("wb"), stderr=subprocess.STDOUT))
    return address, procs


def _catalogue(n_picks: int, stations: int) -> Path:
    import catalogue

    params = dict(n_picks=n_picks, stations=stations, days=30, n_models=3)
    folder = HERE / "data" / f"graph-{n_picks}-{stations}"
    if not (folder / "manifest.json").exists():
        catalogue.generate(folder, **params)
    return folder


def child(args: argparse.Namespace) -> None:
    """One measurement, in its own process: prints one JSON line."""
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, get_task_stream

    import pickscale

    folder = Path(args.data)
    picks = pd.read_parquet(folder / "picks")
    reference = pd.read_parquet(folder / "reference")
    n = args.shape
    frame = dd.from_pandas(picks, npartitions=n, sort=False)
    client = Client(args.address, timeout="30s")
    client.wait_for_workers(args.workers)
    start = time.perf_counter()
    with get_task_stream(client) as stream:
        if args.kind == "bare":
            moved = frame.shuffle(on="station", npartitions=n, shuffle_method="p2p", ignore_index=True)
            sizes = moved.map_partitions(len, meta=("n", "int64")).compute()
            assert int(sizes.sum()) == len(picks)
            q = n
        else:
            ds = pickscale.score(reference, frame, client=client, block_picks=max(1, len(picks) // n),
                                 exchange_method=args.kind, progress=False)
            q = None
            assert int(ds.n_reference.sum()) > 0
    wall = time.perf_counter() - start
    tasks = len(stream.data)
    sched_rss = client.run_on_scheduler(lambda: __import__("psutil").Process().memory_info().rss)
    client.close()
    print(json.dumps({"kind": args.kind, "shape": n, "wall": wall, "tasks": tasks, "q": q,
                      "client_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "scheduler_mb": sched_rss / 2**20}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="100,300,1000")
    ap.add_argument("--picks", type=int, default=200_000)
    ap.add_argument("--stations", type=int, default=1500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--direct-max", type=int, default=300)
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--shape", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--address", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    data = _catalogue(args.picks, args.stations)
    log = Path(tempfile.mkdtemp(prefix="pickscale-graph-"))
    address, procs = _cluster(args.workers, log)
    rows = []
    try:
        for shape in [int(s) for s in args.shapes.split(",")]:
            kinds = ["bare", "shuffle"] + (["direct"] if shape <= args.direct_max else [])
            for kind in kinds:
                cmd = [sys.executable, __file__, "--child", "--kind", kind, "--shape", str(shape),
                       "--address", address, "--data", str(data), "--workers", str(args.workers)]
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
                if out.returncode != 0:
                    print(out.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"{kind} at {shape} failed")
                row = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(row, flush=True)
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    table = _table(rows, args)
    print(table)
    if args.write:
        from record import write_block

        write_block(MARK, table, heading="Cluster shape: graph size and the p2p shuffle (issue 10)")


def _table(rows: list[dict], args: argparse.Namespace) -> str:
    by = {(r["kind"], r["shape"]): r for r in rows}
    names = {"bare": "bare p2p shuffle + one task per output", "shuffle": "pickscale (shuffle exchange)",
             "direct": "pickscale (direct exchange)"}
    lines = [f"{args.picks:,} picks, {args.stations:,} stations, 3 models; P read parts = Q work partitions; "
             f"`dask scheduler` + {args.workers} `dask worker` processes (1 thread each) on 127.0.0.1; "
             f"measured {time.strftime('%Y-%m-%d')}, all rows in one run.",
             "",
             "| P = Q | what | wall (s) | tasks run | tasks ÷ (P + Q) | client peak (MB) | scheduler RSS (MB) | ÷ bare |",
             "|---|---|---|---|---|---|---|---|"]
    for shape in sorted({r["shape"] for r in rows}):
        bare = by.get(("bare", shape))
        for kind in ("bare", "shuffle", "direct"):
            r = by.get((kind, shape))
            if r is None:
                continue
            ratio = f"{r['wall'] / bare['wall']:.2f}×" if bare and kind != "bare" else "–"
            lines.append(f"| {shape} | {names[kind]} | {r['wall']:.1f} | {r['tasks']:,} | "
                         f"{r['tasks'] / (2 * shape):.1f} | {r['client_peak_mb']:.0f} | {r['scheduler_mb']:.0f} | "
                         f"{ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
