"""Object storage (issue 21): a results store and a Parquet catalogue on S3 against the same on local disk.

Everything runs against moto's S3-compatible server (``moto.server.ThreadedMotoServer``) that this script
starts on 127.0.0.1, in a child process of its own (so that the server's Python threads do not share a GIL
with the client being timed; its CPU time is read from ``/proc``).  ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID=testing``, ``AWS_SECRET_ACCESS_KEY=testing`` and ``AWS_DEFAULT_REGION=us-east-1`` are set
in this process before the cluster starts, so the workers inherit them.  One ``pickscale.local_cluster``
(``--workers``, default 2) serves every step.

1. **Results store** (``--stations``, default 10^5): the catalogue of ``stations.py`` (arrivals and picks
   uniform over 30 days and the stations; ``--store-picks`` picks of 3 models, ``--store-arrivals``
   arrivals, i.e. few picks per station) is scored once from local files; the Dataset is then written with
   ``pickscale.save`` and read back with ``pickscale.open_results`` — to and from a local folder, and to and
   from ``s3://BUCKET/store-N/results.zarr`` (an Icechunk repository: the code ``pickscale score --out
   s3://…`` runs).  Wall time and bytes of each; the two read-backs must be identical.  What the server costs
   by itself: a plain ``s3fs`` ``cat`` of every object of the repository, and a ``pipe`` of the same bytes
   to a scratch prefix.
2. **Catalogue** (``--sizes``, default 10^6 and 10^7 picks): ``catalogue.py``'s generator in its hive
   layout (``picks/station=…/part-00000.parquet``, ``reference/station=…/``), uploaded to
   ``s3://BUCKET/cat-N/``; ``pickscale.score`` on the local folders and on the ``s3://`` URLs, alternately,
   ``--repeat`` times each (fastest kept).  Read tasks run (the task stream's ``read_*`` tasks), wall time,
   requests the server answered; the six SPEC §8 tables as CSV must be byte-identical (asserted).  The
   server's share: a plain ``fs.cat`` of every picks object against reading the same local files.

moto's server is pure Python (werkzeug, one thread per request, objects in memory): it is far slower than
a real S3 and it shares this machine's cores with the workers.  Read the s3 columns as an upper bound of
pickscale's own overhead, and the ``server CPU`` columns as the part of it that is the server's.

Run: ``python benchmarks/object_storage.py [--sizes 1e6,1e7] [--stations 1e5] [--repeat 2] [--write]``
(``--skip-store``, ``--skip-catalogue``).  Catalogues are cached under ``benchmarks/data/``; every number
goes to ``benchmarks/data/object-storage-results.json``.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MARK = "<!-- object_storage -->"
MB = 1e6
KEY = SECRET = "testing"
REGION = "us-east-1"
COUNTS_PATH = "/_bench/requests"  # answered by the counting wrapper, not by moto
READ_TASKS = ("read_part", "read_files", "read_reference")


# ----------------------------------------------------------------- the server (child process)

def serve() -> None:
    """Child process: moto's threaded server on 127.0.0.1 (a free port), counting the requests it answers.

    Prints the port, then serves until its stdin closes.  ``GET /_bench/requests`` returns the counts per
    method since the last such request (and resets them).
    """
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    wsgi = server._server  # werkzeug's server: its handler calls `wsgi.app` per request
    app = wsgi.app
    counts: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def counting(environ, start_response):
        if environ.get("PATH_INFO") == COUNTS_PATH:
            with lock:
                body = json.dumps(dict(counts)).encode()
                counts.clear()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        query = environ.get("QUERY_STRING", "")
        method = environ.get("REQUEST_METHOD", "")
        kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
        with lock:
            counts[kind] += 1
        return app(environ, start_response)

    wsgi.app = counting
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
    server.stop()


class Server:
    """The child process running the server: its endpoint, CPU seconds and request counts."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def cpu(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def requests(self) -> dict[str, int]:
        with urllib.request.urlopen(self.endpoint + COUNTS_PATH, timeout=30) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # the child this script started, by its handle
            self.proc.wait()


def set_environment(endpoint: str) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_CONFIG_FILE",
                 "AWS_SHARED_CREDENTIALS_FILE", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(name, None)
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                       "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true"})


def fresh_fs():
    """A new s3fs filesystem (no cached listings) from the environment."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    return s3fs.S3FileSystem()


def _clear_worker_caches() -> None:  # run on each worker: no listing or file info cached from a previous run
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


class Timed:
    """Wall time, server CPU seconds and server requests of a block."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def __enter__(self) -> Timed:
        self.server.requests()  # reset the counts
        self.cpu0 = self.server.cpu()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.t0
        self.server_cpu = self.server.cpu() - self.cpu0
        self.reqs = self.server.requests()

    def as_dict(self) -> dict:
        return {"wall_s": round(self.wall, 3), "server_cpu_s": round(self.server_cpu, 3), "requests": self.reqs}


def _local_bytes(folder: Path) -> tuple[int, int]:
    files = [f for f in folder.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files), len(files)


def _remote_objects(fs, prefix: str) -> dict[str, int]:
    return {p: int(i["size"]) for p, i in fs.find(prefix, detail=True).items() if i.get("type") != "directory"}


# ----------------------------------------------------------------- 1. the results store

def bench_store(args, server: Server, client, bucket: str) -> dict:
    import numpy as np
    import stations as stations_bench
    import xarray as xr

    import pickscale

    n = int(args.stations)
    folder = HERE / "data" / f"stations-{n}-{int(args.store_picks)}-{int(args.store_arrivals)}"
    t0 = time.perf_counter()
    stations_bench.generate(folder, stations=n, n_picks=int(args.store_picks), n_arrivals=int(args.store_arrivals))
    print(f"store: {n:,}-station catalogue ready in {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    ds = pickscale.score(str(folder / "reference.parquet"), str(folder / "picks"), client=client, progress=False)
    scored = time.perf_counter() - t0
    print(f"store: scored in {scored:.1f} s: {dict(ds.sizes)}, {ds.nbytes / MB:,.0f} MB in memory", flush=True)

    rec: dict = {"stations": int(ds.sizes["station"]), "models": int(ds.sizes["model"]),
                 "pairs": int(ds.sizes.get("pair", 0)), "dataset_mb": round(ds.nbytes / MB, 1),
                 "score_s": round(scored, 1), "picks": int(args.store_picks), "arrivals": int(args.store_arrivals),
                 "runs": []}
    fs = fresh_fs()
    for k in range(args.store_repeat):
        run: dict = {}
        local = Path(args.scratch) / f"store-{uuid.uuid4().hex[:8]}" / "results.zarr"
        local.parent.mkdir(parents=True)
        with Timed(server) as t:
            pickscale.save(ds, local)
        run["local_write"] = t.as_dict()
        with Timed(server) as t:
            back_local = pickscale.open_results(local)
        run["local_read"] = t.as_dict()
        run["local_bytes"], run["local_files"] = _local_bytes(local)

        url = f"s3://{bucket}/store-{k}/results.zarr"
        with Timed(server) as t:
            pickscale.save(ds, url)
        run["s3_write"] = t.as_dict()
        with Timed(server) as t:
            back_s3 = pickscale.open_results(url)
        run["s3_read"] = t.as_dict()
        fs.invalidate_cache()
        objects = _remote_objects(fs, f"{bucket}/store-{k}/results.zarr")
        run["s3_bytes"], run["s3_objects"] = sum(objects.values()), len(objects)
        xr.testing.assert_identical(back_local, back_s3)

        # The server alone: every object of the repository read, then the same bytes written elsewhere.
        with Timed(server) as t:
            blobs = fs.cat(list(objects))
        run["plain_cat"] = t.as_dict()
        scratch = f"{bucket}/scratch-{k}/"
        with Timed(server) as t:
            fs.pipe({scratch + p.rsplit("/", 1)[-1] + f"-{i}": b for i, (p, b) in enumerate(blobs.items())})
        run["plain_pipe"] = t.as_dict()
        fs.rm(scratch, recursive=True)
        del blobs, back_local, back_s3
        shutil.rmtree(local.parent)
        rec["runs"].append(run)
        print("store:", json.dumps(run), flush=True)
    del ds
    rec["numpy"] = np.__version__
    return rec


# ----------------------------------------------------------------- 2. the catalogue

def _tables_bytes(ds) -> dict[str, bytes]:
    import pickscale
    from pickscale.report.tables import to_csv_bytes

    return {name: to_csv_bytes(frame) for name, frame in sorted(pickscale.tables(ds).items())}


def _score(client, server: Server, reference: str, picks: str, remote: bool) -> tuple[dict, dict[str, bytes]]:
    from dask.utils import key_split
    from distributed import get_task_stream

    import pickscale

    if remote:
        fresh_fs()
        client.run(_clear_worker_caches)
    with get_task_stream(client) as ts, Timed(server) as t:
        ds = pickscale.score(reference, picks, client=client, progress=False)
    names = collections.Counter(key_split(task["key"]) for task in ts.data)
    out = t.as_dict()
    out["read_tasks"] = {k: names[k] for k in READ_TASKS if names[k]}
    # How long the read tasks computed (the longest, and all of them): on object storage each of a batch's
    # files is opened and read one after the other inside its task.
    spans: dict[str, list[float]] = collections.defaultdict(list)
    for task in ts.data:
        name = key_split(task["key"])
        if name in READ_TASKS:
            spans[name].append(sum(s["stop"] - s["start"] for s in task.get("startstops", ())
                                   if s.get("action") == "compute"))
    out["read_task_s"] = {k: {"max": round(max(v), 2), "sum": round(sum(v), 2)} for k, v in spans.items()}
    out["tasks"] = sum(names.values())
    return out, _tables_bytes(ds)


def bench_catalogue(size: int, args, server: Server, client, bucket: str) -> dict:
    import catalogue

    params = catalogue.Params(n_picks=size, layout="by_station")
    folder = catalogue.cache_dir(HERE / "data", params)
    t0 = time.perf_counter()
    manifest = catalogue.generate(folder, n_picks=size, layout="by_station")
    print(f"catalogue {size:.0e}: ready in {time.perf_counter() - t0:.1f} s ({manifest['n_picks']:,} picks)",
          flush=True)
    prefix = f"{bucket}/cat-{size:.0e}".replace("+", "")
    fs = fresh_fs()
    with Timed(server) as t:
        fs.put(str(folder / "picks"), prefix + "/picks", recursive=True)
        fs.put(str(folder / "reference"), prefix + "/reference", recursive=True)
    rec: dict = {"picks": manifest["n_picks"], "reference": manifest["n_reference"],
                 "stations": manifest["params"]["stations"], "upload": t.as_dict()}
    local_files = sorted((folder / "picks").rglob("*.parquet"))
    rec["picks_files"] = len(local_files)
    rec["picks_bytes"] = sum(f.stat().st_size for f in local_files)
    print(f"catalogue {size:.0e}: uploaded {rec['picks_bytes'] / MB:.0f} MB in {t.wall:.1f} s", flush=True)

    sources = {"local": (str(folder / "reference"), str(folder / "picks")),
               "s3": (f"s3://{prefix}/reference/", f"s3://{prefix}/picks/")}
    runs: dict[str, list] = {"local": [], "s3": []}
    tables: dict[str, dict[str, bytes]] = {}
    if args.warm_up:  # the workers' first imports, not timed
        _score(client, server, *sources["local"], remote=False)
        args.warm_up = False
    for _ in range(args.repeat):
        for where, (ref, picks) in sources.items():
            r, tab = _score(client, server, ref, picks, remote=where == "s3")
            runs[where].append(r)
            tables.setdefault(where, tab)
            assert tab == tables["local"], f"the tables scored from {where} differ from the local ones"
            print(f"catalogue {size:.0e} {where}: {json.dumps(r)}", flush=True)
    assert tables["s3"] == tables["local"]
    rec["tables_sha256"] = hashlib.sha256(b"".join(tables["local"].values())).hexdigest()[:12]
    rec["tables"] = sorted(tables["local"])
    rec["runs"] = runs

    # The transfer alone: every picks object read with one s3fs cat, against reading the local files.
    t0 = time.perf_counter()
    n_local = sum(len(f.read_bytes()) for f in local_files)
    rec["plain_local_read_s"] = round(time.perf_counter() - t0, 3)
    fs = fresh_fs()
    objects = sorted(p for p in fs.find(prefix + "/picks/") if p.endswith(".parquet"))
    with Timed(server) as t:
        n_remote = sum(len(b) for b in fs.cat(objects).values())
    assert n_remote == n_local
    rec["plain_cat"] = t.as_dict()
    return rec


# ----------------------------------------------------------------- report

def _best(runs: list[dict], key: str) -> dict:
    return min(runs, key=lambda r: r[key]["wall_s"] if isinstance(r.get(key), dict) else r["wall_s"])


def _req(r: dict) -> str:
    reqs = r["requests"]
    return f"{sum(reqs.values()):,}"


def store_table(rec: dict) -> str:
    rows = ["| store | write s | read s | MB | files / objects | server CPU s (write / read) | requests "
            "(write / read) |", "|---|---|---|---|---|---|---|"]
    lw = min(r["local_write"]["wall_s"] for r in rec["runs"])
    lr = min(r["local_read"]["wall_s"] for r in rec["runs"])
    sw = min(rec["runs"], key=lambda r: r["s3_write"]["wall_s"])
    sr = min(rec["runs"], key=lambda r: r["s3_read"]["wall_s"])
    run = rec["runs"][0]
    rows.append(f"| local folder (Zarr) | {lw:.2f} | {lr:.2f} | {run['local_bytes'] / MB:.1f} | "
                f"{run['local_files']:,} | – | – |")
    rows.append(f"| s3:// (Icechunk on moto) | {sw['s3_write']['wall_s']:.2f} | {sr['s3_read']['wall_s']:.2f} | "
                f"{run['s3_bytes'] / MB:.1f} | {run['s3_objects']:,} | {sw['s3_write']['server_cpu_s']:.2f} / "
                f"{sr['s3_read']['server_cpu_s']:.2f} | {_req(sw['s3_write'])} / {_req(sr['s3_read'])} |")
    pc = min(r["plain_cat"]["wall_s"] for r in rec["runs"])
    pp = min(r["plain_pipe"]["wall_s"] for r in rec["runs"])
    rows.append(f"| plain s3fs of the same objects (pipe / cat) | {pp:.2f} | {pc:.2f} | {run['s3_bytes'] / MB:.1f} | "
                f"{run['s3_objects']:,} | {rec['runs'][0]['plain_pipe']['server_cpu_s']:.2f} / "
                f"{rec['runs'][0]['plain_cat']['server_cpu_s']:.2f} | – |")
    return "\n".join(rows)


def catalogue_table(recs: dict) -> str:
    rows = ["| picks | files (MB) | where | read tasks | read tasks' compute s (longest / all) | tasks in all | "
            "wall s | server CPU s | requests | plain read of the picks files s | tables |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for size in sorted(recs, key=float):
        rec = recs[size]
        for where in ("local", "s3"):
            best = min(rec["runs"][where], key=lambda r: r["wall_s"])
            walls = ", ".join(f"{r['wall_s']:.1f}" for r in rec["runs"][where])
            tasks = " + ".join(f"{v} {k}" for k, v in best["read_tasks"].items())
            plain = (f"{rec['plain_local_read_s']:.2f}" if where == "local"
                     else f"{rec['plain_cat']['wall_s']:.2f} (server CPU {rec['plain_cat']['server_cpu_s']:.1f})")
            srv = f"{best['server_cpu_s']:.1f}" if where == "s3" else "–"
            req = _req(best) if where == "s3" else "–"
            spans = best.get("read_task_s", {})
            compute = (f"{max(v['max'] for v in spans.values()):.1f} / {sum(v['sum'] for v in spans.values()):.1f}"
                       if spans else "–")
            rows.append(f"| {rec['picks']:,} | {rec['picks_files']} ({rec['picks_bytes'] / MB:.0f}) | "
                        f"{where} | {tasks} | {compute} | {best['tasks']:,} | {best['wall_s']:.1f} ({walls}) | {srv} | {req} | "
                        f"{plain} | {'identical' if where == 's3' else rec['tables_sha256']} |")
    return "\n".join(rows)


def machine() -> str:
    import numpy
    import pyarrow

    import pickscale

    try:
        import icechunk
        import moto
        import s3fs
        extra = f", icechunk {icechunk.__version__}, s3fs {s3fs.__version__}, moto {moto.__version__}"
    except ImportError:
        extra = ""
    return (f"{platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, pickscale "
            f"{pickscale.__version__}, numpy {numpy.__version__}, pyarrow {pyarrow.__version__}{extra}")


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# ----------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1e6,1e7", help="catalogue sizes (picks), comma-separated")
    ap.add_argument("--stations", type=float, default=1e5, help="stations of the results store")
    ap.add_argument("--store-picks", type=float, default=1e6)
    ap.add_argument("--store-arrivals", type=float, default=3e5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="scoring runs of each catalogue, each side (the fastest shown)")
    ap.add_argument("--store-repeat", type=int, default=1, help="saves and reads of the store, each side")
    ap.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                    help="do not score the first catalogue once, untimed, before measuring")
    ap.add_argument("--skip-store", action="store_true")
    ap.add_argument("--skip-catalogue", action="store_true")
    ap.add_argument("--scratch", default=str(HERE / "data" / "object-storage-scratch"))
    ap.add_argument("--write", action="store_true", help="record the tables in benchmarks/README.md")
    ap.add_argument("--render", metavar="JSON", help="print (and with --write record) the tables of a recorded run")
    args = ap.parse_args()
    if args.serve:
        serve()
        return

    if args.render:  # the tables of a recorded run, again (and with --write, into the README)
        render(json.loads(Path(args.render).read_text()), write=args.write)
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = load_average()
    server = Server()
    set_environment(server.endpoint)  # before any cluster starts: the workers inherit it
    import pickscale

    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    fresh_fs().mkdir(bucket)
    Path(args.scratch).mkdir(parents=True, exist_ok=True)
    client = pickscale.local_cluster(args.workers)
    results: dict = {"started": started, "machine": machine(), "workers": args.workers, "repeat": args.repeat,
                     "endpoint": "moto ThreadedMotoServer on 127.0.0.1 (child process)"}
    try:
        if not args.skip_catalogue:
            results["catalogue"] = {}
            for size in [int(float(x)) for x in args.sizes.split(",")]:
                results["catalogue"][str(size)] = bench_catalogue(size, args, server, client, bucket)
        if not args.skip_store:
            results["store"] = bench_store(args, server, client, bucket)
    finally:
        client.close()
        server.stop()
        shutil.rmtree(args.scratch, ignore_errors=True)
    results["load"] = f"{load_before} before, {load_average()} after (1/5/15 min)"
    results["store_repeat"] = args.store_repeat
    out = HERE / "data" / "object-storage-results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    render(results, write=args.write)


def render(results: dict, *, write: bool) -> None:
    parts = [f"{results['machine']}; {results['workers']} worker processes (`pickscale.local_cluster`); moto's "
             f"ThreadedMotoServer on 127.0.0.1 in a child process; load average {results['load']}; "
             f"recorded {results['started']}; catalogue runs: fastest of {results['repeat']} (all in brackets), "
             f"store: fastest of {results.get('store_repeat', 1)}."]
    if "catalogue" in results:
        parts.append(catalogue_table(results["catalogue"]))
    if "store" in results:
        st = results["store"]
        parts.append(f"Results store: {st['stations']:,} stations × {st['models']} models, {st['pairs']:,} residual "
                     f"pairs ({st['dataset_mb']:,.0f} MB in memory), from {st['picks']:,} picks and "
                     f"{st['arrivals']:,} arrivals (`stations.py`'s generator), scored in {st['score_s']:.0f} s.\n\n"
                     + store_table(st))
    body = "\n\n".join(parts)
    print(body)
    if write:
        from record import write_block

        write_block(MARK, body, heading="Object storage (issue 21)")


if __name__ == "__main__":
    main()
