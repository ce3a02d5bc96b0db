"""SPEC §5's statistics at every threshold of the grid, against an earlier commit's, side by side (issue 22).

One stream of ``--pairs`` residual pairs (normal, sd 0.1 s, on the 10 ms grid of 100 Hz data; confidences
uniform over the default grid's range), ``pickscale.metrics.timing.pair_statistics`` at the default grid as a
stream task runs it, each code in its own process, interleaved, ``--repeat`` times: CPU seconds (the fastest).
The statistics other than the four means must be equal bit for bit, the means equal to 1e-12 (SPEC §5's means
became exact: they may differ from the float sums in the last bit).

Run: ``python benchmarks/timing.py --before 54929c0 [--pairs 1e6] [--repeat 5] [--write]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from client_memory import code_of  # noqa: E402
from record import write_block  # noqa: E402

MARK = "<!-- timing -->"
MEANS = ("mae", "rmse", "residual_mean", "residual_std")

_CHILD = r"""
import json, sys, time, numpy as np
from pickscale.metrics.timing import pair_statistics
from pickscale.options import Options
n = int(float(sys.argv[1]))
rng = np.random.default_rng(7)
e = (np.round(rng.normal(0, 0.1, n), 2) * 1e9).astype(np.int64)
conf = rng.uniform(0.02, 1.0, n).astype(np.float32).astype(np.float64)
o = Options()
t = time.process_time()
out = pair_statistics(e, conf, np.zeros(n, np.int32), thresholds=o.grid, tol=o.tol, threshold=o.threshold, n_groups=0)
cpu = time.process_time() - t
print(json.dumps({"cpu_s": cpu, "sweep": {k: np.asarray(v, dtype=float).tolist() for k, v in out["sweep"].items()}}))
"""


def _once(code: Path | None, pairs: float) -> dict:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(pairs)], check=True, capture_output=True, text=True,
                          env=env, cwd=tempfile.gettempdir())
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the commit to compare with")
    ap.add_argument("--pairs", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        code = code_of(a.before, Path(tmp))
        runs: dict[str, list[dict]] = {"before": [], "now": []}
        for _ in range(a.repeat):
            runs["before"].append(_once(code, a.pairs))
            runs["now"].append(_once(None, a.pairs))
    import numpy as np

    b, n = runs["before"][0]["sweep"], runs["now"][0]["sweep"]
    same = all(np.array_equal(np.array(b[k]), np.array(n[k]), equal_nan=True) for k in b if k not in MEANS)
    close = all(np.allclose(np.array(b[k]), np.array(n[k]), rtol=1e-12, equal_nan=True) for k in MEANS)
    best = {k: min(r["cpu_s"] for r in v) for k, v in runs.items()}
    print(json.dumps({"pairs": a.pairs, "cpu_s": best, "ratio": best["before"] / best["now"],
                      "others_bit_identical": same, "means_within_1e-12": close}))
    if a.write:
        write_block(MARK, "\n".join([
            f"One stream of {a.pairs:,.0f} pairs, the default grid ({len(b['n_pairs'])} thresholds), "
            f"`pair_statistics` as a stream task runs it; fastest CPU of {a.repeat}, each code in its own process:",
            "", "| code | CPU s |", "|---|---|",
            f"| before ({a.before}: one masked pass per threshold, float sums) | {best['before']:.2f} |",
            f"| now (exact sums, every threshold from one sort) | {best['now']:.2f} |", "",
            f"{best['before'] / best['now']:.1f}× less CPU. Every statistic but the four means bit-identical: "
            f"{'yes' if same else 'NO'}; the means within 1e-12: {'yes' if close else 'NO'}."]),
            heading="SPEC §5 at every threshold (issue 22)")


if __name__ == "__main__":
    main()
