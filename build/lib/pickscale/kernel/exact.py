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

__all__ = ["N_LIMBS", "N_PRODUCTS", "fixed", "sums", "canonical", "canonical_limbs", "canonical_squares", "conf_sum",
           "brier_sum"]

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


def _runs(conf: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal (stream, conf)."""
    n = conf.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(conf[1:], conf[:-1], out=change[1:])
    change[1:] |= stream[1:] != stream[:-1]
    starts = np.flatnonzero(change)
    return starts, np.diff(np.r_[starts, n])


def sums(conf, hit, stream, cbin, n_streams: int):
    """Exact integer sums for one station: per (stream, bin) limbs of Σv, per stream limb
    products of Σv² and limbs of Σv over hits — all in canonical form (see :func:`canonical`).

    Equal confidences of a stream form runs (the kernel's canonical order is
    stream, conf descending), so each distinct value is expanded once and
    weighted by its count.  Each value of ``stream`` and of ``cbin``
    (= stream · 10 + bin) must form one contiguous run.
    """
    conf = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(hit, dtype=bool)
    starts, counts = _runs(conf, stream)
    v = fixed(conf[starts])
    h_conf, h_stream = conf[hit], stream[hit]
    h_starts, h_counts = _runs(h_conf, h_stream)
    h_v = fixed(h_conf[h_starts])
    if conf.size < _SHORT_MAX_PICKS and not (v & _SHORT_LOW).any():
        cal, square, hits = _short_sums(v, counts, cbin[starts], stream[starts], h_v, h_counts,
                                        h_stream[h_starts], n_streams)
    else:
        cal, square, hits = _limb_sums(v, counts, cbin[starts], stream[starts], h_v, h_counts,
                                       h_stream[h_starts], n_streams)
    return _limbs_of(cal), _digits_of(square), _limbs_of(hits)


# A confidence written as float32 (as pickers write them) and >= 2**-10 has at
# most 24 significant bits, so its v is a multiple of 2**29 and w = v >> 29 < 2**34
# (about 34 bits): sums of w, and of the three 17-bit half products of w², fit
# int64 for up to 2**28 picks without splitting v into four limbs.
_SHORT_SHIFT = 29
_SHORT_LOW = (1 << _SHORT_SHIFT) - 1
_SHORT_MAX_PICKS = 1 << 28
_HALF = 17


def _short_sums(v, counts, cbin, stream, h_v, h_counts, h_stream, n_streams):
    """Python-int totals (Σv per bin, Σv² per stream, Σ_hit v per stream) for short values."""
    w = v >> _SHORT_SHIFT
    a, b = w >> _HALF, w & ((1 << _HALF) - 1)
    cal = _run_sums(w * counts, cbin, n_streams * 10).astype(object) << _SHORT_SHIFT
    # w² = a²·2**34 + 2ab·2**17 + b²;  v² = w²·2**58.
    aa = _run_sums(a * a * counts, stream, n_streams).astype(object)
    ab = _run_sums(a * b * counts, stream, n_streams).astype(object)
    bb = _run_sums(b * b * counts, stream, n_streams).astype(object)
    square = ((aa << (2 * _HALF)) + (ab << (_HALF + 1)) + bb) << (2 * _SHORT_SHIFT)
    hits = _run_sums((h_v >> _SHORT_SHIFT) * h_counts, h_stream, n_streams).astype(object) << _SHORT_SHIFT
    return cal, square, hits


def _limb_sums(v, counts, cbin, stream, h_v, h_counts, h_stream, n_streams):
    """The same totals for any values: v in four 16-bit limbs, products of limbs summed in int64."""
    limbs = _limbs(v)
    cal = _as_int(_run_sums(limbs * counts[:, None], cbin, n_streams * 10))
    products = np.stack([limbs[:, i] * limbs[:, j] * counts for i, j in _PAIRS], axis=-1)
    square = _square_int(_run_sums(products, stream, n_streams))
    hits = _as_int(_run_sums(_limbs(h_v) * h_counts[:, None], h_stream, n_streams))
    return cal, square, hits


def _limbs_of(total: np.ndarray) -> np.ndarray:
    """Non-negative Python ints as canonical limb sums: three 16-bit limbs and the rest in the fourth."""
    out = np.zeros(total.shape + (N_LIMBS,), dtype=np.int64)
    for i in range(N_LIMBS - 1):
        out[..., i] = ((total >> (LIMB_BITS * i)) & _MASK).astype(np.int64)
    out[..., N_LIMBS - 1] = (total >> (LIMB_BITS * (N_LIMBS - 1))).astype(np.int64)
    return out


def _digits_of(total: np.ndarray) -> np.ndarray:
    """Non-negative Python ints (Σv²) as canonical product sums: base-2**32 digits in the
    diagonal products (i, i), whose weight is 2**(32 i); the other products zero."""
    out = np.zeros(total.shape + (N_PRODUCTS,), dtype=np.int64)
    for i in range(N_LIMBS):
        k = _PAIRS.index((i, i))
        digit = total >> (2 * LIMB_BITS * i)
        if i < N_LIMBS - 1:
            digit = digit & ((1 << (2 * LIMB_BITS)) - 1)
        out[..., k] = digit.astype(np.int64)
    return out


def canonical(limb_sums: np.ndarray, square_sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Limb and product sums in canonical form: the same totals give the same integers.

    Sums of several blocks' canonical forms represent the right totals but are
    not canonical themselves; this makes a merged result equal, bit for bit,
    to the result of the whole station.
    """
    return canonical_limbs(limb_sums), canonical_squares(square_sums)


def canonical_limbs(limb_sums: np.ndarray) -> np.ndarray:
    """Sums of limbs of Σv (last axis: the four limbs) in canonical form.

    Examples
    --------
    >>> canonical_limbs(np.array([[1 << 16, 0, 0, 0], [0, 1, 0, 0]])).tolist()  # the same total, twice
    [[0, 1, 0, 0], [0, 1, 0, 0]]
    """
    return _limbs_of(_as_int(np.asarray(limb_sums)))


def canonical_squares(square_sums: np.ndarray) -> np.ndarray:
    """Sums of limb products of Σv² (last axis: the ten products) in canonical form."""
    return _digits_of(_square_int(np.asarray(square_sums)))


def _as_int(limb_sums: np.ndarray) -> np.ndarray:
    """Σ_i limb_i · 2**(16 i) as Python ints (object array over the leading axes)."""
    total = np.zeros(limb_sums.shape[:-1], dtype=object)
    for i in range(N_LIMBS):
        total = total + limb_sums[..., i].astype(object) * (1 << (LIMB_BITS * i))
    return total


def _square_int(sq_sums: np.ndarray) -> np.ndarray:
    """Σ_k product_k · weight_k as Python ints: the Σv² that product sums stand for."""
    square = np.zeros(sq_sums.shape[:-1], dtype=object)
    for k, (i, j) in enumerate(_PAIRS):
        weight = (1 if i == j else 2) << (LIMB_BITS * (i + j))
        square = square + sq_sums[..., k].astype(object) * weight
    return square


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
    square = _square_int(np.asarray(sq_sums))
    hit_sum = _as_int(np.asarray(hit_limb_sums))
    hits = np.asarray(n_hits).astype(object)
    numerator = square - hit_sum * (1 << (SCALE_BITS + 1)) + hits * (1 << (2 * SCALE_BITS))
    flat = [int(x) / (1 << (2 * SCALE_BITS)) for x in numerator.reshape(-1)]
    return np.array(flat, dtype=np.float64).reshape(numerator.shape)
