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
  :mod:`pickscale.engine.extent` documents), ``bootstrap``, ``extensions``
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

import xarray as xr

from .attributes import _check_attributes, stored_options
from .counts import _check_counts, _check_exact_sums
from .layout import _check_layout
from .pairs import PairCheck, check_pairs_whole
from .ranked import check_ranked
from .readings import _check_derived, _check_intervals

__all__ = ["check_results", "check_pairs", "is_results", "stored_options", "PairCheck"]

#: Markers of a results Dataset (what :func:`pickscale.score` returns): a store holding one is checked.
_RESULT_VARIABLES = ("model_present", "station_scored")
_TITLE = "pickscale results"


def is_results(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is pickscale results (and so is checked), rather than any Dataset saved.

    Examples
    --------
    >>> is_results(xr.Dataset({"n": ("x", [1])})), is_results(xr.Dataset({"model_present": ("x", [True])}))
    (False, True)
    """
    return (any(name in ds.variables for name in _RESULT_VARIABLES) or "extent" in ds.attrs
            or ds.attrs.get("title") == _TITLE)


def check_results(store: pathlib.Path, ds: xr.Dataset, *, pairs: bool = True) -> None:
    """Refuse a results store whose attributes or numbers contradict each other (module docstring).

    Parameters
    ----------
    store : pathlib.Path
        The store's folder, for the messages.
    ds : xarray.Dataset
        Its contents, loaded.  Not modified.
    pairs : bool, default True
        Check the residual pairs too (indices, order, and the timing readings they give); False: they
        are read when used (:func:`pickscale.store.open_results`), and the timing readings are taken
        as stored, every other reading still derived from the counts and compared.

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
    if pairs:
        check_pairs_whole(store, ds, options)
    _check_derived(store, ds, options, pairs=pairs)
    check_ranked(store, ds, options, pairs=pairs)  # (against the pairs and sums checked above)
    _check_intervals(store, ds, options)


def check_pairs(store: pathlib.Path, ds: xr.Dataset) -> None:
    """The residual pairs' own checks of a whole opening (indices in range, of present models at scored
    stations, residuals and confidences in range, canonical order, no more pairs than picks or arrivals):
    for results opened lazily whose every pair is then read, as ``extend`` reads them (SPEC §15).

    What it leaves out of a whole opening's checks: the stored timing readings against the pairs -- which
    ``extend`` derives again from the merged pairs instead.
    """
    if is_results(ds):
        check_pairs_whole(store, ds, stored_options(store, ds.attrs))
