"""The counts within their bounds (SPEC §4, §6, §10, §13, §14), the exact sums equal to their limbs, the residual
pairs in range and in canonical order."""

from __future__ import annotations

import pathlib
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ...kernel import FIELDS, Kind
from ...kernel.exact import LIMB_BITS, N_LIMBS, SCALE_BITS, brier_sum, conf_sum
from ...results.variables import VARIABLES
from .refusal import _refuse

if TYPE_CHECKING:
    from ...options import Options


def _on(ds: xr.Dataset, name: str, dims: Sequence[Hashable]) -> np.ndarray:
    """The values of ``name`` broadcastable against ``dims`` (a superset of its dims, in the same order).

    Every variable of results lays its dims out in one order (dataset, model, phase, …, station), checked by
    :func:`_check_layout`, so plain NumPy broadcasting serves (xarray's alignment per operation costs more
    than the comparisons themselves).
    """
    var = ds.variables[name]
    missing = [i for i, d in enumerate(dims) if d not in var.dims]
    return np.expand_dims(np.asarray(var.values), missing) if missing else np.asarray(var.values)


def _check_counts(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    integer = [str(name) for name in ds.data_vars
               if FIELDS.get(str(name)) in (Kind.COUNT, Kind.FINE, Kind.LIMBS, Kind.SQUARES)]
    for name in integer:
        _refuse(store, ds, name, ds.variables[name].values < 0, "must be >= 0 (a count)", dims=ds[name].dims)

    dmpts = VARIABLES["emitted"].dims
    n_ref = _on(ds, "n_reference", dmpts)
    emitted, matched = _on(ds, "emitted", dmpts), _on(ds, "matched", dmpts)
    _refuse(store, ds, "matched", matched > emitted, "must be <= emitted (matched picks are emitted picks)",
            dims=dmpts)
    _refuse(store, ds, "matched", matched > n_ref, "must be <= n_reference (each arrival takes at most one pick)",
            dims=dmpts)
    _refuse(store, ds, "duplicates", _on(ds, "duplicates", dmpts) > emitted - matched,
            "must be <= emitted - matched (a duplicate is an extra pick)", dims=dmpts)
    _refuse(store, ds, "swapped", _on(ds, "swapped", dmpts) > n_ref - matched,
            "must be <= n_reference - matched (a swapped arrival is one its own phase did not match)", dims=dmpts)
    t_axis = dmpts.index("threshold")
    for name in ("emitted", "matched", "duplicates"):
        # SPEC §3: the picks surviving a higher threshold are a prefix of those surviving a lower one.
        grows = np.diff(_on(ds, name, dmpts), axis=t_axis) > 0
        _refuse(store, ds, name, np.concatenate([np.zeros_like(grows[:, :, :, :1]), grows], axis=t_axis),
                "must not grow with the threshold (counts at a threshold are prefix counts, SPEC §3)", dims=dmpts)
    cal = VARIABLES["cal_n"].dims  # (dataset, model, phase, bin, station)
    cal_n, cal_hits = _on(ds, "cal_n", cal), _on(ds, "cal_hits", cal)
    at_floor = (emitted[:, :, :, 0], matched[:, :, :, 0])  # (dataset, model, phase, station)
    per_station = ("dataset", "model", "phase", "station")
    _refuse(store, ds, "cal_n", cal_n.sum(axis=3) != at_floor[0],
            "must add up over the bins to emitted at the floor (SPEC §6: every pick at or above the floor)",
            dims=per_station)
    _refuse(store, ds, "cal_hits", cal_hits.sum(axis=3) != at_floor[1],
            "must add up over the bins to matched at the floor (SPEC §6)", dims=per_station)
    _refuse(store, ds, "cal_hits", cal_hits > cal_n, "must be <= cal_n", dims=cal)

    ti = options.threshold_indices  # on the grid: checked by _check_layout; each phase's (SPEC §2)
    shared = {name: np.stack([values[:, :, p, ti[p]] for p in range(2)], axis=2)  # (dataset, model, phase, station)
              for name, values in (("emitted", emitted), ("matched", matched))}
    n_ref_s = n_ref[:, :, :, 0]  # (dataset, 1, phase, station)
    if options.time_bin is not None:  # SPEC §10: summed over the bins, exactly the counts at the threshold
        _refuse(store, ds, "n_reference_over_time", ds.variables["n_reference_over_time"].values.sum(axis=2)
                != ds.variables["n_reference"].values, "must add up over the time bins to n_reference (SPEC §10)",
                dims=("dataset", "phase", "station"))
        for name in ("emitted", "matched"):
            _refuse(store, ds, f"{name}_over_time", ds.variables[f"{name}_over_time"].values.sum(axis=3)
                    != shared[name], f"must add up over the time bins to {name} at the shared threshold (SPEC §10)",
                    dims=per_station)
    if options.group_by is not None:  # SPEC §14
        by_ref = ds.variables["n_reference_by_group"].values  # (dataset, phase, group, station)
        by_matched = ds.variables["matched_by_group"].values  # (dataset, model, phase, group, station)
        _refuse(store, ds, "n_reference_by_group", by_ref.sum(axis=2) != ds.variables["n_reference"].values,
                "must add up over the groups to n_reference (SPEC §14)", dims=("dataset", "phase", "station"))
        _refuse(store, ds, "matched_by_group", by_matched.sum(axis=3) != shared["matched"],
                "must add up over the groups to matched at the shared threshold (SPEC §14)", dims=per_station)
        _refuse(store, ds, "matched_by_group", by_matched > by_ref[:, None], "must be <= n_reference_by_group",
                dims=VARIABLES["matched_by_group"].dims)
    if options.tols is not None:  # SPEC §13
        at_tol = ds.variables["matched_at_tol"].values  # (dataset, model, phase, tol, station)
        tol_dims = VARIABLES["matched_at_tol"].dims
        _refuse(store, ds, "matched_at_tol", at_tol > shared["emitted"][:, :, :, None],
                "must be <= emitted at the shared threshold (SPEC §13)", dims=tol_dims)
        _refuse(store, ds, "matched_at_tol", at_tol > n_ref_s[:, :, :, None], "must be <= n_reference (SPEC §13)",
                dims=tol_dims)
        same = np.flatnonzero(np.asarray(options.tols_ns) == options.tol_ns)
        if same.size:
            _refuse(store, ds, "matched_at_tol", at_tol[:, :, :, int(same[0])] != shared["matched"],
                    "must equal matched at the shared threshold at tol itself (SPEC §13)", dims=per_station)

    # Absent models and unscored stations hold zeros (their metrics are NaN, not 0: they were not there).
    for name in [n for n in integer if FIELDS.get(n) is not Kind.FINE] + ["cal_conf", "brier_sum"]:
        dims = ds[name].dims
        outside = ~_on(ds, "station_scored", dims)
        if "model" in dims:
            outside = outside | ~_on(ds, "model_present", dims)
        _refuse(store, ds, name, (ds.variables[name].values != 0) & outside,
                "must be 0 for a model absent from a dataset and at a station not scored there", dims=dims)

    # SPEC §7: the fine curve is the same prefix counts at k/1000; where a grid threshold is on it, it is
    # exactly the summed counts there.
    fine_dims = VARIABLES["fine_emitted"].dims  # (dataset, model, phase, fine_threshold)
    fe, fm = ds.variables["fine_emitted"].values, ds.variables["fine_matched"].values
    absent = ~_on(ds, "model_present", fine_dims)
    for name, values in (("fine_emitted", fe), ("fine_matched", fm)):
        _refuse(store, ds, name, (values != 0) & absent, "must be 0 for a model absent from a dataset",
                dims=fine_dims)
    _refuse(store, ds, "fine_matched", fm > fe, "must be <= fine_emitted", dims=fine_dims)
    _refuse(store, ds, "fine_matched", fm > n_ref_s.sum(axis=-1)[..., None],
            "must be <= n_reference summed over stations", dims=fine_dims)
    for name, values in (("fine_emitted", fe), ("fine_matched", fm)):
        grows = np.diff(values, axis=-1) > 0
        _refuse(store, ds, name, np.concatenate([np.zeros_like(grows[..., :1]), grows], axis=-1),
                "must not grow with the threshold (SPEC §7)", dims=fine_dims)
    fine = np.asarray(ds["fine_threshold"].values)
    grid = np.asarray(ds["threshold"].values)
    on = np.flatnonzero(np.isin(grid, fine))
    if on.size:
        where = np.searchsorted(fine, grid[on])  # exact: np.isin matched these values
        for name, values, counts in (("fine_emitted", fe, emitted), ("fine_matched", fm, matched)):
            summed = counts[:, :, :, on].sum(axis=-1)  # (dataset, model, phase, grid thresholds on the curve)
            bad = np.zeros(values.shape, dtype=bool)
            bad[..., where] = values[..., where] != summed
            _refuse(store, ds, name, bad, f"must equal {name.removeprefix('fine_')} summed over stations at each "
                    "grid threshold on the fine curve (SPEC §7)", dims=fine_dims)


def _check_exact_sums(store: pathlib.Path, ds: xr.Dataset) -> None:
    """``cal_conf`` and ``brier_sum`` are what their exact limbs give, rounded once (``kernel/combine.py``)."""
    cal_n = ds["cal_n"]
    n_all = cal_n.sum("bin")
    if not all(name in ds for name in ("cal_conf_limbs", "conf_sq_sums", "hit_conf_limbs")):
        # A store written before the exact sums were kept: only what the sums can be.
        _refuse(store, ds, "cal_conf", ~((ds["cal_conf"] >= 0) & (ds["cal_conf"] <= cal_n)),
                "must lie in [0, cal_n] (a sum of confidences in [0, 1])")
        _refuse(store, ds, "brier_sum", ~((ds["brier_sum"] >= 0) & (ds["brier_sum"] <= n_all)),
                "must lie in [0, the picks at or above the floor]")
        return
    limbs = ds["cal_conf_limbs"]
    hits = ds["hit_conf_limbs"]
    mask = (1 << LIMB_BITS) - 1
    for name, var in (("cal_conf_limbs", limbs), ("hit_conf_limbs", hits)):
        low = var.isel(limb=slice(0, N_LIMBS - 1))
        _refuse(store, ds, name, (low < 0) | (low > mask),
                f"must be in canonical form (its first {N_LIMBS - 1} limbs in [0, 2^{LIMB_BITS}))")

    # cal_conf = Σ_i limb_i 2^(16 i) / 2^62, correctly rounded.  Vectorised and exact: with the limbs canonical,
    # the total is hi·2^32 + lo with lo < 2^32 and, for any realistic sum (hi < 2^53, fewer than ~2^23 picks
    # of one bin at one station), hi exact in float64 -- then one float64 addition rounds the total correctly
    # (IEEE addition of two exact values) and dividing by 2^62 is exact.  Larger cells go the exact way.
    lv = limbs.transpose(..., "limb").values.astype(np.int64)
    big = lv[..., 3] >= (1 << 37)
    hi = np.where(big, 0, lv[..., 3]) * (1 << LIMB_BITS) + lv[..., 2]
    lo = lv[..., 1] * (1 << LIMB_BITS) + lv[..., 0]
    want = (hi.astype(np.float64) * float(1 << 32) + lo.astype(np.float64)) / float(1 << SCALE_BITS)
    if big.any():
        want[big] = conf_sum(lv[big])
    dims = [d for d in limbs.dims if d != "limb"]
    have = ds["cal_conf"].transpose(*dims).values
    _refuse(store, ds, "cal_conf", have != want, "must equal the sum its exact limbs cal_conf_limbs give "
            "(rounded once)", dims=dims)

    # brier_sum: exact, in Python integers, for the cells with picks (the others are 0: checked above).
    sq = ds["conf_sq_sums"].transpose(..., "product")
    hv = hits.transpose(..., "limb")
    n_hits = ds["cal_hits"].sum("bin").transpose(*sq.dims[:-1])
    have_b = ds["brier_sum"].transpose(*sq.dims[:-1]).values
    busy = n_all.transpose(*sq.dims[:-1]).values > 0
    want_b = np.zeros(have_b.shape, dtype=np.float64)
    if busy.any():
        want_b[busy] = brier_sum(sq.values[busy], hv.values[busy], n_hits.values[busy])
    _refuse(store, ds, "brier_sum", have_b != want_b, "must equal what its exact sums conf_sq_sums, hit_conf_limbs "
            "and cal_hits give (rounded once)", dims=sq.dims[:-1])
