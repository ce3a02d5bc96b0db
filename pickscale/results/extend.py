"""Merging the counts of a stored results Dataset with those of a new run (:func:`pickscale.extend`).

Every reading that depends on all models (budget, best threshold, fine curve,
AP, timing) is derived afterwards by :func:`~pickscale.results.assemble`, as in
a normal run.  What is merged is only what is additive, and it is merged by the
one declaration of how each count combines (:mod:`pickscale.kernel.combine`):

1. each side's counts of a dataset are rebuilt from its Dataset
   (:func:`counts_of`: a :class:`~pickscale.results.DatasetCounts`, exact limb
   sums included);
2. both are laid out as :class:`~pickscale.kernel.StationStack` rows on the
   union of models, stations and time bins, and
   :meth:`~pickscale.kernel.StationStack.concat` merges a station present on
   both sides with :func:`~pickscale.kernel.merge_results` — counts and limbs
   summed, the float sums derived from the limbs, residual pairs concatenated in
   canonical order — exactly as the engine merges the time blocks of a station;
3. arrival counts (``n_reference``, ``n_reference_over_time``) are taken once
   when both sides scored the same arrivals (``same_arrivals``: the two runs'
   pick spans overlap), and are checked equal first; else they add up.

Examples
--------
>>> import pandas as pd, pickscale
>>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0]})
>>> picks = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.1, 20.1], "conf": [0.9, 0.8],
...                       "model": ["m", "m"]})
>>> old = pickscale.score(ref, picks[picks.model == "m"])
>>> new = pickscale.score(ref, picks.assign(model="n"))
>>> ds = merge_results(old, new, same_arrivals={"all": True})
>>> ds.recall.sel(phase="P", threshold=0.3).values.ravel().tolist(), ds.n_reference.sum().item()
([1.0, 1.0], 2)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..engine.stored_batches import by_stream
from ..errors import InputError, StoreError
from ..kernel import PER_STATION, StationStack, add_fine, score_station
from ..kernel.bins import bin_edges
from ..kernel.combine import DENSE_BINNED
from ..options import Options
from ..store.pair_rules import PAIR_NAMES
from ..store.segments import PairParts
from .assembly import DatasetCounts, assemble, counts_from_stack
from .events import events_of, merge_event_counts
from .rates import PickRates, merged_rates, rates_of
from .variables import RANKED, RUNS, STATION_FIELDS
from .variables import residual_ns as residual_ns_of

__all__ = ["EXACT_FIELDS", "counts_of", "merge_counts", "merge_results", "stream_shares", "merged_index",
           "appended_pairs", "ranks_kept", "StoredSide", "stored_side",
           "union_edges",
           "bin_starts_ns", "BATCH_ROWS"]

#: The exact sums a store must hold to be extended (stores written before they were kept lack them).
EXACT_FIELDS = ("cal_conf_limbs", "conf_sq_sums", "hit_conf_limbs")
#: The per-station counts of arrivals: taken once when both sides scored the same arrivals.
ARRIVAL_FIELDS = ("n_reference", "n_reference_over_time")


def bin_starts_ns(ds: xr.Dataset) -> np.ndarray:
    """The ``time_bin`` starts of a Dataset as int64 ns (empty without time bins)."""
    if "time_bin" not in ds.coords:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(ds["time_bin"].values).astype("datetime64[ns]").astype(np.int64)


def union_edges(options: Options, *sides: xr.Dataset) -> np.ndarray | None:
    """The bin edges of the merged results: the union of the sides' bins, filled in between (SPEC §10).

    Bins are anchored (at the epoch, or at calendar points), so each side's bins are a run of the union's.
    """
    if options.time_bin is None:
        return None
    starts = [bin_starts_ns(ds) for ds in sides]
    starts = [s for s in starts if s.size]
    if not starts:
        return np.zeros(0, dtype=np.int64)
    lo = min(int(s[0]) for s in starts)
    hi = max(int(s[-1]) for s in starts)
    return bin_edges(lo, hi, options.time_bin)


def counts_of(ds: xr.Dataset, dataset: str, *, drop_models: tuple[str, ...] = (),
              with_pairs: bool = True) -> DatasetCounts:
    """One dataset's additive counts, rebuilt from a results Dataset (a store's, or a run's).

    Models present in ``dataset`` (less ``drop_models``), stations scored
    there; ``counts[name]`` on (models, …, stations) as the assembly holds them,
    the exact limb sums included; pairs (unless ``with_pairs`` is false) in
    dataset-local indices, grouped by station, each station's in canonical
    order.  The time-bin axis is the Dataset's own (see :func:`bin_starts_ns`).
    """
    missing = [name for name in EXACT_FIELDS if name not in ds]
    if missing:
        raise StoreError("the results hold no exact sums (" + ", ".join(missing) + "): they were written by an "
                         "earlier pickscale, before stores kept them, and cannot be extended exactly; score all "
                         "the inputs again with `pickscale score`.")
    one = ds.sel(dataset=dataset)
    models = [str(m) for m, p in zip(ds["model"].values, one["model_present"].values) if p and m not in drop_models]
    stations = [str(s) for s, p in zip(ds["station"].values, one["station_scored"].values) if p]
    sub = one.sel(model=models, station=stations)
    counts = {}
    for name, dims in STATION_FIELDS.items():
        if name in sub:
            counts[name] = np.asarray(sub[name].transpose(*dims, "station").values)
    n_reference = np.asarray(sub["n_reference"].transpose("phase", "station").values, dtype=np.int64)
    fe = np.asarray(sub["fine_emitted"].transpose("model", "phase", "fine_threshold").values, dtype=np.int64)
    fm = np.asarray(sub["fine_matched"].transpose("model", "phase", "fine_threshold").values, dtype=np.int64)
    if not with_pairs:
        return DatasetCounts(stations, models, n_reference, counts, fe, fm, {})
    # Pairs: those of the dataset and its kept models, in local indices, grouped by station (canonical inside).
    d = int(np.flatnonzero(ds["dataset"].values == dataset)[0])
    m_local = np.full(ds.sizes["model"], -1, dtype=np.int64)
    m_local[[int(np.flatnonzero(ds["model"].values == m)[0]) for m in models]] = np.arange(len(models))
    s_local = np.full(ds.sizes["station"], -1, dtype=np.int64)
    s_local[[int(np.flatnonzero(ds["station"].values == s)[0]) for s in stations]] = np.arange(len(stations))
    keep = ds["pair_dataset"].values == d
    keep &= m_local[ds["pair_model"].values] >= 0
    model = m_local[ds["pair_model"].values[keep]].astype(np.int32)
    phase = ds["pair_phase"].values[keep].astype(np.int8)
    station = s_local[ds["pair_station"].values[keep]]
    residual_ns = residual_ns_of(ds["residual"].values[keep])
    conf = ds["pair_conf"].values[keep].astype(np.float64)
    order = np.lexsort((conf, residual_ns, phase, model, station))
    pairs = {"model": model[order], "phase": phase[order], "residual_ns": residual_ns[order], "conf": conf[order],
             "station": station[order].astype(np.int32)}
    return DatasetCounts(stations, models, n_reference, counts, fe, fm, pairs)


def _stack(c: DatasetCounts, *, models: list[str], stations: list[str], starts: np.ndarray,
           edges: np.ndarray | None, template: Mapping[str, np.ndarray]) -> StationStack:
    """``c`` as stack rows on the union models, stations (keys: union station index) and time bins."""
    model_at = {m: i for i, m in enumerate(models)}
    station_at = {s: i for i, s in enumerate(stations)}  # (a list's index() per station: quadratic in stations)
    mi = np.array([model_at[m] for m in c.models], dtype=np.int64)
    keys = np.array([station_at[s] for s in c.stations], dtype=np.int64)
    n = keys.size
    offset = 0
    if edges is not None and starts.size:
        offset = int(np.searchsorted(edges, starts[0]))
        if not np.array_equal(edges[offset:offset + starts.size], starts):
            raise RuntimeError("internal error: a side's time bins are not a run of the merged bins")
    fields: dict[str, np.ndarray] = {}
    for name in (*PER_STATION, *DENSE_BINNED):
        # The binned counts laid out dense on the union's bins first (to check the arrivals), then made
        # sparse rows (_to_rows) as the kernel's stacks hold them.
        out = np.zeros((n,) + template[name].shape, dtype=template[name].dtype)
        values = c.n_reference if name == "n_reference" else c.counts.get(name)
        if values is not None:  # else not in the Dataset (no time bins): zeros of the template's shape
            index: list[Any] = [slice(None)]
            if "model" in STATION_FIELDS.get(name, ()):
                index.append(mi)
            index.append(Ellipsis)
            if name.endswith("_over_time"):  # the time-bin axis is last: this side's bins are a run of the union's
                index.append(slice(offset, offset + values.shape[-2]))
            out[tuple(index)] = np.moveaxis(values, -1, 0)
        fields[name] = out
    pairs = c.pairs or {}
    station = pairs.get("station", np.zeros(0, dtype=np.int32))
    return StationStack(
        keys=keys, fields=fields,
        pair_key=keys[station] if station.size else np.zeros(0, dtype=np.int64),
        pairs={"pair_model": mi[pairs["model"]].astype(np.int32) if station.size else np.zeros(0, np.int32),
               "pair_phase": pairs["phase"].astype(np.int8) if station.size else np.zeros(0, np.int8),
               "pair_residual_ns": pairs["residual_ns"] if station.size else np.zeros(0, np.int64),
               "pair_conf": pairs["conf"] if station.size else np.zeros(0, np.float64),
               # SPEC §14: stores with groups are not extended (engine/extension.py): every pair in group 0.
               "pair_group": np.zeros(station.size, np.int32)},
    )



def _to_rows(stack: StationStack, n_bins: int) -> StationStack:
    """``stack`` with its dense binned counts (taken out of its fields) as sparse rows: one per nonzero bin."""
    dense = {rows: stack.fields.pop(name) for name, rows in DENSE_BINNED.items()}
    n = stack.keys.size
    # (S, ..., G) -> (S, G, ...): a row per (station, bin), kept where any count is nonzero.
    per_bin = {rows: np.moveaxis(v, -1, 1).reshape((n * n_bins,) + v.shape[1:-1]) for rows, v in dense.items()}
    nonzero = np.zeros(n * n_bins, dtype=bool)
    for v in per_bin.values():
        nonzero |= v.reshape(n * n_bins, int(np.prod(v.shape[1:]))).any(axis=1)
    at = np.flatnonzero(nonzero)
    stack.bin_key = stack.keys[at // max(n_bins, 1)]
    stack.binned = {"binned_bin": (at % max(n_bins, 1)).astype(np.int64),
                    **{rows: v[at] for rows, v in per_bin.items()}}
    stack.n_time_bins = n_bins
    return stack


def _fine(c: DatasetCounts, models: list[str], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    fe, fm = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    mi = [models.index(m) for m in c.models]
    fe[mi], fm[mi] = c.fine_emitted, c.fine_matched
    return fe, fm


def merge_counts(a: DatasetCounts, b: DatasetCounts, *, options: Options, starts_a: np.ndarray,
                 starts_b: np.ndarray, same_arrivals: bool, dataset: str = "") -> DatasetCounts:
    """The counts of one dataset from two sides (either may be empty), merged by the kernel's declaration.

    ``options`` carries the merged bin edges; ``starts_a``/``starts_b`` are each side's bin starts (ns).
    With ``same_arrivals`` both sides scored the same arrivals: at a station scored on both sides,
    ``n_reference`` (and its time bins) must agree and is taken once (else :class:`InputError`).
    """
    models = sorted(set(a.models) | set(b.models))
    stations = sorted(set(a.stations) | set(b.stations))
    none = np.zeros(0, dtype=np.int64)
    zero = score_station(none, none, none, none, none, none.astype(np.float64), n_models=len(models), options=options)
    template = {name: getattr(zero, name) for name in (*PER_STATION, *DENSE_BINNED)}
    sa = _stack(a, models=models, stations=stations, starts=starts_a, edges=options.bin_edges, template=template)
    sb = _stack(b, models=models, stations=stations, starts=starts_b, edges=options.bin_edges, template=template)
    if same_arrivals:
        shared, ia, ib = np.intersect1d(sa.keys, sb.keys, return_indices=True)
        for name in ARRIVAL_FIELDS:
            va, vb = sa.fields[name][ia], sb.fields[name][ib]
            differ = np.flatnonzero((va != vb).reshape(va.shape[0], -1).any(axis=1))
            if differ.size:
                names = [stations[int(k)] for k in shared[differ]]
                raise InputError(
                    f"dataset {dataset!r}: the new inputs score other reference arrivals than the store over the "
                    f"same stretch of time, at {differ.size} station(s) ({', '.join(names[:5])}"
                    f"{' …' if len(names) > 5 else ''}; arrivals stored {int(va[differ].sum())}, now "
                    f"{int(vb[differ].sum())}). Models added to a store must be scored against the same reference "
                    "over the same span (their picks covering the same stretch of time); score all the inputs "
                    "together with `pickscale score` instead.")
            sb.fields[name][ib] = 0  # the same arrivals: counted once
    n_bins = int(zero.n_time_bins)
    stack = StationStack.concat([_to_rows(sa, n_bins), _to_rows(sb, n_bins)])
    shape = (len(models), 2, options.fine.size)
    fine = add_fine(_fine(a, models, shape), _fine(b, models, shape))
    return counts_from_stack(stack, names=np.array(stations, dtype=object)[stack.keys], models=models,
                             options=options, fine=fine)


def _empty(models: list[str] | None = None) -> DatasetCounts:
    return DatasetCounts([], list(models or []), np.zeros((2, 0), np.int64), {}, np.zeros((0, 2, 0), np.int64),
                         np.zeros((0, 2, 0), np.int64), {})


#: Pairs of a side read per batch by :func:`stream_shares` (what this process holds of them at a time:
#: ~100 bytes a pair while a batch is cut into its streams).
BATCH_ROWS = 2**20



def merged_index(values: Any, into: list[str]) -> np.ndarray:
    """Each of a side's coordinate ``values``' index into the merged coordinate ``into`` (−1: not in it); both
    sorted, so the map is monotone.

    >>> merged_index(["b", "d"], ["a", "b", "c", "d"]).tolist()
    [1, 3]
    """
    at = {name: i for i, name in enumerate(into)}
    return np.array([at.get(str(v), -1) for v in values], dtype=np.int64)


def stream_shares(stored: xr.Dataset, new: xr.Dataset | None, *, replaced: Mapping[str, list[str]],
                  datasets: list[str], models: list[str], stations: list[str], rows: int = BATCH_ROWS,
                  check: Callable[[int, Mapping[str, np.ndarray]], Mapping[str, np.ndarray] | None] | None = None,
                  put: Callable[[dict[str, np.ndarray]], Any] | None = None) -> dict[int, list[Any]]:
    """Each merged stream's pairs from both sides, ``rows`` pairs of a side at a time: ``{stream: [share, …]}``.

    A stream is a (dataset, model, phase) of the merged coordinates, coded ``(dataset · n_models + model)
    · 2 + phase`` (:class:`pickscale.engine.pairs.Codes`); a share holds some of the stream's pairs --
    ``station`` (merged index), ``residual_ns``, ``conf`` and ``group`` columns -- stored side first, each
    side's in its order.  The pairs of a replaced (dataset, model) are left out of the stored side.  ``new``
    None: the stored side's alone (an extension that appends its pairs: :func:`appended_pairs`).

    The sides' pairs are read a batch of ``rows`` at a time (a store opened lazily reads those chunks only;
    pairs left on a cluster are fetched a batch at a time), so this process never holds every pair:
    ``check(lo, batch)`` sees each stored batch first (the store's pair checks, SPEC §15: the pairs from
    position ``lo``, each of :data:`~pickscale.store.pair_rules.PAIR_NAMES`), and ``put(share)`` says where
    each share goes (a future of it on the extension's cluster; default: the share itself).  The stream task
    sorts a stream's shares together, so how they are cut does not change the merged pairs.
    """
    index = merged_index
    nm = len(models)
    out: dict[int, list[Any]] = {}
    for side, ds in enumerate((stored, new)):
        if ds is None:
            continue
        d_of, m_of = index(ds["dataset"].values, datasets), index(ds["model"].values, models)
        s_of = index(ds["station"].values, stations)
        dropped = np.zeros((d_of.size, m_of.size), dtype=bool)  # the stored (dataset, model)s replaced
        if side == 0:
            names, model_names = [str(v) for v in ds["dataset"].values], [str(v) for v in ds["model"].values]
            for name, gone in replaced.items():
                if name in names:
                    dropped[names.index(name), [i for i, model in enumerate(model_names) if model in gone]] = True
        n = ds.sizes.get("pair", 0)
        for lo in range(0, n, rows):
            batch = {k: np.asarray(ds[k].isel(pair=slice(lo, lo + rows)).values) for k in PAIR_NAMES}
            # (the check's own int64 indices and nanoseconds of the batch, when it gives them: not made twice)
            known = (check(lo, batch) if side == 0 and check is not None else None) or {}
            d, m, p, s = (known[k] if k in known else batch[k].astype(np.int64) for k in PAIR_NAMES[:4])
            keep = ~dropped[d, m]
            stream = (d_of[d] * nm + m_of[m]) * 2 + p
            columns = {"station": s_of[s].astype(np.int32),
                       "residual_ns": (known["residual_ns"] if "residual_ns" in known
                                       else residual_ns_of(batch["residual"])),
                       "conf": batch["pair_conf"].astype(np.float64),
                       "group": np.zeros(d.size, np.int32)}  # SPEC §14: stores with groups are not extended
            del batch, known, d, m, p, s
            if not keep.all():
                stream, columns = stream[keep], {k: v[keep] for k, v in columns.items()}
            if stream.size and (stream.min() < 0 or columns["station"].min() < 0):
                raise RuntimeError("internal error: a pair of a model or station the merged results do not hold")
            for code, share in by_stream(stream, columns):
                out.setdefault(code, []).append(share if put is None else put(share))
            del columns, stream
    return dict(sorted(out.items()))


def appended_pairs(stored: xr.Dataset, new: xr.Dataset, *, datasets: list[str], models: list[str],
                   stations: list[str], store: Any = None) -> tuple[dict[str, Any], PairParts]:
    """The merged pair variables of an extension that appends its pairs: the stored ones, then the new run's.

    Each side's pairs keep their order (the stored segments', then the new run's canonical order, SPEC §9),
    their indices mapped onto the merged coordinates (``datasets``, ``models``, ``stations``: each side's
    names are a sorted subset of them, so the maps keep the order).  Returns the variables (Dask arrays: the
    stored rows read lazily from the store, the new ones where the run left them) and the
    :class:`~pickscale.store.segments.PairParts` that :func:`pickscale.store.save` writes them from
    (``store``: the local store ``stored`` was opened from, whose unchanged chunks a save in its place links).
    """
    import dask.array as da  # lazy: only an extension (which runs on Dask) appends pairs

    def lut(values: Any, into: list[str]) -> np.ndarray | None:
        at = {name: i for i, name in enumerate(into)}
        out = np.array([at[str(v)] for v in values], dtype=np.int64)
        return None if np.array_equal(out, np.arange(out.size)) else out

    def maps(ds: xr.Dataset) -> dict[str, np.ndarray | None]:
        return {"pair_dataset": lut(ds["dataset"].values, datasets), "pair_model": lut(ds["model"].values, models),
                "pair_station": lut(ds["station"].values, stations)}

    def on_merged(values: Any, table: np.ndarray | None, dtype: Any) -> Any:
        return values if table is None else values.map_blocks(_on_table, table, dtype, dtype=dtype)

    rows = stored.sizes.get("pair", 0)
    stored_maps, new_maps = maps(stored), maps(new)
    data: dict[str, Any] = {}
    stored_parts, new_parts, chunk_rows = {}, {}, {}
    # (the ranked runs' copy of the pairs, SPEC §9, when both sides keep one: a store written before has none)
    ranked = tuple(n for n in RANKED if stored[n].dims == ("pair",)) if ranks_kept(stored) and ranks_kept(new) else ()
    for name in (*PAIR_NAMES, *ranked):
        dtype = new[name].dtype
        old = stored[name].variable
        chunk_rows[name] = int(stored[name].encoding.get("chunks", (0,))[0] or 0)
        stored_parts[name] = (old, stored_maps.get(name))
        fresh = new[name].variable._data if not new[name].variable._in_memory else new[name].values
        if old._in_memory and not isinstance(fresh, da.Array):  # both sides here: NumPy, as a run's
            new_parts[name] = _on_table(np.asarray(fresh), new_maps.get(name), dtype)
            data[name] = np.concatenate([_on_table(old.values, stored_maps.get(name), dtype), new_parts[name]])
            continue
        # (name=False: a random name, not one hashed from the data -- hashing a stored variable pickles it whole)
        fresh = (fresh if isinstance(fresh, da.Array)
                 else da.from_array(np.asarray(fresh), chunks=BATCH_ROWS, name=False))
        new_parts[name] = on_merged(fresh, new_maps.get(name), dtype)
        kept = on_merged(da.from_array(_Rows(old), chunks=BATCH_ROWS, name=False), stored_maps.get(name), dtype)
        data[name] = da.concatenate([kept.astype(dtype), new_parts[name]])
    if ranked:  # the block tables (a 1024th of the pairs' rows): the stored one read, the new one after it
        for name in RANKED:
            if name not in ranked:
                data[name] = np.concatenate([np.asarray(stored[name].values), np.asarray(new[name].values)])
    return data, PairParts(rows=rows, stored=stored_parts, new=new_parts, store=store, chunk_rows=chunk_rows)


def ranks_kept(results: xr.Dataset) -> bool:
    """Whether results keep their pairs' ranked runs (SPEC §9) and exact sums: stores written before do not."""
    return all(name in results for name in (*RANKED, "residual_sums")) and isinstance(results.attrs.get(RUNS), list)


class _Rows:
    """A stored variable (read lazily from its store) as Dask reads an array: each slice loaded as NumPy."""

    def __init__(self, variable: xr.Variable) -> None:
        self.variable, self.shape, self.dtype, self.ndim = variable, variable.shape, variable.dtype, variable.ndim

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self.variable[key].values)


def _on_table(values: np.ndarray, table: np.ndarray | None, dtype: Any) -> np.ndarray:
    """Indices ``values`` mapped by ``table`` (None: unchanged), as ``dtype``."""
    return (values if table is None else table[values]).astype(dtype, copy=False)


@dataclasses.dataclass
class StoredSide:
    """What :func:`merge_results` reads of the stored side alone when no stored model is replaced: each
    dataset's counts (pairs left out) and events, and the pick rates.  Rebuilding them reads every rate run
    of the store (one per station and stretch of days picked), so an extension builds them while its new
    inputs are scored (:func:`stored_side`), not after.  The merge takes each part out as it uses it (what
    this process holds then is what the merge would have rebuilt), so one serves one merge."""

    counts: dict[str, DatasetCounts]
    events: dict[str, Any]
    rates: tuple[PickRates | None] | None

    def take_rates(self) -> tuple[PickRates | None]:
        """The pick rates, taken out (once)."""
        rates, self.rates = self.rates, None
        if rates is None:
            raise RuntimeError("internal error: a stored side's pick rates taken twice")
        return rates


def stored_side(stored: xr.Dataset) -> StoredSide:
    """:class:`StoredSide` of ``stored``: what :func:`merge_results` would rebuild of it with no model replaced
    and the pairs merged elsewhere (its ``streams`` or ``pairs``)."""
    datasets = [str(d) for d in stored["dataset"].values]
    with_events = Options.from_attrs(stored.attrs["options"]).events
    return StoredSide(counts={d: counts_of(stored, d, with_pairs=False) for d in datasets},
                      events={d: events_of(stored, d) for d in datasets} if with_events else {},
                      rates=(rates_of(stored),))


def merge_results(stored: xr.Dataset, new: xr.Dataset, *, same_arrivals: Mapping[str, bool],
                  replaced: Mapping[str, list[str]] | None = None,
                  attrs: Mapping[str, Any] | None = None,
                  streams: Callable[[Callable[..., dict[int, list[Any]]], list[str], list[str], list[str]], Any]
                  | None = None,
                  pairs: Callable[[list[str], list[str], list[str]], Any] | None = None,
                  prepared: StoredSide | None = None) -> xr.Dataset:
    """The results of ``stored`` and ``new`` together (same options), every metric derived again.

    ``same_arrivals[d]``: both sides scored the same arrivals of dataset ``d``
    (counted once); otherwise they add up.  ``replaced[d]``: stored models of
    ``d`` whose counts are dropped (the new run's take their place).
    ``attrs``: the merged Dataset's attributes (default: the stored ones).
    ``streams``: how the pairs are merged and timed -- called with :func:`stream_shares` on both sides (its
    keywords ``check`` and ``put`` left to give) and the merged datasets, models and stations, it returns the
    merged pairs and their statistics
    (:func:`pickscale.engine.pairs.streams_of`: on the extension's cluster, where the pairs then stay);
    by default they are merged here, station by station, with the counts.
    ``pairs``: instead of ``streams``, the merged pairs and their statistics from the merged coordinates
    (datasets, models, stations): an extension that appends its pairs (:func:`appended_pairs`).
    ``prepared``: :func:`stored_side` of ``stored``, built beforehand; used when no stored model is replaced and
    the pairs are merged by ``streams`` or ``pairs`` (what it was built for), else rebuilt here.
    """
    options = Options.from_attrs(stored.attrs["options"])
    given = Options.from_attrs(new.attrs["options"])
    if not given.events:  # SPEC §19: a side that detected no events has no K to agree on (the store's holds)
        given = dataclasses.replace(given, event_min_arrivals=options.event_min_arrivals)
    if given != options:
        raise RuntimeError("internal error: merging results scored with other options")
    options = options.with_bin_edges(union_edges(options, stored, new))
    starts_a, starts_b = bin_starts_ns(stored), bin_starts_ns(new)
    datasets = sorted({str(d) for d in stored["dataset"].values} | {str(d) for d in new["dataset"].values})
    per_dataset = {}
    with_pairs = streams is None and pairs is None
    if prepared is not None and (with_pairs or any((replaced or {}).values())):
        prepared = None  # (built for another merge: rebuilt here)
    for d in datasets:
        in_a, in_b = d in stored["dataset"].values, d in new["dataset"].values
        a = ((prepared.counts.pop(d) if prepared is not None else
              counts_of(stored, d, drop_models=tuple((replaced or {}).get(d, ())), with_pairs=with_pairs)) if in_a
             else _empty())
        b = counts_of(new, d, with_pairs=with_pairs) if in_b else _empty()
        if not in_a:
            a.fine_emitted = np.zeros((0, 2, options.fine.size), np.int64)
            a.fine_matched = a.fine_emitted
        if not in_b:
            b.fine_emitted = np.zeros((0, 2, options.fine.size), np.int64)
            b.fine_matched = b.fine_emitted
        per_dataset[d] = merge_counts(a, b, options=options, starts_a=starts_a, starts_b=starts_b,
                                      same_arrivals=bool(same_arrivals.get(d, False)) and in_a and in_b, dataset=d)
        if options.events:  # SPEC §19: the events merged by id (the K highest levels of both sides)
            per_dataset[d].events = merge_event_counts(
                prepared.events.pop(d) if prepared is not None and in_a
                else events_of(stored, d, drop_models=tuple((replaced or {}).get(d, ()))), events_of(new, d),
                models_a=a.models, models_b=b.models, models=per_dataset[d].models, k=options.n_event_levels,
                same_arrivals=bool(same_arrivals.get(d, False)) and in_a and in_b)
        del a, b  # (each side's counts of the dataset: merged)
    out_attrs = dict(stored.attrs if attrs is None else attrs)
    out_attrs.pop("options", None)
    out_attrs.pop(RUNS, None)  # (the merged pairs' ranked runs, if they keep them: assemble lists them)
    merged_pairs = None
    models = sorted({m for c in per_dataset.values() for m in c.models})
    stations = sorted({s for c in per_dataset.values() for s in c.stations})
    if pairs is not None:
        merged_pairs = pairs(datasets, models, stations)
    elif streams is not None:
        shares_of = functools.partial(stream_shares, stored, new, replaced=replaced or {}, datasets=datasets,
                                      models=models, stations=stations)
        merged_pairs = streams(shares_of, datasets, models, stations)
    rates = merged_rates(stored, new, replaced=replaced,  # SPEC §20: picks added, days united
                         stored_rates=prepared.take_rates() if prepared is not None else None)
    return assemble(per_dataset, options=options, attrs=out_attrs, pairs=merged_pairs, rates=rates)
