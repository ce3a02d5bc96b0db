"""The kernel and the metrics against the brute force of :mod:`tests.helpers.brute`, on one :class:`Case`.

What is compared:

* counts: exactly;
* pairs: as multisets, exactly, both at the floor and at every grid θ (the brute
  force re-runs the walk on the picks >= θ; the kernel's pairs filtered to
  conf >= θ must be the same -- the SPEC §3 prefix property);
* metrics computed from the same integers by one division: exactly;
* float sums (cal_conf, brier_sum, mae, rmse, std, interpolation, ap, ece):
  ``rtol=1e-12``, plus ``atol=1e-12`` where the true value can be 0 after
  cancellation (a mean of residuals, an ECE gap): residuals are whole
  nanoseconds and confidences multiples of 0.05, so 1e-12 is rounding noise,
  never a different answer;
* invariants.
"""

from __future__ import annotations

import numpy as np

from pickscale.kernel import score_station
from pickscale.metrics.calibration import brier, ece, reliability
from pickscale.metrics.curves import average_precision, best_threshold, default_budget, recall_at_budget
from pickscale.metrics.detection import duplicate_rate, extra_rate, f1, precision, recall, swap_rate
from pickscale.metrics.timing import ALONG, QUANTILE_NAMES, TIMING_NAMES, timing_sweep
from tests.helpers import brute
from tests.helpers.strategies import Case

__all__ = ["check_against_brute", "check_counts", "check_pairs", "check_invariants", "check_metrics", "run_kernel",
           "FIELDS_INT", "FIELDS_ALL"]

RTOL = 1e-12
ATOL = 1e-12

FIELDS_INT = (
    "n_reference",
    "emitted",
    "matched",
    "duplicates",
    "swapped",
    "fine_emitted",
    "fine_matched",
    "cal_n",
    "cal_hits",
)
FIELDS_ALL = FIELDS_INT + (
    "cal_conf",
    "brier_sum",
    "pair_model",
    "pair_phase",
    "pair_residual_ns",
    "pair_conf",
)



def run_kernel(case: Case):
    return score_station(*case.arrays, n_models=case.n_models, options=case.options)


def close(got, expected, what, atol=0.0):
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64),
        rtol=RTOL, atol=atol, equal_nan=True, err_msg=what,
    )  # fmt: skip


def exact(got, expected, what):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected), err_msg=what)


def check_counts(r, b, case):
    for name in FIELDS_INT:
        exact(getattr(r, name), getattr(b, name), name)
    close(r.cal_conf, b.cal_conf, "cal_conf")
    close(r.brier_sum, b.brier_sum, "brier_sum")
    assert len(case.options.fine) == len(b.fine)
    exact(case.options.fine, b.fine, "fine grid")


def check_pairs(r, b, case):
    # Sorted by (model, phase, residual, conf), as internals.md says.
    keys = list(zip(r.pair_model.tolist(), r.pair_phase.tolist(), r.pair_residual_ns.tolist(), r.pair_conf.tolist()))
    assert keys == sorted(keys), "pairs not sorted by (model, phase, residual, conf)"
    assert keys == b.floor_pairs, "pairs at the floor differ from the brute-force walk"
    # Prefix property of the residual matching: the kernel's pairs with conf >= θ
    # are exactly the pairs of a fresh walk over the picks >= θ.
    for m in range(case.n_models):
        for p in range(2):
            sel = (r.pair_model == m) & (r.pair_phase == p)
            for t, theta in enumerate(case.options.grid):
                keep = sel & (r.pair_conf >= theta)
                got = sorted(zip(r.pair_residual_ns[keep].tolist(), r.pair_conf[keep].tolist()))
                assert got == b.residuals[(m, p, t)], f"residual pairs m={m} p={p} θ={theta}"


def check_invariants(r, b, case):
    # Every arrival is matched or not: matched + unmatched arrivals = n_reference
    # (the unmatched count comes from the walk's arrival side).
    n_ref = r.n_reference[None, :, None]
    exact(r.matched + b.unmatched_arrivals, np.broadcast_to(n_ref, r.matched.shape), "matched + unmatched")
    # matched + extra = emitted, extra counted on the walk's pick side (picks in no pair).
    exact(r.matched + b.extra, r.emitted, "matched + extra")
    extra = r.emitted - r.matched
    assert (r.duplicates <= extra).all() and (r.duplicates >= 0).all()
    # A swapped arrival is an unmatched arrival.
    assert (r.swapped <= n_ref - r.matched).all()
    # Monotone in θ: emitted and matched never rise.
    for name in ("emitted", "matched", "fine_emitted", "fine_matched"):
        assert (np.diff(getattr(r, name), axis=-1) <= 0).all(), name
    # Calibration covers exactly the picks >= floor, hits = matched at the floor.
    exact(r.cal_n.sum(-1), r.emitted[..., 0], "cal_n total = emitted at floor")
    exact(r.cal_hits.sum(-1), r.matched[..., 0], "cal_hits total = matched at floor")
    # The fine curve agrees with the sweep wherever a grid value is a fine point.
    fine = list(case.options.fine)
    for t, theta in enumerate(case.options.grid):
        if theta in fine:
            k = fine.index(theta)
            exact(r.fine_emitted[..., k], r.emitted[..., t], f"fine vs grid emitted at {theta}")
            exact(r.fine_matched[..., k], r.matched[..., t], f"fine vs grid matched at {theta}")


def check_metrics(r, b, case):
    o = case.options
    grid = list(o.grid)
    T = len(grid)
    for m in range(case.n_models):
        for p in range(2):
            n_ref = int(b.n_reference[p])
            n_ref_k = np.full(T, r.n_reference[p])
            em, ma, du = r.emitted[m, p], r.matched[m, p], r.duplicates[m, p]
            bem, bma, bdu = b.emitted[m, p], b.matched[m, p], b.duplicates[m, p]

            # §4 rates: one integer division each -> exact.
            got_r, got_p, got_f = recall(ma, n_ref_k), precision(ma, em, n_ref_k), f1(ma, n_ref_k, em)
            exp_r = [brute.recall(bma[t], n_ref) for t in range(T)]
            exp_p = [brute.precision_lb(bma[t], bem[t], n_ref) for t in range(T)]
            exp_f = [brute.f1_lb(bma[t], n_ref, bem[t]) for t in range(T)]
            exact(got_r, exp_r, "recall")
            exact(got_p, exp_p, "precision_lb")
            exact(got_f, exp_f, "f1_lb")
            exact(extra_rate(em, ma, n_ref_k), [brute.extra_rate(bem[t], bma[t], n_ref) for t in range(T)],
                  "extra_rate")
            exact(duplicate_rate(du, ma), [brute.duplicate_rate(bdu[t], bma[t]) for t in range(T)], "duplicate_rate")

            # §7 readings on the sweep grid.
            exact(
                np.array(best_threshold(o.grid, got_f, got_r, got_p), dtype=np.float64),
                np.array(brute.best_threshold(grid, exp_f, exp_r, exp_p), dtype=np.float64),
                "best_threshold",
            )
            # §7 readings on the fine curve.
            fe, fm = r.fine_emitted[m, p], r.fine_matched[m, p]
            close(average_precision(fe, fm, n_ref),
                  brute.average_precision(b.fine_emitted[m, p], b.fine_matched[m, p], n_ref), "ap_lb")
            top = int(b.fine_emitted[m, p].max(initial=0))
            for budget in sorted({0, 1, top // 2, max(top - 1, 0), top, top + 1}):
                close(
                    recall_at_budget(fe, fm, n_ref, budget),
                    brute.recall_at_budget(b.fine_emitted[m, p], b.fine_matched[m, p], n_ref, budget),
                    f"recall_at_budget({budget})",
                )

            # §5 timing at every θ, from the kernel's pairs of this (model, phase).
            sel = (r.pair_model == m) & (r.pair_phase == p)
            sweep = timing_sweep(r.pair_residual_ns[sel], r.pair_conf[sel], o.grid, tol=o.tol)
            refs = [brute.timing_stats([e for e, _c in b.residuals[(m, p, t)]], o.tol) for t in range(T)]
            got = {}  # fraction_within is one array along WITHIN; the brute's, one column per bound
            for name in TIMING_NAMES + QUANTILE_NAMES:
                if name in ALONG:
                    got.update({f"{name}_{w:g}": sweep[name][:, k] for k, w in enumerate(ALONG[name][1])})
                else:
                    got[name] = sweep[name]
            for name in brute.TIMING_NAMES + QUANTILE_NAMES:
                ref = [x[name] for x in refs]
                what = f"{name} m={m} p={p} over θ={grid}"
                if name not in ("medae", "bias"):
                    exact(got[name], ref, what)  # counts, count/n, the exact means and quantiles: rounded once
                else:
                    close(got[name], ref, what, atol=ATOL)

            # §6 calibration from the kernel's bins.
            # SPEC §4: without arrivals of the phase, observed_lb, ece_lb and brier_lb are NaN (n_reference given).
            n_b, mean_conf, observed = reliability(r.cal_n[m, p], r.cal_conf[m, p], r.cal_hits[m, p],
                                                   r.n_reference[p])
            bn, bmc, bob = brute.reliability(b.cal_n[m, p], b.cal_conf[m, p], b.cal_hits[m, p], n_reference=n_ref)
            exact(n_b, bn, "reliability n")
            close(mean_conf, bmc, "mean_conf")
            exact(observed, bob, "observed_lb")
            close(ece(r.cal_n[m, p], r.cal_conf[m, p], r.cal_hits[m, p], r.n_reference[p]),
                  brute.ece(b.cal_n[m, p], b.cal_conf[m, p], b.cal_hits[m, p], n_reference=n_ref), "ece_lb",
                  atol=ATOL)  # fmt: skip
            close(brier(r.brier_sum[m, p], r.cal_n[m, p].sum(), r.n_reference[p]),
                  brute.brier(b.brier_sum[m, p], int(b.cal_n[m, p].sum()), n_reference=n_ref),
                  "brier_lb")  # fmt: skip

        # phase_quality swap rate, both phases.
        exact(
            swap_rate(r.swapped[m, 0], r.swapped[m, 1], np.full(T, r.n_reference[0]), np.full(T, r.n_reference[1])),
            [brute.swap_rate(b.swapped[m, 0, t], b.swapped[m, 1, t], b.n_reference[0], b.n_reference[1])
             for t in range(T)],
            "swap_rate",
        )

    # Default budget over the models that picked at all (SPEC §2 "models of a dataset").
    present = [m for m in range(case.n_models) if b.cal_n[m].sum() > 0]
    for p in range(2 if present else 0):
        got = default_budget(int(r.n_reference[p]), r.fine_emitted[present, p, 0])
        assert got == brute.default_budget(int(b.n_reference[p]), [b.fine_emitted[m, p, 0] for m in present])


def check_against_brute(case) -> None:
    """The kernel and the metrics against brute force: counts, pairs, invariants, metrics."""
    r = run_kernel(case)
    b = brute.score_station_with(case.options, *case.arrays, n_models=case.n_models)
    check_counts(r, b, case)
    check_pairs(r, b, case)
    check_invariants(r, b, case)
    check_metrics(r, b, case)
