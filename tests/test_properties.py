"""Property tests: the kernel and the metrics equal the brute force of ``tests/brute.py``.

Stations are small and *quantised* -- times on a 0.1 s or 0.25 s lattice (plus
an occasional ±1 ns nudge), confidences multiples of 0.1 or 0.05 that include
exact grid values, tolerances from a short list -- so that exact ties (equal
conf, equal time, equidistant arrivals), distances of exactly ``tol`` and
confidences exactly on a threshold happen in most examples instead of almost
never.  Half of the stations sit at an epoch-scale offset where float64 cannot
hold a nanosecond.

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
* invariants, and bit-for-bit invariance under any permutation of input rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pickscale.kernel import score_station
from pickscale.matching import greedy_match
from pickscale.metrics.calibration import brier, ece, reliability
from pickscale.metrics.curves import average_precision, best_threshold, default_budget, recall_at_budget
from pickscale.metrics.detection import duplicate_rate, extra_rate, f1, precision, recall, swap_rate
from pickscale.metrics.timing import TIMING_NAMES, timing_sweep
from pickscale.options import Options
from tests.helpers import brute

RTOL = 1e-12
ATOL = 1e-12
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

STEPS_NS = [100_000_000, 250_000_000]  # time lattice: 0.1 s or 0.25 s
OFFSETS_NS = [0, 1_700_000_000 * 10**9]  # 1970, and late 2023 (float64 spacing 256 ns)
JITTER_NS = [0, 0, 0, 0, 0, 0, 1, -1]  # mostly on the lattice, sometimes 1 ns off it
# First entries are what hypothesis draws (and shrinks to) most: put the defaults first.
TOLS = [0.5, 0.25, 1.0, 0.1, 0.0]
RESIDUAL_TOLS = [2.0, 0.5, 1.0, 0.25, 0.1]
SMALL_GRID = [0.1, 0.3, 0.5, 0.7]

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


@dataclass
class Case:
    options: Options
    n_models: int
    arrival_phase: np.ndarray
    arrival_time: np.ndarray
    pick_model: np.ndarray
    pick_phase: np.ndarray
    pick_time: np.ndarray
    pick_conf: np.ndarray

    @property
    def arrays(self):
        return (
            self.arrival_phase,
            self.arrival_time,
            self.pick_model,
            self.pick_phase,
            self.pick_time,
            self.pick_conf,
        )


@st.composite
def options_st(draw):
    tol = draw(st.sampled_from(TOLS))
    rtol = draw(st.sampled_from([r for r in RESIDUAL_TOLS if r >= tol]))
    kind = draw(st.sampled_from(["default", "small", "random"]))
    if kind == "default":
        grid = None
    elif kind == "small":
        grid = SMALL_GRID
    else:
        # A few multiples of 0.05 (k/20 is the float64 nearest to the decimal,
        # same as the confidences below), possibly including 0 and 1.
        ks = draw(st.lists(st.integers(0, 20), min_size=1, max_size=5, unique=True))
        grid = sorted(k / 20 for k in ks)
        # The shared threshold taken from the grid, so that floors above the
        # default 0.3 (up to 1.0, a one-point fine curve) occur too.
        return Options(threshold=draw(st.sampled_from(grid)), thresholds=grid, tol=tol, residual_tol=rtol)
    return Options(thresholds=grid, tol=tol, residual_tol=rtol)


@st.composite
def stations(draw):
    options = draw(options_st())
    step = draw(st.sampled_from(STEPS_NS))
    offset = draw(st.sampled_from(OFFSETS_NS))
    # Few lattice points for many rows: arrivals and picks crowd together, so
    # taken arrivals, duplicates, swaps and ties are common.
    n_slots = draw(st.integers(2, 12))
    n_models = draw(st.integers(1, 3))
    conf_den = draw(st.sampled_from([10, 20]))  # conf = c/10 or c/20

    # Arrivals: unique per (phase, time) -- SPEC §1 keeps duplicate reference
    # rows once before anything is scored.
    arrival_keys = draw(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, n_slots), st.sampled_from(JITTER_NS)),
                 min_size=1, max_size=8, unique_by=lambda k: (k[0], k[1], k[2]))
    )  # fmt: skip
    picks = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_models - 1),
                st.integers(0, 1),
                st.integers(-2, n_slots + 2),
                st.sampled_from(JITTER_NS),
                st.integers(0, conf_den),
            ),
            min_size=1,
            max_size=14,
        )
    )
    arrival_keys, picks = list(arrival_keys), list(picks)  # extended below; do not mutate drawn values
    # Equidistant set-ups (arrivals at s-k and s+k, a pick at s), which random
    # placement produces only rarely; SPEC §3 then wants the earlier arrival.
    for phase, s, k, model, c in draw(
        st.lists(
            st.tuples(st.integers(0, 1), st.integers(0, n_slots), st.integers(1, 3),
                      st.integers(0, n_models - 1), st.integers(0, conf_den)),
            max_size=2,
        )
    ):  # fmt: skip
        for key in ((phase, s - k, 0), (phase, s + k, 0)):
            if key not in arrival_keys:
                arrival_keys.append(key)
        picks.append((model, phase, s, 0, c))
    # Some exact duplicate pick rows: SPEC §1 keeps them.
    if picks:
        picks = picks + [picks[i] for i in draw(st.lists(st.integers(0, len(picks) - 1), max_size=3))]

    return Case(
        options=options,
        n_models=n_models,
        arrival_phase=np.array([a[0] for a in arrival_keys], dtype=np.int8),
        arrival_time=np.array([offset + a[1] * step + a[2] for a in arrival_keys], dtype=np.int64),
        pick_model=np.array([p[0] for p in picks], dtype=np.int32),
        pick_phase=np.array([p[1] for p in picks], dtype=np.int8),
        pick_time=np.array([offset + p[2] * step + p[3] for p in picks], dtype=np.int64),
        pick_conf=np.array([p[4] / conf_den for p in picks], dtype=np.float64),
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


# ------------------------------------------------------------------ matching


@settings(max_examples=300, **SETTINGS)
@given(data=st.data())
def test_greedy_match_equals_the_walk(data):
    # Arrivals sorted with repeats allowed (the function's contract), picks in
    # any order.  Identical picks (same time and conf) are interchangeable, so
    # compare the multiset of (time, conf, arrival) rather than per row.
    step = data.draw(st.sampled_from(STEPS_NS))
    offset = data.draw(st.sampled_from(OFFSETS_NS))
    arrivals = sorted(
        offset + s * step + j
        for s, j in data.draw(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(JITTER_NS)), max_size=8))
    )
    picks = data.draw(
        st.lists(st.tuples(st.integers(0, 20), st.sampled_from(JITTER_NS), st.integers(0, 20)), max_size=12)
    )
    tol_ns = round(data.draw(st.sampled_from(TOLS + RESIDUAL_TOLS)) * 1e9)
    times = np.array([offset + s * step + j for s, j, _ in picks], dtype=np.int64)
    conf = np.array([c / 20 for _, _, c in picks], dtype=np.float64)

    got = greedy_match(np.array(arrivals, dtype=np.int64), times, conf, tol_ns=tol_ns)
    ref = brute.walk(arrivals, list(zip(times.tolist(), conf.tolist())), tol_ns)

    assert got.shape == (len(picks),) and got.dtype == np.int64
    assert sorted(zip(times.tolist(), conf.tolist(), got.tolist())) == sorted(
        zip(times.tolist(), conf.tolist(), ref)
    )
    # No arrival taken twice; every pair within tol.
    taken = [i for i in got.tolist() if i != -1]
    assert len(taken) == len(set(taken))
    for q, i in zip(times.tolist(), got.tolist()):
        if i != -1:
            assert abs(q - arrivals[i]) <= tol_ns


# ------------------------------------------------------------------ kernel = brute force


def _check_counts(r, b, case):
    for name in FIELDS_INT:
        exact(getattr(r, name), getattr(b, name), name)
    close(r.cal_conf, b.cal_conf, "cal_conf")
    close(r.brier_sum, b.brier_sum, "brier_sum")
    assert len(case.options.fine) == len(b.fine)
    exact(case.options.fine, b.fine, "fine grid")


def _check_pairs(r, b, case):
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


def _check_invariants(r, b, case):
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


def _check_metrics(r, b, case):
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
            got_r, got_p, got_f = recall(ma, n_ref_k), precision(ma, em), f1(ma, n_ref_k, em)
            exp_r = [brute.recall(bma[t], n_ref) for t in range(T)]
            exp_p = [brute.precision_lb(bma[t], bem[t]) for t in range(T)]
            exp_f = [brute.f1_lb(bma[t], n_ref, bem[t]) for t in range(T)]
            exact(got_r, exp_r, "recall")
            exact(got_p, exp_p, "precision_lb")
            exact(got_f, exp_f, "f1_lb")
            exact(extra_rate(em, ma, n_ref_k), [brute.extra_rate(bem[t], bma[t], n_ref) for t in range(T)], "extra_rate")
            exact(duplicate_rate(du, ma), [brute.duplicate_rate(bdu[t], bma[t]) for t in range(T)], "duplicate_rate")

            # §7 readings on the sweep grid.
            exact(
                np.array(best_threshold(o.grid, got_f, got_r, got_p), dtype=np.float64),
                np.array(brute.best_threshold(grid, exp_f, exp_r, exp_p), dtype=np.float64),
                "best_threshold",
            )
            # §7 readings on the fine curve.
            fe, fm = r.fine_emitted[m, p], r.fine_matched[m, p]
            close(average_precision(fe, fm, n_ref), brute.average_precision(b.fine_emitted[m, p], b.fine_matched[m, p], n_ref), "ap_lb")
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
            for name in TIMING_NAMES:
                ref = [x[name] for x in refs]
                what = f"{name} m={m} p={p} over θ={grid}"
                if name in ("n", "gross_error_rate", "within_0.1", "within_0.25", "within_0.5"):
                    exact(sweep[name], ref, what)  # counts and count/n
                else:
                    close(sweep[name], ref, what, atol=ATOL)

            # §6 calibration from the kernel's bins.
            n_b, mean_conf, observed = reliability(r.cal_n[m, p], r.cal_conf[m, p], r.cal_hits[m, p])
            bn, bmc, bob = brute.reliability(b.cal_n[m, p], b.cal_conf[m, p], b.cal_hits[m, p])
            exact(n_b, bn, "reliability n")
            close(mean_conf, bmc, "mean_conf")
            exact(observed, bob, "observed_lb")
            close(ece(r.cal_n[m, p], r.cal_conf[m, p], r.cal_hits[m, p]),
                  brute.ece(b.cal_n[m, p], b.cal_conf[m, p], b.cal_hits[m, p]), "ece_lb", atol=ATOL)  # fmt: skip
            close(brier(r.brier_sum[m, p], r.cal_n[m, p].sum()),
                  brute.brier(b.brier_sum[m, p], int(b.cal_n[m, p].sum())), "brier_lb")  # fmt: skip

        # phase_quality swap rate, both phases.
        exact(
            swap_rate(r.swapped[m, 0], r.swapped[m, 1], np.full(T, r.n_reference[0]), np.full(T, r.n_reference[1])),
            [brute.swap_rate(b.swapped[m, 0, t], b.swapped[m, 1, t], b.n_reference[0], b.n_reference[1]) for t in range(T)],
            "swap_rate",
        )

    # Default budget over the models that picked at all (SPEC §2 "models of a dataset").
    present = [m for m in range(case.n_models) if b.cal_n[m].sum() > 0]
    for p in range(2 if present else 0):
        got = default_budget(int(r.n_reference[p]), r.fine_emitted[present, p, 0])
        assert got == brute.default_budget(int(b.n_reference[p]), [b.fine_emitted[m, p, 0] for m in present])


def _check_against_brute(case) -> None:
    """The kernel and the metrics against brute force: counts, pairs, invariants, metrics."""
    r = run_kernel(case)
    b = brute.score_station_with(case.options, *case.arrays, n_models=case.n_models)
    _check_counts(r, b, case)
    _check_pairs(r, b, case)
    _check_invariants(r, b, case)
    _check_metrics(r, b, case)


@settings(max_examples=200, **SETTINGS)
@given(case=stations())
def test_kernel_and_metrics_equal_brute_force(case):
    _check_against_brute(case)


def _empty_cases():
    # The strategy always draws at least one arrival and one pick; the empty
    # sides are pinned here instead, through the same comparisons.
    s = 10**9
    i8, i32, i64, f64 = np.int8, np.int32, np.int64, np.float64
    no = dict(arrival_phase=np.zeros(0, i8), arrival_time=np.zeros(0, i64))
    some = dict(arrival_phase=np.array([0, 1], i8), arrival_time=np.array([10 * s, 12 * s], i64))
    none = dict(pick_model=np.zeros(0, i32), pick_phase=np.zeros(0, i8), pick_time=np.zeros(0, i64), pick_conf=np.zeros(0, f64))
    picks = dict(pick_model=np.array([0, 1], i32), pick_phase=np.array([0, 0], i8),
                 pick_time=np.array([10 * s, 11 * s], i64), pick_conf=np.array([0.5, 0.05], f64))  # fmt: skip
    for opts in (Options(), Options(thresholds=SMALL_GRID)):
        yield Case(options=opts, n_models=2, **no, **none)
        yield Case(options=opts, n_models=2, **no, **picks)
        yield Case(options=opts, n_models=2, **some, **none)
        yield Case(options=opts, n_models=2, **some, **picks)


def test_empty_sides_equal_brute_force():
    for case in _empty_cases():
        _check_against_brute(case)


def test_wide_time_span_equals_brute_force():
    # One station with rows in 1970 and in 2043 (2**61 ns apart) and 3 models:
    # the kernel cannot put all six (model, phase) groups on one int64 axis and
    # must split them; the answer must not change.
    s = 10**9
    far = 2**61
    arrival_time = np.array([10 * s, 12 * s, far + 10 * s, far + 12 * s], np.int64)
    arrival_phase = np.array([0, 1, 0, 1], np.int8)
    pick_model, pick_phase, pick_time, pick_conf = [], [], [], []
    for m in range(3):
        for base in (0, far):
            for phase, dt, c in ((0, 10.2, 0.9), (0, 10.4, 0.6), (1, 12.5, 0.7), (0, 12.3, 0.8), (1, 9.9, 0.4)):
                pick_model.append(m)
                pick_phase.append(phase)
                pick_time.append(base + round(dt * s) + m)
                pick_conf.append(c)
    case = Case(
        options=Options(thresholds=SMALL_GRID),
        n_models=3,
        arrival_phase=arrival_phase,
        arrival_time=arrival_time,
        pick_model=np.array(pick_model, np.int32),
        pick_phase=np.array(pick_phase, np.int8),
        pick_time=np.array(pick_time, np.int64),
        pick_conf=np.array(pick_conf, np.float64),
    )
    r = run_kernel(case)
    b = brute.score_station_with(case.options, *case.arrays, n_models=case.n_models)
    _check_counts(r, b, case)
    _check_pairs(r, b, case)
    _check_metrics(r, b, case)
    assert r.matched.sum() > 0 and r.swapped.sum() > 0 and r.duplicates.sum() > 0


# ------------------------------------------------------------------ determinism (SPEC §9)


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_row_order_does_not_change_a_bit(data):
    case = data.draw(stations())
    a_perm = np.array(data.draw(st.permutations(range(case.arrival_time.size))), dtype=np.int64)
    p_perm = np.array(data.draw(st.permutations(range(case.pick_time.size))), dtype=np.int64)
    shuffled = Case(
        options=case.options,
        n_models=case.n_models,
        arrival_phase=case.arrival_phase[a_perm],
        arrival_time=case.arrival_time[a_perm],
        pick_model=case.pick_model[p_perm],
        pick_phase=case.pick_phase[p_perm],
        pick_time=case.pick_time[p_perm],
        pick_conf=case.pick_conf[p_perm],
    )
    r1, r2 = run_kernel(case), run_kernel(shuffled)
    for name in FIELDS_ALL:
        x, y = np.asarray(getattr(r1, name)), np.asarray(getattr(r2, name))
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"{name} changed under a row permutation"


def test_brute_grids_match_options():
    # brute.py's grids are written from SPEC §2/§7 independently of options.py.
    for threshold in (0.3, 0.25, 0.02, 0.95):
        np.testing.assert_array_equal(Options(threshold=threshold).grid, brute.default_grid(threshold))
    for floor in (0.0, 0.02, 0.1, 0.123, 1.0):
        np.testing.assert_array_equal(Options(thresholds=[floor], threshold=floor).fine, brute.fine_grid(floor))
    assert len(brute.fine_grid(0.02)) == 981
    assert not math.isnan(brute.ece([1] + [0] * 9, [0.05] + [0.0] * 9, [0] * 10))
