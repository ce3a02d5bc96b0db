"""Exact, order-free sums of confidences: fixed point in integer limbs.

A float sum depends on the order of its terms.  pickscale promises the same
bits whatever the row order, partitioning or time blocks (SPEC §9), so the two
float sums of the kernel — Σ conf per calibration bin and Σ (conf − hit)² —
are computed exactly in integers and rounded once.

A confidence is held as the fixed-point integer ``v = round(conf · 2**62)``,
exact for every float64 conf in [2**-10, 1] (their last bit is worth at least
2**-62); a smaller conf (only below a floor of 0.001) is rounded to the
nearest 2**-62, deterministically.  ``v`` is split into four 16-bit limbs, so
sums of limbs and of limb products fit int64 for up to 2**31 picks per bin.
"""

from __future__ import annotations

import numpy as np

__all__ = ["N_LIMBS", "N_PRODUCTS", "fixed", "sums", "conf_sum", "brier_sum"]

SCALE_BITS = 62
LIMB_BITS = 16
N_LIMBS = 4
_PAIRS = [(i, j) for i in range(N_LIMBS) for j in range(i, N_LIMBS)]
N_PRODUCTS = len(_PAIRS)  # 10
_MASK = (1 << LIMB_BITS) - 1


def fixed(conf: np.ndarray) -> np.ndarray:
    """``round(conf · 2**62)`` as int64 (exact for conf in [2**-10, 1]).

    Examples
    --------
    >>> int(fixed(np.array([0.5]))[0]) == 2**61
    True
    """
    return np.round(np.asarray(conf, dtype=np.float64) * float(1 << SCALE_BITS)).astype(np.int64)


def _limbs(v: np.ndarray) -> np.ndarray:
    return np.stack([(v >> (LIMB_BITS * i)) & _MASK for i in range(N_LIMBS)], axis=-1)


def _run_sums(values: np.ndarray, keys: np.ndarray, size: int) -> np.ndarray:
    """Σ values (rows) per key, in int64; each key forms one contiguous run."""
    out = np.zeros((size,) + values.shape[1:], dtype=np.int64)
    if keys.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    out[keys[starts]] = np.add.reduceat(values, starts, axis=0)
    return out


def _runs(conf: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal (group, conf)."""
    n = conf.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(conf[1:], conf[:-1], out=change[1:])
    change[1:] |= group[1:] != group[:-1]
    starts = np.flatnonzero(change)
    return starts, np.diff(np.r_[starts, n])


def sums(conf, hit, group, cbin, n_groups: int):
    """Exact integer sums for one station: per (group, bin) limbs of Σv, per group limb
    products of Σv² and limbs of Σv over hits.

    Equal confidences of a group form runs (the kernel's canonical order is
    group, conf descending), so each distinct value is expanded into limbs
    once and weighted by its count.  Each value of ``group`` and of ``cbin``
    (= group · 10 + bin) must form one contiguous run.
    """
    conf = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(hit, dtype=bool)
    starts, counts = _runs(conf, group)
    limbs = _limbs(fixed(conf[starts]))
    weighted = limbs * counts[:, None]
    cal = _run_sums(weighted, cbin[starts], n_groups * 10)
    products = np.stack([limbs[:, i] * limbs[:, j] * counts for i, j in _PAIRS], axis=-1)
    sq = _run_sums(products, group[starts], n_groups)
    h_conf, h_group = conf[hit], group[hit]
    h_starts, h_counts = _runs(h_conf, h_group)
    hit_limbs = _run_sums(_limbs(fixed(h_conf[h_starts])) * h_counts[:, None], h_group[h_starts], n_groups)
    return cal, sq, hit_limbs


def _as_int(limb_sums: np.ndarray) -> np.ndarray:
    """Σ_i limb_i · 2**(16 i) as Python ints (object array over the leading axes)."""
    total = np.zeros(limb_sums.shape[:-1], dtype=object)
    for i in range(N_LIMBS):
        total = total + limb_sums[..., i].astype(object) * (1 << (LIMB_BITS * i))
    return total


def conf_sum(limb_sums: np.ndarray) -> np.ndarray:
    """Σ conf from the sums of its limbs, correctly rounded to float64.

    Examples
    --------
    >>> c = np.array([0.1, 0.2, 0.7])
    >>> cal, _, _ = sums(c, [0, 0, 0], np.zeros(3, int), np.zeros(3, int), 1)
    >>> float(conf_sum(cal[:1])[0]) == 1.0
    True
    """
    exact = _as_int(np.asarray(limb_sums))
    flat = [int(x) / (1 << SCALE_BITS) for x in exact.reshape(-1)]  # int / int rounds correctly
    return np.array(flat, dtype=np.float64).reshape(exact.shape)


def brier_sum(sq_sums: np.ndarray, hit_limb_sums: np.ndarray, n_hits: np.ndarray) -> np.ndarray:
    """Σ (conf − hit)² = Σ conf² − 2 Σ_hit conf + n_hits, exactly, rounded once.

    In units of 2**-124: ``Σv² − 2**63 · Σ_hit v + n_hits · 2**124``.
    """
    sq_sums = np.asarray(sq_sums)
    square = np.zeros(sq_sums.shape[:-1], dtype=object)
    for k, (i, j) in enumerate(_PAIRS):
        weight = (1 if i == j else 2) << (LIMB_BITS * (i + j))
        square = square + sq_sums[..., k].astype(object) * weight
    hit_sum = _as_int(np.asarray(hit_limb_sums))
    hits = np.asarray(n_hits).astype(object)
    numerator = square - hit_sum * (1 << (SCALE_BITS + 1)) + hits * (1 << (2 * SCALE_BITS))
    flat = [int(x) / (1 << (2 * SCALE_BITS)) for x in numerator.reshape(-1)]
    return np.array(flat, dtype=np.float64).reshape(numerator.shape)
