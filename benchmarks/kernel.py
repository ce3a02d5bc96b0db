"""Kernel throughput: one station, 1 million picks, 10,000 arrivals, three models, default grid.

Run ``python benchmarks/kernel.py`` (``--write`` records the result in
``benchmarks/README.md``).  The catalogue is synthetic but shaped like a
picker run at a low floor: each model picks most arrivals once (a few twice,
some with the wrong phase), and most of its picks are noise spread over the
whole span, with confidences skewed low.

Target (issue 2): at least 2 million picks per second on one core.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from record import write_block  # benchmarks/ is the script's folder, so on sys.path

from pickscale.kernel import score_station
from pickscale.options import Options

S = 1_000_000_000


def catalogue(n_picks: int = 1_000_000, n_arrivals: int = 10_000, n_models: int = 3, seed: int = 7):
    """One busy station: arrivals over ~70 days, picks from three models."""
    rng = np.random.default_rng(seed)
    span = n_arrivals * 600 * S
    a_time = np.sort(rng.integers(0, span, n_arrivals))
    a_phase = rng.integers(0, 2, n_arrivals).astype(np.int8)
    per_model = n_picks // n_models
    models, phases, times, confs = [], [], [], []
    for m in range(n_models):
        n_true = int(0.9 * n_arrivals)
        idx = rng.choice(n_arrivals, n_true, replace=False)
        idx = np.concatenate([idx, rng.choice(idx, n_arrivals // 20)])  # some duplicates
        t_true = a_time[idx] + rng.normal(0.02 * m, 0.08, idx.size).round(2).astype(np.float64) * S
        ph_true = np.where(rng.random(idx.size) < 0.02, 1 - a_phase[idx], a_phase[idx])
        c_true = np.clip(rng.beta(5, 2, idx.size), 0.02, 1.0).round(3)
        n_noise = per_model - idx.size
        t_noise = rng.integers(0, span, n_noise)
        c_noise = np.clip(rng.beta(1, 6, n_noise), 0.02, 1.0).round(3)
        models.append(np.full(per_model, m, dtype=np.int32))
        phases.append(np.concatenate([ph_true, rng.integers(0, 2, n_noise)]).astype(np.int8))
        times.append(np.concatenate([t_true.astype(np.int64), t_noise]))
        confs.append(np.concatenate([c_true, c_noise]))
    return a_phase, a_time, np.concatenate(models), np.concatenate(phases), np.concatenate(times), np.concatenate(confs)


def run(repeats: int = 5) -> dict[str, float]:
    data = catalogue()
    options = Options()
    n_picks = data[4].size
    score_station(*data, n_models=3, options=options)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        score_station(*data, n_models=3, options=options)
        best = min(best, time.perf_counter() - t0)
    return {"picks": n_picks, "arrivals": data[1].size, "seconds": best, "picks_per_second": n_picks / best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the result in benchmarks/README.md")
    args = parser.parse_args()
    out = run()
    line = (
        f"kernel: {out['picks']:,} picks, {out['arrivals']:,} arrivals, 3 models, default grid: "
        f"{out['seconds']:.3f} s (best of 5) = {out['picks_per_second'] / 1e6:.2f} M picks/s on one core "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__})"
    )
    print(line)
    if args.write:
        write_block("<!-- kernel -->", line, heading="Kernel throughput")


if __name__ == "__main__":
    main()
