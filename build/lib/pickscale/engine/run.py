"""The main job, :func:`score`: its keywords checked, then the stages of :mod:`pickscale.engine.stages`.

:func:`score` takes the options as keywords (or one :class:`~pickscale.options.Options`) and the inputs,
makes them one :class:`~pickscale.engine.stages.Keywords` (:func:`run_keywords`), and runs
:func:`~pickscale.engine.stages.prepare`, :func:`~pickscale.engine.stages.execute` and
:func:`~pickscale.engine.stages.finalize` (with ``select_on``, once per part of the inputs:
:mod:`pickscale.engine.selection`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import OptionsError
from ..options import Options
from ..settings import scoring_names
from .selection import score_out_of_sample
from .stages import Keywords, execute, finalize, prepare

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["score", "run_keywords"]


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
    keywords = run_keywords({name: value for name, value in locals().items()
                             if name not in ("reference", "picks", "select_on")})
    if select_on is not None:  # SPEC §16: scored on all the inputs, then on each part of them
        return score_out_of_sample(select_on, reference, picks, keywords)
    run = prepare(reference, picks, keywords)
    return finalize(run, execute(run))


def run_keywords(given: Mapping[str, Any]) -> Keywords:
    """The :class:`~pickscale.engine.stages.Keywords` of a :func:`score` call with ``given`` keywords (the
    others at their defaults; ``options=`` gives the scoring options, which are then not given otherwise).

    Examples
    --------
    >>> k = run_keywords({"tol": 0.25, "drop_invalid": True})
    >>> k.options.tol, k.drop_invalid, k.exchange_method
    (0.25, True, 'auto')
    """
    defaults = {n: p.default for n, p in inspect.signature(score).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"score() got unexpected keyword(s) {', '.join(unknown)}")
    called = {**defaults, **given}
    if called["options"] is not None:  # the scoring keywords from one Options (they must be left at their defaults)
        called = _with_options(called["options"], called, defaults)
    options = Options(**{name: called[name] for name in scoring_names()})
    return Keywords(options=options, **{f.name: called[f.name] for f in dataclasses.fields(Keywords)
                                        if f.name != "options"})


def _with_options(options: Options, called: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The keywords of a :func:`score` call given ``options=``: its scoring keywords taken from the Options
    (any also given otherwise than at its default is an OptionsError), the others as called."""
    scoring = [n for n in scoring_names() if n in defaults]
    both = [n for n in scoring if not _same(called[n], defaults[n])]
    if both:
        raise OptionsError(f"score() got options= and {', '.join(both)}: give the scoring options in one place "
                           "(options=Options(...), or as keywords).", options=tuple(both))
    if not isinstance(options, Options):
        raise OptionsError(f"options must be a pickscale.Options; got {type(options).__name__}.")
    keywords = {n: v for n, v in called.items() if n != "options" and n not in scoring}
    return {**keywords, **{n: getattr(options, n) for n in scoring}, "options": None}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # an array compared element-wise
        return False
