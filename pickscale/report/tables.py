"""The SPEC §8 tables, read off a results Dataset (in memory or reopened from a store).

Every table is a function of the Dataset alone, so ``pickscale report`` on a
store writes byte-identical CSV files to those ``pickscale score`` wrote.
Rows: one per group present (a model absent from a dataset has no rows),
sorted by the key columns (strings in code-point order, numbers ascending).
CSV values are written at full precision; printed tables round to 3 decimals.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..metrics import detection
from ..metrics.timing import QUANTILE_NAMES, TIMING_NAMES
from ..options import Options

if TYPE_CHECKING:  # xarray is imported on use: `import pickscale` stays light for Dask workers
    import xarray as xr

__all__ = ["tables", "write_tables", "format_table", "to_csv_bytes", "TABLE_NAMES", "OPTIONAL_TABLES", "PRINTED",
           "PRINTED_COLUMNS",
           "NA_REP"]

TABLE_NAMES = ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep")
#: Tables written only when the results have them: ``over_time`` with time bins (SPEC §10), ``budgets`` with
#: several budgets (SPEC §7), ``model_differences`` with bootstrap intervals (SPEC §12), ``tolerance`` with ``tols``
#: (SPEC §13).
OPTIONAL_TABLES = ("over_time", "budgets", "model_differences", "tolerance", "by_group", "events")
#: The tables printed by ``score`` and ``report``.
PRINTED = ("detection", "timing", "calibration", "phase_quality")
#: The columns printed of a table, where not all (the CSV files hold every column): SPEC §8's
#: readings at a glance.  ``_lb`` names stand for the plain ones too (``--exhaustive``).
PRINTED_COLUMNS = {
    "detection": ("dataset", "phase", "model", "n_reference", "emitted", "matched", "recall", "precision_lb",
                  "f1_lb", "recall_at_budget", "best_threshold", "ap_lb"),
    # The residual quantiles and intervals (SPEC §5, §12) are in timing.csv; the terminal keeps 120 columns.
    "timing": ("dataset", "phase", "model", *TIMING_NAMES),
}
#: Value written for NaN in CSV files.
NA_REP = "NaN"


def _options(ds: xr.Dataset) -> Options:
    return Options.from_attrs(ds.attrs["options"])


def _frame(ds: xr.Dataset, names: list[str], keys: list[str], present: xr.DataArray) -> pd.DataFrame:
    """Long table of ``names`` over the dims ``keys``, rows where ``present``."""
    import xarray as xr

    sub = xr.Dataset({n: ds[n] for n in names})
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
    # Python str comparison is code-point order; a stable sort on all keys at once.
    order = sorted(range(len(frame)), key=lambda i: tuple(frame[k].iat[i] for k in keys))
    return frame.iloc[order].reset_index(drop=True)


def _totals(ds: xr.Dataset) -> xr.Dataset:
    import xarray as xr

    out = xr.Dataset({k: ds[k].sum("station") for k in ("emitted", "matched", "duplicates", "swapped")})
    out["n_reference"] = ds["n_reference"].sum("station")
    return out


def tables(ds: xr.Dataset) -> dict[str, pd.DataFrame]:
    """The six SPEC §8 tables: ``detection``, ``timing``, ``calibration``,
    ``reliability``, ``phase_quality`` and ``sweep``; and ``over_time``
    (SPEC §10) when the results were scored with ``time_bin``.

    This is :func:`pickscale.tables`.

    Parameters
    ----------
    ds : xarray.Dataset
        A results Dataset (what :func:`pickscale.score` returns or
        :func:`pickscale.open_results` reads back), in memory or lazy.

    Returns
    -------
    dict of str to pandas.DataFrame
        The tables by name, in :data:`TABLE_NAMES` order (then ``over_time``).

    Examples
    --------
    >>> import pickscale
    >>> t = pickscale.tables(ds)  # ds: the demo results, scored with time_bin, tols and group_by
    >>> list(t)
    ['detection', 'timing', 'calibration', 'reliability', 'phase_quality', 'sweep', 'over_time', 'tolerance',
     'by_group']
    >>> t["detection"].columns[:4].tolist(), len(t["detection"])  # 2 datasets × 2 phases × 3 models
    (['dataset', 'phase', 'model', 'n_reference'], 12)
    """
    from ..results import metric_name

    options = _options(ds)
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    # A store opens lazily; the tables need neither the residual pairs nor the fine curve, so load the rest.
    ds = ds.drop_dims(["pair", "fine_threshold"], errors="ignore").load()
    shared = options.at_shared(ds)  # each phase at its own shared threshold (SPEC §2)
    tot = _totals(ds)
    tot_shared = options.at_shared(tot)
    present = ds["model_present"]
    out = {
        "detection": _detection(ds, shared, tot_shared, present, lb),
        "timing": _timing(ds, shared, present),
        "calibration": _calibration(ds, present, lb),
        "reliability": _reliability(ds, present, lb),
        "phase_quality": _phase_quality(ds, tot_shared, present),
        "sweep": _sweep(ds, tot, present, lb),
    }
    if "matched_over_time" in ds:
        out["over_time"] = over_time(ds)
    if "recall_at_budgets" in ds:
        out["budgets"] = budgets(ds)
    if "recall_diff" in ds:
        out["model_differences"] = model_differences(ds)
    if "matched_at_tol" in ds:
        out["tolerance"] = tolerance(ds)
    if "matched_by_group" in ds:  # SPEC §14
        out["by_group"] = by_group(ds)
    if "events_detected_at_threshold" in ds:  # SPEC §19
        out["events"] = events(ds)
    return out


def events(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §19: per (dataset, model, group of events), at the shared threshold: the events with a scored
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


def _with_interval(table: dict, ds: xr.Dataset, names: list[str]) -> dict:
    """``table`` and, for each of ``names`` whose interval the results hold, ``<name>_lo`` and ``<name>_hi``
    (SPEC §12), after every other column; nothing added without intervals."""
    for name in names:
        for end in ("_lo", "_hi"):
            if name + end in ds:
                table[name + end] = ds[name + end]
    return table


def budgets(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §7 with several budgets: recall_at_budget at each, one row per (dataset, phase, model, budget).

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
    frame = xr.Dataset(table).rename({"budgets": "budget"})
    present = ds["model_present"].broadcast_like(at).rename({"budgets": "budget"})
    return _frame(frame, _names(frame), _KEY + ["budget"], present)


def model_differences(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §12: for every pair of models of a dataset and phase, model_a − model_b on the same draws.

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


def over_time(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §10: per (dataset, phase, model, time bin) at the shared threshold: counts, recall, precision.

    ``time_bin`` is the bin's start as ISO-8601 UTC (``2024-03-01T00:00:00Z``); every bin of the run has a
    row for every model present (recall NaN where the bin has no arrival).
    """
    import xarray as xr

    from ..kernel.bins import iso_utc
    from ..results import metric_name

    lb = lambda name: metric_name(name, _options(ds).exhaustive)  # noqa: E731
    matched = ds["matched_over_time"].sum("station")
    table = xr.Dataset({
        "n_reference": ds["n_reference_over_time"].sum("station").broadcast_like(matched),
        "emitted": ds["emitted_over_time"].sum("station"),
        "matched": matched,
        "recall": ds["recall_over_time"],
        lb("precision_lb"): ds[lb("precision_lb_over_time")],
    })
    labels = ("time_bin", iso_utc(ds["time_bin"].values))
    table = table.assign_coords(time_bin=labels)
    # The mask gets the same ISO labels, so that it lines up with the table (SPEC §2: no rows for an absent model).
    present = ds["model_present"].broadcast_like(matched).assign_coords(time_bin=labels)
    return _frame(table, _names(table), _KEY + ["time_bin"], present)


def by_group(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §14: per (dataset, phase, model, group of arrivals) at the shared threshold: arrivals, matched,
    recall and the §5 timing statistics of the group's residual pairs.

    No ``emitted`` and no precision: a pick that matches no arrival has no group, so a precision per group
    would be invented.  Every group of the run has a row for every model present (recall NaN where the
    group has no arrival); the rows of a (dataset, phase, model) add up to ``detection.csv``'s counts.
    """
    import xarray as xr

    from ..results.variables import GROUP_TIMING

    matched = ds["matched_by_group"].sum("station")
    table = xr.Dataset({
        "n_reference": ds["n_reference_by_group"].sum("station").broadcast_like(matched),
        "matched": matched,
        "recall": ds["recall_by_group"],
        **{name: ds[f"{name}_by_group"] for name in GROUP_TIMING},
    })
    frame = _frame(table, _names(table), _KEY + ["group"], ds["model_present"].broadcast_like(matched))
    # The groups in the run's order (bins ascending, then missing), not in the order of their labels' text.
    position = {str(g): i for i, g in enumerate(ds["group"].values)}
    keys = frame[_KEY].astype(str).agg("\x1f".join, axis=1).to_numpy()
    run = np.r_[0, np.cumsum(keys[1:] != keys[:-1])] if len(frame) else np.zeros(0, np.int64)
    order = np.lexsort((frame["group"].map(position).to_numpy(np.int64), run))
    return frame.iloc[order].reset_index(drop=True)


def tolerance(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §13: per (dataset, phase, model, tol) at the shared threshold: counts, recall, precision.

    ``emitted`` does not depend on the tolerance; at the run's own ``tol`` the row equals ``detection.csv``'s.
    """
    import xarray as xr

    from ..results import metric_name

    options = _options(ds)
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    matched = ds["matched_at_tol"].sum("station")
    table = xr.Dataset({
        "n_reference": ds["n_reference"].sum("station").broadcast_like(matched),
        "emitted": options.at_shared(ds["emitted"], drop=True).sum("station").broadcast_like(matched),
        "matched": matched,
        "recall": ds["recall_at_tol"],
        lb("precision_lb"): ds[lb("precision_lb_at_tol")],
    })
    return _frame(table, _names(table), _KEY + ["tol"], ds["model_present"].broadcast_like(matched))


_KEY = ["dataset", "phase", "model"]


def _detection(ds: xr.Dataset, shared: xr.Dataset, tot_shared: xr.Dataset, present: xr.DataArray,
               lb: Callable[[str], str]) -> pd.DataFrame:
    import xarray as xr

    present_dmp = present.broadcast_like(ds["recall_at_budget"])
    det = xr.Dataset({
        "n_reference": tot_shared["n_reference"].broadcast_like(present_dmp),
        "emitted": tot_shared["emitted"],
        "matched": tot_shared["matched"],
        "recall": shared["recall"],
        lb("precision_lb"): shared[lb("precision_lb")],
        lb("f1_lb"): shared[lb("f1_lb")],
        "extra_rate": shared["extra_rate"],
        "duplicate_rate": shared["duplicate_rate"],
        "recall_at_budget": ds["recall_at_budget"],
        "budget": ds["budget"].broadcast_like(present_dmp),
        "best_threshold": ds["best_threshold"],
        "best_on_edge": _best_on_edge(ds),
        lb("f1_lb_at_best"): ds[lb("f1_lb_at_best")],
        "recall_at_best": ds["recall_at_best"],
        lb("ap_lb"): ds[lb("ap_lb")],
    })
    det = xr.Dataset(_with_interval(dict(det.data_vars), ds, ["recall", lb("precision_lb"), lb("f1_lb"),
                                                              "recall_at_budget"]))
    from ..results.selection import detection_columns  # SPEC §16: only in results scored with select_on

    det = xr.Dataset(detection_columns(dict(det.data_vars), ds, lb))
    return _frame(det, _names(det), _KEY, present_dmp)


def _best_on_edge(ds: xr.Dataset) -> xr.DataArray:
    """SPEC §7's flag; a store written before it has none, and gets it from its best_threshold and grid."""
    if "best_on_edge" in ds:
        return ds["best_on_edge"]
    from ..metrics.curves import best_on_edge

    best = ds["best_threshold"]
    return best.copy(data=best_on_edge(ds["threshold"].values, best.values))


def _timing(ds: xr.Dataset, shared: xr.Dataset, present: xr.DataArray) -> pd.DataFrame:
    import xarray as xr

    # Stores written before the residual quantiles (SPEC §5) have none: their timing table is as it was.
    names = [n for n in TIMING_NAMES + QUANTILE_NAMES if n in shared]
    timing_vars = xr.Dataset(_with_interval({n: shared[n] for n in names}, ds, ["mae"]))
    return _frame(timing_vars, _names(timing_vars), _KEY, present.broadcast_like(ds["recall_at_budget"]))


def _calibration(ds: xr.Dataset, present: xr.DataArray, lb: Callable[[str], str]) -> pd.DataFrame:
    import xarray as xr

    cal = xr.Dataset({
        "n": ds["cal_n"].sum(["station", "bin"]),
        lb("ece_lb"): ds[lb("ece_lb")],
        lb("brier_lb"): ds[lb("brier_lb")],
    })
    cal = xr.Dataset(_with_interval(dict(cal.data_vars), ds, [lb("ece_lb")]))
    return _frame(cal, _names(cal), _KEY, present.broadcast_like(ds["recall_at_budget"]))


def _reliability(ds: xr.Dataset, present: xr.DataArray, lb: Callable[[str], str]) -> pd.DataFrame:
    import xarray as xr

    rel = xr.Dataset({
        "n": ds["cal_n"].sum("station"),
        "mean_conf": ds["mean_conf"],
        lb("observed_lb"): ds[lb("observed_lb")],
    })
    return _frame(rel, _names(rel), _KEY + ["bin"], present.broadcast_like(rel["n"]))


def _sweep(ds: xr.Dataset, tot: xr.Dataset, present: xr.DataArray, lb: Callable[[str], str]) -> pd.DataFrame:
    import xarray as xr

    sweep_vars = xr.Dataset({
        "n_reference": tot["n_reference"].broadcast_like(tot["emitted"]),
        "emitted": tot["emitted"],
        "matched": tot["matched"],
        "extra": tot["emitted"] - tot["matched"],
        "duplicates": tot["duplicates"],
        "swapped": tot["swapped"],
        "recall": ds["recall"],
        lb("precision_lb"): ds[lb("precision_lb")],
        lb("f1_lb"): ds[lb("f1_lb")],
        "extra_rate": ds["extra_rate"],
        "duplicate_rate": ds["duplicate_rate"],
        **{n: ds[n] for n in TIMING_NAMES},
    })
    return _frame(sweep_vars, _names(sweep_vars), _KEY + ["threshold"],
                  present.broadcast_like(sweep_vars["emitted"]))


def _names(ds: xr.Dataset) -> list[str]:
    """The data variables of ``ds``, in order (their names are str)."""
    return [str(name) for name in ds.data_vars]


def _phase_quality(ds: xr.Dataset, tot: xr.Dataset, present: xr.DataArray) -> pd.DataFrame:
    import xarray as xr

    swap_rate = _swap_rate(ds, tot)
    if tot["threshold"].size > 1:  # one per phase (SPEC §2): each phase's columns read at its own
        tot = tot.drop_vars("threshold")
    n_ref = tot["n_reference"].broadcast_like(present)
    both_dup = tot["duplicates"].sum("phase")
    both_matched = tot["matched"].sum("phase")
    pq = xr.Dataset({
        "P_n": n_ref.sel(phase="P", drop=True),
        "P_matched_as_S": tot["swapped"].sel(phase="P", drop=True),
        "S_n": n_ref.sel(phase="S", drop=True),
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
