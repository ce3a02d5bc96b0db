"""Extending a results store (SPEC §11): new models, new datasets or a later stretch of time, without rescoring.

:func:`extend` scores the new inputs alone, with the store's options, checks
them against what the store records of itself, merges the counts
(:func:`pickscale.results.extend.merge_results`: the kernel's declaration of
how each count combines; every reading that depends on all models derived
again) and saves the store atomically.

What a store records for this (``attrs["extent"]``) is written by every run:
:mod:`pickscale.engine.extent`.

An extension is refused (nothing written) when it is scored with other
options (:mod:`pickscale.engine.extension_options`), when a (dataset, model) it
brings is stored over an overlapping span (unless ``replace``), or when its
reference disagrees with the one stored for the same dataset and span
(:mod:`pickscale.engine.extension_refusals`).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import os
import pathlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StoreError
from ..options import Options
from ..results.bootstrap import bootstrap
from ..results.derived import edge_warnings
from ..results.extend import (
    EXACT_FIELDS,
    StoredSide,
    appended_pairs,
    merge_results,
    merged_index,
    ranks_kept,
    stored_side,
)
from ..results.variables import RUNS
from ..store import read_lazily, reserved, save
from ..store.consistency import PairCheck, stored_options
from ..store.paths import local_store_path
from ..store.read import open_checking
from ..store.remote import is_remote
from ..store.segments import PAIR_PARTS, SEGMENTS, PairParts, segments_of
from ..store.writing import rows_of_parts
from .extension_options import KEYWORDS, OPTION_NAMES, bootstrap_settings, check_keywords, check_options
from .extension_refusals import check_extent, iso, merged_extent
from .extent import arrival_spans, facts_of, reference_digest
from .graph import scheduler
from .merged_streams import by_rank, keeps_statistics, present_models, ranked_statistics, runs_on, statistics_apart
from .merged_streams import merged_statistics as _merged_statistics
from .pairs import PairColumns, is_current, streams_of
from .run import run_keywords
from .stages import execute, finalize, prepare
from .stored_batches import placed
from .stored_pairs import StoredShares, merged_on_workers, stream_map

if TYPE_CHECKING:
    import xarray as xr


__all__ = ["extend", "extended", "shares_no_stream", "present_models", "statistics_apart", "facts_of",
           "reference_digest", "arrival_spans", "check_keywords", "check_options", "KEYWORDS", "OPTION_NAMES"]


def extended(stored: xr.Dataset, reference: Any, picks: Any, *, replace: bool = False, ci: float | None = None,
             store: Any = None, checking: concurrent.futures.Future[None] | None = None,
             **keywords: Any) -> xr.Dataset:
    """The results of ``stored`` extended by ``reference`` and ``picks`` (nothing is written).

    ``keywords``: those of :func:`pickscale.score`, each treated as
    :data:`KEYWORDS` declares (scoring options given must equal the store's:
    they are taken from it).  ``ci``: the bootstrap level of the intervals
    (SPEC §12); by default those of the store, if it has any, drawn again
    on the merged counts with its level, draws and seed — as one run would.
    ``store``: the store ``stored`` was opened from (:func:`pickscale.store.open_results`, its pairs
    left to read): the stored pairs are then read a batch at a time as they are merged, and each batch is
    checked as it is read (SPEC §15; the pairs' checks of a whole opening), so this process never holds
    every pair -- unless the new inputs add pairs to no stored stream (new models, new datasets:
    :func:`shares_no_stream`), when no stored pair is read.  ``checking``: the store's own check, still
    running when ``stored`` was opened by :func:`pickscale.store.read.open_checking`: the new inputs are
    scored meanwhile, and nothing stored is merged before it is done; a store that fails it is the error,
    whatever else went wrong (as if it had been checked first).
    Raises :class:`OptionsError`, :class:`InputError` or :class:`StoreError`
    when the extension is refused.
    """
    try:
        if "options" not in stored.attrs:
            raise StoreError("the store records no options: it is not pickscale results")
        arguments = check_keywords(stored.attrs, keywords)
        level, draws, seed = bootstrap_settings(stored.attrs.get("bootstrap"), ci)
        missing = [name for name in EXACT_FIELDS if name not in stored]
        if missing or not isinstance(stored.attrs.get("extent"), dict):
            raise StoreError("the store holds no exact sums or extent: an earlier pickscale wrote it, so it cannot "
                             "be extended exactly; score all the inputs again with `pickscale score`.")
        # The pairs are merged and timed a stream at a time where the run's were (on its cluster, when Dask
        # computes with its client: the merged pairs then stay there until saved), not on this process.
        # (the client given, else Dask's default one, as the new inputs are scored: its futures are read there)
        client = scheduler(arguments.get("client"))
        client = client if client is not None and is_current(client) else None
        # An extension that appends its pairs reads, checks and sends the stored ones to the cluster (without
        # one: cuts them here) while the new inputs are scored (one that replaces a model may merge them
        # otherwise: read then).
        # (none to read when the store keeps its pairs ranked: an extension then reads only the blocks its order
        # statistics reach, SPEC §11)
        ahead = (StoredShares(stored, store, client=client) if store is not None and not replace
                 and stored.sizes.get("pair", 0) and not by_rank(stored) else None)
        try:
            return _extended(stored, reference, picks, arguments, replace=replace, level=level, draws=draws,
                             seed=seed, store=store, client=client, ahead=ahead, checking=checking)
        finally:
            if ahead is not None:
                ahead.cancel()  # (taken by then, unless the extension was refused meanwhile)
    except BaseException:
        _checked(checking)  # (its StoreError, if it failed, raised in place of this one)
        raise


def _checked(checking: concurrent.futures.Future[None] | None) -> None:
    """Wait for the store's check (:func:`extended`'s ``checking``); raise what it raised."""
    if checking is not None:
        checking.result()


def _extended(stored: xr.Dataset, reference: Any, picks: Any, arguments: dict[str, Any], *, replace: bool,
              level: float | None, draws: int, seed: int, store: Any, client: Any,
              ahead: StoredShares | None, checking: concurrent.futures.Future[None] | None) -> xr.Dataset:
    # What the merge reads of the store alone (its counts and its pick-rate runs, one per station and stretch
    # of days picked: they grow with the store) is rebuilt on a thread while the new inputs are scored, once
    # the store passed its check (not beside it: their peaks would add up); an extension that replaces a
    # model rebuilds it without that model, once it is known.
    side: concurrent.futures.Future[StoredSide | None] | None = None
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pickscale-stored-side")
    if not replace:
        side = pool.submit(contextvars.copy_context().run, _stored_side_once_checked, stored, checking)
    try:
        return _merged(stored, reference, picks, arguments, replace=replace, level=level, draws=draws, seed=seed,
                       store=store, client=client, ahead=ahead, checking=checking, side=side)
    finally:
        pool.shutdown(wait=True)  # (no thread left behind, whatever was refused meanwhile)


def _stored_side_once_checked(stored: xr.Dataset, checking: concurrent.futures.Future[None] | None
                              ) -> StoredSide | None:
    """:func:`~pickscale.results.extend.stored_side` of ``stored`` once its check (``checking``) passed; None
    when it failed (its error is the extension's)."""
    if checking is not None and checking.exception() is not None:
        return None
    return stored_side(stored)


def _merged(stored: xr.Dataset, reference: Any, picks: Any, arguments: dict[str, Any], *, replace: bool,
            level: float | None, draws: int, seed: int, store: Any, client: Any, ahead: StoredShares | None,
            checking: concurrent.futures.Future[None] | None,
            side: concurrent.futures.Future[StoredSide | None] | None) -> xr.Dataset:
    # The run's stages, keeping the normalised reference (in its buckets, where they are): the arrivals are
    # checked against the store's.
    run = prepare(reference, picks, run_keywords(arguments), keep_reference=True)
    apart = not replace and shares_no_stream(stored, run.scope.models)
    if apart and ahead is not None:  # (no stored pair is timed again: the reading started early stops here)
        ahead.cancel()
        ahead = None
    executed = execute(run)
    new_pairs = executed.pairs  # (its sizes and stream tasks: what an appending extension times again)
    new = finalize(run, executed)
    if apart:  # (and the models the new results hold, whatever the scope named: else timed as any extension)
        apart = shares_no_stream(stored, present_models(new))
    _checked(checking)  # (nothing stored is read for the merge before the store passed its check)
    prepared = None if side is None else side.result()
    reference_rows = run.reference
    assert reference_rows is not None  # (kept: keep_reference)
    same, replaced = check_extent(stored, new, reference_rows, replace=replace)
    attrs = {k: v for k, v in stored.attrs.items() if k not in ("options", "bootstrap")}
    attrs["extent"] = merged_extent(stored.attrs["extent"], new.attrs["extent"], replaced)
    added = {d: sorted(set(new.attrs["extent"]["models"][d]) - set(replaced.get(d, []))
                       - {str(m) for m, p in zip(stored["model"].values,
                                                  stored["model_present"].sel(dataset=d).values) if p}
                       if d in stored["dataset"].values else set(new.attrs["extent"]["models"][d]))
             for d in new.attrs["extent"]["models"]}
    entry = {
        "created": new.attrs.get("created"),
        "pickscale_version": new.attrs.get("pickscale_version"),
        "inputs": new.attrs.get("inputs", {}),
        "datasets": {d: {"kind": ("new dataset" if d not in stored["dataset"].values
                                  else "same arrivals" if same.get(d) else "new stretch of time"),
                         "picks": [iso(e["picks"][0]), iso(e["picks"][1])],
                         "models": sorted(new.attrs["extent"]["models"][d]),
                         "models_added": added[d], "models_replaced": sorted(replaced.get(d, []))}
                     for d, (e,) in new.attrs["extent"]["datasets"].items()},
        "exclusions": new.attrs.get("exclusions", {}),
        "warnings": list(new.attrs.get("warnings", [])),
    }
    attrs["extensions"] = [*stored.attrs.get("extensions", []), entry]
    attrs["warnings"] = [*stored.attrs.get("warnings", []), *entry["warnings"]]
    options = Options.from_attrs(stored.attrs["options"])
    dropped = any(m in {str(v) for v in stored["model"].values} for ms in replaced.values() for m in ms)
    if dropped:
        # A replaced model's stored pairs leave the store: every pair is merged into one segment again.
        attrs.pop(SEGMENTS, None)
        check = None if store is None else PairCheck(store, stored, stored_options(store, stored.attrs))
        merged = merge_results(stored, new, same_arrivals=same, replaced=replaced, attrs=attrs,
                               streams=functools.partial(_streams, client=client, options=options, check=check,
                                                         stored=stored, store=store, new=new, new_pairs=new_pairs,
                                                         replaced=replaced))
    else:
        # The new pairs are appended as a segment of their own: the stored ones are read (and checked) once
        # for the merged statistics, never sorted or written again (SPEC §11).
        made: list[PairParts] = []
        n_new = int(new.sizes.get("pair", 0))
        attrs[SEGMENTS] = segments_of(stored.attrs, int(stored.sizes.get("pair", 0))) + ([n_new] if n_new else [])
        if len(attrs[SEGMENTS]) < 2:
            attrs.pop(SEGMENTS)
        # The merged streams are timed on the cluster (a thread waits for them) while the counts are merged here.
        names = _merged_names(stored, new)
        timer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pickscale-merged-streams")
        if apart:  # every stream on one side only: its statistics are that side's (SPEC §11)
            timing = timer.submit(statistics_apart, stored, new, *names, options=options)
        elif by_rank(stored) and ranks_kept(new):  # the stored streams read by rank, a block at a time
            timing = timer.submit(contextvars.copy_context().run, functools.partial(
                ranked_statistics, stored, new, new_pairs, *names, client=client, options=options, store=store))
        else:
            timing = timer.submit(contextvars.copy_context().run, functools.partial(
                _merged_statistics, stored, new, new_pairs, *names, client=client, options=options,
                ahead=ahead or StoredShares(stored, store, client=client)))
        timer.shutdown(wait=False)
        try:
            merged = merge_results(stored, new, same_arrivals=same, replaced=replaced, attrs=attrs,
                                   pairs=functools.partial(_appended, stored, new, timing=timing, names=names,
                                                           store=store, made=made), prepared=prepared)
        finally:
            concurrent.futures.wait([timing])  # (no thread left behind, whatever merging raised)
        merged.encoding[PAIR_PARTS] = made[0]
    # A best threshold on the edge (SPEC §7) is a reading of the merged counts: the new part's own edges, scored
    # alone, are not the store's; the extension says the merged ones (what its summary prints).
    options = Options.from_attrs(merged.attrs["options"])
    alone = set(edge_warnings(new, options))
    entry["warnings"] = [*(w for w in entry["warnings"] if w not in alone), *edge_warnings(merged, options)]
    merged.attrs["warnings"] = [*(w for w in merged.attrs.get("warnings", []) if w not in alone
                                  or w in entry["warnings"])]
    merged.attrs["extensions"] = [*merged.attrs["extensions"][:-1], entry]
    if level is None:
        return merged

    # The intervals are a reading of the merged counts (SPEC §12): drawn again, as one run with --ci draws them.
    # They weigh each station's sums of the pairs, read a batch at a time: the stored rows here, from the store,
    # the new ones fetched from where the run left them (never every pair at once).
    parts = merged.encoding.get(PAIR_PARTS)
    pairs = None if parts is None else functools.partial(rows_of_parts, parts, list(parts.new))
    out = bootstrap(merged, level=level, draws=draws, seed=seed, pairs=pairs)
    if parts is not None:
        out.encoding[PAIR_PARTS] = parts
    return out


def _merged_names(stored: xr.Dataset, new: xr.Dataset) -> tuple[list[str], list[str]]:
    """The merged datasets and models of an extension that drops no stored model: every dataset of either side,
    and every model present in a dataset of either side, sorted (as :func:`merge_results` lays them)."""
    datasets = sorted({str(d) for ds in (stored, new) for d in ds["dataset"].values})
    models = sorted({str(m) for ds in (stored, new)
                     for m in ds["model"].values[np.asarray(ds["model_present"].values).any(axis=0)]})
    return datasets, models


def shares_no_stream(stored: xr.Dataset, models: Mapping[str, Any]) -> bool:
    """Whether a new run with ``models`` (dataset -> its models) adds no pair to a stream of ``stored`` -- no
    (dataset, model) of it is present in the store (new models, new datasets) -- and ``stored`` keeps what
    SPEC §5's rules found (:func:`keeps_statistics`; stores written before do not): then each merged
    stream is on one side only, and its statistics are that side's (:func:`statistics_apart`).

    >>> import xarray as xr
    >>> from pickscale.metrics.flags import FLAG_NAMES
    >>> stored = xr.Dataset({"model_present": (("dataset", "model"), [[True, False]])},
    ...                     coords={"dataset": ["d"], "model": ["a", "b"]})
    >>> stored = stored.assign({name: (("dataset", "model"), [[0, 0]]) for name in FLAG_NAMES})
    >>> shares_no_stream(stored, {"d": ["b", "c"], "e": ["a"]}), shares_no_stream(stored, {"d": ["a"]})
    (True, False)
    """
    if not keeps_statistics(stored):
        return False
    stored_models = present_models(stored)
    return not any(stored_models.get(str(d), set()) & {str(m) for m in ms} for d, ms in models.items())


def _appended(stored: xr.Dataset, new: xr.Dataset, datasets: list[str], models: list[str], stations: list[str],
              *, timing: concurrent.futures.Future[dict[str, dict[str, np.ndarray]]],
              names: tuple[list[str], list[str]], store: Any, made: list[PairParts]) -> PairColumns:
    """The pairs of an extension that appends them (:func:`pickscale.results.extend.appended_pairs`), with the
    merged streams' statistics (``timing``: :func:`~pickscale.engine.merged_streams.merged_statistics` on the
    merged names ``names``)."""
    if (datasets, models) != names:
        raise RuntimeError("internal error: the merged streams were timed on other coordinates than the merge's")
    data, parts = appended_pairs(stored, new, datasets=datasets, models=models, stations=stations,
                                 store=None if store is None or is_remote(store) else pathlib.Path(store))
    made.append(parts)
    runs = (runs_on([*stored.attrs[RUNS], *new.attrs[RUNS]], datasets, models) if "ranked_residual" in data else [])
    return PairColumns(data=data, statistics=timing.result(), runs=runs)


def _streams(shares_of: Callable[..., dict[int, list[Any]]], datasets: list[str], models: list[str],
             stations: list[str], *, client: Any, options: Options, check: Any = None, stored: Any = None,
             store: Any = None, new: Any = None, new_pairs: PairColumns | None = None,
             replaced: Mapping[str, list[str]] | None = None) -> PairColumns:
    """The merged streams' pairs and statistics (:func:`~pickscale.engine.pairs.streams_of`) of an extension
    that merges every pair into one segment again (a stored model replaced).

    On a cluster, with ``stored`` opened from ``store`` (its pairs left to read) and the new run's pairs held
    by its stream tasks (``new_pairs``): the workers read, check and cut the stored pairs
    (:func:`~pickscale.engine.stored_pairs.merged_on_workers`, those of each ``replaced`` (dataset, model) left
    out) and the new run's stay where they are, their stations put on the merged coordinates there
    (:func:`~pickscale.engine.stored_batches.placed`): this process holds no pair.  Otherwise ``shares_of``:
    :func:`pickscale.results.extend.stream_shares` on both sides, which reads their pairs here a batch at a
    time; each share is sent to the cluster as it is cut (when there is one), so this process holds one batch
    of pairs at a time; ``check``: a :class:`~pickscale.store.consistency.PairCheck` of the stored pairs, fed
    every stored batch as it is read.
    """
    n_datasets, n_models = len(datasets), len(models)
    there = None
    if (client is not None and check is not None and new_pairs is not None
            and all(code in new_pairs.tasks for code in new_pairs.sizes)):
        there = merged_on_workers(stored, store, client, replaced=replaced or {}, datasets=datasets,
                                  models=models, stations=stations)
    if there is not None:
        assert new_pairs is not None
        shares, totals = {c: list(v) for c, v in there.shares.items()}, dict(there.sizes)
        merged_code = stream_map(new, datasets=datasets, models=models)
        s_of = merged_index(new["station"].values, stations)
        for code, size in new_pairs.sizes.items():
            shares.setdefault(merged_code(code), []).extend(
                client.submit(placed, held, s_of, pure=False) for held in new_pairs.tasks[code])
            totals[merged_code(code)] = totals.get(merged_code(code), 0) + size
        return streams_of(dict(sorted(shares.items())), client, options=options, n_datasets=n_datasets,
                          n_models=n_models, totals=totals)

    def put(share: dict[str, Any]) -> Any:
        # One future per share (a dict given to scatter would be scattered value by value, keyed by its keys).
        return client.scatter([share], hash=False)[0]

    shares = shares_of(put=put if client is not None else None, check=None if check is None else check.add)
    if check is not None:
        check.finish()
    return streams_of(shares, client, options=options, n_datasets=n_datasets, n_models=n_models)


def store_path(path: Any) -> pathlib.Path:
    """The results store at ``path``: the store itself, or a folder holding ``results.zarr``.

    A URL pickscale cannot write is refused (:func:`pickscale.store.paths.local_store_path`).
    """
    if is_remote(path):  # a store on object storage (pickscale[cloud]): the store's URL
        url = os.fspath(path).rstrip("/")
        return url if url.endswith(".zarr") else f"{url}/results.zarr"  # type: ignore[return-value]
    p = local_store_path(os.fspath(path), what="results store")
    if not (p / "zarr.json").exists() and (p / "results.zarr").exists():
        p = p / "results.zarr"
    return p


def extend(store: Any, reference: Any, picks: Any, *, replace: bool = False, ci: float | None = None,
           **keywords: Any) -> xr.Dataset:
    """Add new models, new datasets or a later stretch of time to a results store, without rescoring it.

    The new inputs are scored alone with the store's options and merged with
    the stored counts (SPEC §11); every reading that depends on all models
    (budget, best threshold, fine curve, AP, timing) is derived again.  The
    store is replaced atomically under its writer lock; its attribute
    ``extensions`` gets one provenance entry.  The result equals one run over
    all the inputs whenever scoping the parts alone excludes nothing the whole
    run keeps (models added with the same reference; a catalogue cut at a
    quiet gap with every station and model on both sides).

    Parameters
    ----------
    store
        A results store (``results.zarr``) or the folder holding it.
    reference, picks
        The new inputs, as for :func:`pickscale.score`.
    replace
        Score again a (dataset, model) already stored over an overlapping span:
        the stored counts of that model are dropped for that dataset.
    ci
        The level of the bootstrap intervals (SPEC §12).  Default: the store's
        own, if it has intervals (drawn again on the merged counts with its
        level, draws and seed); none otherwise.
    **keywords
        Those of :func:`pickscale.score`; scoring options (``tol``,
        ``threshold``, ``thresholds``, ``time_bin`` …) may be left out (they
        come from the store) and must otherwise equal the store's.

    Returns
    -------
    xarray.Dataset
        The extended results, as saved.

    Raises
    ------
    pickscale.errors.OptionsError, pickscale.errors.InputError, pickscale.errors.StoreError
        Other options, a (dataset, model) stored over an overlapping span
        (without ``replace``), a reference that disagrees with the stored one
        over the same span, a store that is not a complete pickscale store:
        the store is left untouched.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd, pickscale
    >>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0]})
    >>> picks = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.1, 20.1],
    ...                       "conf": [0.9, 0.8]})
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "results.zarr"
    >>> _ = pickscale.save(pickscale.score(ref, picks.assign(model="m")), target)
    >>> ds = pickscale.extend(target, ref, picks.assign(model="n", conf=0.5))
    >>> ds.model.values.tolist(), len(ds.attrs["extensions"])
    (['m', 'n'], 1)
    """
    target = store_path(store)
    with reserved(target):
        # Every pair is merged: read a batch at a time and checked as it is read; the stored timing readings,
        # which the merged pairs give again, are not compared with them (SPEC §15).  The rest of the store is
        # checked while the new inputs are scored.
        stored, checking = open_checking(target)
        ds = extended(stored, reference, picks, replace=replace, ci=ci, store=target, checking=checking,
                      **keywords)
        save(ds, target, overwrite=True)
        # The stored pairs were read from the store just replaced: the returned pairs are the new store's.
        ds = read_lazily(ds, target)
    return ds
