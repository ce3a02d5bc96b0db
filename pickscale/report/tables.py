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

import pandas as pd

from ..metrics import detection
from ..metrics.timing import TIMING_NAMES
from ..options import Options

if TYPE_CHECKING:  # xarray is imported on use: `import pickscale` stays light for Dask workers
    import xarray as xr

__all__ = ["tables", "write_tables", "format_table", "to_csv_bytes", "TABLE_NAMES", "PRINTED", "NA_REP"]

TABLE_NAMES = ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep")
#: The tables printed by ``score`` and ``report``.
PRINTED = ("detection", "timing", "calibration", "phase_quality")
#: Value written for NaN in CSV files.
NA_REP = "NaN"


def _options(ds: xr.Dataset) -> Options:
    return Options.from_attrs(ds.attrs["options"])


def _frame(ds: xr.Dataset, names: list[str], keys: list[str], present: xr.DataArray) -> pd.DataFrame:
    """Long table of ``names`` over the dims ``keys``, rows where ``present``."""
    import xarray as xr

    sub = xr.Dataset({n: ds[n] for n in names})
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
    ``reliability``, ``phase_quality`` and ``sweep``.

    This is :func:`pickscale.tables`.

    Parameters
    ----------
    ds : xarray.Dataset
        A results Dataset (what :func:`pickscale.score` returns or
        :func:`pickscale.open_results` reads back), in memory or lazy.

    Returns
    -------
    dict of str to pandas.DataFrame
        The tables by name, in :data:`TABLE_NAMES` order.

    Examples
    --------
    >>> import pickscale  # doctest: +SKIP
    >>> t = pickscale.tables(pickscale.open_results("out/results.zarr"))  # doctest: +SKIP
    >>> t["detection"].columns[:4].tolist()  # doctest: +SKIP
    ['dataset', 'phase', 'model', 'n_reference']
    """
    from ..results import metric_name

    options = _options(ds)
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    # A store opens lazily; the tables need neither the residual pairs nor the fine curve, so load the rest.
    ds = ds.drop_dims(["pair", "fine_threshold"], errors="ignore").load()
    shared = ds.sel(threshold=options.threshold)
    tot = _totals(ds)
    tot_shared = tot.sel(threshold=options.threshold)
    present = ds["model_present"]
    return {
        "detection": _detection(ds, shared, tot_shared, present, lb),
        "timing": _timing(ds, shared, present),
        "calibration": _calibration(ds, present, lb),
        "reliability": _reliability(ds, present, lb),
        "phase_quality": _phase_quality(ds, tot_shared, present),
        "sweep": _sweep(ds, tot, present, lb),
    }


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
        lb("f1_lb_at_best"): ds[lb("f1_lb_at_best")],
        "recall_at_best": ds["recall_at_best"],
        lb("ap_lb"): ds[lb("ap_lb")],
    })
    return _frame(det, _names(det), _KEY, present_dmp)


def _timing(ds: xr.Dataset, shared: xr.Dataset, present: xr.DataArray) -> pd.DataFrame:
    import xarray as xr

    timing_vars = xr.Dataset({n: shared[n] for n in TIMING_NAMES})
    return _frame(timing_vars, list(TIMING_NAMES), _KEY, present.broadcast_like(ds["recall_at_budget"]))


def _calibration(ds: xr.Dataset, present: xr.DataArray, lb: Callable[[str], str]) -> pd.DataFrame:
    import xarray as xr

    cal = xr.Dataset({
        "n": ds["cal_n"].sum(["station", "bin"]),
        lb("ece_lb"): ds[lb("ece_lb")],
        lb("brier_lb"): ds[lb("brier_lb")],
    })
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

    n_ref = tot["n_reference"].broadcast_like(present)
    both_dup = tot["duplicates"].sum("phase")
    both_matched = tot["matched"].sum("phase")
    pq = xr.Dataset({
        "P_n": n_ref.sel(phase="P", drop=True),
        "P_matched_as_S": tot["swapped"].sel(phase="P", drop=True),
        "S_n": n_ref.sel(phase="S", drop=True),
        "S_matched_as_P": tot["swapped"].sel(phase="S", drop=True),
        "swap_rate": ds["swap_rate"].sel(threshold=float(tot["threshold"])),
        "duplicate_rate": xr.apply_ufunc(detection.duplicate_rate, both_dup, both_matched),
    })
    return _frame(pq, _names(pq), ["dataset", "model"], present)


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
    for name in TABLE_NAMES:
        path = out / f"{name}.csv"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(to_csv_bytes(frames[name]))
        tmp.replace(path)  # a reader never sees half a table
        paths.append(path)
    return paths


def format_table(frame: pd.DataFrame, *, decimals: int = 3) -> str:
    """A table as printed on the terminal: floats rounded to ``decimals``."""
    if frame.empty:
        return "(no rows)"
    shown = frame.copy()
    for c in shown.columns:
        if shown[c].dtype.kind == "f":
            shown[c] = shown[c].round(decimals)
    with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 250):
        return shown.to_string(index=False, na_rep="NaN", float_format=lambda v: f"{v:.{decimals}f}")
