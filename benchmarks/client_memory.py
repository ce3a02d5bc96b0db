"""Client memory against the number of reference arrivals (issue 22): the residual pairs kept on the cluster.

For each size (reference arrivals, 3 models, 1,000 stations; few noise picks, so that the picks are
mostly matched ones and the pairs grow with the arrivals — the case where the pairs, not the picks,
set the client's memory):

1. generate the catalogue (``benchmarks/catalogue.py``, cached under ``benchmarks/data/``);
2. run ``pickscale score --no-figures --quiet --workers 2`` with this tree's code and, side by side in
   the same run, with an earlier commit's (``--before COMMIT``: ``git archive`` of its ``pickscale/``,
   run with ``PYTHONPATH``), each in its own process group;
3. record the client's peak (``VmHWM`` of the command's process: it is the Dask client; the workers are
   its children), the largest worker peak and the wall time, and check that both versions wrote the
   same tables, byte for byte.

Run: ``python benchmarks/client_memory.py --arrivals 1e5,1e6,5e6 --before d9273fd [--write]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import catalogue  # noqa: E402
from record import read_tables, same_tables, write_block  # noqa: E402
from scale import run_measured  # noqa: E402

MARK = "<!-- client_memory -->"
MB = 2**20
STATIONS, MODELS, PICKS_PER_ARRIVAL = 1000, 3, 1.5
TABLES = ("detection", "timing", "calibration", "phase_quality", "sweep", "budgets")


def _catalogue(arrivals: float, *, models: int = MODELS, stations: int = STATIONS) -> Path:
    days = 365
    rate = arrivals / (stations * days)
    params = dict(n_models=models, stations=stations, days=days, arrival_rate=rate,
                  picks_per_arrival=PICKS_PER_ARRIVAL)
    shape = "" if (models, stations) == (MODELS, STATIONS) else f"-{models}m-{stations}s"
    out = HERE / "data" / f"client-memory-{arrivals:.0e}{shape}".replace("+", "")
    manifest = catalogue.generate(out, **params)
    print(f"catalogue {out.name}: {json.dumps({k: manifest.get(k) for k in ('n_picks', 'n_reference')})}",
          flush=True)
    return out


#: Put on PYTHONPATH beside an earlier commit's package: an editable install of this tree maps ``pickscale`` to
#: it through a finder on ``sys.meta_path``, which wins over PYTHONPATH in the command and in every worker it
#: spawns; ``sitecustomize`` runs first in each of them and takes that finder out.
_SITECUSTOMIZE = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                    and "editable" not in getattr(f, "__name__", "").lower()]
"""


def code_of(commit: str, root: Path) -> Path:
    """The ``pickscale`` package of ``commit``, unpacked under ``root`` (to put on PYTHONPATH)."""
    target = root / commit
    if not (target / "pickscale").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit, "pickscale"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        (target / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return target


def _run(cat: Path, out: Path, code: Path | None, extra: tuple[str, ...] = ()) -> dict:
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-c", "import sys, pickscale; from pickscale.cli import main; "
           "print('pickscale from', pickscale.__file__, flush=True); sys.exit(main())", "score",
           "--reference", str(cat / "reference"), "--picks", str(cat / "picks"), "--out", str(out),
           "--workers", "2", "--no-figures", "--quiet", *extra]
    env_path = os.environ.get("PYTHONPATH", "")
    if code is not None:
        os.environ["PYTHONPATH"] = f"{code}{os.pathsep}{env_path}" if env_path else str(code)
    try:
        got = run_measured(cmd, timeout=3600, cwd=str(out.parent))  # (not this tree: `-c` puts the cwd first)
    finally:
        if code is not None:
            os.environ["PYTHONPATH"] = env_path
            if not env_path:
                del os.environ["PYTHONPATH"]
    if got["returncode"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{got['stderr']}")
    got["tables"] = read_tables(out, TABLES)
    ran = next(line for line in got["stdout"].splitlines() if line.startswith("pickscale from"))
    if (code is None) == str(ran).startswith(f"pickscale from {code}"):  # the code meant, in the client
        raise SystemExit(f"ran the wrong code: {ran} (meant {code or 'this tree'})")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arrivals", default="1e5,1e6,5e6")
    ap.add_argument("--before", default=None, help="an earlier commit, run side by side")
    ap.add_argument("--shapes", default=None,
                    help="instead: at the first --arrivals, these shapes MODELSm-STATIONSs[-BIN], e.g. "
                         "3m-1000s,10m-1000s,3m-10000s,3m-1000s-1D (models, stations, --time-bin)")
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    args = ap.parse_args()
    if args.shapes:
        _shapes(float(args.arrivals.split(",")[0]), args.shapes.split(","), write=args.write)
        return
    rows = []
    work = Path(tempfile.mkdtemp(prefix="pickscale-client-memory-"))
    try:
        old = code_of(args.before, work / "code") if args.before else None
        for arrivals in (float(a) for a in args.arrivals.split(",")):
            cat = _catalogue(arrivals)
            manifest = json.loads((cat / "manifest.json").read_text())
            runs = {"this tree": _run(cat, work / "new", None)}
            if old is not None:
                runs[f"before ({args.before})"] = _run(cat, work / "old", old)
            first = next(iter(runs.values()))["tables"]
            same = all(same_tables(first, r["tables"]) for r in runs.values())
            for label, r in runs.items():
                row = {"arrivals": manifest["n_reference"], "picks": manifest.get("n_picks"),
                       "code": label, "client_mb": r["peak_main_bytes"] / MB,
                       "worker_mb": r["peak_worker_bytes"] / MB, "wall_s": r["wall_s"], "same_tables": same}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.write:
        lines = ["| reference arrivals | picks | code | client peak (MB) | peak per worker (MB) | wall (s) | "
                 "tables identical (the §5 means to 1e-12 or 1e-15 s) |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['arrivals']:,} | {r['picks']:,} | {r['code']} | {r['client_mb']:,.0f} | "
                         f"{r['worker_mb']:,.0f} | {r['wall_s']:.1f} | {'yes' if r['same_tables'] else 'NO'} |")
        write_block(MARK, "\n".join(lines), heading="Client memory against reference arrivals (issue 22)")


SHAPES_MARK = "<!-- client_memory_shapes -->"


def _shapes(arrivals: float, shapes: list[str], *, write: bool) -> None:
    """Client and worker peaks at one number of arrivals against models, stations and time bins."""
    rows = []
    work = Path(tempfile.mkdtemp(prefix="pickscale-client-memory-"))
    try:
        for shape in shapes:
            models, stations, *rest = shape.split("-")
            cat = _catalogue(arrivals, models=int(models.rstrip("m")), stations=int(stations.rstrip("s")))
            manifest = json.loads((cat / "manifest.json").read_text())
            r = _run(cat, work / "new", None, ("--time-bin", rest[0]) if rest else ())
            row = {"shape": shape, "arrivals": manifest["n_reference"], "picks": manifest.get("n_picks"),
                   "client_mb": r["peak_main_bytes"] / MB, "worker_mb": r["peak_worker_bytes"] / MB,
                   "wall_s": r["wall_s"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if write:
        lines = ["| models | stations | time bins | reference arrivals | picks | client peak (MB) | "
                 "peak per worker (MB) | wall (s) |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            models, stations, *rest = r["shape"].split("-")
            lines.append(f"| {models.rstrip('m')} | {int(stations.rstrip('s')):,} | {rest[0] if rest else 'none'} | "
                         f"{r['arrivals']:,} | {r['picks']:,} | {r['client_mb']:,.0f} | {r['worker_mb']:,.0f} | "
                         f"{r['wall_s']:.1f} |")
        write_block(SHAPES_MARK, "\n".join(lines),
                    heading="Client and worker peaks against models, stations and time bins (issue 22)")


if __name__ == "__main__":
    main()
