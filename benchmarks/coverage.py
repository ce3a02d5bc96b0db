"""Coverage of the station bootstrap's intervals (issue 25 item 4): do 95 % intervals cover 95 % of the time?

Run ``python benchmarks/coverage.py`` (``--write`` records the table in ``benchmarks/README.md``; ~3 min on
2 cores with the defaults).  A known finite population of stations is the truth; a study scores a random
subset of it (without replacement) and draws its intervals with pickscale's own kernels
(:mod:`pickscale.metrics.resampling`: the multinomial station weights from a dataset's generator, the
weighted totals, the recall kernel, the leave-one-station-out totals, and the two interval rules), exactly as
:func:`pickscale.bootstrap` does on a results Dataset's counts.

**The population** (deterministic given ``--seed``): 2,000 stations; arrivals per station over-dispersed,
``1 + NegativeBinomial`` (mean ~60, dispersion 0.6: a few stations hold much of the arrivals); per-station
recall of model A heterogeneous, ``Beta(3, 1.2)`` (mean 0.71), lower at busier stations (a busy station's
arrivals are harder: its recall's logit is lowered by 0.35 per unit of log-arrivals above the mean); matched
counts binomial.  Model B's per-station recall is correlated with A's (its logit is A's plus a shift plus
N(0, 0.6²) noise); model C is drawn like B without a shift and then adjusted, one matched arrival at a time at
random stations, until its population recall equals A's exactly (a true difference of 0).

**The truth** a study's interval should cover: the population's ratio-of-sums recall
``Σ matched / Σ arrivals`` over its 2,000 stations (what the station bootstrap estimates: the recall of the
stations a study could have scored), and the differences of those.

**Recorded**, for the percentile interval (the method before issue 25) and the BCa interval (SPEC §12), side by
side, at 20, 50 and 200 stations: coverage of 95 % intervals, the share of misses above (the truth above the
interval) and below, the median width; for the true-zero difference A − C the coverage is one minus the rate of
a false "different" (an interval that excludes 0).  The Monte-Carlo standard error of a coverage p from n
studies is ``sqrt(p (1 − p) / n)`` (0.0049 at p = 0.95 with 2,000 studies).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from statistics import NormalDist

import numpy as np

from pickscale.metrics import resampling as kernels

SIZES = (20, 50, 200)
#: (label, model index or (a, b) pair): recall of A, B; differences A − B (true ≠ 0) and A − C (true 0).
QUANTITIES = (("recall A", 0), ("recall B", 1), ("A − B", (0, 1)), ("A − C (true 0)", (0, 2)))
#: percentile: SPEC §12 before issue 25; symmetric-t: SPEC §12 now; the others: candidates measured, not used.
METHODS = ("percentile", "symmetric-t", "BCa", "equal-tailed t")
#: The populations: the busy stations' recall the same as the others' (the issue's measurement), or lower.
POPULATIONS = {"busy stations like the others": 0.0, "busy stations' recall lower": -0.35}


def population(n_stations: int = 2000, seed: int = 25, busy_slope: float = 0.0) -> dict[str, np.ndarray]:
    """Arrivals (S,) and matched counts (S, 3) of models A, B, C at ``n_stations`` stations."""
    rng = np.random.default_rng(seed)
    mean, dispersion = 60.0, 0.6
    n = 1 + rng.negative_binomial(dispersion, dispersion / (dispersion + mean), n_stations)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    busy = np.log(n) - np.log(n).mean()
    p_a = expit(logit(np.clip(rng.beta(3.0, 1.2, n_stations), 1e-4, 1 - 1e-4)) + busy_slope * busy)
    p_b = expit(logit(p_a) - 0.15 + rng.normal(0, 0.6, n_stations))
    p_c = expit(logit(p_a) + rng.normal(0, 0.6, n_stations))
    m = np.stack([rng.binomial(n, p) for p in (p_a, p_b, p_c)], axis=1)
    # Model C: the same population recall as A, exactly (one matched arrival at a time, at random stations).
    gap = int(m[:, 0].sum() - m[:, 2].sum())
    while gap != 0:
        i = int(rng.integers(n_stations))
        step = 1 if gap > 0 else -1
        if 0 <= m[i, 2] + step <= n[i]:
            m[i, 2] += step
            gap -= step
    return {"n": n.astype(np.int64), "matched": m.astype(np.int64)}


def truths(pop: dict[str, np.ndarray]) -> dict[str, float]:
    """The population's ratio-of-sums recalls and their differences: what the intervals should cover."""
    r = pop["matched"].sum(axis=0) / pop["n"].sum()
    out = {}
    for label, which in QUANTITIES:
        out[label] = float(r[which]) if isinstance(which, int) else float(r[which[0]] - r[which[1]])
    return out


def bca(x: np.ndarray, jack: np.ndarray, full: float, level: float) -> tuple[float, float]:
    """Candidate: BCa (Efron 1987), acceleration from the jackknife over stations; measured, not used."""
    nd = NormalDist()
    p0 = (np.count_nonzero(x < full) + 0.5 * np.count_nonzero(x == full)) / x.size
    z0 = nd.inv_cdf(min(max(p0, 0.5 / x.size), 1 - 0.5 / x.size))
    d = jack.mean() - jack
    a = float((d**3).sum() / (6 * (d**2).sum() ** 1.5)) if jack.max() > jack.min() else 0.0
    levels = []
    for z in (nd.inv_cdf((1 - level) / 2), nd.inv_cdf((1 + level) / 2)):
        t = z0 + z
        levels.append(nd.cdf(z0 + t / (1 - a * t)) if 1 - a * t > 0 else float(t > 0))
    q = np.quantile(x, levels)
    return float(q[0]), float(q[1])


def study_intervals(n: np.ndarray, matched: np.ndarray, draws: int, seed: int, name: str,
                    level: float) -> dict[tuple[str, str], tuple[float, float]]:
    """Every method's interval of every quantity for one study, with pickscale's kernels."""
    s = n.size
    weights = kernels.station_weights(s, draws, kernels.dataset_generator(seed, name))
    ones = np.ones((1, s), dtype=np.int64)
    # detection_draws as pickscale.bootstrap calls it: (S, models) counts, arrivals broadcast over models.
    x_all = kernels.detection_draws(weights, matched, matched, n[:, None])["recall"]
    est_all = kernels.detection_draws(ones, matched, matched, n[:, None])["recall"][0]
    out = {}
    for label, which in QUANTITIES:
        if isinstance(which, int):
            x, e, num = x_all[:, which], est_all[which], matched[:, which]
        else:
            x, e = x_all[:, which[0]] - x_all[:, which[1]], est_all[which[0]] - est_all[which[1]]
            num = matched[:, which[0]] - matched[:, which[1]]
        # The old rule and the new, as pickscale.bootstrap applies them (SPEC §12).
        out[(label, "percentile")] = tuple(float(v) for v in kernels.percentile_interval(x, e, e, level))
        out[(label, "symmetric-t")] = tuple(float(v) for v in kernels.studentized_interval(
            weights, num, n, e, level, defined=~np.isnan(x)))
        # Candidates: BCa (jackknife over stations: the leave-one-out totals), equal-tailed bootstrap-t.
        jack = (num.sum() - num) / (n.sum() - n)
        out[(label, "BCa")] = bca(x, jack, float(e), level)
        rt = kernels.ratio_t_draws(weights, num, n)
        t_lo = float(kernels.linear_quantile(rt["t"], (1 - level) / 2))
        t_hi = float(kernels.linear_quantile(rt["t"], (1 + level) / 2))
        r, se = float(rt["ratio"]), float(rt["se"])
        out[(label, "equal-tailed t")] = (max(r - t_hi * se, float(rt["low"])), min(r - t_lo * se, float(rt["high"])))
    return out


def run(studies: int, draws: int, seed: int, level: float = 0.95) -> dict:
    t0 = time.perf_counter()
    result = {"studies": studies, "draws": draws, "seed": seed, "level": level, "populations": {}}
    for pop_name, slope in POPULATIONS.items():
        pop = population(seed=seed, busy_slope=slope)
        truth = truths(pop)
        rng = np.random.default_rng([seed, 1])
        rows = {}
        for size in SIZES:
            keys = [(q, m) for q, _ in QUANTITIES for m in METHODS]
            lo = {key: np.empty(studies) for key in keys}
            hi = {key: np.empty(studies) for key in keys}
            for k in range(studies):
                idx = np.sort(rng.choice(pop["n"].size, size, replace=False))
                got = study_intervals(pop["n"][idx], pop["matched"][idx], draws, seed, f"study {size} {k}", level)
                for key, (a, b) in got.items():
                    lo[key][k], hi[key][k] = a, b
            for (q, m), lows in lo.items():
                t, highs = truth[q], hi[(q, m)]
                rows[(size, q, m)] = {"cover": float(np.mean((lows <= t) & (t <= highs))),
                                      "above": float(np.mean(t > highs)), "below": float(np.mean(t < lows)),
                                      "width": float(np.median(highs - lows))}
        result["populations"][pop_name] = {"truth": truth, "rows": rows, "population": pop}
    result["seconds"] = time.perf_counter() - t0
    return result


def _cell(r: dict) -> str:
    return f"{r['cover']:.3f} ({100 * r['above']:.1f} / {100 * r['below']:.1f})"


def table(out: dict) -> str:
    n = out["studies"]
    lines = [
        f"{n:,} studies per size and population, {out['draws']:,} draws each, level {out['level']}. A cell: "
        "coverage (% of studies with the truth above the interval / below it). Monte-Carlo standard error of a "
        f"coverage: ±{np.sqrt(0.95 * 0.05 / n):.4f} near 0.95, ±{np.sqrt(0.92 * 0.08 / n):.4f} near 0.92 "
        f"(sqrt(p (1 − p) / {n:,})); the methods are read on the same studies and draws, so their differences "
        "are known better than that. For A − C (true difference 0) one minus the coverage is the rate of a false "
        "\"different\" (an interval that excludes 0). Width: the median over the studies.",
    ]
    for pop_name, res in out["populations"].items():
        pop, truth = res["population"], res["truth"]
        lines += [
            "",
            f"**{pop_name}** — {pop['n'].size:,} stations, {int(pop['n'].sum()):,} arrivals (per station: median "
            f"{int(np.median(pop['n']))}, max {int(pop['n'].max()):,}; the busiest 10 % hold "
            f"{np.sort(pop['n'])[-pop['n'].size // 10:].sum() / pop['n'].sum():.0%}); true recall A "
            f"{truth['recall A']:.4f}, B {truth['recall B']:.4f}; A − B {truth['A − B']:+.4f}; A − C "
            f"{truth['A − C (true 0)']:+.4f}.",
            "",
            "| stations | quantity | percentile (old) | symmetric-t (new) | width old → new | BCa (candidate) "
            "| equal-tailed t (candidate) |",
            "|---|---|---|---|---|---|---|",
        ]
        for size in SIZES:
            for q, _ in QUANTITIES:
                r = {m: res["rows"][(size, q, m)] for m in METHODS}
                lines.append(f"| {size} | {q} | {_cell(r['percentile'])} | **{_cell(r['symmetric-t'])}** | "
                             f"{r['percentile']['width']:.3f} → {r['symmetric-t']['width']:.3f} | "
                             f"{_cell(r['BCa'])} | {_cell(r['equal-tailed t'])} |")
    lines += ["", f"Run: `python benchmarks/coverage.py --studies {n} --draws {out['draws']} --seed {out['seed']}` "
              f"in {out['seconds']:.0f} s ({platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}), "
              f"{time.strftime('%Y-%m-%d', time.gmtime())}."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000, help="simulated studies per size (default 2000)")
    ap.add_argument("--draws", type=int, default=1000, help="bootstrap draws per study (default 1000)")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    args = ap.parse_args()
    out = run(args.studies, args.draws, args.seed)
    body = table(out)
    print(body)
    if args.write:
        from record import write_block  # benchmarks/ is the script's folder, so on sys.path

        write_block("<!-- coverage -->", body, heading="Coverage of the bootstrap intervals (issue 25, item 4)")


if __name__ == "__main__":
    main()
