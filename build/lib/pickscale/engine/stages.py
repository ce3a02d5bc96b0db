"""The run in three stages around one typed record: :func:`prepare` → :class:`Run`, :func:`execute`, :func:`finalize`.

Stages (each a Dask graph; nothing but small summaries and results reaches the client):

1. **Read** every picks part (:mod:`pickscale.engine.inputs`, :mod:`pickscale.engine.parts`): normalised per
   distinct value and encoded as integer arrays (about 15 bytes a pick), kept on the worker that read it.  The
   reference (one row per analyst arrival) is read in tasks too and kept on the workers, cut into buckets of
   stations (:mod:`pickscale.engine.arrivals`).
2. **Outline**: the parts' summaries (per (dataset, station, model): pick counts and time span at or above
   the floor; their pick rates, SPEC §20) are merged on the workers; SPEC §2's per-arrival rules run in the
   reference's buckets (:mod:`pickscale.scope.rows`) and the client decides the scope and the work plan
   (:mod:`pickscale.engine.units`, deterministic) from summaries.  Stages 1–2 are :func:`prepare`.
3. **Exchange** (:mod:`pickscale.engine.exchange`): picks move to the work partition of their unit — through
   Dask's shuffle (p2p on a cluster; the graph grows like parts + partitions), or, while parts × partitions
   is small, by cutting each part into one piece per partition.
4. **Score** (:mod:`pickscale.engine.scoring`): one task per partition runs the station kernel per work unit
   and returns station results stacked as arrays; a reduction tree on the workers combines them
   (:mod:`pickscale.kernel.combine`).
5. **Pairs** (:mod:`pickscale.engine.pairs`): the residual pairs stay on the workers, one task per
   (dataset, model, phase) orders them as the store does and computes their SPEC §5 statistics; the
   client receives the statistics only.  Stages 3–5 are :func:`execute`.
6. **Finalize** on the client from the combined counts, in canonical station order
   (:mod:`pickscale.results`); the Dataset's pairs are Dask arrays of the workers' results (NumPy
   without a cluster), written to the store a chunk range at a time (:mod:`pickscale.store.writing`).
   This is :func:`finalize`.

:func:`pickscale.score` runs the three in order; :func:`pickscale.extend` too, keeping the normalised
reference's buckets (:attr:`Run.reference`, where they are) for its checks; :mod:`pickscale.engine.selection`
runs them once per part of the inputs (:attr:`Run` of a ``part``).

Examples
--------
>>> import pandas as pd
>>> ref = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2024-01-01T00:00:10Z"]})
>>> picks = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2024-01-01T00:00:10.1Z"], "conf": [0.8]})
>>> run = prepare(ref, picks, Keywords(progress=False), keep_reference=True)
>>> run.scope.datasets, run.reference.n_rows
(['all'], 1)
>>> float(finalize(run, execute(run)).recall.sel(dataset="all", model="model", phase="P", threshold=0.3))
1.0
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd
from dask import delayed

from ..errors import InputError, OptionsError, emit_warnings
from ..io import Normalised, check_columns, join_failures, station_key_of
from ..io.coverage_file import read_coverage
from ..io.normalise import kept_name
from ..kernel import Partial, StationStack, combine_partials, score_station
from ..kernel.bins import scored_edges, stretched_span
from ..kernel.rates import PickRates, merge_rates
from ..options import Options
from ..results import assemble, counts_from_stack
from ..results.events import event_counts
from ..scope import Coverage, Scope, scope_from_summary
from ..scope.arrivals import Arrivals
from ..scope.events import EVENT_COLUMN
from ..scope.grouping import parse_group_by, read_stations
from ..scope.placement import pick_placement
from . import exchange
from .arrivals import read_reference
from .collect import bring_back
from .encoding import encode_bucket, event_names, group_labels_of
from .extent import facts_of
from .graph import compute, n_workers, persist_stage, reduce_stage, scheduler, tree_reduce
from .inputs import Source, load
from .lazy_dask import install
from .pairs import PairColumns, codes_of, pair_columns
from .parts import Failure, PickPart, merge_outlines, outline
from .provenance import attributes, rows_read
from .unit_size import check_units
from .units import UnitPlan, plan_units
from .workers import check_workers

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["Keywords", "Run", "Executed", "Restriction", "prepare", "execute", "finalize"]

# An input error message lists at most this many lines (one per distinct problem of the read tasks).
_MAX_MESSAGE_LINES = 40


class Restriction(Protocol):
    """One part of the inputs to score (SPEC §16: :class:`pickscale.engine.selection.Part`)."""

    def restrict(self, ref_src: Source, pick_src: Source) -> tuple[Source, Source]:
        """The inputs' read tasks, each followed by the part's filter of its rows (on the worker that read them)."""
        ...


@dataclass(frozen=True)
class Keywords:
    """What a run reads and how it runs, besides its scoring :class:`~pickscale.options.Options`: the
    keywords of :func:`pickscale.score` that are not options (their meaning is documented there)."""

    options: Options = field(default_factory=Options)
    drop_invalid: bool = False
    manual_only: bool = False
    station_key: str = "as-is"
    columns: Any = None
    coverage: Any = None
    client: Any = None
    progress: bool | None = None
    block_picks: int | None = None
    exchange_method: str = "auto"
    stations: Any = None
    storage_options: dict[str, Any] | None = None


@dataclass
class Run:
    """A prepared run: what :func:`prepare` read and decided, and what :func:`execute` and :func:`finalize` use.

    Attributes
    ----------
    options
        The scoring options, with what the run decided (time-bin edges, group labels, events).
    client
        The Dask client the stages compute with (None: Dask's local scheduler).
    progress
        A bar (or a line every 10 s) per long stage.
    started
        When the run began (Unix time): the store's ``created``.
    ref_src, pick_src
        The inputs as read tasks (:class:`pickscale.engine.inputs.Source`).
    pick_parts
        The read picks, persisted where they were read (futures on a cluster); handed over by :func:`execute`.
    outlines
        The parts' merged summaries (:class:`pickscale.engine.parts.PickPart` without arrays).
    rates
        The run's pick rates (SPEC §20), every pick whatever the scope.
    scope
        SPEC §2's scope: datasets, models, the scored stations (its reference let go once encoded).
    plan
        The work units and partitions (:class:`pickscale.engine.units.UnitPlan`).
    ref_codes
        The scored reference as the exchange's codes, one frame per bucket of the reference, where the buckets
        are (:class:`pickscale.scope.arrivals.Arrivals`); handed over by :func:`execute`.
    events
        SPEC §19's event codes, or None.
    extent
        What :func:`pickscale.extend` checks an extension against (``attrs["extent"]``).
    ref_report, pick_report
        What reading found (rows, exclusions, warnings) for the store's attributes.
    cover
        The coverage windows (:class:`pickscale.scope.Coverage`), or None.
    exchange_method
        ``"auto"``, ``"direct"`` or ``"shuffle"``.
    reference
        The normalised reference as buckets of stations (where they are: on the workers, on a cluster), kept
        when :func:`prepare` is asked to (``keep_reference``: extend's check of the arrivals,
        :func:`pickscale.engine.extent.digest_of`); None otherwise.
    """

    options: Options
    client: Any
    progress: bool
    started: float
    ref_src: Source
    pick_src: Source
    pick_parts: list[Any]
    outlines: list[PickPart]
    rates: PickRates | None
    scope: Scope
    plan: UnitPlan
    ref_codes: Any
    events: Any
    extent: dict[str, Any]
    ref_report: Normalised
    pick_report: Normalised
    cover: Coverage | None
    exchange_method: str
    reference: Arrivals | None = None


@dataclass
class Executed:
    """What :func:`execute` returns: the combined counts on the client and the pairs where they are."""

    total: Partial | None
    pairs: PairColumns


def prepare(reference: Any, picks: Any, keywords: Keywords, *, part: Restriction | None = None,
            keep_reference: bool = False) -> Run:
    """Check the keywords, read the inputs, outline the picks, decide the scope and plan the work.

    ``part``: score one part of the inputs (SPEC §16, :mod:`pickscale.engine.selection`): each read task's
    rows filtered on the worker that read them.  ``keep_reference``: keep the normalised reference in
    :attr:`Run.reference`.  Raises :class:`~pickscale.errors.InputError` or
    :class:`~pickscale.errors.OptionsError` (nothing computed beyond the read tasks).
    """
    options, station_key = keywords.options, keywords.station_key
    group_spec, station_table = _grouping(options, keywords.stations, station_key)
    check_columns(keywords.columns)
    station_key_of(np.zeros(0, dtype=object), station_key)  # an unknown key: OptionsError
    if keywords.exchange_method not in ("auto", "direct", "shuffle"):
        raise OptionsError(f"exchange_method must be 'auto', 'direct' or 'shuffle'; got {keywords.exchange_method!r}.")
    # A bar per stage on a terminal; else a line every 10 s of a stage that lasts.
    progress = True if keywords.progress is None else bool(keywords.progress)
    client = scheduler(keywords.client)
    install()  # xarray's check for Dask arrays, without importing dask.array (issue 27)
    if client is not None:
        # A scheduler without workers, or workers that cannot import pickscale, would wait forever:
        # say so within PICKSCALE_WORKER_TIMEOUT (30 s) instead.
        check_workers(client)
    started = time.time()
    cover = None
    if keywords.coverage is not None:
        cover = Coverage.from_windows(read_coverage(keywords.coverage, station_key=station_key))

    reading = {"drop_invalid": keywords.drop_invalid, "station_key": station_key, "columns": keywords.columns,
               "storage_options": keywords.storage_options}
    kept_columns = () if group_spec is None else group_spec.columns
    if options.event_min_arrivals:  # SPEC §19: the event column is kept too, after the groups' columns
        kept_columns = (*kept_columns, EVENT_COLUMN)
    ref_src = load(reference, role="reference", manual_only=keywords.manual_only, keep=kept_columns or None,
                   **reading)
    pick_src = load(picks, role="picks", floor=options.floor, **reading)
    if part is not None:  # one part of the inputs (SPEC §16)
        ref_src, pick_src = part.restrict(ref_src, pick_src)

    # 1–2. Read (picks and reference stay where they were read), outline, decide the scope.
    pick_parts = persist_stage(pick_src.parts, client, label="reading picks", progress=progress)
    read = read_reference(ref_src.parts, client)
    # The parts' outlines are merged on the workers: the client receives one summary.
    shared_cover = delayed(cover, pure=True) if cover is not None else None
    thresholds = options.phase_thresholds if cover is not None else None  # where picks sit in their windows
    # Every part also counts its pick rates (SPEC §20) on the grid: every pick, whatever the scope.
    grid = delayed(options.grid, pure=True)
    merged = compute([tree_reduce([delayed(outline)(p, shared_cover, thresholds, grid) for p in pick_parts],
                                  merge_outlines)], client, label="outlining picks", progress=False)[0]
    outlines = merged if isinstance(merged, list) else [merged]
    _raise_failures(read.outlines + outlines)
    ref_report = read.report()
    # The reference cut into buckets of stations on the workers: SPEC §2 runs there, bucket by bucket.
    arrivals = read.buckets(n_workers=n_workers(client))
    del read
    pick_summary, below_floor, pick_report = _combine_outlines(outlines)
    # SPEC §19: duplicate arrivals get one event whichever row is kept (settled in the buckets).
    event_column = kept_name(len(kept_columns) - 1) if options.event_min_arrivals else None
    scope: Scope = scope_from_summary(
        arrivals, pick_summary, below_by_ds=below_floor, floor=options.floor,
        residual_tol_ns=options.residual_tol_ns, ref_source=ref_src.description, picks_source=pick_src.description,
        ref_rows=rows_read(ref_report), picks_rows=rows_read(pick_report), coverage=cover, event_column=event_column,
    )
    kept_reference = arrivals if keep_reference else None
    del arrivals  # (the scope holds the scored reference, in its buckets)
    if cover is not None:  # SPEC §5, "Residuals on a grid", with windows: the picks' side
        found = [o.offsets for o in outlines if o.offsets is not None]
        scope.report["coverage"]["placement"]["picks"] = pick_placement(
            pd.concat(found, ignore_index=True) if found else None)

    if options.time_bin is not None:
        # One set of edges for the whole run, computed here once: the same whatever the partitioning.
        freq = options.time_bin
        edges = scored_edges(scope, pick_summary, freq)
        options = options.with_bin_edges(edges)
        stretched = stretched_span(scope, pick_summary, edges, freq)
        if stretched:
            scope.warnings.append(stretched)

    # 3. Work units (station time blocks) and the partitions that run them.
    grouping = None
    if group_spec is not None:
        # SPEC §14: the groups are decided here, once, from the scored reference's buckets (and the stations table).
        grouping = group_labels_of(scope.arrivals, group_spec, stations=station_table,
                                   found_columns=ref_report.ignored_columns)
        options = options.with_group_labels(grouping.labels)
    events = event_names(scope.arrivals, event_column, grouping) if options.event_min_arrivals else None
    options = options.with_events(events is not None)
    plan = plan_units(scope, options, block_picks=keywords.block_picks, n_workers=n_workers(client))
    # A unit too large for a worker (a station with no quiet gap) stops here, with a message, not a dead worker.
    check_units(plan, options, client=client, pick_parts=pick_parts)
    # What pickscale.extend checks an extension against, decided now (in tasks, on the buckets).
    extent = facts_of(scope, pick_summary, station_key=station_key)
    # The scored arrivals as the exchange's codes, made in the buckets: they travel to the work partitions
    # from there, and the client holds nothing per arrival.
    ref_codes = scope.arrivals.transform(encode_bucket, plan, grouping, events, event_column)
    scope.arrivals = Arrivals([])
    counted = [o.rates for o in outlines if o.rates is not None]
    return Run(options=options, client=client, progress=progress, started=started, ref_src=ref_src,
               pick_src=pick_src, pick_parts=pick_parts, outlines=outlines,
               rates=merge_rates(counted) if counted else None, scope=scope, plan=plan, ref_codes=ref_codes,
               events=events, extent=extent, ref_report=ref_report, pick_report=pick_report, cover=cover,
               exchange_method=keywords.exchange_method, reference=kept_reference)


def execute(run: Run) -> Executed:
    """Exchange the picks, score every partition, combine the partials on the workers, time the pairs there.

    The run hands over its read parts and reference codes (:attr:`Run.pick_parts` and :attr:`Run.ref_codes`
    are emptied): once the job is submitted, only the scheduler keeps each part, and frees it as soon as it
    has been moved.
    """
    options, plan, client, scope = run.options, run.plan, run.client, run.scope
    shared_plan = delayed(plan, pure=True)  # one copy in the graph, not one per task
    keep = delayed((run.cover, scope.coverage_keep), pure=True) if run.cover is not None else None
    pick_parts, ref_codes = run.pick_parts, run.ref_codes
    run.pick_parts, run.ref_codes = [], None
    way = exchange.choose(run.exchange_method, len(pick_parts), plan.n_parts)
    buckets = ref_codes.values()  # the scored arrivals' codes, one frame per bucket, where the buckets are
    del ref_codes
    if way == "direct":
        partials = exchange.direct(pick_parts, buckets, plan, shared_plan, options, cover=keep)
    else:
        optional = exchange.optional_columns(options, groups=options.group_labels is not None, events=run.events)
        partials = exchange.shuffle(pick_parts, buckets, plan, shared_plan, options,
                                    conf_dtype=_conf_dtype(run.outlines), client=client, cover=keep,
                                    optional=optional, sizes=_part_sizes(run.outlines, len(pick_parts)),
                                    n_workers=n_workers(client))
    del pick_parts  # (the graphs of `partials` hold what they need of them)
    tops = reduce_stage(partials, combine_partials, client, label="scoring partitions", progress=run.progress)
    # The arrivals' codes are held until the partitions are scored: a bucket's codes released while a scoring
    # task still waits for them are lost on a cluster (their graphs alone do not keep them there).
    del partials, buckets
    # The residual pairs stay where they are: grouped, ordered and timed on the workers (engine/pairs.py).
    codes = codes_of(list(scope.datasets), dict(scope.models), plan.stations["station"].to_numpy(object))
    pairs = pair_columns(tops, codes, client, options=options, n_datasets=len(scope.datasets))
    total = bring_back(tops, client)  # joined here; on a cluster, the station fields stay there until laid out
    return Executed(total=total, pairs=pairs)


def finalize(run: Run, executed: Executed) -> xr.Dataset:
    """The results Dataset from the combined counts, in canonical order, with the run's attributes.

    The run's warnings are issued (:func:`warnings.warn`) and kept in ``attrs["warnings"]``.
    """
    per_dataset = _per_dataset(executed.total, run.scope, run.plan, run.options, run.events)
    executed.total = None  # per_dataset holds its arrays (or fetches them), and assemble takes them one by one
    attrs = attributes(run.options, run.scope, run.ref_src, run.pick_src, run.ref_report, run.pick_report,
                       run.started)
    # What pickscale.extend checks an extension against.
    attrs["extent"] = run.extent
    # Python users see every exclusion and reading warning (the store keeps them in its attributes too).
    emit_warnings(attrs["warnings"])
    return assemble(per_dataset, options=run.options, attrs=attrs, pairs=executed.pairs, rates=run.rates)


def _grouping(options: Options, stations: Any, station_key: str) -> tuple[Any, pd.DataFrame | None]:
    """SPEC §14: the parsed ``group_by`` (or None) and the stations table (read and checked first, or None)."""
    if options.group_by is None:
        if stations is not None:
            raise OptionsError("stations is used with group_by (it gives the station attributes to group "
                               "arrivals by); give group_by too.", options=("stations", "group_by"))
        return None, None
    table = None if stations is None else read_stations(stations, station_key=station_key)
    return parse_group_by(options.group_by), table


def _raise_failures(parts: Sequence[Any]) -> None:
    """Raise the input errors found by the read tasks, in input order (all of them, up to five)."""
    failures = [p.message for p in parts if isinstance(p, Failure)]
    if failures:
        # A message several files share (a glob of one layout) is said once, naming how many.
        lines = join_failures(failures).split("\n")
        if len(lines) > _MAX_MESSAGE_LINES:
            lines = lines[:_MAX_MESSAGE_LINES] + [f"(and more: {len(failures)} read task(s) found input errors)"]
        raise InputError("\n".join(lines))


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


def _part_sizes(outlines: list[Any], n_parts: int) -> np.ndarray | None:
    """Each read part's picks, in order (from the outline tree), or None."""
    if not outlines or any(getattr(o, "sizes", None) is None for o in outlines):
        return None
    sizes = np.concatenate([o.sizes for o in outlines])
    return sizes if sizes.size == n_parts else None


def _conf_dtype(outlines: list[Any]) -> Any:
    """float32 when every part's confidences are exact float32 (as pickers write them), else float64."""
    return np.float32 if all(o.conf.dtype == np.float32 for o in outlines) else np.float64


def _per_dataset(total: Partial | None, scope: Scope, plan: Any, options: Options,
                 events: Any = None) -> dict[str, Any]:
    """Every scored dataset's counts (:class:`pickscale.results.DatasetCounts`) from the combined partial.

    The counts are the partial's own arrays (taken out of it as they are laid out): a station no task
    returned (nothing to score there) keeps zero counts.
    """
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

