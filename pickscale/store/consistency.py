"""What a results store guarantees on opening: its numbers agree with its counts (SPEC §15).

The manifest (:mod:`~pickscale.store.manifest`) catches accidents -- a file
copied in part, a flipped bit -- but not edits: whoever rewrites a value and
the manifest after it has a store that passes every hash.  Such a store could
say two things at once: ``pickscale report`` prints the stored ``recall``
while ``pickscale extend`` derives it again from the counts.  So
:func:`check_results`, called by :func:`pickscale.store.open_results` on every
store of results, refuses a store whose numbers contradict each other:

- **attributes** the code relies on: ``options`` (they parse through
  :meth:`pickscale.options.Options.from_attrs`, and the coordinates are the
  ones they give: the threshold grid with the shared threshold on it, the fine
  curve, tolerances, groups, time bins), ``extent`` (the shape
  :mod:`pickscale.engine.extension` documents), ``bootstrap``, ``extensions``
  and ``warnings``;
- **layout**: every count variable the options call for, with its dims and an
  integer type; labels unique and sorted;
- **counts**: non-negative; ``matched <= emitted``, ``matched <= n_reference``,
  ``duplicates <= emitted - matched``, ``swapped <= n_reference - matched`` per
  station (so summed too); emitted, matched and duplicates non-increasing in the
  threshold (SPEC §3: prefix counts); calibration bins adding up to the counts
  at the floor; time bins, groups and ``tols`` adding up as SPEC §10, §13, §14
  say; absent models and unscored stations holding zeros; the fine curve equal
  to the summed counts wherever a grid threshold is on it;
- **exact sums**: ``cal_conf`` and ``brier_sum`` equal, bit for bit, what their
  limbs give (:func:`pickscale.kernel.combine.finalize`), the limbs canonical;
- **pairs**: indices in range, of present models at scored stations, residuals
  within ``residual_tol``, confidences in ``[floor, 1]``, in canonical order,
  and no more pairs than emitted picks or arrivals at any threshold;
- **every derived variable** equal, bit for bit (NaN where NaN), to what
  :func:`pickscale.results.derived.derive` gives from the stored counts: the
  store keeps its metrics, but they must be the counts' (see :func:`_check_derived`);
- **intervals** (SPEC §12, which cannot be drawn again cheaply): ``lo <= hi``
  where both are finite, NaN where the estimate is NaN, rates and their
  differences in ``[0, 1]`` and ``[-1, 1]``.

A store that breaks one is refused with a :class:`~pickscale.errors.StoreError`
naming the store, the variable, the first few offending cells (dataset, model,
phase, threshold, station …) and how many there are.  Every check is
vectorised over the arrays; the only loops are those of the derivation itself
(per dataset, model and phase, as when scoring).

A Dataset that is not pickscale results (no ``model_present`` or
``station_scored``, no ``extent``, not titled "pickscale results") is any
Dataset :func:`pickscale.store.save` was given: it is not checked.
"""

from __future__ import annotations

import pathlib
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from pickscale import __version__
from pickscale.errors import PickscaleError, StoreError

if TYPE_CHECKING:
    from ..options import Options

__all__ = ["check_results", "is_results", "stored_options"]

#: How many offending cells a message shows.
_SHOWN = 3
#: Markers of a results Dataset (what :func:`pickscale.score` returns): a store holding one is checked.
_RESULT_VARIABLES = ("model_present", "station_scored")
_TITLE = "pickscale results"
#: Detection rates of SPEC §4 whose bootstrap interval is a plain percentile interval (moved by exactly 0).
_RATE_INTERVALS = ("recall", "precision_lb", "f1_lb")


def is_results(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is pickscale results (and so is checked), rather than any Dataset saved.

    Examples
    --------
    >>> is_results(xr.Dataset({"n": ("x", [1])})), is_results(xr.Dataset({"model_present": ("x", [True])}))
    (False, True)
    """
    return (any(name in ds.variables for name in _RESULT_VARIABLES) or "extent" in ds.attrs
            or ds.attrs.get("title") == _TITLE)


def check_results(store: pathlib.Path, ds: xr.Dataset) -> None:
    """Refuse a results store whose attributes or numbers contradict each other (module docstring).

    Parameters
    ----------
    store : pathlib.Path
        The store's folder, for the messages.
    ds : xarray.Dataset
        Its contents, loaded.  Not modified.

    Raises
    ------
    StoreError
        Naming the store, the attribute or variable, what was expected and the
        first offending cells with their count.
    """
    if not is_results(ds):
        return
    options = stored_options(store, ds.attrs)
    _check_attributes(store, ds)
    _check_layout(store, ds, options)
    _check_counts(store, ds, options)
    _check_exact_sums(store, ds)
    _check_pairs(store, ds, options)
    _check_derived(store, ds, options)
    _check_intervals(store, ds, options)


# --------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------


def _edited(attrs: Mapping[str, Any]) -> str:
    """What the refusal means, and what to do."""
    written = attrs.get("pickscale_version")
    other = (f" (pickscale {written} wrote it, this is {__version__}: a metric whose rule changed since then "
             "differs from the stored one)") if written and written != __version__ else ""
    return (f"; the store was changed after it was written (its manifest written again to match), or written by a "
            f"faulty or other pickscale{other} — re-run `pickscale score` to write it again")


def _bad_attribute(store: pathlib.Path, attrs: Mapping[str, Any], name: str, what: str) -> StoreError:
    return StoreError(f"results store {store}: attribute {name!r} {what}{_edited(attrs)}")


def _bad_variable(store: pathlib.Path, ds: xr.Dataset, name: Hashable, what: str) -> StoreError:
    return StoreError(f"results store {store}: variable {name!r} {what}{_edited(ds.attrs)}")


def _label(ds: xr.Dataset, dim: str, index: int) -> str:
    if dim in ds.coords and ds[dim].ndim == 1 and ds[dim].dims == (dim,):
        value = ds[dim].values[index]
        if isinstance(value, np.datetime64):
            return f"{dim}={np.datetime_as_string(value, unit='s')}Z"
        if isinstance(value, (float, np.floating)):
            return f"{dim}={float(value)!r}"
        if isinstance(value, (int, np.integer)):
            return f"{dim}={int(value)}"
        return f"{dim}={str(value)!r}"
    return f"{dim} {index}"


def _refuse(store: pathlib.Path, ds: xr.Dataset, name: Hashable, bad: xr.DataArray | np.ndarray, what: str,
            dims: Sequence[Hashable] | None = None) -> None:
    """Raise naming ``name`` and the first cells where ``bad`` is True, if any is."""
    if isinstance(bad, xr.DataArray):
        labels, values = tuple(bad.dims), np.asarray(bad.values)
    else:
        values = np.asarray(bad)
        labels = tuple(dims or (f"axis {i}" for i in range(values.ndim)))
    if not values.any():
        return
    count = int(np.count_nonzero(values))
    first = np.argwhere(values)[:_SHOWN]
    cells = "; ".join(", ".join(_label(ds, str(d), int(i)) for d, i in zip(labels, cell)) or "the value"
                      for cell in first)
    more = " …" if count > _SHOWN else ""
    raise _bad_variable(store, ds, name, f"{what}: {count} cell(s) break it ({cells}{more})")


# --------------------------------------------------------------------------
# attributes
# --------------------------------------------------------------------------


def stored_options(store: pathlib.Path, attrs: Mapping[str, Any]) -> Options:
    """The :class:`~pickscale.options.Options` of a store's attributes, or StoreError saying what is wrong.

    Examples
    --------
    >>> stored_options(pathlib.Path("r.zarr"), {"options": {"threshold": 0.3, "tol": 0.5, "residual_tol": 2.0,
    ...                                                     "thresholds": [0.1, 0.3]}}).floor
    0.1
    >>> stored_options(pathlib.Path("r.zarr"), {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pickscale.errors.StoreError: results store r.zarr: attribute 'options' is missing: ...
    """
    from ..options import Options

    given = attrs.get("options")
    if given is None:
        raise _bad_attribute(store, attrs, "options", "is missing: results record the options they were scored "
                             "with (every table and figure is read with them)")
    if not isinstance(given, dict):
        raise _bad_attribute(store, attrs, "options", f"is {type(given).__name__}, not a mapping of option "
                             "names to values")
    missing = [key for key in ("threshold", "tol", "residual_tol", "thresholds") if key not in given]
    if missing:
        raise _bad_attribute(store, attrs, "options", f"lacks {', '.join(map(repr, missing))}")
    try:
        return Options.from_attrs(given)
    except PickscaleError as exc:
        raise _bad_attribute(store, attrs, "options", f"cannot be the options of a run: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise _bad_attribute(store, attrs, "options", f"cannot be read: {exc!r}") from None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2 and all(_whole(v) for v in value)
            and -(2**63) <= value[0] <= value[1] < 2**63)


def _extent_problem(extent: Any) -> str | None:
    """What is wrong with an ``extent`` attribute (the shape :mod:`pickscale.engine.extension` documents)."""
    if not isinstance(extent, dict):
        return f"is {type(extent).__name__}, not a mapping"
    datasets, models = extent.get("datasets"), extent.get("models")
    if not isinstance(datasets, dict) or not isinstance(models, dict):
        return "must hold the mappings 'datasets' and 'models'"
    for d, entries in datasets.items():
        if not isinstance(entries, list) or not entries:
            return f"['datasets'][{d!r}] is not a list of stretches"
        for k, e in enumerate(entries):
            where = f"['datasets'][{d!r}][{k}]"
            if not isinstance(e, dict):
                return f"{where} is not a mapping"
            for key in ("picks", "scored"):
                if not _span(e.get(key)):
                    return f"{where}[{key!r}] is not a span [first, last] of int64 nanoseconds"
            stations = e.get("stations")
            if not isinstance(stations, list) or not all(isinstance(s, str) for s in stations):
                return f"{where}['stations'] is not a list of station names"
            if not _whole(e.get("arrivals")) or e["arrivals"] < 0:
                return f"{where}['arrivals'] is not a whole number >= 0"
            digest = e.get("reference_sha256")
            if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                return f"{where}['reference_sha256'] is not a SHA-256 in hex"
    for d, per_model in models.items():
        if not isinstance(per_model, dict):
            return f"['models'][{d!r}] is not a mapping of models to pick spans"
        for m, spans in per_model.items():
            if not isinstance(spans, list) or not spans or not all(_span(s) for s in spans):
                return f"['models'][{d!r}][{m!r}] is not a list of spans [first, last] of int64 nanoseconds"
    return None


def _bootstrap_problem(settings: Any) -> str | None:
    if not isinstance(settings, dict):
        return f"is {type(settings).__name__}, not a mapping"
    level, draws, seed = settings.get("level"), settings.get("draws"), settings.get("seed")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        return f"['level'] must lie strictly between 0 and 1; it is {level!r}"
    if not isinstance(draws, int) or isinstance(draws, bool) or draws < 1:
        return f"['draws'] must be a whole number >= 1; it is {draws!r}"
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        return f"['seed'] must be a whole number >= 0; it is {seed!r}"
    return None


def _check_attributes(store: pathlib.Path, ds: xr.Dataset) -> None:
    attrs = ds.attrs
    if "extent" in attrs:  # absent only in stores written before extents were kept (they are not extended)
        problem = _extent_problem(attrs["extent"])
        if problem:
            raise _bad_attribute(store, attrs, "extent", problem)
    if "bootstrap" in attrs:
        problem = _bootstrap_problem(attrs["bootstrap"])
        if problem:
            raise _bad_attribute(store, attrs, "bootstrap", problem)
    if "warnings" in attrs and not (isinstance(attrs["warnings"], list)
                                    and all(isinstance(w, str) for w in attrs["warnings"])):
        raise _bad_attribute(store, attrs, "warnings", "is not a list of messages")
    if "extensions" in attrs and not (isinstance(attrs["extensions"], list)
                                      and all(isinstance(e, dict) for e in attrs["extensions"])):
        raise _bad_attribute(store, attrs, "extensions", "is not a list of provenance entries (mappings)")
    for name in ("inputs", "exclusions", "coverage", "unpicked"):
        if name in attrs and not isinstance(attrs[name], dict):
            raise _bad_attribute(store, attrs, name, f"is {type(attrs[name]).__name__}, not a mapping")


# --------------------------------------------------------------------------
# layout: coordinates and the count variables
# --------------------------------------------------------------------------


def _count_names(options: Options) -> tuple[str, ...]:
    """The variables a run with ``options`` stores before deriving (what :func:`derive` reads)."""
    from ..results.assembly import _order

    return _order(options)


def _coordinate(store: pathlib.Path, ds: xr.Dataset, name: str, want: np.ndarray | None, said: str) -> None:
    """The coordinate ``name`` must be ``want`` exactly (``None``: it must be absent)."""
    have = ds.coords.get(name)
    if want is None:
        if have is not None:
            raise _bad_variable(store, ds, name, f"is a coordinate although {said}")
        return
    if have is None:
        raise _bad_variable(store, ds, name, f"is missing: {said}")
    values = np.asarray(have.values)
    if values.shape != want.shape or not (values == want).all():
        shown = ", ".join(map(str, values.tolist()[:8])) + (" …" if values.size > 8 else "")
        wanted = ", ".join(map(str, want.tolist()[:8])) + (" …" if want.size > 8 else "")
        raise _bad_variable(store, ds, name, f"holds [{shown}] but {said}: [{wanted}]")


def _labels(store: pathlib.Path, ds: xr.Dataset, name: str) -> None:
    """A label coordinate (dataset, model, station) must be unique and in code-point order."""
    if name not in ds.coords:
        raise _bad_variable(store, ds, name, "is missing: results carry the coordinate")
    values = [str(v) for v in np.asarray(ds[name].values).ravel()]
    if any(b <= a for a, b in zip(values, values[1:])):
        raise _bad_variable(store, ds, name, "is not unique and in code-point order, as results lay their labels")


def _check_layout(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    from ..kernel import FIELDS, Kind
    from ..options import N_BINS, PHASES
    from ..results.variables import VARIABLES

    for name in ("dataset", "model", "station"):
        _labels(store, ds, name)
    grid = np.asarray(options.grid, dtype=np.float64)
    if "threshold" in ds.coords and options.threshold not in set(np.asarray(ds["threshold"].values,
                                                                             dtype=np.float64).tolist()):
        raise _bad_variable(
            store, ds, "threshold", f"does not hold the shared threshold {options.threshold!r} of attrs['options'] "
            "(a shared threshold off the store's grid: the tables are read there)")
    _coordinate(store, ds, "threshold", grid, "attrs['options'] give this threshold grid")
    _coordinate(store, ds, "fine_threshold", np.asarray(options.fine, dtype=np.float64),
                "the fine curve of attrs['options'] (k/1000 from the floor) is")
    _coordinate(store, ds, "bin", np.arange(N_BINS, dtype=np.int64), "the calibration bins are")
    _coordinate(store, ds, "phase", np.asarray(PHASES, dtype=object).astype(str), "the phases are")
    _coordinate(store, ds, "tol", None if options.tols is None else np.asarray(options.tols, dtype=np.float64),
                "attrs['options'] give these tols" if options.tols is not None else "attrs['options'] give no tols")
    groups = None if options.group_by is None else np.asarray(list(options.group_labels or ()), dtype=str)
    _coordinate(store, ds, "group", groups,
                "attrs['options'] give these group_labels" if groups is not None else "attrs['options'] give no "
                "group_by")
    if options.time_bin is None and "time_bin" in ds.coords:
        raise _bad_variable(store, ds, "time_bin", "is a coordinate although attrs['options'] give no time_bin")
    if options.time_bin is not None:
        if "time_bin" not in ds.coords:
            raise _bad_variable(store, ds, "time_bin", f"is missing: attrs['options'] give time_bin "
                                f"{options.time_bin!r}")
        starts = np.asarray(ds["time_bin"].values)
        if starts.dtype.kind != "M" or (starts.size > 1 and not (np.diff(starts) > np.timedelta64(0)).all()):
            raise _bad_variable(store, ds, "time_bin", "is not strictly ascending times (the starts of the bins)")
    if "model_b" in ds.coords:
        _coordinate(store, ds, "model_b", np.asarray([str(v) for v in ds["model"].values]), "it repeats the models, as")

    for name in _count_names(options):
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, "is missing: the options the store was scored with call for it")
        want = VARIABLES[name].dims
        if ds[name].dims != want:
            raise _bad_variable(store, ds, name, f"has dims {ds[name].dims}, not {want}")
        kind = ds[name].dtype.kind
        expected = ("b" if name in ("model_present", "station_scored") else
                    "f" if name in ("residual", "pair_conf") or FIELDS.get(name) is Kind.DERIVED else "iu")
        if kind not in expected:
            raise _bad_variable(store, ds, name, f"is of type {ds[name].dtype}, where results hold "
                                f"{'booleans' if expected == 'b' else 'floats' if expected == 'f' else 'integers'}")
    for name in ("cal_conf_limbs", "conf_sq_sums", "hit_conf_limbs"):  # optional: stores before exact sums
        if name in ds.variables and (ds[name].dims != VARIABLES[name].dims or ds[name].dtype.kind not in "iu"):
            raise _bad_variable(store, ds, name, f"is not integers on dims {VARIABLES[name].dims}")


# --------------------------------------------------------------------------
# counts
# --------------------------------------------------------------------------


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
    from ..kernel import FIELDS, Kind
    from ..results.variables import VARIABLES

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

    ti = options.threshold_index  # on the grid: checked by _check_layout
    shared = {"emitted": emitted[:, :, :, ti], "matched": matched[:, :, :, ti]}  # (dataset, model, phase, station)
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
    from ..kernel.exact import LIMB_BITS, N_LIMBS, SCALE_BITS, brier_sum

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
        from ..kernel.exact import conf_sum

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


# --------------------------------------------------------------------------
# pairs
# --------------------------------------------------------------------------


def _check_pairs(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    nd, nm, ns = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["station"]
    d, m = ds["pair_dataset"].values.astype(np.int64), ds["pair_model"].values.astype(np.int64)
    p, s = ds["pair_phase"].values.astype(np.int64), ds["pair_station"].values.astype(np.int64)
    bounds = {"pair_dataset": (d, nd), "pair_model": (m, nm), "pair_phase": (p, 2), "pair_station": (s, ns)}
    if options.group_by is not None:
        bounds["pair_group"] = (ds["pair_group"].values.astype(np.int64), ds.sizes.get("group", 0))
    for name, (index, size) in bounds.items():
        _refuse(store, ds, name, (index < 0) | (index >= size),
                f"must be an index in [0, {size}) (into the {name.removeprefix('pair_')} coordinate)", dims=("pair",))
    _refuse(store, ds, "pair_model", ~ds["model_present"].values[d, m],
            "must be a model present in the pair's dataset", dims=("pair",))
    _refuse(store, ds, "pair_station", ~ds["station_scored"].values[d, s],
            "must be a station scored in the pair's dataset", dims=("pair",))
    conf = ds["pair_conf"].values
    _refuse(store, ds, "pair_conf", ~((conf >= options.floor) & (conf <= 1.0)),
            f"must lie in [floor = {options.floor!r}, 1] (pairs are of picks at or above the floor)", dims=("pair",))
    residual = ds["residual"].values
    with np.errstate(invalid="ignore"):
        ns_ = np.round(residual * 1e9)
    _refuse(store, ds, "residual", ~(np.abs(ns_) <= options.residual_tol_ns),
            f"must be a finite residual within residual_tol = {options.residual_tol!r} s", dims=("pair",))
    # The canonical order (results/assembly.py): (dataset, model, phase, station, residual, conf, group).
    columns = [d, m, p, s, residual, conf]
    if options.group_by is not None:
        columns.append(ds["pair_group"].values)
    if d.size > 1:
        undecided = np.ones(d.size - 1, dtype=bool)
        wrong = np.zeros(d.size - 1, dtype=bool)
        for c in columns:
            wrong |= undecided & (c[:-1] > c[1:])
            undecided &= c[:-1] == c[1:]
        _refuse(store, ds, "pair_dataset", np.r_[False, wrong],
                "pairs must be in canonical order (dataset, model, phase, station, residual, conf)", dims=("pair",))
    # Each pair is one emitted pick and one arrival: never more pairs at a threshold than either, per station.
    nt = ds.sizes["threshold"]
    survives = np.searchsorted(np.asarray(options.grid), conf, side="right")  # thresholds the pair survives
    cell = ((d * nm + m) * 2 + p) * ns + s
    hist = np.bincount(cell * (nt + 1) + survives, minlength=nd * nm * 2 * ns * (nt + 1))
    hist = hist.reshape(nd, nm, 2, ns, nt + 1)
    # pairs surviving threshold t: those with survives > t
    at = np.flip(np.cumsum(np.flip(hist, axis=-1), axis=-1), axis=-1)[..., 1:]  # (d, m, p, s, t)
    pairs_at = np.moveaxis(at, 3, 4)  # (dataset, model, phase, threshold, station), as emitted
    dmpts = ("dataset", "model", "phase", "threshold", "station")
    _refuse(store, ds, "residual", pairs_at > ds.variables["emitted"].values,
            "has more pairs than emitted picks at a threshold (each pair is one pick)", dims=dmpts)
    _refuse(store, ds, "residual", pairs_at > _on(ds, "n_reference", dmpts),
            "has more pairs than arrivals (each pair is one arrival)", dims=dmpts)


# --------------------------------------------------------------------------
# derived variables and intervals
# --------------------------------------------------------------------------


def _differ(stored: np.ndarray, derived: np.ndarray) -> np.ndarray:
    """Where the stored values differ from the derived ones, exactly (NaN equals NaN)."""
    if stored.dtype.kind == "f" or derived.dtype.kind == "f":
        return ~((stored == derived) | (np.isnan(stored) & np.isnan(derived)))
    return stored != derived


def _check_derived(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    """Every derived variable is what :func:`~pickscale.results.derived.derive` gives from the stored counts.

    Why compare rather than derive on opening: the store stays the record (a plain ``xr.open_zarr`` reads
    the same numbers a report prints), and a store that says two things is a fault to name, not to paper
    over.  The derivation is deterministic (integer counts; float sums over stations in the stored order; the
    pairs' integer residuals ``round(residual * 1e9)``, which is exact for ``|residual| <= 1e6`` s), so the
    comparison is exact: a difference of one unit in the last place is a difference.
    """
    from ..results.derived import derive

    names = [name for name in _count_names(options) if name in ds.variables]
    counts = ds[names].copy(deep=False)
    derived = derive(counts, options=options)
    for name in derived.data_vars:
        if name in counts.data_vars:
            continue
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, "is missing: results hold every metric their counts give")
        stored, want = ds.variables[name], derived.variables[name]
        if stored.dims != want.dims:
            raise _bad_variable(store, ds, name, f"has dims {stored.dims}, not {want.dims}")
        if stored.dtype.kind != want.dtype.kind:
            raise _bad_variable(store, ds, name, f"is of type {stored.dtype}, where the counts give {want.dtype}")
        differ = _differ(np.asarray(stored.values), np.asarray(want.values))
        _refuse(store, ds, name, differ, "must equal what the stored counts give (SPEC §4–§7, §10, §13, §14)",
                dims=want.dims)
    for dim in derived.coords:  # coordinates the derivation makes (``budgets``)
        if dim in ds.dims and dim not in counts.coords:
            have, want_values = np.asarray(ds[dim].values), np.asarray(derived[dim].values)
            if have.shape != want_values.shape or not (have == want_values).all():
                raise _bad_variable(store, ds, dim, f"holds {have.tolist()}, but the options give "
                                    f"{want_values.tolist()}")


def _check_intervals(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    """SPEC §12's intervals, which cannot be drawn again cheaply: what any interval of them must be."""
    from ..results.bootstrap import DIFFERENCES, INTERVAL_METRICS
    from ..results.variables import OPTIONAL_VARIABLES, metric_name

    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    canonical = {lb(name): name for name in OPTIONAL_VARIABLES}
    metrics = [*INTERVAL_METRICS, "recall_at_budgets", *(f"{m}_diff" for m in DIFFERENCES)]
    for metric in metrics:
        lo_name, hi_name = lb(f"{metric}_lo"), lb(f"{metric}_hi")
        if lo_name not in ds and hi_name not in ds:
            continue
        for name, other in ((lo_name, hi_name), (hi_name, lo_name)):
            want = OPTIONAL_VARIABLES[canonical[name]].dims
            if name not in ds:
                raise _bad_variable(store, ds, name, f"is missing although {other} is stored: an interval has "
                                    "both ends")
            if ds[name].dims != want or ds[name].dtype.kind != "f":
                raise _bad_variable(store, ds, name, f"is not floats on dims {want}")
        lo, hi = ds[lo_name], ds[hi_name]
        _refuse(store, ds, lo_name, lo > hi, f"must be <= {hi_name} (the lower end of an interval)")
        if metric in _RATE_INTERVALS:  # a plain percentile interval of a rate (moved by exactly 0)
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, (end < 0) | (end > 1), "must lie in [0, 1] (an interval of a rate)")
        if metric == "recall_diff":
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, (end < -1) | (end > 1), "must lie in [-1, 1] (a difference of recalls)")
        if metric in INTERVAL_METRICS and lb(metric) in ds:
            estimate = ds[lb(metric)]
            if "threshold" in estimate.dims:  # SPEC §12: at the shared threshold
                estimate = estimate.sel(threshold=options.threshold, drop=True)
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, estimate.isnull() & end.notnull(),
                        f"must be NaN where {lb(metric)} is NaN (SPEC §12)")
