"""Small-study benchmark (issue 10): a 140-pick study end to end with ``pickscale score``, no figures.

Small jobs of local files run in the command's own process (no cluster is started). The study is the
first stations of the shipped demo catalogue cut to 140 picks; the wall time of the whole command
(interpreter start, imports, reading, scoring, the Zarr store, the tables) is the best of ``--repeat``
runs, beside the same study with ``--workers 1`` (a local cluster, as every run started one before).

Run: ``python benchmarks/small.py [--write]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEMO = HERE.parent / "configs" / "demo"
MARK = "<!-- small -->"


def study(folder: Path, n_picks: int = 140) -> tuple[Path, Path]:
    picks = pd.read_csv(DEMO / "picks.csv", dtype=str, keep_default_na=False)
    ref = pd.read_csv(DEMO / "reference.csv", dtype=str, keep_default_na=False)
    picks = picks.sort_values(["station", "time"], kind="stable").head(n_picks)
    ref = ref[ref["station"].isin(set(picks["station"]))]
    ref = ref[(ref["time"] >= picks["time"].min()) & (ref["time"] <= picks["time"].max())]
    folder.mkdir(parents=True, exist_ok=True)
    picks.to_csv(folder / "picks.csv", index=False)
    ref.to_csv(folder / "reference.csv", index=False)
    return folder / "reference.csv", folder / "picks.csv"


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("pickscale"))
    with tempfile.TemporaryDirectory() as tmp:
        ref, picks = study(Path(tmp) / "in")
        n, n_ref = len(pd.read_csv(picks)), len(pd.read_csv(ref))
        rows = {}
        for label, extra in (("in-process (default)", []), ("--workers 1 (a local cluster)", ["--workers", "1"])):
            times = [wall([exe, "score", "--reference", str(ref), "--picks", str(picks), "--out",
                           f"{tmp}/out{i}{len(extra)}", "--no-figures", "--quiet", *extra])
                     for i in range(args.repeat)]
            rows[label] = min(times)
            print(f"{label}: best {min(times):.2f} s of {[round(t, 2) for t in times]}", flush=True)
    table = "\n".join([f"{n} picks and {n_ref} reference arrivals cut from the demo catalogue; "
                       f"`pickscale score --no-figures --quiet`, best of {args.repeat}, measured "
                       f"{time.strftime('%Y-%m-%d')}.", "", "| run | wall (s) |", "|---|---|"]
                      + [f"| {k} | {v:.2f} |" for k, v in rows.items()])
    print(table)
    if args.write:
        from record import write_block

        write_block(MARK, table, heading="A small study end to end (issue 10)")


if __name__ == "__main__":
    main()
