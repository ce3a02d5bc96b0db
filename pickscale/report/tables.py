"""The SPEC §8 tables, read off a results Dataset (in memory or reopened from a store).

Every table is a function of the Dataset alone, so ``pickscale report`` on a
store writes byte-identical CSV files to those ``pickscale score`` wrote.
Rows: one per group present (a model absent from a dataset has no rows),
sorted by the key columns (strings in code-point order, numbers ascending).
CSV values are written at full precision; printed tables round to 3 decimals.

The tables are declared in :data:`TABLES`: each its keys (the dims of its rows) and its columns, each a
variable of the results (:mod:`pickscale.results.registry`, or a count summed over stations) read at
those keys; one builder (:func:`_build`) makes every such table.  A column that is one variable read at the
keys is named as the variable (less the family's ending in a table keyed by the family's dim: ``recall`` of
``recall_at_tol`` in ``tolerance.csv``); one made from a count otherwise is named for what it counts
(``n_picks``: ``cal_n`` summed over the bins; ``extra``).  A variable with a dim of its own that is not a key
(``fraction_within``, dim ``within``) is one column per label, ``<name>_<label>`` (``fraction_within_0.1``:
:func:`headers`).  The tables that are more than a selection keep a small function of their own
(:attr:`Table.build`, each says why).  A new table is one more entry of :data:`TABLES`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..kernel.bins import iso_utc
from ..metrics import detection
from ..metrics.curves import best_on_edge
from ..metrics.timing import ALONG, GROUP_NAMES, QUANTILE_NAMES, TIMING_NAMES
from ..options import Options
from ..results import metric_name
from ..results.rates import pick_rates
from ..results.selection import detection_columns

if TYPE_CHECKING:  # xarray is imported on use: `import pickscale` stays light for Dask workers
    import xarray as xr

__all__ = ["tables", "write_tables", "format_table", "to_csv_bytes", "TABLE_NAMES", "OPTIONAL_TABLES", "PRINTED",
           "PRINTED_COLUMNS", "NA_REP", "Column", "Table", "TABLES", "shown_in", "headers"]


@dataclass(frozen=True)
class Column:
    """One column of a table: a variable of the results read at the table's keys.

    Parameters
    ----------
    name : str
        The column's header, canonical (``_lb`` dropped with an exhaustive reference).
    source : str, optional
        The variable it reads (canonical; default ``name``); one with a ``station`` dim (a count) is summed
        over stations.
    shared : bool
        Read at the shared threshold (each phase at its own, SPEC §2), where the variable has thresholds.
    over : tuple of str
        Summed over these dims too (``n_picks`` of ``calibration.csv``: ``cal_n`` over the bins).
    minus : str, optional
        Less this variable, read the same way (``extra = emitted - matched``).
    optional : bool
        Left out where the results lack the variable (stores written before it).
    across : str, optional
        A dim of the variable that is not a key of the table: one column per label, ``<name>_<label>``
        (:func:`headers`); by default the variable's own axis (:data:`~pickscale.metrics.timing.ALONG`:
        ``within`` of ``fraction_within``).
    """

    name: str
    source: str | None = None
    shared: bool = False
    over: tuple[str, ...] = ()
    minus: str | None = None
    optional: bool = False
    across: str | None = None

    def __post_init__(self) -> None:
        if self.across is None and (self.source or self.name).removesuffix("_by_group") in ALONG:
            object.__setattr__(self, "across", ALONG[(self.source or self.name).removesuffix("_by_group")][0])


@dataclass(frozen=True)
class Table:
    """A table: its keys and columns, when it exists, and what its builder does beyond selecting.

    Parameters
    ----------
    name : str
        The table (``<name>.csv``).
    keys : tuple of str
        The key columns, which are the dims of its rows, in sort order.
    columns : tuple of Column
        Its columns after the keys, in order.
    rows : str
        The variable (a count summed over stations, as a column reads it) whose dims are the table's rows: the
        mask of models present is laid on it, and a column without one of its dims is repeated along it.
    requires : str, optional
        The variable whose presence says the results have the table (an option's family); None: always.
    intervals : tuple of str
        Columns followed, after every other, by ``<name>_lo`` and ``<name>_hi`` where the results hold
        them (SPEC §12).
    extend : callable, optional
        ``extend(columns, ds, lb) -> columns``: more columns after those (``select_on``'s, SPEC §16).
    relabel : callable, optional
        ``relabel(ds) -> {dim: labels}``: the key labels the table writes (ISO times for time bins).
    order : callable, optional
        ``order(frame, ds) -> frame``: the rows re-ordered after the sort (groups in the run's order).
    build : callable, optional
        ``build(ds) -> frame``: a table that is more than a selection of variables (each says why); its
        ``keys`` and ``columns`` then say what it writes.
    """

    name: str
    keys: tuple[str, ...]
    columns: tuple[Column, ...]
    rows: str = "recall_at_budget"
    requires: str | None = None
    intervals: tuple[str, ...] = ()
    extend: Callable[[dict, xr.Dataset, Callable[[str], str]], dict] | None = None
    relabel: Callable[[xr.Dataset], dict[str, tuple[str, list[str]]]] | None = None
    order: Callable[[pd.DataFrame, xr.Dataset], pd.DataFrame] | None = None
    build: Callable[[xr.Dataset], pd.DataFrame] | None = None


#: Value written for NaN in CSV files.
NA_REP = "NaN"


def _options(ds: xr.Dataset) -> Options:
    return Options.from_attrs(ds.attrs["options"])


def _frame(ds: xr.Dataset, names: list[str], keys: list[str], present: xr.DataArray) -> pd.DataFrame:
    """Long table of ``names`` over the dims ``keys``, rows where ``present``."""
    import xarray as xr

    sub = ds[names]  # (a selection: no second alignment of what the Dataset already aligned)
    # The mask must be on the table's own coordinates: assigning one on others (time bins as datetimes, the
    # table's as text) reindexes it to NaN, and NaN reads as True below -- rows for models that never ran.
    sub, present = xr.align(sub, present, join="exact")
    if present.dtype != bool:
        raise TypeError(f"the mask of present rows must be boolean, not {present.dtype}")
    sub["_present"] = present
    sub = sub.transpose(*keys)
    frame = sub.to_dataframe().reset_index()
    frame = frame[frame["_present"].to_numpy(bool)].drop(columns="_present")
    frame = frame[keys + names]
    for k in keys:
        if frame[k].dtype == object or pd.api.types.is_string_dtype(frame[k]):
            frame[k] = frame[k].astype(object)
    return _sorted(frame, keys)


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``frame``'s rows in the order of its keys' values (text in code-point order, as Python compares
    str), ties kept in place: a stable sort on all keys at once."""
    found = [_sort_key(frame[k]) for k in reversed(keys)]  # lexsort: the last key is the primary one
    columns = [c for c in found if c is not None]
    order: Any
    if len(columns) == len(found):
        order = np.lexsort(columns) if columns else np.arange(len(frame))  # stable, as sorted() is
    else:  # keys numpy cannot order as Python does: Python's own comparison, row by row
        order = sorted(range(len(frame)), key=lambda i: tuple(frame[k].iat[i] for k in keys))
    return frame.iloc[order].reset_index(drop=True)


def _sort_key(column: pd.Series) -> np.ndarray | None:
    """``column`` as an array numpy sorts in Python's order, or None where it would not.

    Text compares by code point in numpy's fixed-width unicode as in Python, except that numpy drops trailing
    NUL characters; numbers and datetimes compare alike except NaN, which Python's comparisons leave unordered.
    """
    values = column.to_numpy()
    if values.dtype.kind in "iub":
        return values
    if values.dtype.kind in "fmM":
        return None if pd.isna(values).any() else values
    if values.dtype == object and all(type(v) is str for v in values):
        if any(v.endswith("\0") for v in values):
            return None
        return np.asarray(values, dtype=str)
    return None


class _Reader:
    """The variables of one Dataset as the columns read them; each count's sum over stations made once."""

    def __init__(self, ds: xr.Dataset) -> None:
        self.ds, self.options = ds, _options(ds)
        self.lb: Callable[[str], str] = lambda name: metric_name(name, self.options.exhaustive)
        self._totals: dict[str, xr.DataArray] = {}

    def has(self, column: Column) -> bool:
        return self.lb(column.source or column.name) in self.ds

    def variable(self, source: str, *, shared: bool = False, over: tuple[str, ...] = ()) -> xr.DataArray:
        name = self.lb(source)
        if name not in self._totals:
            value = self.ds[name] if name in self.ds else _FALLBACK[name](self.ds)
            self._totals[name] = value.sum("station") if "station" in value.dims else value
        value = self._totals[name]
        if over:
            value = value.sum(list(over))
        if shared and "threshold" in value.dims:
            value = self.options.at_shared(value, drop=True)
        return value

    def column(self, column: Column) -> xr.DataArray:
        value = self.variable(column.source or column.name, shared=column.shared, over=column.over)
        if column.minus is not None:
            value = value - self.variable(column.minus, shared=column.shared, over=column.over)
        return value


def _build(table: Table, reader: _Reader) -> pd.DataFrame:
    """The one builder: ``table``'s columns read at its keys, rows of the models present."""
    import xarray as xr

    ds, lb = reader.ds, reader.lb
    columns = {}
    for c in table.columns:
        if not c.optional or reader.has(c):
            value = reader.column(c)
            if c.across is None:
                columns[lb(c.name)] = value
            else:  # one column per label (SPEC §8): fraction_within_0.1, …
                for k, header in enumerate(headers(lb(c.name), value[c.across].values)):
                    columns[header] = value.isel({c.across: k}, drop=True)
    for name in table.intervals:
        for end in ("_lo", "_hi"):
            if lb(name) + end in ds:
                columns[lb(name) + end] = ds[lb(name) + end]
    if table.extend is not None:
        columns = table.extend(columns, ds, lb)
    present = ds["model_present"].broadcast_like(reader.variable(table.rows))
    columns = {name: value if set(value.dims) == set(present.dims) else value.broadcast_like(present)
               for name, value in columns.items()}
    frame = xr.Dataset(columns)
    if table.relabel is not None:
        # The mask gets the same labels, so that it lines up with the table (SPEC §2: no rows for an absent model).
        labels = table.relabel(ds)
        frame, present = frame.assign_coords(labels), present.assign_coords(labels)
    out = _frame(frame, list(columns), list(table.keys), present)
    return out if table.order is None else table.order(out, ds)


def tables(ds: xr.Dataset) -> dict[str, pd.DataFrame]:
    """The six SPEC §8 tables: ``detection``, ``timing``, ``calibration``,
    ``reliability``, ``phase_quality`` and ``sweep``; and the tables of the options the results were
    scored with (:data:`OPTIONAL_TABLES`), each as :data:`TABLES` declares it.

    This is :func:`pickscale.tables`.

    Parameters
    ----------
    ds : xarray.Dataset
        A results Dataset (what :func:`pickscale.score` returns or
        :func:`pickscale.open_results` reads back), in memory or lazy.

    Returns
    -------
    dict of str to pandas.DataFrame
        The tables by name, in :data:`TABLES` order.

    Examples
    --------
    >>> import pickscale
    >>> t = pickscale.tables(ds)  # ds: the demo results, scored with time_bin, tols and group_by
    >>> list(t)
    ['detection', 'timing', 'calibration', 'reliability', 'phase_quality', 'sweep', 'over_time', 'tolerance',
     'by_group', 'pick_rates']
    >>> t["detection"].columns[:4].tolist(), len(t["detection"])  # 2 datasets × 2 phases × 3 models
    (['dataset', 'phase', 'model', 'n_reference'], 12)
    """
    # A store opens lazily; the tables need neither the residual pairs nor the fine curve, so load the rest.
    ds = ds.drop_dims(["pair", "ranked_block", "fine_threshold"], errors="ignore").load()
    reader = _Reader(ds)
    return {name: table.build(ds) if table.build is not None else _build(table, reader)
            for name, table in TABLES.items() if table.requires is None or table.requires in ds}


# The tables that are more than a selection of variables at keys.


def events(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §19 (a builder of its own: one group ``all`` is made where the results have none, and the groups
    keep the run's order): per (dataset, model, group of events), at the shared threshold: the events with a scored
    arrival, those detected (at least ``event_min_arrivals`` of their arrivals matched, each at its phase's
    threshold) and the rate.  Without ``group_by`` one group, ``all``; groups in the run's order.
    """
    import xarray as xr

    detected = ds["events_detected_at_threshold"]
    table = xr.Dataset({"n_events": ds["n_events"].broadcast_like(detected), "detected": detected,
                        "detection_rate": ds["event_detection_rate_at_threshold"]})
    if "group" not in detected.dims:
        table = table.expand_dims(group=np.array(["all"], dtype=object))
    present = ds["model_present"].broadcast_like(table["detected"])
    frame = _frame(table, ["n_events", "detected", "detection_rate"], ["dataset", "model", "group"], present)
    position = {str(g): i for i, g in enumerate(table["group"].values)}
    order = np.lexsort((frame["group"].map(position).to_numpy(np.int64),
                        np.r_[0, np.cumsum((frame[["dataset", "model"]].iloc[1:].to_numpy()
                                            != frame[["dataset", "model"]].iloc[:-1].to_numpy()).any(axis=1))]
                        if len(frame) else np.zeros(0, np.int64)))
    return frame.iloc[order].reset_index(drop=True)


def budgets(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §7 with several budgets: recall_at_budget at each, one row per (dataset, phase, model, budget).

    A builder of its own: the column and its interval are ``recall_at_budgets`` named as in
    ``detection.csv`` (``recall_at_budget``: one budget per row, the key ``budget``, the variable's dim).

    Examples
    --------
    >>> import pickscale
    >>> from pickscale.demo import catalogue
    >>> table = pickscale.tables(pickscale.score(*catalogue(), budget=[50, 100, 200], progress=False))["budgets"]
    >>> table.columns.tolist(), len(table)  # 2 datasets × 2 phases × 3 models × 3 budgets
    (['dataset', 'phase', 'model', 'budget', 'recall_at_budget'], 36)
    >>> one = table[(table.dataset == "aftershocks_north") & (table.phase == "P") & (table.model == "sharp")]
    >>> one.budget.tolist(), one.recall_at_budget.round(3).tolist()
    ([50, 100, 200], [0.316, 0.625, 0.831])
    """
    import xarray as xr

    at = ds["recall_at_budgets"]
    table = {"recall_at_budget": at}
    for end in ("_lo", "_hi"):
        if "recall_at_budgets" + end in ds:
            table["recall_at_budget" + end] = ds["recall_at_budgets" + end]
    frame = xr.Dataset(table)
    present = ds["model_present"].broadcast_like(at)
    return _frame(frame, _names(frame), _KEY + ["budget"], present)


def model_differences(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §12: for every pair of models of a dataset and phase, model_a − model_b on the same draws.

    A builder of its own: its rows are pairs of models (both present, model_a first), not models.

    One row per (dataset, phase, model_a, model_b) with model_a before model_b (code-point order), both
    present: ``recall_diff`` (at the shared threshold, its symmetric bootstrap-t interval) and
    ``recall_at_budget_diff`` (its percentile interval).  An interval that excludes 0 says model_a and
    model_b differ beyond what the choice of stations explains.
    """
    import xarray as xr

    names = ["recall_diff", "recall_diff_lo", "recall_diff_hi",
             "recall_at_budget_diff", "recall_at_budget_diff_lo", "recall_at_budget_diff_hi"]
    table = xr.Dataset({n: ds[n] for n in names}).rename({"model": "model_a"})
    models = ds["model"].values
    present = ds["model_present"]
    both = (present.rename({"model": "model_a"}) & present.rename({"model": "model_b"}).assign_coords(
        model_b=models)).broadcast_like(table["recall_diff"])
    order = xr.DataArray(np.arange(models.size)[:, None] < np.arange(models.size)[None, :],
                         dims=("model_a", "model_b"))
    return _frame(table, names, ["dataset", "phase", "model_a", "model_b"], both & order)


def _time_labels(ds: xr.Dataset) -> dict[str, tuple[str, list[str]]]:
    """``over_time.csv``'s ``time_bin``: each bin's start as ISO-8601 UTC (``2024-03-01T00:00:00Z``)."""
    return {"time_bin": ("time_bin", iso_utc(ds["time_bin"].values))}


def _groups_in_run_order(frame: pd.DataFrame, ds: xr.Dataset) -> pd.DataFrame:
    """The groups in the run's order (bins ascending, then missing), not in the order of their labels' text."""
    position = {str(g): i for i, g in enumerate(ds["group"].values)}
    keys = frame[_KEY].astype(str).agg("\x1f".join, axis=1).to_numpy()
    run = np.r_[0, np.cumsum(keys[1:] != keys[:-1])] if len(frame) else np.zeros(0, np.int64)
    order = np.lexsort((frame["group"].map(position).to_numpy(np.int64), run))
    return frame.iloc[order].reset_index(drop=True)


def _best_on_edge(ds: xr.Dataset) -> xr.DataArray:
    """SPEC §7's flag; a store written before it has none, and gets it from its best_threshold and grid."""
    best = ds["best_threshold"]
    return best.copy(data=best_on_edge(ds["threshold"].values, best.values))


#: Variables a store written before them lacks, and how a table makes them from what it has.
_FALLBACK: dict[str, Callable[[xr.Dataset], xr.DataArray]] = {"best_on_edge": _best_on_edge}


def _select_on(columns: dict, ds: xr.Dataset, lb: Callable[[str], str]) -> dict:
    return detection_columns(columns, ds, lb)  # SPEC §16: only in results scored with select_on


def _phase_quality(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §4's phase quality per (dataset, model), at the shared threshold (a builder of its own: its columns
    are the phases' counts side by side, and rates over both phases; with one threshold per phase each phase
    at its own)."""
    import xarray as xr

    tot = _options(ds).at_shared(_totals(ds))
    present = ds["model_present"]

    swap_rate = _swap_rate(ds, tot)
    if tot["threshold"].size > 1:  # one per phase (SPEC §2): each phase's columns read at its own
        tot = tot.drop_vars("threshold")
    n_ref = tot["n_reference"].broadcast_like(present)
    both_dup = tot["duplicates"].sum("phase")
    both_matched = tot["matched"].sum("phase")
    pq = xr.Dataset({
        "P_n_reference": n_ref.sel(phase="P", drop=True),
        "P_matched_as_S": tot["swapped"].sel(phase="P", drop=True),
        "S_n_reference": n_ref.sel(phase="S", drop=True),
        "S_matched_as_P": tot["swapped"].sel(phase="S", drop=True),
        "swap_rate": swap_rate,
        "duplicate_rate": xr.apply_ufunc(detection.duplicate_rate, both_dup, both_matched),
    })
    return _frame(pq, _names(pq), ["dataset", "model"], present)


def _swap_rate(ds: xr.Dataset, tot: xr.Dataset) -> xr.DataArray:
    """SPEC §4's swap rate at the shared threshold; with one per phase, each phase's swaps at its own (SPEC §2)."""
    import xarray as xr

    if tot["threshold"].size == 1:
        return ds["swap_rate"].sel(threshold=float(tot["threshold"]))
    swapped, n_ref = tot["swapped"].drop_vars("threshold"), tot["n_reference"].drop_vars("threshold")
    return xr.apply_ufunc(detection.swap_rate, swapped.sel(phase="P", drop=True), swapped.sel(phase="S", drop=True),
                          n_ref.sel(phase="P", drop=True), n_ref.sel(phase="S", drop=True))


def _totals(ds: xr.Dataset) -> xr.Dataset:
    import xarray as xr

    out = xr.Dataset({k: ds[k].sum("station") for k in ("emitted", "matched", "duplicates", "swapped")})
    out["n_reference"] = ds["n_reference"].sum("station")
    return out


def _names(ds: xr.Dataset) -> list[str]:
    """The data variables of ``ds``, in order (their names are str)."""
    return [str(name) for name in ds.data_vars]


_KEY = ["dataset", "phase", "model"]
_DPM = tuple(_KEY)
_C = Column

#: Every table, in the order they are written: the six of SPEC §8, then those of the options (SPEC §7, §10,
#: §12, §13, §14, §19) and the pick rates (§20), each where the results have it.
TABLES: dict[str, Table] = {t.name: t for t in (
    Table("detection", _DPM, (
        _C("n_reference"), _C("emitted", shared=True), _C("matched", shared=True), _C("recall", shared=True),
        _C("precision_lb", shared=True), _C("f1_lb", shared=True), _C("extra_rate", shared=True),
        _C("duplicate_rate", shared=True), _C("recall_at_budget"), _C("matched_budget"), _C("best_threshold"),
        _C("best_on_edge"), _C("f1_lb_at_best"), _C("recall_at_best"), _C("ap_lb")),
        intervals=("recall", "precision_lb", "f1_lb", "recall_at_budget"), extend=_select_on),
    Table("timing", _DPM, tuple(_C(n, shared=True, optional=n in QUANTILE_NAMES)  # quantiles: not in old stores
                                for n in TIMING_NAMES + QUANTILE_NAMES), intervals=("mae",)),
    # SPEC §6: n_picks, the picks counted (cal_n: at or above the floor, per bin in reliability.csv).
    Table("calibration", _DPM, (_C("n_picks", "cal_n", over=("bin",)), _C("ece_lb"), _C("brier_lb")),
          intervals=("ece_lb",)),
    Table("reliability", (*_DPM, "bin"), (_C("n_picks", "cal_n"), _C("mean_conf"), _C("observed_lb")),
          rows="cal_n"),
    Table("phase_quality", ("dataset", "model"), tuple(map(_C, (
        "P_n_reference", "P_matched_as_S", "S_n_reference", "S_matched_as_P", "swap_rate", "duplicate_rate"))),
        build=_phase_quality),
    Table("sweep", (*_DPM, "threshold"), (
        _C("n_reference"), _C("emitted"), _C("matched"), _C("extra", "emitted", minus="matched"), _C("duplicates"),
        _C("swapped"), _C("recall"), _C("precision_lb"), _C("f1_lb"), _C("extra_rate"), _C("duplicate_rate"),
        *map(_C, TIMING_NAMES)), rows="emitted"),
    # SPEC §10: every bin of the run has a row for every model present (recall NaN where the bin has no arrival).
    Table("over_time", (*_DPM, "time_bin"), (
        _C("n_reference", "n_reference_over_time"), _C("emitted", "emitted_over_time"),
        _C("matched", "matched_over_time"), _C("recall", "recall_over_time"),
        _C("precision_lb", "precision_lb_over_time")),
        rows="matched_over_time", requires="matched_over_time", relabel=_time_labels),
    Table("budgets", (*_DPM, "budget"), (_C("recall_at_budget", "recall_at_budgets"),),
          requires="recall_at_budgets", build=budgets),
    Table("model_differences", ("dataset", "phase", "model_a", "model_b"), tuple(map(_C, (
        "recall_diff", "recall_diff_lo", "recall_diff_hi", "recall_at_budget_diff", "recall_at_budget_diff_lo",
        "recall_at_budget_diff_hi"))), requires="recall_diff", build=model_differences),
    # SPEC §13: emitted does not depend on the tolerance; at the run's own tol the row equals detection.csv's.
    Table("tolerance", (*_DPM, "tol"), (
        _C("n_reference"), _C("emitted", shared=True), _C("matched", "matched_at_tol"),
        _C("recall", "recall_at_tol"), _C("precision_lb", "precision_lb_at_tol")),
        rows="matched_at_tol", requires="matched_at_tol"),
    # SPEC §14: no emitted and no precision (a pick that matches no arrival has no group, so a precision per
    # group would be invented); the rows of a (dataset, phase, model) add up to detection.csv's counts.
    Table("by_group", (*_DPM, "group"), (
        _C("n_reference", "n_reference_by_group"), _C("matched", "matched_by_group"),
        _C("recall", "recall_by_group"), *(_C(n, f"{n}_by_group") for n in GROUP_NAMES)),
        rows="matched_by_group", requires="matched_by_group", order=_groups_in_run_order),
    Table("events", ("dataset", "model", "group"), tuple(map(_C, ("n_events", "detected", "detection_rate"))),
          requires="events_detected_at_threshold", build=events),
    # SPEC §20: every station with picks, scored or not (a builder of its own: rows per station with picks, at
    # each phase's shared threshold and the rate thresholds, with whether the detection tables score it).
    Table("pick_rates", ("dataset", "model", "phase", "station", "threshold"), tuple(map(_C, (
        "days", "picks", "picks_per_day", "scored", "n_reference"))), requires="rate_picks", build=pick_rates),
)}

TABLE_NAMES = ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep")


def shown_in(name: str) -> list[tuple[str, str]]:
    """Where a variable of the results is shown: each (table, column) of :data:`TABLES` that reads it.

    Examples
    --------
    >>> shown_in("recall_at_tol"), shown_in("matched")[:2]
    ([('tolerance', 'recall')], [('detection', 'matched'), ('sweep', 'matched')])
    """
    return [(table.name, column.name) for table in TABLES.values() if table.build is None
            for column in table.columns if name in (column.source or column.name, column.minus)]


def headers(name: str, labels: object = None) -> tuple[str, ...]:
    """The columns a variable is written as: its name, or with a dim of its own
    (:data:`~pickscale.metrics.timing.ALONG`) one column per label, ``<name>_<label>`` (the label as ``:g``
    writes it: the shortest decimal).

    Examples
    --------
    >>> headers("mae"), headers("fraction_within")
    (('mae',), ('fraction_within_0.1', 'fraction_within_0.25', 'fraction_within_0.5'))
    """
    canonical = name.removesuffix("_by_group")
    if canonical not in ALONG:
        return (name,)
    values = ALONG[canonical][1] if labels is None else labels
    return tuple(f"{name}_{float(label):g}" for label in np.asarray(values).ravel())

#: Tables written only when the results have them (:attr:`Table.requires`): ``over_time`` with time bins
#: (SPEC §10), ``budgets`` with several budgets (SPEC §7), ``model_differences`` with bootstrap intervals
#: (SPEC §12), ``tolerance`` with ``tols`` (SPEC §13), ``by_group`` with ``group_by`` (SPEC §14), ``events``
#: with events (SPEC §19), ``pick_rates`` with pick rates (SPEC §20: every run's, not a store's from before them).
OPTIONAL_TABLES = tuple(name for name in TABLES if name not in TABLE_NAMES)
#: The tables printed by ``score`` and ``report``.
PRINTED = ("detection", "timing", "calibration", "phase_quality")
#: The columns printed of a table, where not all (the CSV files hold every column): SPEC §8's
#: readings at a glance.  ``_lb`` names stand for the plain ones too (``--exhaustive``).
PRINTED_COLUMNS = {
    "detection": ("dataset", "phase", "model", "n_reference", "emitted", "matched", "recall", "precision_lb",
                  "f1_lb", "recall_at_budget", "best_threshold", "ap_lb"),
    # The terminal keeps 120 columns: fraction_within at its first bound only; the other bounds, the residual
    # quantiles and the intervals (SPEC §5, §12) are in timing.csv (and the printed note names them).
    "timing": ("dataset", "phase", "model", *(headers(name)[0] for name in TIMING_NAMES)),
}


def to_csv_bytes(frame: pd.DataFrame) -> bytes:
    """CSV at full precision (shortest round-trip repr), NaN written as ``NaN``, ``\\n`` line ends."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False, na_rep=NA_REP, lineterminator="\n")
    return buf.getvalue().encode("utf-8")


def write_tables(frames: Mapping[str, pd.DataFrame], out_dir: str | Path) -> list[Path]:
    """Write each table as ``<out_dir>/<name>.csv``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in (*TABLE_NAMES, *(n for n in OPTIONAL_TABLES if n in frames)):
        path = out / f"{name}.csv"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(to_csv_bytes(frames[name]))
        tmp.replace(path)  # a reader never sees half a table
        paths.append(path)
    return paths


def format_table(frame: pd.DataFrame, *, decimals: int = 3, columns: tuple[str, ...] | None = None,
                 by: str | None = None) -> str:
    """A table as printed on the terminal: floats rounded to ``decimals``.

    ``columns``: only these (a name ending in ``_lb`` also stands for the name
    without it, as ``--exhaustive`` tables say ``precision``); absent ones are
    left out.  ``by``: one block per value of that column, headed
    ``by: value``, without the column (a long dataset name then costs no
    width on every row).

    Examples
    --------
    >>> frame = pd.DataFrame({"dataset": ["A", "A", "B"], "model": ["m", "n", "m"],
    ...                       "recall": [0.5, 0.25, 1.0], "precision": [1.0, 0.5, 0.75], "extra": [1, 2, 3]})
    >>> print(format_table(frame, columns=("dataset", "model", "recall", "precision_lb"), by="dataset"))
    dataset: A
    model  recall  precision
        m   0.500      1.000
        n   0.250      0.500
    <BLANKLINE>
    dataset: B
    model  recall  precision
        m   1.000      0.750
    """
    if frame.empty:
        return "(no rows)"
    if columns is not None:
        keep = [c if c in frame.columns else c.removesuffix("_lb") for c in columns]
        frame = frame[[c for c in keep if c in frame.columns]]
    if by is not None and by in frame.columns:
        blocks = []
        for value, group in frame.groupby(by, sort=False):
            blocks.append(f"{by}: {value}\n" + format_table(group.drop(columns=by), decimals=decimals))
        return "\n\n".join(blocks)
    shown = frame.copy()
    for c in shown.columns:
        if shown[c].dtype.kind == "f":
            shown[c] = shown[c].round(decimals)
    with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 250):
        return shown.to_string(index=False, na_rep="NaN", float_format=lambda v: f"{v:.{decimals}f}")
