"""Worker memory for time-binned counts (issue 22, item 4): sparse in the bin axis, not stations × all bins.

One scoring task's work is reproduced in a subprocess: ``--stations`` stations over ``--days`` days, each
station's arrivals and picks scored by the kernel (:func:`pickscale.kernel.score_station`) with
``time_bin=--time-bin`` and stacked into the task's :class:`~pickscale.kernel.Partial`, as
``engine/scoring.py`` does.  Reported per run:

* *binned bytes*: the task's time-binned counts as its partial holds them (now the sparse rows and their
  station keys; before, the dense ``*_over_time`` fields);
* *dense bytes*: stations × bins × (2 + 2·2·M) int64, what the dense representation holds (computed);
* *peak*: the subprocess's peak resident memory (``ru_maxrss``) less its resident memory before scoring.

"before" is measured by the previous code itself when ``--before PATH`` names a checkout of it (its
directory holding ``pickscale/``; e.g. ``git archive <commit> pickscale | tar -x -C PATH``), else it is
only the dense bytes, computed.  The catalogue (arrivals uniform in time at uniformly chosen stations, P or
S; each of 3 models picks ~70 % of them, 0.1 s spread, plus 20 % noise picks) is generated in memory.

Run: ``python benchmarks/time_bins.py [--stations 500] [--days 365] [--time-bin 1h] [--arrivals 2e5,2e6]
[--before PATH] [--write]``.  About a minute on a slow 2-core machine (two catalogue sizes, before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import write_block  # noqa: E402

MARK = "<!-- time_bins -->"
MODELS = 3
MB = 2**20

# The scoring task, run in a fresh interpreter so that its peak memory is its own.
_TASK = r"""
import json, resource, sys
import numpy as np
import pandas as pd
from pickscale.kernel import Partial, score_station
from pickscale.kernel.bins import bin_edges
from pickscale.options import Options

n_stations, days, freq, n_arrivals, models = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), 3
S = 10**9
rng = np.random.default_rng(0)
t0 = pd.Timestamp("2024-01-01").value
span = days * 86_400 * S
a_station = rng.integers(0, n_stations, n_arrivals)
a_phase = rng.integers(0, 2, n_arrivals)
a_time = t0 + rng.integers(0, span, n_arrivals)
picks = []
for m in range(models):
    k = rng.random(n_arrivals) < 0.7
    n_noise = n_arrivals // 5
    picks.append((np.r_[a_station[k], rng.integers(0, n_stations, n_noise)],
                  np.full(k.sum() + n_noise, m), np.r_[a_phase[k], rng.integers(0, 2, n_noise)],
                  np.r_[a_time[k] + rng.normal(0, 0.1 * S, k.sum()).astype(np.int64), t0 + rng.integers(0, span, n_noise)],
                  np.r_[rng.uniform(0.3, 1.0, k.sum()), rng.uniform(0.0, 0.6, n_noise)]))
p_station, p_model, p_phase, p_time, p_conf = (np.concatenate(c) for c in zip(*picks))
times = np.r_[a_time, p_time]
options = Options(time_bin=freq).with_bin_edges(bin_edges(int(times.min()), int(times.max()), freq))
n_bins = options.bin_edges.size - 1
a_order, p_order = np.argsort(a_station, kind="stable"), np.argsort(p_station, kind="stable")
a_bounds = np.searchsorted(a_station[a_order], np.arange(n_stations + 1))
p_bounds = np.searchsorted(p_station[p_order], np.arange(n_stations + 1))

def rss():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1]) * 1024

before = rss()
items = []
for s in range(n_stations):
    a = a_order[a_bounds[s]:a_bounds[s + 1]]
    p = p_order[p_bounds[s]:p_bounds[s + 1]]
    r = score_station(a_phase[a], a_time[a], p_model[p], p_phase[p], p_time[p], p_conf[p], n_models=models,
                      options=options)
    r.fine_emitted = r.fine_matched = np.zeros(0, np.int64)  # summed apart in a real task (engine/scoring.py)
    items.append((0, s, r))
partial = Partial.of(items, fine={})
del items
stack = partial.stacks[0]
if hasattr(stack, "binned_nbytes"):
    binned = stack.binned_nbytes()
else:  # the dense code: the *_over_time fields
    binned = sum(v.nbytes for k, v in stack.fields.items() if k.endswith("_over_time"))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"bins": int(n_bins), "binned_bytes": int(binned), "peak_bytes": int(peak - before),
                  "dense_bytes": int(n_stations * n_bins * (2 + 2 * 2 * models) * 8)}))
"""


def run(root: Path, args: argparse.Namespace, arrivals: int) -> dict:
    """The task's numbers with the pickscale found under ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", _TASK, str(args.stations), str(args.days), args.time_bin,
                          str(arrivals)], env=env, cwd=root, check=True, capture_output=True,
                         text=True)  # cwd: "-c" puts it first on sys.path
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stations", type=int, default=500)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--time-bin", default="1h")
    parser.add_argument("--arrivals", default="2e5,2e6", help="comma-separated catalogue sizes")
    parser.add_argument("--before", type=Path, default=None, help="a checkout of the previous (dense) code")
    parser.add_argument("--write", action="store_true", help="record the numbers in benchmarks/README.md")
    args = parser.parse_args()
    rows = ["| arrivals | bins occupied | binned counts before | after | task peak before | after |",
            "|---|---|---|---|---|---|"]
    for arrivals in (int(float(a)) for a in args.arrivals.split(",")):
        now = run(HERE.parent, args, arrivals)
        old = run(args.before, args, arrivals) if args.before else None
        # Rows cost (1 + 2 + 2·2·M) int64 each: the share of the station-bins occupied.
        occupied = now["binned_bytes"] / (args.stations * now["bins"] * (1 + 2 + 4 * MODELS) * 8)
        before = old["binned_bytes"] if old else now["dense_bytes"]
        peak_before = f"{old['peak_bytes'] / MB:,.0f} MB" if old else "—"
        rows.append(f"| {arrivals:,} | {occupied:.0%} | {before / MB:,.1f} MB{'' if old else ' (computed)'} | "
                    f"{now['binned_bytes'] / MB:,.1f} MB | {peak_before} | {now['peak_bytes'] / MB:,.0f} MB |")
    body = "\n".join([
        f"One scoring task: {args.stations:,} stations × {args.days} days at `--time-bin {args.time_bin}` "
        f"({now['bins']:,} bins), {MODELS} models (`python benchmarks/time_bins.py"
        f"{' --before PATH' if old else ''}`; {platform.machine()}, {os.cpu_count()} cores). Dense is stations × "
        f"bins × (2 + 2·2·M) int64 = {now['dense_bytes'] / MB:,.1f} MB whatever the data; the sparse rows cost "
        "the station-bins occupied (a row is one int64 more than a dense bin: a station busy in every bin costs "
        "7 % more)."
        + (" Before: the previous code (dense `*_over_time` per station), run on the same catalogue." if old else
           " Before: computed, not run.")
        + " Peak: the task's process, its resident memory before scoring subtracted.",
        "",
        *rows,
    ])
    print(body)
    if args.write:
        write_block(MARK, body, heading="Time bins: worker memory (issue 22, item 4)")


if __name__ == "__main__":
    main()
