"""Many small CSV files (issue 23): a glob of N tiny files (~80 bytes, one pick each) against one file of the
same rows.

Each file holds a header and one pick; the one file holds the same header and every row. Each side is scored
by ``pickscale.score`` (in-process, no cluster: the local threaded scheduler) in a fresh interpreter, after a
first call on one tiny file (the lazy imports); the wall time of the call (listing, planning, reading,
scoring, the Dataset) is the best of ``--repeat`` runs. The tables of both sides are checked to be byte-identical.

Run: ``python benchmarks/small_files.py [--files 5000 100000] [--write]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
MARK = "<!-- small-files -->"
HEADER = "model,station,phase,time,conf"

_RUN = """
import hashlib, json, sys, time, warnings
warnings.simplefilter("ignore")
import pickscale
from pickscale.report.tables import to_csv_bytes
pickscale.score(sys.argv[1], sys.argv[3], progress=False)  # warm: the lazy imports (xarray, zarr ...)
start = time.perf_counter()
ds = pickscale.score(sys.argv[1], sys.argv[2], progress=False)
wall = time.perf_counter() - start
tables = pickscale.tables(ds)
digest = hashlib.sha256(b"".join(to_csv_bytes(tables[k]) for k in sorted(tables))).hexdigest()
print(json.dumps({"wall": wall, "tables": digest, "rows": ds.attrs["inputs"]["picks"]["rows_read"]}))
"""


def make(folder: Path, n: int, n_stations: int = 200, seed: int = 1) -> tuple[Path, Path, str]:
    """(reference file, the one picks file, the glob of the n tiny picks files)."""
    rng = np.random.default_rng(seed)
    start = np.datetime64("2020-01-01T00:00:00", "ms")
    picks, reference = [], ["station,phase,time"]
    for i in range(n):
        station, phase = f"XX.S{i % n_stations:03d}", "PS"[i % 2]
        t = start + np.timedelta64(60_000 * i, "ms")
        jitter = np.timedelta64(int(rng.integers(0, 999)), "ms")
        picks.append(f"m1,{station},{phase},{t + jitter}Z,{int(rng.integers(1, 1024)) / 1024}")
        reference.append(f"{station},{phase},{t}Z")
    tiny = folder / "tiny"
    tiny.mkdir(parents=True)
    for i, row in enumerate(picks):
        (tiny / f"p{i:06d}.csv").write_text(f"{HEADER}\n{row}\n")
    (folder / "one.csv").write_text(HEADER + "\n" + "\n".join(picks) + "\n")
    (folder / "reference.csv").write_text("\n".join(reference) + "\n")
    return folder / "reference.csv", folder / "one.csv", str(tiny / "*.csv")


def run(reference: Path, picks: str, warm: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN, str(reference), picks, str(warm)], check=True,
                         capture_output=True,
                         text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, nargs="+", default=[5_000, 100_000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    lines = []
    for n in args.files:
        with tempfile.TemporaryDirectory() as tmp:
            reference, one, glob = make(Path(tmp), n)
            size = sum(p.stat().st_size for p in (Path(tmp) / "tiny").iterdir())
            warm = Path(tmp) / "tiny" / "p000000.csv"
            one_runs = [run(reference, str(one), warm) for _ in range(args.repeat)]
            many_runs = [run(reference, glob, warm) for _ in range(args.repeat)]
        a, b = min(r["wall"] for r in one_runs), min(r["wall"] for r in many_runs)
        same = {r["tables"] for r in one_runs + many_runs}
        if len(same) != 1:
            raise SystemExit(f"{n} files: the tables differ from one file's")
        line = (f"| {n:,} | {size / 2**20:.1f} MB ({size / n:.0f} B a file) | {a:.2f} | {b:.2f} | {b / a:.1f}× "
                f"| {(b - a) / n * 1e6:.0f} µs |")
        print(line, flush=True)
        lines.append(line)
    table = "\n".join([
        f"One pick a file (header + one row); `pickscale.score` in-process in a fresh interpreter (imports done), best of "
        f"{args.repeat}, on a shared 2-core machine (loaded), measured {time.strftime('%Y-%m-%d')}. The tables "
        "of both sides are byte-identical.", "",
        "| files | in all | one file (s) | the files (s) | ratio | extra per file |", "|---|---|---|---|---|---|",
        *lines])
    print(table)
    if args.write:
        from record import write_block

        write_block(MARK, table, heading="Many small CSV files (issue 23)")


if __name__ == "__main__":
    main()
