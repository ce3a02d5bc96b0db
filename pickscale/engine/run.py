"""The main job: read, scope, plan, exchange, score, combine.

Stages (each a Dask graph; nothing but small summaries and results reaches the client):

1. **Read** every picks part (:mod:`pickscale.engine.inputs`, :mod:`pickscale.engine.parts`): normalised per
   distinct value and encoded as integer arrays (about 15 bytes a pick), kept on the worker that read it.  The
   reference (one row per analyst arrival) is read in tasks too and gathered as codes.
2. **Outline**: the parts' summaries (per (dataset, station, model): pick counts and time span at or above
   the floor) are merged on the workers; the client decides the scope of SPEC §2 and the work plan
   (:mod:`pickscale.engine.units`, deterministic).
3. **Exchange** (:mod:`pickscale.engine.exchange`): picks move to the work partition of their unit — through
   Dask's shuffle (p2p on a cluster; the graph grows like parts + partitions), or, while parts × partitions
   is small, by cutting each part into one piece per partition.
4. **Score** (:mod:`pickscale.engine.scoring`): one task per partition runs the station kernel per work unit
   and returns station results stacked as arrays; a reduction tree on the workers combines them
   (:mod:`pickscale.kernel.combine`).
5. **Pairs** (:mod:`pickscale.engine.pairs`): the residual pairs stay on the workers, one task per
   (dataset, model, phase) orders them as the store does and computes their SPEC §5 statistics; the
   client receives the statistics only.
6. **Finalize** on the client from the combined counts, in canonical station order
   (:mod:`pickscale.results`); the Dataset's pairs are Dask arrays of the workers' results (NumPy
   without a cluster), written to the store a chunk range at a time (:mod:`pickscale.store.writing`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from dask import delayed

from ..errors import InputError, OptionsError, emit_warnings
from ..io import Normalised
from ..kernel import Partial, StationStack, combine_partials, score_station
from ..kernel.rates import merge_rates
from ..options import Options
from ..scope import Scope, scope_from_summary
from ..scope.placement import pick_placement
from ..settings import scoring_names
from . import exchange
from .collect import bring_back
from .extent import capture_reference, facts_of
from .graph import compute, n_workers, persist_stage, reduce_stage, scheduler, tree_reduce
from .inputs import load
from .pairs import codes_of, pair_columns
from .parts import Failure, PickPart, merge_outlines, outline, report_of
from .provenance import attributes, rows_read
from .unit_size import check_units
from .units import plan_units

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["score"]

# Input errors shown at most (a glob of thousands of bad files would otherwise print them all).
_MAX_MESSAGE_LINES = 40


def score(
    reference: Any,
    picks: Any,
    *,
    options: Options | None = None,
    threshold: float | Mapping[str, float] = 0.3,
    tol: float = 0.5,
    residual_tol: float = 2.0,
    thresholds: Sequence[float] | None = None,
    budget: int | Sequence[int] | None = None,
    exhaustive: bool = False,
    drop_invalid: bool = False,
    manual_only: bool = False,
    station_key: str = "as-is",
    columns: Any = None,
    coverage: Any = None,
    client: Any = None,
    progress: bool | None = None,
    block_picks: int | None = None,
    exchange_method: str = "auto",
    time_bin: str | None = None,
    tols: Sequence[float] | None = None,
    group_by: str | None = None,
    event_min_arrivals: int = 4,
    rate_thresholds: Sequence[float] | None = None,
    stations: Any = None,
    storage_options: dict[str, Any] | None = None,
    select_on: str | None = None,
) -> xr.Dataset:
    """Score picks against reference arrivals; every SPEC metric in one Dataset.

    Parameters
    ----------
    reference, picks
        A path, folder, glob or fsspec URL of CSV/Parquet files (or a list of
        them), a pandas DataFrame or a Dask DataFrame.  Columns and aliases as
        in SPEC §1.  The reference may also be a bulletin ObsPy reads (QuakeML,
        NonLinLoc, hypoDD …; a file, folder or glob) or an ObsPy ``Catalog``;
        the picks a SeisBench ``PickList`` (or any pick-like objects), or a
        dict of model name → such (see docs/usage.md, "Input formats").
    options
        The scoring options as one :class:`pickscale.Options` (then the scoring keywords below are left out:
        giving both is an ``OptionsError``).
    threshold, tol, residual_tol, thresholds, budget, exhaustive
        Options; see :class:`pickscale.options.Options`.
    drop_invalid
        Drop invalid rows with a warning instead of stopping.
    manual_only
        From a bulletin, keep only the picks whose ``evaluation_mode`` is
        ``"manual"``.
    station_key
        ``"as-is"`` (default) or ``"net.sta"``: station ids reduced to
        ``NET.STA`` on both sides (PhaseNet's ``NET.STA.LOC.CHA`` against a
        bulletin's ``NET.STA``; SPEC §1).
    columns
        Column names no alias covers, e.g. ``{"model": "rid", "station":
        "tid"}`` (or ``"model=rid,station=tid"``).
    coverage
        The windows of data the models were run on: a CSV/Parquet file or a
        DataFrame with ``station, start, end`` and optionally ``dataset`` and
        ``model`` (SPEC §2, "Coverage").  Arrivals and picks outside the
        windows every model of their dataset was run on are excluded and
        counted.  Default: none (every arrival at a scored station counts).
    client
        A ``distributed.Client``.  Default: the current client if there is one,
        else Dask's local scheduler (no cluster is started here; see
        :func:`local_cluster`).
    progress
        Show the progress of each stage on stderr (reading picks k/n, scoring
        partitions k/n): a bar on a terminal, else a line every 10 s of a
        stage that lasts longer (default True; False: nothing).
    block_picks
        Target number of picks per work unit: a busier station is cut into
        time blocks at quiet gaps (no arrival within ``residual_tol``), which
        bounds a worker's memory and changes no number.  Default: 2,000,000.
    exchange_method
        How picks move from the parts they were read in to the partitions
        that score them (:mod:`pickscale.engine.exchange`): ``"shuffle"`` (Dask's
        shuffle, p2p on a distributed cluster; its graph grows like parts +
        partitions), ``"direct"`` (one piece per part and partition; fastest
        while both are few) or ``"auto"`` (direct while parts × partitions
        <= 4,096).  Never changes a number.
    time_bin
        A pandas offset alias (``"1h"``, ``"1D"``, ``"7D"``, ``"MS"`` for
        calendar months …): the counts at the shared threshold are also kept
        per time bin (``*_over_time``, dim ``time_bin``; SPEC §10).  Default:
        none (no such variables).
    tols
        Extra detection tolerances in seconds, ascending, each in
        ``(0, residual_tol]`` (e.g. ``[0.1, 0.25, 0.5, 1.0]``): detection is
        matched once more at each and read at the shared threshold
        (``matched_at_tol``, ``recall_at_tol``, ``precision_lb_at_tol``, dim
        ``tol``; SPEC §13).  Default: none (no such variables).
    group_by
        Groups of arrivals (SPEC §14): ``"magnitude:0,1,2,3"`` (a numeric
        column cut at those edges; below the first and from the last edge in
        open end bins) or ``"network"`` (a text column: one group per value); a
        missing value is the group ``"missing"``.  The column is the
        reference's, else the ``stations`` table's.  The counts of an arrival at
        the shared threshold are also kept per group (``n_reference_by_group``,
        ``matched_by_group``, ``recall_by_group``, the timing statistics
        ``*_by_group``, dim ``group``; ``by_group.csv``).  Default: none.
    event_min_arrivals
        Event detection (SPEC §19): with an ``event`` column in the reference
        (a QuakeML bulletin has one), an event is detected at θ when at least
        this many of its scored arrivals are matched (``n_events``,
        ``events_detected``, ``event_detection_rate``; ``events.csv``).
        Default 4; 0: off.
    rate_thresholds
        Pick rates (SPEC §20), counted by every run for every pick whatever
        the scope (``rate_picks``, ``rate_days``, ``picks_per_day``, dim
        ``rate_station``; ``pick_rates.csv``), are also read at these
        thresholds (ascending, in ``[0, 1]``; they join the grid).  Default:
        each phase's shared threshold alone.
    stations
        A stations table (CSV/Parquet path or DataFrame): ``station``,
        optionally ``dataset``, and attributes (``instrument``, ``site_class``
        …) that ``group_by`` may name; joined to the arrivals by (dataset,)
        station.
    storage_options
        Passed to fsspec for inputs given as URLs (both the reference and the
        picks), e.g. ``{"endpoint_url": "http://127.0.0.1:9000", "key": ...,
        "secret": ...}`` or ``{"anon": True}`` for S3.  Default: fsspec's
        environment and configuration (``AWS_ENDPOINT_URL``,
        ``AWS_ACCESS_KEY_ID`` …).  An unreachable endpoint, missing or refused
        credentials or a missing bucket is an ``InputError`` naming the URL
        and the setting to check.
    select_on
        Out-of-sample choice (SPEC §16): ``"before:2024-01-01"`` (choose on the
        arrivals and picks before the date, report on those after) or
        ``"stations:0.5[:SEED]"`` (a seeded share of each dataset's scored
        stations to choose on, the others to report on).  Every variable is
        still the run's over all the inputs; each part is scored with the same
        options, and the best threshold and matched budget chosen on the
        selection part are read on the report part: ``best_threshold_selected``,
        ``recall_at_best_oos``, ``precision_lb_at_best_oos``,
        ``f1_lb_at_best_oos``, ``budget_oos``, ``recall_at_budget_oos``,
        ``n_reference_select``, ``n_reference_report`` (and
        ``station_selected``), in ``detection.csv`` too.  Default: none.

    Returns
    -------
    xarray.Dataset
        Dims ``dataset, model, phase, threshold, station, bin, fine_threshold,
        pair``: per-station counts, and every SPEC metric over (dataset, model,
        phase[, threshold]).  On a cluster whose client Dask computes with (the
        default client, or within ``with client.as_current():``) the residual
        pairs (dim ``pair``) stay on the workers: Dask arrays, read as any
        (``ds.residual.sel(...)``, ``.load()``) while the client is open, and
        written from there by :func:`pickscale.save`; with no cluster, or with
        a client that is not the current one, NumPy arrays.

    Raises
    ------
    pickscale.errors.InputError, pickscale.errors.OptionsError
        Bad input or options; nothing is written.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = pd.DataFrame({"station": ["CI.CLC"], "phase": ["P"], "time": ["2019-07-06T03:19:53.04"]})
    >>> picks = pd.DataFrame({"station": ["CI.CLC."], "phase": ["P"],
    ...                       "time": ["2019-07-06T03:19:53.10Z"], "conf": [0.8]})
    >>> ds = score(ref, picks)
    >>> float(ds.recall.sel(dataset="all", model="model", phase="P", threshold=0.3))
    1.0
    """
    if options is not None:  # the scoring keywords from one Options (they must be left at their defaults)
        return score(reference, picks, **_with_options(options, dict(locals())))
    if select_on is not None:  # SPEC §16: scored on all the inputs, then on each part of them
        arguments = dict(locals())  # every keyword of this call (nothing else is bound yet)
        del arguments["select_on"], arguments["options"]
        from .selection import score_out_of_sample

        return score_out_of_sample(select_on, arguments)
    options = Options(**{name: value for name, value in locals().items() if name in scoring_names()})
    group_spec, station_table = _grouping(options, stations, station_key)
    from ..io import check_columns, station_key_of

    check_columns(columns)
    station_key_of(np.zeros(0, dtype=object), station_key)  # an unknown key: OptionsError
    if exchange_method not in ("auto", "direct", "shuffle"):
        raise OptionsError(f"exchange_method must be 'auto', 'direct' or 'shuffle'; got {exchange_method!r}.")
    if progress is None:  # a bar per stage on a terminal; else a line every 10 s of a stage that lasts
        progress = True
    client = scheduler(client)
    from .lazy_dask import install

    install()  # xarray's check for Dask arrays, without importing dask.array (issue 27)
    if client is not None:
        from .workers import check_workers

        # A scheduler without workers, or workers that cannot import pickscale, would wait forever:
        # say so within PICKSCALE_WORKER_TIMEOUT (30 s) instead.
        check_workers(client)
    started = time.time()
    cover = None
    if coverage is not None:
        from ..io.coverage import read_coverage
        from ..scope import Coverage

        cover = Coverage.from_windows(read_coverage(coverage, station_key=station_key))

    reading = {"drop_invalid": drop_invalid, "station_key": station_key, "columns": columns,
               "storage_options": storage_options}
    kept_columns = () if group_spec is None else group_spec.columns
    if options.event_min_arrivals:  # SPEC §19: the event column is kept too, after the groups' columns
        from ..scope.events import EVENT_COLUMN

        kept_columns = (*kept_columns, EVENT_COLUMN)
    ref_src = load(reference, role="reference", manual_only=manual_only, keep=kept_columns or None, **reading)
    pick_src = load(picks, role="picks", floor=options.floor, **reading)
    from .selection import restrict

    ref_src, pick_src = restrict(ref_src, pick_src)  # one part of the inputs while select_on scores it (SPEC §16)

    # 1–2. Read (picks stay where they were read), outline, decide the scope.
    pick_parts = persist_stage(pick_src.parts, client, label="reading picks", progress=progress)
    ref_parts = compute(ref_src.parts, client, label="reading reference", progress=False)
    # The parts' outlines are merged on the workers: the client receives one summary.
    shared_cover = delayed(cover, pure=True) if cover is not None else None
    thresholds = options.phase_thresholds if cover is not None else None  # where picks sit in their windows
    # Every part also counts its pick rates (SPEC §20) on the grid: every pick, whatever the scope.
    grid = delayed(options.grid, pure=True)
    merged = compute([tree_reduce([delayed(outline)(p, shared_cover, thresholds, grid) for p in pick_parts],
                                  merge_outlines)], client, label="outlining picks", progress=False)[0]
    outlines = merged if isinstance(merged, list) else [merged]
    _raise_failures(ref_parts + outlines)
    ref_all = Normalised.combine(ref_parts)
    del ref_parts  # (combined: the read tasks' copies are not kept)
    pick_summary, below_floor, pick_report = _combine_outlines(outlines)
    if options.event_min_arrivals:  # SPEC §19: duplicate arrivals get one event whichever row is kept
        from ..io.normalise import kept_name
        from ..scope.events import settle_duplicates

        settle_duplicates(ref_all.frame, kept_name(len(kept_columns) - 1))
    scope: Scope = scope_from_summary(
        ref_all.frame, pick_summary, below_by_ds=below_floor, floor=options.floor,
        residual_tol_ns=options.residual_tol_ns, ref_source=ref_src.description, picks_source=pick_src.description,
        ref_rows=rows_read(ref_all), picks_rows=rows_read(pick_report), coverage=cover,
    )
    if cover is not None:  # SPEC §5, "Residuals on a grid", with windows: the picks' side
        found = [o.offsets for o in outlines if o.offsets is not None]
        scope.report["coverage"]["placement"]["picks"] = pick_placement(
            pd.concat(found, ignore_index=True) if found else None)
    ref_report = report_of(ref_all)
    capture_reference(ref_all.frame)  # for pickscale.extend's reference check (nothing otherwise)

    if options.time_bin is not None:
        from ..kernel.bins import scored_edges, stretched_span

        # One set of edges for the whole run, computed here once: the same whatever the partitioning.
        freq = options.time_bin
        edges = scored_edges(scope, pick_summary, freq)
        options = options.with_bin_edges(edges)
        stretched = stretched_span(scope, pick_summary, edges, freq)
        if stretched:
            scope.warnings.append(stretched)

    # 3. Work units (station time blocks) and the partitions that run them.
    group_codes = None
    if group_spec is not None:
        from ..scope.grouping import reference_group_codes

        # SPEC §14: the groups are decided here, once, from the scored reference (and the stations table).
        group_codes, labels = reference_group_codes(scope.reference, group_spec, stations=station_table,
                                                    found_columns=ref_all.ignored_columns)
        options = options.with_group_labels(labels)
    events = _events(scope, kept_columns, group_codes) if options.event_min_arrivals else None
    options = options.with_events(events is not None)
    del ref_all  # the scope holds the scored reference
    plan = plan_units(scope, options, block_picks=block_picks, n_workers=n_workers(client))
    # A unit too large for a worker (a station with no quiet gap) stops here, with a message, not a dead worker.
    check_units(plan, options, client=client, pick_parts=pick_parts)
    shared_plan = delayed(plan, pure=True)  # one copy in the graph, not one per task
    # What pickscale.extend checks an extension against, decided now: then the client lets the reference go
    # (its arrivals travel to the workers with the exchange), and holds nothing per arrival while scoring.
    extent = facts_of(scope, pick_summary, station_key=station_key)
    ref_codes = plan.encode_reference(scope.reference, group=group_codes,
                                      event=None if events is None else events.codes)
    del group_codes
    scope.reference = scope.reference.iloc[:0]

    # 4. Exchange (picks move to their work partition) and score; partials combined on the workers.
    keep = delayed((cover, scope.coverage_keep), pure=True) if cover is not None else None
    way = exchange.choose(exchange_method, len(pick_parts), plan.n_parts)
    if way == "direct":
        partials = exchange.direct(pick_parts, ref_codes, plan, shared_plan, options, cover=keep)
    else:
        partials = exchange.shuffle(pick_parts, ref_codes, plan, shared_plan, options,
                                    conf_dtype=_conf_dtype(outlines), distributed=client is not None, cover=keep)
    del ref_codes  # (the graphs of `partials` hold what they need of it)
    # Drop the client's handles on the read parts (the graphs of `partials` hold them too): once the job
    # is submitted, only the scheduler keeps each part, and frees it as soon as it has been moved.
    del pick_parts
    tops = reduce_stage(partials, combine_partials, client, label="scoring partitions", progress=progress)
    del partials
    # The residual pairs stay where they are: grouped, ordered and timed on the workers (engine/pairs.py).
    codes = codes_of(list(scope.datasets), dict(scope.models), plan.stations["station"].to_numpy(object))
    pairs = pair_columns(tops, codes, client, options=options, n_datasets=len(scope.datasets))
    total = bring_back(tops, client)  # joined here; on a cluster, the station fields stay there until laid out
    del tops

    # 5. Finalize on the client: one partial of arrays, in canonical order.
    from ..results import assemble

    per_dataset = _per_dataset(total, scope, plan, options, events)
    del total  # per_dataset holds its arrays (or fetches them), and assemble takes them one by one
    attrs = attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started)
    # What pickscale.extend checks an extension against.
    attrs["extent"] = extent
    # Python users see every exclusion and reading warning (the store keeps them in its attributes too).
    emit_warnings(attrs["warnings"])
    counted = [o.rates for o in outlines if o.rates is not None]
    rates = merge_rates(counted) if counted else None
    return assemble(per_dataset, options=options, attrs=attrs, pairs=pairs, rates=rates)


def _grouping(options: Options, stations: Any, station_key: str) -> tuple[Any, pd.DataFrame | None]:
    """SPEC §14: the parsed ``group_by`` (or None) and the stations table (read and checked first, or None)."""
    if options.group_by is None:
        if stations is not None:
            raise OptionsError("stations is used with group_by (it gives the station attributes to group "
                               "arrivals by); give group_by too.", options=("stations", "group_by"))
        return None, None
    from ..scope.grouping import parse_group_by, read_stations

    table = None if stations is None else read_stations(stations, station_key=station_key)
    return parse_group_by(options.group_by), table


def _raise_failures(parts: Sequence[Any]) -> None:
    """Raise the input errors found by the read tasks, in input order (all of them, up to five)."""
    from ..io import join_failures

    failures = [p.message for p in parts if isinstance(p, Failure)]
    if failures:
        # A message several files share (a glob of one layout) is said once, naming how many.
        lines = join_failures(failures).split("\n")
        if len(lines) > _MAX_MESSAGE_LINES:
            lines = lines[:_MAX_MESSAGE_LINES] + [f"(and more: {len(failures)} read task(s) found input errors)"]
        raise InputError("\n".join(lines))


def _with_options(options: Options, called: dict[str, Any]) -> dict[str, Any]:
    """The keywords of a :func:`score` call given ``options=``: its scoring keywords taken from the Options
    (any also given otherwise than at its default is an OptionsError), the others as called."""
    import inspect

    defaults = {n: p.default for n, p in inspect.signature(score).parameters.items()}
    scoring = [n for n in scoring_names() if n in defaults]
    both = [n for n in scoring if not _same(called[n], defaults[n])]
    if both:
        raise OptionsError(f"score() got options= and {', '.join(both)}: give the scoring options in one place "
                           "(options=Options(...), or as keywords).", options=tuple(both))
    if not isinstance(options, Options):
        raise OptionsError(f"options must be a pickscale.Options; got {type(options).__name__}.")
    keywords = {n: v for n, v in called.items() if n not in ("reference", "picks", "options") and n not in scoring}
    return {**keywords, **{n: getattr(options, n) for n in scoring}}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # an array compared element-wise
        return False


def _combine_outlines(outlines: list[PickPart]) -> tuple[pd.DataFrame, dict[str, int], Normalised]:
    frame = pd.concat([o.combos for o in outlines], ignore_index=True)
    keys = ["dataset", "station", "model"] + (["cell"] if "cell" in frame else [])
    summary = (frame.groupby(keys, sort=True, observed=True)
               .agg(n_picks=("n_picks", "sum"), t_min=("t_min", "min"), t_max=("t_max", "max"))
               .reset_index())
    summary = summary.astype({"dataset": object, "station": object, "model": object,
                              "n_picks": np.int64, "t_min": np.int64, "t_max": np.int64})
    below: dict[str, int] = {}
    for o in outlines:
        for d, n in o.below_floor.items():
            below[d] = below.get(d, 0) + n
    return summary, below, Normalised.combine([o.report for o in outlines])


def _conf_dtype(outlines: list[Any]) -> Any:
    """float32 when every part's confidences are exact float32 (as pickers write them), else float64."""
    return np.float32 if all(o.conf.dtype == np.float32 for o in outlines) else np.float64


def _events(scope: Scope, keep: tuple[str, ...], group_codes: np.ndarray | None) -> Any:
    """SPEC §19: the events of the scored reference (codes decided here, once), or None without any."""
    from ..io.normalise import kept_name
    from ..scope.events import event_codes

    return event_codes(scope.reference, kept_name(len(keep) - 1), group=group_codes)


def _per_dataset(total: Partial | None, scope: Scope, plan: Any, options: Options,
                 events: Any = None) -> dict[str, Any]:
    """Every scored dataset's counts (:class:`pickscale.results.DatasetCounts`) from the combined partial.

    The counts are the partial's own arrays (taken out of it as they are laid out): a station no task
    returned (nothing to score there) keeps zero counts.
    """
    from ..results import counts_from_stack
    from ..results.events import event_counts

    stations = plan.stations
    names = stations["station"].to_numpy(object)
    per_dataset = {}
    for d, dataset in enumerate(scope.datasets):
        keys = np.flatnonzero(stations["dcode"].to_numpy(np.int64) == d)
        stack = total.stacks.get(d) if total is not None else None
        if stack is None:
            none = np.zeros(0, dtype=np.int64)
            stack = StationStack.empty(score_station(none, none, none, none, none, none.astype(np.float64),
                                                     n_models=len(scope.models[dataset]), options=options))
        fine = total.fine.get(d) if total is not None else None
        per_dataset[dataset] = counts_from_stack(stack, names=names[stack.keys], models=scope.models[dataset],
                                                 options=options, fine=fine, stations=names[keys])
        if events is not None and dataset in events.names:  # SPEC §19: the dataset's events, laid out by id
            per_dataset[dataset].events = event_counts(
                total.events.get(d) if total is not None else None, events.names[dataset],
                None if events.groups is None else events.groups[dataset], n_models=len(scope.models[dataset]),
                k=options.n_event_levels)
    return per_dataset
