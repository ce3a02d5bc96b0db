"""The attributes the code relies on: ``options`` (they parse), ``extent`` (its documented shape),
``bootstrap``, ``extensions``, ``warnings``, ``pair_segments``."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import xarray as xr

from pickscale.errors import PickscaleError

from ...options import Options
from ..segments import SEGMENTS
from .refusal import _bad_attribute


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
    """What is wrong with an ``extent`` attribute (the shape :mod:`pickscale.engine.extent` documents)."""
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


def _segments_problem(lengths: Any, n_pairs: int) -> str | None:
    """What is wrong with a ``pair_segments`` attribute: two or more whole lengths > 0 adding up to the pairs."""
    if not isinstance(lengths, list) or len(lengths) < 2 or not all(_whole(v) and v > 0 for v in lengths):
        return f"must list two or more segment lengths, each a whole number > 0; it is {lengths!r}"
    if sum(lengths) != n_pairs:
        return f"lists {sum(lengths)} pairs in its segments, but the store holds {n_pairs}"
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
    if SEGMENTS in attrs:  # an extended store's pairs: each segment's length (SPEC §11)
        problem = _segments_problem(attrs[SEGMENTS], ds.sizes.get("pair", 0))
        if problem:
            raise _bad_attribute(store, attrs, SEGMENTS, problem)
    for name in ("inputs", "exclusions", "coverage", "unpicked"):
        if name in attrs and not isinstance(attrs[name], dict):
            raise _bad_attribute(store, attrs, name, f"is {type(attrs[name]).__name__}, not a mapping")
