"""The default command against the floor, round by round (issue 27: 10 M picks ≤ 1.5× the floor, ≤ 1.7× with figures).

On one catalogue of ``scale.py`` (``benchmarks/catalogue.py``, cached under ``benchmarks/data/``), ``--rounds``
times, one after the other in each round:

- **floor**: ``baselines.py floor`` (pyarrow reads the picks, one (station, phase, time) sort; see ``scale.py``);
- **no figures**: ``pickscale score --no-figures --quiet --workers W``;
- **figures**: ``pickscale score --quiet --workers W`` (the six figures and those the results call for).

Each round's ratios divide by that round's floor (this VM's speed drifts over minutes: the floor of one
catalogue measured 3.0 to 5.4 s in one day); the targets read the median of those paired ratios.  Wall time of
each process with its imports and cluster; CPU seconds of its process tree beside it.  The first round's
tables (with and without figures) must be byte-identical.

Run: ``python benchmarks/floor_ratio.py [--size 1e7] [--rounds 5] [--workers 2] [--write]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import catalogue  # noqa: E402
import scale  # noqa: E402
from record import write_block  # noqa: E402

MARK = "<!-- floor_ratio -->"
TARGETS = {"no figures": 1.5, "figures": 1.7}


def _tables(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("*.csv"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=float, default=1e7, help="picks in the catalogue")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=str(HERE / "data"))
    ap.add_argument("--quiet-wait", type=float, default=30, help="wait up to this long for quiet cores first")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    # The catalogue scale.py measures (its defaults: 3 models, 200 stations, 365 days, flat Parquet files).
    shape = argparse.ArgumentParser()
    catalogue.add_shape_arguments(shape)
    cat_args = shape.parse_args([])
    cat_args.data_dir = args.data_dir
    folder, manifest = scale.ensure_catalogue(int(args.size), cat_args)
    out_root = Path(args.data_dir) / "out-floor-ratio"
    base = [scale.PICKSCALE, "score", "--reference", str(folder / "reference"), "--picks", str(folder / "picks"),
            "--workers", str(args.workers), "--quiet"]
    steps = {
        "floor": lambda out: [scale.PY, str(HERE / "baselines.py"), "floor", "--picks", str(folder / "picks")],
        "no figures": lambda out: [*base, "--out", str(out), "--no-figures"],
        "figures": lambda out: [*base, "--out", str(out)],
    }
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
    hashes: dict[str, dict[str, str]] = {}
    foreign = 0.0
    for r in range(args.rounds):
        for name, cmd in steps.items():
            out = out_root / name.replace(" ", "-")
            shutil.rmtree(out, ignore_errors=True)
            run = scale.run_measured(cmd(out), timeout=1200, quiet_wait=args.quiet_wait if name == "floor" else 0)
            if run["returncode"] != 0:
                raise SystemExit(f"{name} failed:\n{run['stderr']}")
            got[name].append((run["wall_s"], run["cpu_s"]))
            foreign = max(foreign, run["foreign_cpu"])
            if r == 0 and name != "floor":
                hashes[name] = _tables(out)
        print(f"round {r + 1}: " + ", ".join(f"{n} {got[n][-1][0]:.2f} s" for n in steps), flush=True)
    shutil.rmtree(out_root, ignore_errors=True)
    report = _report(got, hashes, manifest, args, foreign)
    print(report)
    if args.write:
        write_block(MARK, report, heading="The default command against the floor, round by round (issue 27)")


def _report(got, hashes, manifest, args, foreign) -> str:
    med = statistics.median
    floor = [w for w, _ in got["floor"]]
    lines = [f"{manifest['n_picks']:,} picks ({manifest['n_reference']:,} reference arrivals, 3 models, "
             f"{manifest['bytes']['picks'] / 1e6:.0f} MB Parquet), `--workers {args.workers}`, {args.rounds} rounds "
             f"of floor → no figures → figures; wall s (CPU s of the process tree); other jobs took at most "
             f"{foreign:.0%} of the cores; {os.cpu_count()} cores; pickscale at {scale.git_state()}.", "",
             "| | " + " | ".join(f"round {r + 1}" for r in range(args.rounds)) + " | median | target |",
             "|---|" + "---|" * args.rounds + "---|---|"]
    for name, values in got.items():
        cells = [f"{w:.2f} ({c:.1f})" for w, c in values]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {med(w for w, _ in values):.2f} | |")
    for name, target in TARGETS.items():
        ratios = [w / f for (w, _), f in zip(got[name], floor)]
        verdict = "within" if med(ratios) <= target else "over"
        lines.append(f"| {name} ÷ floor | " + " | ".join(f"{x:.2f}×" for x in ratios)
                     + f" | **{med(ratios):.2f}×** | ≤ {target}× ({verdict}) |")
    same = hashes.get("no figures") == hashes.get("figures")
    lines += ["", f"Tables with and without figures (first round, {len(hashes.get('figures', {}))} CSV files, "
              f"SHA-256): {'identical' if same else 'DIFFERENT'}."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
