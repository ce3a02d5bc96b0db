"""Client memory against the number of stations (issue 15, item 3).

A catalogue of a fixed size — ``--picks`` picks (3 models) and ``--arrivals``
reference arrivals — is spread over 1,000, 10,000 and 75,000 stations and
scored end to end with ``pickscale score --workers 2 --no-figures --quiet`` in
a subprocess.  Memory is sampled as in ``scale.py`` (its ``run_measured``:
every process's ``VmHWM`` from ``/proc``): the *client* is the command's own
process, *total* the largest sampled sum over client, scheduler, nannies and
workers.

The catalogue is simple on purpose (what matters here is the station count):
arrivals uniform in time over 30 days at uniformly chosen stations, P or S;
each model picks ~70 % of the arrivals (0.05 s spread, float32 confidences)
and fills its share with noise picks at uniformly chosen stations and times.
Files are cached under ``benchmarks/data/stations-*``.

Run: ``python benchmarks/stations.py [--stations 1000,10000,75000] [--picks 3e6] [--arrivals 1e6] [--write]``.
Memory is robust on the shared machine; wall times are noisy.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import write_block  # noqa: E402
from scale import GB, PICKSCALE, run_measured  # noqa: E402

MARK = "<!-- stations -->"
S = 1_000_000_000
DAY = 86_400 * S
MODELS = ("phasenet", "eqt", "gpd")


def _names(n: int) -> list[str]:
    return [f"XX.S{i:06d}" for i in range(n)]


def _dict(codes: np.ndarray, names: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names))


def generate(folder: Path, *, stations: int, n_picks: int, n_arrivals: int, seed: int = 0) -> Path:
    """Write ``folder/reference.parquet`` and ``folder/picks/part-*.parquet`` (cached by their parameters)."""
    key = json.dumps({"stations": stations, "picks": n_picks, "arrivals": n_arrivals, "seed": seed, "v": 1})
    if (folder / "key.json").exists() and (folder / "key.json").read_text() == key:
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "picks").mkdir(parents=True)
    rng = np.random.default_rng(seed)
    names = _names(stations)
    a_sta = rng.integers(0, stations, n_arrivals)
    a_time = rng.integers(0, 30 * DAY, n_arrivals) // (S // 100) * (S // 100)
    a_phase = rng.integers(0, 2, n_arrivals)
    pq.write_table(pa.table({
        "station": _dict(a_sta, names),
        "phase": _dict(a_phase, ["P", "S"]),
        "time": pa.array(a_time, pa.timestamp("ns", tz="UTC")),
    }), folder / "reference.parquet")
    per_model = n_picks // len(MODELS)
    for m, model in enumerate(MODELS):
        hit = np.flatnonzero(rng.random(n_arrivals) < 0.7)[:per_model]
        n_noise = per_model - hit.size
        sta = np.concatenate([a_sta[hit], rng.integers(0, stations, n_noise)])
        t = np.concatenate([a_time[hit] + np.round(rng.normal(0, 0.05, hit.size) * 100).astype(np.int64) * (S // 100),
                            rng.integers(0, 30 * DAY, n_noise)])
        phase = np.concatenate([a_phase[hit], rng.integers(0, 2, n_noise)])
        conf = np.concatenate([rng.beta(5, 2, hit.size), 0.02 + 0.98 * rng.beta(1, 9, n_noise)]).astype(np.float32)
        pq.write_table(pa.table({
            "model": _dict(np.zeros(per_model, np.int32), [model]),
            "station": _dict(sta, names),
            "phase": _dict(phase, ["P", "S"]),
            "time": pa.array(t, pa.timestamp("ns", tz="UTC")),
            "conf": pa.array(conf),
        }), folder / "picks" / f"part-{m:05d}.parquet")
    (folder / "key.json").write_text(key)
    return folder


def measure(folder: Path, *, workers: int, timeout: float) -> dict:
    out = folder / "out"
    if out.exists():
        shutil.rmtree(out)
    cmd = [PICKSCALE, "score", "--reference", str(folder / "reference.parquet"), "--picks", str(folder / "picks"),
           "--out", str(out), "--workers", str(workers), "--no-figures", "--quiet"]
    r = run_measured(cmd, timeout=timeout)
    r["ok"] = r["returncode"] == 0 and (out / "sweep.csv").exists()
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stations", default="1000,10000,75000")
    ap.add_argument("--picks", type=float, default=3e6)
    ap.add_argument("--arrivals", type=float, default=1e6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    args = ap.parse_args()
    rows = []
    for n in [int(float(x)) for x in args.stations.split(",")]:
        folder = HERE / "data" / f"stations-{n}-{int(args.picks)}-{int(args.arrivals)}"
        t0 = time.perf_counter()
        generate(folder, stations=n, n_picks=int(args.picks), n_arrivals=int(args.arrivals))
        print(f"{n:,} stations: catalogue ready in {time.perf_counter() - t0:.1f} s", flush=True)
        r = measure(folder, workers=args.workers, timeout=args.timeout)
        if not r["ok"]:
            print(r["stderr"][-2000:], file=sys.stderr)
        row = (f"| {n:,} | {int(args.picks):,} | {int(args.arrivals):,} | {r['peak_main_bytes'] / GB:.2f} | "
               f"{r['peak_worker_bytes'] / GB:.2f} | {r['peak_total_bytes'] / GB:.2f} | {r['wall_s']:.1f} | "
               f"{'ok' if r['ok'] else r['stopped'] or 'exit ' + str(r['returncode'])} |")
        print(row, flush=True)
        rows.append(row)
    head = ("| stations | picks | arrivals | client peak GB | peak/worker GB | total GB | wall s (noisy) | |\n"
            "|---|---|---|---|---|---|---|---|")
    body = (head + "\n" + "\n".join(rows) + f"\n\n`pickscale score --workers {args.workers}`; "
            f"{platform.machine()}, numpy {np.__version__}; recorded {time.strftime('%Y-%m-%d %H:%M')}.")
    print(body)
    if args.write:
        write_block(MARK, body, heading="Client memory against the number of stations")


if __name__ == "__main__":
    main()
