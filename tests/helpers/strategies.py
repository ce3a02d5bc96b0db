"""Hypothesis strategies for one station: small, *quantised* cases where exact ties happen.

Times on a 0.1 s or 0.25 s lattice (plus an occasional ±1 ns nudge),
confidences multiples of 0.1 or 0.05 that include exact grid values,
tolerances from a short list -- so that exact ties (equal conf, equal time,
equidistant arrivals), distances of exactly ``tol`` and confidences exactly on
a threshold happen in most examples instead of almost never.  Half of the
stations sit at an epoch-scale offset where float64 cannot hold a nanosecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from pickscale.options import Options

__all__ = ["Case", "options_st", "stations", "STEPS_NS", "OFFSETS_NS", "JITTER_NS", "TOLS", "RESIDUAL_TOLS",
           "SMALL_GRID"]

STEPS_NS = [100_000_000, 250_000_000]  # time lattice: 0.1 s or 0.25 s
OFFSETS_NS = [0, 1_700_000_000 * 10**9]  # 1970, and late 2023 (float64 spacing 256 ns)
JITTER_NS = [0, 0, 0, 0, 0, 0, 1, -1]  # mostly on the lattice, sometimes 1 ns off it
# First entries are what hypothesis draws (and shrinks to) most: put the defaults first.
TOLS = [0.5, 0.25, 1.0, 0.1, 0.0]
RESIDUAL_TOLS = [2.0, 0.5, 1.0, 0.25, 0.1]
SMALL_GRID = [0.1, 0.3, 0.5, 0.7]


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
