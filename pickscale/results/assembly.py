"""From per-station counts to the results Dataset: stations stacked, datasets laid out on shared coordinates.

:func:`combine` (station results) and :func:`counts_from_stack` (a
:class:`~pickscale.kernel.StationStack` from the engine) stack the additive
results of one dataset along a ``station`` axis sorted by name, each field as
:mod:`pickscale.kernel.combine` declares it; :func:`assemble` lays every
dataset out on shared coordinates (the dims of
:data:`~pickscale.results.variables.VARIABLES`) and derives the metrics
(:func:`~pickscale.results.derive`).

Counts keep the ``station`` dimension, so per-station views are a ``.sel``
away and totals are ``.sum("station")`` in canonical (sorted) order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from ..kernel import FIELDS, PAIR_KEY, Kind, StationResult, StationStack, add_fine
from ..kernel.combine import DENSE_BINNED
from ..kernel.exact import N_LIMBS, N_PRODUCTS
from ..options import N_BINS, PHASES, Options
from .derived import derive
from .events import lay_out_events
from .rates import RATE_COUNTS, lay_out_rates
from .variables import GROUPED, RANKED, RUNS, STATION_FIELDS, TIME_BINNED, TOLERANCED, VARIABLES, declared_dims, text

__all__ = ["DatasetCounts", "combine", "counts_from_stack", "assemble"]


@dataclass
class DatasetCounts:
    """Everything additive for one dataset, after its stations are combined.

    ``counts[name]`` has the dataset's models on the model axis and stations on
    the last axis: column j is station ``stations[columns[j]]`` (``columns``
    None: ``stations`` in order).  A station of ``stations`` with no column
    has zero counts (nothing was scored there).  ``stations`` is sorted; pair
    arrays hold dataset-local model indices and indices into ``stations``.
    :func:`assemble` takes each count array out of ``counts`` as it lays it out.
    """

    stations: list[str]
    models: list[str]
    n_reference: np.ndarray  # (2, S)
    counts: MutableMapping[str, np.ndarray]
    fine_emitted: np.ndarray  # (M, 2, F)
    fine_matched: np.ndarray
    pairs: dict[str, np.ndarray] = field(default_factory=dict)  # model, phase, station, residual_ns, conf
    columns: np.ndarray | None = None
    events: Any = None  # SPEC §19: the dataset's events (results.events.EventCounts), or None


_MISSING: Any = object()


class StationLast(MutableMapping[str, np.ndarray]):
    """A stack's fields (station axis first) read with the station axis last, as views.

    Taking a field out (``pop``) takes it out of the stack too, so the stack's
    arrays are released one by one as they are laid out (and the fields of
    pieces left on a cluster are fetched a batch at a time, :mod:`pickscale.engine.collect`).
    """

    def __init__(self, fields: MutableMapping[str, np.ndarray],
                 dense: Mapping[str, Callable[[], np.ndarray]] | None = None) -> None:
        self._fields = fields
        # Time-binned counts (SPEC §10) come sparse (rows of the bins each station occupies) and are made
        # dense only here, one at a time as they are laid out: the Dataset's own size, never more.
        self._dense = dict(dense or {})

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self._dense:
            return self._dense[name]()
        return np.moveaxis(self._fields[name], 0, -1)

    def __setitem__(self, name: str, values: np.ndarray) -> None:
        self._fields[name] = np.moveaxis(values, -1, 0)

    def __delitem__(self, name: str) -> None:
        if name in self._dense:
            del self._dense[name]
        else:
            del self._fields[name]

    def pop(self, name: str, default: Any = _MISSING) -> Any:
        """The field taken out of the stack (by the stack's own ``pop``, which may release it as it goes)."""
        if name in self._dense:
            return self._dense.pop(name)()
        if name not in self._fields:
            if default is _MISSING:
                raise KeyError(name)
            return default
        return np.moveaxis(self._fields.pop(name), 0, -1)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._fields, *self._dense])

    def __len__(self) -> int:
        return len(self._fields) + len(self._dense)


def _densifiers(stack: StationStack, options: Options) -> dict[str, Callable[[], np.ndarray]]:
    """For each binned count the stack holds, a function giving it dense, station last: (..., G, S)."""
    n_bins = _bin_starts(options).size
    if options.time_bin is None or not stack.binned:
        return {}
    row = np.searchsorted(stack.keys, stack.bin_key)
    bins = stack.binned["binned_bin"]
    if bins.size and int(bins.max()) >= n_bins:
        raise RuntimeError("internal error: a station's time bin is not one of the run's bins")

    def dense(rows_name: str) -> Callable[[], np.ndarray]:
        def build() -> np.ndarray:
            rows = stack.binned.pop(rows_name)  # taken out: the sparse rows are released as laid out
            out = np.zeros(rows.shape[1:] + (n_bins, stack.keys.size), dtype=np.int64)
            out[..., bins, row] = np.moveaxis(rows, 0, -1)
            return out
        return build

    return {name: dense(rows) for name, rows in DENSE_BINNED.items() if rows in stack.binned}


def combine(
    stations: Iterable[tuple[str, StationResult]],
    *,
    models: list[str],
    options: Options,
    with_fine: bool = True,
) -> DatasetCounts:
    """Stack one dataset's station results (any order) along a sorted station axis.

    The stations are stacked as the engine stacks them
    (:class:`~pickscale.kernel.StationStack`), then laid out by
    :func:`counts_from_stack`.  With ``with_fine=False`` the stations' fine
    curves are not summed (the caller summed them where they were computed
    and sets them afterwards).

    Examples
    --------
    >>> from pickscale.kernel import score_station
    >>> o = Options(thresholds=[0.5])
    >>> o.grid.tolist(), o.fine.size  # the shared threshold 0.3 joins the grid
    ([0.3, 0.5], 701)
    >>> r = score_station([0], [0], [0], [0], [1], [0.9], n_models=1, options=o)
    >>> c = combine([("B", r), ("A", r)], models=["m"], options=o)
    >>> c.stations, c.counts["matched"].shape, int(c.fine_matched.sum())
    (['A', 'B'], (1, 2, 2, 2), 1202)
    """
    items = sorted(stations, key=lambda item: item[0])
    names = [name for name, _ in items]
    _check_unique(names)
    if not items:
        zero = np.zeros((len(models), 2, options.fine.size), dtype=np.int64)
        return DatasetCounts([], list(models), np.zeros((2, 0), dtype=np.int64), {}, zero, zero.copy(), {})
    results = [r for _, r in items]
    fine = add_fine(*[(r.fine_emitted, r.fine_matched) for r in results]) if with_fine else None
    return counts_from_stack(StationStack.of(list(enumerate(results))), names=np.array(names, dtype=object),
                             models=models, options=options, fine=fine)


def counts_from_stack(
    stack: StationStack,
    *,
    names: np.ndarray,
    models: list[str],
    options: Options,
    fine: tuple[np.ndarray, np.ndarray] | None,
    stations: np.ndarray | None = None,
) -> DatasetCounts:
    """One dataset's counts from a :class:`~pickscale.kernel.StationStack` (``names[i]`` = row i's station).

    Nothing per station is copied: the counts are the stack's fields read
    station-last (:class:`StationLast`), each row placed by ``columns``, and
    :func:`assemble` takes them out of the stack one by one.  ``stations``
    lists the dataset's stations when some have no row (nothing was scored
    there; their counts are zero); by default, ``names``.  ``fine`` is the
    dataset's fine curve (zeros if None).
    """
    names = np.asarray(names, dtype=object)
    listed = names if stations is None else np.asarray(stations, dtype=object)
    _check_unique(listed.tolist())
    _check_unique(names.tolist())
    ordered = np.sort(listed)  # code-point order, as every coordinate
    columns = np.searchsorted(ordered, names).astype(np.int64)
    if names.size and (columns.max() >= ordered.size or (ordered[columns] != names).any()):
        raise RuntimeError("internal error: a scored station is not one of the dataset's stations")
    n_reference = np.moveaxis(stack.fields.pop("n_reference"), 0, -1)
    # Pairs grouped by station in key order: regroup them in name order, each station's order kept.
    pair_station = columns[np.searchsorted(stack.keys, stack.pair_key)]
    p_order = np.argsort(pair_station, kind="stable")
    # Taken out of the stack one by one, so the pairs are held once plus one array in transit.
    pairs = {name.removeprefix("pair_"): stack.pairs.pop(name)[p_order] for name in PAIR_KEY} if names.size else {}
    if names.size:
        pairs["station"] = pair_station[p_order].astype(np.int32)
    shape = (len(models), 2, options.fine.size)
    fe, fm = fine if fine is not None else (np.zeros(shape, np.int64), np.zeros(shape, np.int64))
    return DatasetCounts([str(n) for n in ordered], list(models), n_reference,
                         StationLast(stack.fields, _densifiers(stack, options)),
                         np.asarray(fe, dtype=np.int64), np.asarray(fm, dtype=np.int64), pairs, columns=columns)


def _check_unique(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise RuntimeError("internal error: a station was scored twice; the partitioning is wrong")


# The Dataset's variables in the order it holds them (what is read off a store follows it).
_ORDER = ("n_reference", "model_present", "station_scored", "fine_emitted", "fine_matched", "pair_dataset",
          "pair_model", "pair_phase", "pair_station", "residual", "pair_conf", *STATION_FIELDS)


def _order(options: Options) -> tuple[str, ...]:
    """The variables of a run: without time bins, none of :data:`~pickscale.results.variables.TIME_BINNED`."""
    names = _ORDER if options.time_bin is not None else tuple(n for n in _ORDER if n not in TIME_BINNED)
    names = _with_groups(names, options)  # SPEC §14
    names = names if options.tols is not None else tuple(n for n in names if n not in TOLERANCED)
    if options.events:  # SPEC §19: the events' counts, last
        names = (*names, "event_n_reference", "event_levels", *(("event_group",) if options.group_by else ()))
    return names


def _with_groups(names: tuple[str, ...], options: Options) -> tuple[str, ...]:
    """SPEC §14: with ``group_by``, the per-group counts and ``pair_group`` (last); without, none of them."""
    names = tuple(n for n in names if n not in GROUPED)
    if options.group_by is None:
        return names
    return (*names, "n_reference_by_group", "matched_by_group", "pair_group")


def _group_coordinate(options: Options) -> np.ndarray:
    """The ``group`` coordinate: the run's group labels (SPEC §14)."""
    return text(options.group_labels or ())


def assemble(
    per_dataset: Mapping[str, DatasetCounts],
    *,
    options: Options,
    attrs: Mapping[str, Any] | None = None,
    pairs: Any = None,
    rates: Any = None,
) -> xr.Dataset:
    """Lay every dataset's counts on shared coordinates and derive the metrics.

    ``pairs``: the run's residual pairs already in the Dataset's form with their statistics
    (:class:`pickscale.engine.pairs.PairColumns`: computed where the pairs are, possibly Dask arrays
    left on the cluster); by default the pairs of ``per_dataset``, laid out here.
    ``rates``: the run's pick rates (:class:`pickscale.kernel.rates.PickRates`, SPEC §20), laid out on the
    results' datasets and models; None: the results have none (a store written before them).

    Coordinates are sorted in code-point order.  Counts of a (dataset, model)
    or (dataset, station) that does not exist are 0, and the coverage
    variables ``model_present`` and ``station_scored`` say so, so "no data" is
    never mistaken for 0.  Each count array is taken out of ``per_dataset``
    once laid out, so the per-station data are held once, not twice.
    """
    datasets = sorted(per_dataset)
    models = sorted({m for c in per_dataset.values() for m in c.models})
    stations = sorted({s for c in per_dataset.values() for s in c.stations})
    data, pair_parts = _lay_out([per_dataset[d] for d in datasets], models, stations, options)
    names = _order(options)
    statistics = None
    if pairs is None:
        laid = _canonical_pairs(pair_parts)
        data.update({"pair_" + key: laid[key] for key in ("dataset", "model", "phase", "station", "conf")})
        data["residual"] = laid["residual_ns"] / 1e9
        if options.group_by is not None:  # SPEC §14
            data["pair_group"] = laid["group"]
    else:
        data.update(pairs.data)
        statistics = pairs.statistics
        if "ranked_residual" in pairs.data:  # SPEC §9: the ranked runs, listed by name in row order
            names = (*names, *RANKED)
            attrs = {**(attrs or {}), RUNS: [[datasets[c // (2 * len(models))], models[(c // 2) % len(models)],
                                              PHASES[c % 2], int(n)] for c, n in pairs.runs]}
    coords = {
        "dataset": text(datasets),
        "model": text(models),
        "phase": text(PHASES),
        "threshold": options.grid.copy(),
        "fine_threshold": options.fine.copy(),
        "station": text(stations),
        "bin": np.arange(N_BINS, dtype=np.int64),
    }
    if options.time_bin is not None:
        coords["time_bin"] = _bin_starts(options)
    if options.group_by is not None:  # SPEC §14
        coords["group"] = _group_coordinate(options)
    if options.tols is not None:  # SPEC §13
        coords["tol"] = np.array(options.tols, dtype=np.float64)
    if options.events:  # SPEC §19
        event_data, event_coords = lay_out_events([per_dataset[d].events for d in datasets],
                                                  [per_dataset[d].models for d in datasets], models, options)
        data.update(event_data)
        coords.update(event_coords)
    if rates is not None:  # SPEC §20: the pick rates, after everything else
        rate_data, rate_coords = lay_out_rates(rates, datasets, models, options)
        data.update(rate_data)
        coords.update(rate_coords)
        names = (*names, *RATE_COUNTS)
    ds = xr.Dataset({name: (declared_dims(name), data[name]) for name in names}, coords=coords)
    ds.attrs.update(dict(attrs or {}))
    ds.attrs["options"] = options.to_attrs()
    return derive(ds, options=options, statistics=statistics)


def _lay_out(counts: list[DatasetCounts], models: list[str], stations: list[str],
             options: Options) -> tuple[dict[str, np.ndarray], list[dict[str, np.ndarray]]]:
    """The count and coverage arrays on the shared coordinates, and each dataset's pairs in global indices."""
    sizes = {"dataset": len(counts), "model": len(models), "phase": 2, "threshold": options.grid.size,
             "fine_threshold": options.fine.size, "station": len(stations), "bin": N_BINS,
             "time_bin": _bin_starts(options).size, "group": options.n_groups,
             "tol": len(options.tols or ()), "limb": N_LIMBS, "product": N_PRODUCTS}
    fields = [key for key in STATION_FIELDS if key in _order(options)]
    m_index = {m: i for i, m in enumerate(models)}
    s_index = {s: i for i, s in enumerate(stations)}
    data = {name: np.zeros(tuple(sizes[d] for d in VARIABLES[name].dims),
                           dtype=np.float64 if FIELDS.get(name) is Kind.DERIVED else np.int64)
            for name in ("n_reference", "fine_emitted", "fine_matched", *fields)}
    for name in ("model_present", "station_scored"):
        data[name] = np.zeros(tuple(sizes[d] for d in VARIABLES[name].dims), dtype=bool)
    pair_parts: list[dict[str, np.ndarray]] = []
    for d, c in enumerate(counts):
        mi = np.array([m_index[m] for m in c.models], dtype=np.int64)
        si = np.array([s_index[s] for s in c.stations], dtype=np.int64)
        cols = si if c.columns is None else si[c.columns]  # where each column of c's counts goes
        data["model_present"][d, mi] = True
        data["station_scored"][d, si] = True
        if cols.size:
            data["n_reference"][d][:, cols] = c.n_reference
        for key in fields:
            # Taken out as laid out: each count array is released once copied (the station data held once).
            values = c.counts.pop(key, None)
            if values is None or not cols.size:
                continue
            # Laid out on the model axis where there is one (n_reference_over_time has none).
            lead = [mi] if "model" in VARIABLES[key].dims else []
            rest = values.shape[len(lead):-1]
            data[key][d][np.ix_(*lead, *[np.arange(n) for n in rest], cols)] = values
            del values
        if mi.size:
            data["fine_emitted"][d, mi] = c.fine_emitted
            data["fine_matched"][d, mi] = c.fine_matched
        if c.pairs and c.pairs["model"].size:
            pair_parts.append({
                "dataset": np.full(c.pairs["model"].size, d, dtype=np.int32),
                "model": mi[c.pairs["model"]].astype(np.int32),
                "phase": c.pairs["phase"].astype(np.int8),
                "station": si[c.pairs["station"]].astype(np.int32),
                "residual_ns": c.pairs["residual_ns"],
                "conf": c.pairs["conf"],
                "group": c.pairs.get("group", np.zeros(c.pairs["model"].size, np.int32)).astype(np.int32),
            })
    return data, pair_parts


def _bin_starts(options: Options) -> np.ndarray:
    """The ``time_bin`` coordinate: the start of each bin (datetime64[ns], UTC); empty without time bins."""
    edges = options.bin_edges
    if options.time_bin is None or edges is None or edges.size < 2:
        return np.zeros(0, dtype="datetime64[ns]")
    return np.asarray(edges[:-1], dtype=np.int64).view("datetime64[ns]")


def _canonical_pairs(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    keys = ("dataset", "model", "phase", "station", "residual_ns", "conf", "group")  # group: SPEC §14 (0 without)
    dtypes = (np.int32, np.int32, np.int8, np.int32, np.int64, np.float64, np.int32)
    if not parts:
        return {k: np.zeros(0, dtype=t) for k, t in zip(keys, dtypes)}
    parts = [p if "group" in p else {**p, "group": np.zeros(p["model"].size, np.int32)} for p in parts]
    cat = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    # The parts come in (dataset, station) order, each sorted by (model, phase, residual, conf):
    # a stable sort on the small (dataset, model, phase) key is then the whole canonical order
    # (a radix sort when the key fits 16 bits).  Checked, with the full sort as the fallback.
    n_models = int(cat["model"].max()) + 1 if cat["model"].size else 1
    group = (cat["dataset"].astype(np.int64) * n_models + cat["model"]) * 2 + cat["phase"]
    if group.size and group.max() < np.iinfo(np.int16).max:
        group = group.astype(np.int16)
    order = np.argsort(group, kind="stable")
    out = {k: cat[k][order] for k in keys}
    if not _lex_sorted([out[k] for k in keys]):
        order = np.lexsort(tuple(cat[k] for k in reversed(keys)))
        out = {k: cat[k][order] for k in keys}
    return out


def _lex_sorted(columns: list[np.ndarray]) -> bool:
    """True when the rows (one value per column) are in ascending lexicographic order."""
    if columns[0].size < 2:
        return True
    undecided = np.ones(columns[0].size - 1, dtype=bool)  # rows equal on every column so far
    for c in columns:
        if (undecided & (c[:-1] > c[1:])).any():
            return False
        undecided &= c[:-1] == c[1:]
    return True
