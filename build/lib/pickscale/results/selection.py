"""Out-of-sample readings (SPEC §16): the report part read at the selection part's choice.

:func:`attach` takes the results of all the inputs and of the two parts of ``select_on``
(:mod:`pickscale.engine.selection`) and adds to the first, per (dataset, model, phase):

- ``best_threshold_selected``: the selection part's own best threshold (SPEC §7, on its grid);
- ``recall_at_best_oos``, ``precision_lb_at_best_oos``, ``f1_lb_at_best_oos``: the report part's sweep read
  at that threshold;
- ``matched_budget_oos`` (per dataset and phase): the selection part's matched budget as picks per reference
  arrival, carried to the report part's arrivals, and ``recall_at_budget_oos``: the report part's recall at it;
- ``n_reference_select``, ``n_reference_report`` (per dataset and phase): the parts' scored arrivals;
- with ``stations:…``, ``station_selected`` (per dataset and station): the selection part's stations.

Every other variable is the run's over all the inputs, unchanged.  :func:`detection_columns` adds the
readings to ``detection.csv`` when the results hold them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import emit_warnings
from ..metrics import curves
from ..options import Options
from .variables import Variable, metric_name

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["SELECTION_VARIABLES", "attach", "carried_budget", "detection_columns"]

_DMP = ("dataset", "model", "phase")
_DP = ("dataset", "phase")
_AT = "read on the report part of select_on (SPEC §16) at the selection part's best_threshold_selected"

#: The variables of results scored with ``select_on`` (SPEC §16), in ``detection.csv``'s column order.
SELECTION_VARIABLES: dict[str, Variable] = {
    "best_threshold_selected": Variable(_DMP, "best threshold chosen on the selection part", "1",
                                        "best_threshold (SPEC §7) of the selection part of select_on, scored alone "
                                        "(SPEC §16)."),
    "recall_at_best_oos": Variable(_DMP, "out-of-sample recall at the chosen threshold", "1", f"Recall {_AT}."),
    "precision_lb_at_best_oos": Variable(_DMP, "out-of-sample precision at the chosen threshold (lower bound)",
                                         "1", f"precision_lb {_AT}."),
    "f1_lb_at_best_oos": Variable(_DMP, "out-of-sample F1 at the chosen threshold (lower bound)", "1",
                                  f"f1_lb {_AT}."),
    "matched_budget_oos": Variable(_DP, "matched budget carried to the report part", "1",
                                   "floor(matched_budget_select * n_reference_report / n_reference_select + 1/2): "
                                   "the selection part's matched_budget (SPEC §7) as picks per reference arrival "
                                   "(SPEC §16); 0 where either part has no arrival of the phase."),
    "recall_at_budget_oos": Variable(_DMP, "out-of-sample recall at the carried budget", "1",
                                     "recall_at_budget (SPEC §7) of the report part at matched_budget_oos "
                                     "(SPEC §16)."),
    "n_reference_select": Variable(_DP, "reference arrivals of the selection part", "1",
                                   "Scored reference arrivals of the selection part, scored alone (SPEC §16)."),
    "n_reference_report": Variable(_DP, "reference arrivals of the report part", "1",
                                   "Scored reference arrivals of the report part, scored alone (SPEC §16)."),
}
_STATION_SELECTED = Variable(("dataset", "station"), "station in the selection part", "1",
                             "True for the scored stations select_on stations:FRACTION:SEED puts in the selection "
                             "part (SPEC §16).")


def carried_budget(budget: int, n_select: int, n_report: int) -> int:
    """SPEC §16: ``floor(budget * n_report / n_select + 1/2)`` in exact integers; 0 when a part has no arrival.

    Examples
    --------
    >>> carried_budget(5, 6, 4), carried_budget(3, 4, 2), carried_budget(7, 0, 3)
    (3, 2, 0)
    """
    if n_select <= 0 or n_report <= 0:
        return 0
    return (2 * int(budget) * int(n_report) + int(n_select)) // (2 * int(n_select))


def _index(labels: np.ndarray) -> dict[str, int]:
    return {str(v): i for i, v in enumerate(labels)}


def attach(main: xr.Dataset, select: xr.Dataset, report: xr.Dataset, *, rule: str,
           selected: dict[str, list[str]] | None = None) -> xr.Dataset:
    """``main`` with the SPEC §16 readings of ``report`` at ``select``'s choice (see the module).

    ``main``, ``select`` and ``report``: results of one set of options (the same grid), over all the inputs
    and over each part; their datasets and models may differ (a model without picks in a part has NaN
    readings there).  ``rule``: the canonical ``select_on`` (``attrs["select_on"]``); ``selected``: the
    selection part's stations per dataset, with ``stations:…``.
    """
    import xarray as xr

    options = Options.from_attrs(main.attrs["options"])
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    datasets, models = ([str(v) for v in main[c].values] for c in ("dataset", "model"))
    phases = [str(p) for p in main["phase"].values]
    nd, nm, npp = len(datasets), len(models), len(phases)
    present = main["model_present"].transpose("dataset", "model").values

    def lookup(ds: xr.Dataset):
        return _index(ds["dataset"].values), _index(ds["model"].values), _index(ds["phase"].values)

    sd, sm, sp = lookup(select)
    rd, rm, rp = lookup(report)
    s_best = select["best_threshold"].transpose(*_DMP).values
    s_budget = select["matched_budget"].transpose(*_DP).values
    s_present = select["model_present"].transpose("dataset", "model").values
    s_nref = select["n_reference"].sum("station").transpose(*_DP).values
    r_present = report["model_present"].transpose("dataset", "model").values
    r_nref = report["n_reference"].sum("station").transpose(*_DP).values
    r_sweep = {name: report[lb(name)].transpose(*_DMP, "threshold").values
               for name in ("recall", "precision_lb", "f1_lb")}
    r_grid = np.asarray(report["threshold"].values, dtype=np.float64)
    r_fe, r_fm = report["fine_emitted"].values, report["fine_matched"].values

    out = {name: np.full((nd, nm, npp), np.nan) for name, v in SELECTION_VARIABLES.items() if v.dims == _DMP}
    n_select = np.zeros((nd, npp), dtype=np.int64)
    n_report = np.zeros((nd, npp), dtype=np.int64)
    budget = np.zeros((nd, npp), dtype=np.int64)
    absent: dict[tuple[str, str], list[str]] = {}  # (dataset, part) -> the models without picks there
    for d, dataset in enumerate(datasets):
        ds_, dr = sd.get(dataset), rd.get(dataset)
        for p, phase in enumerate(phases):
            ps, pr = sp[phase], rp[phase]
            ns = int(s_nref[ds_, ps]) if ds_ is not None else 0
            nr = int(r_nref[dr, pr]) if dr is not None else 0
            n_select[d, p], n_report[d, p] = ns, nr
            if ds_ is not None:
                budget[d, p] = carried_budget(int(s_budget[ds_, ps]), ns, nr)
            for m, model in enumerate(models):
                if not present[d, m]:
                    continue
                ms, mr = sm.get(model), rm.get(model)
                chosen = np.nan
                if ds_ is not None and ms is not None and s_present[ds_, ms]:
                    chosen = float(s_best[ds_, ms, ps])
                out["best_threshold_selected"][d, m, p] = chosen
                if p == 0 and not (ds_ is not None and ms is not None and s_present[ds_, ms]):
                    absent.setdefault((dataset, "selection"), []).append(model)
                if dr is None or mr is None or not r_present[dr, mr]:
                    if p == 0:
                        absent.setdefault((dataset, "report"), []).append(model)
                    continue  # the model emitted nothing in the report part of this dataset: not read there
                if not np.isnan(chosen):
                    (k,) = np.flatnonzero(r_grid == chosen)  # one grid: the threshold is on the report's too
                    for name in ("recall", "precision_lb", "f1_lb"):
                        out[f"{name}_at_best_oos"][d, m, p] = r_sweep[name][dr, mr, pr, k]
                if ns > 0:
                    out["recall_at_budget_oos"][d, m, p] = curves.recall_at_budget(
                        r_fe[dr, mr, pr], r_fm[dr, mr, pr], nr, int(budget[d, p]))
    coords = {"dataset": main["dataset"], "model": main["model"], "phase": main["phase"]}
    variables = {name: xr.DataArray(values, dims=_DMP, coords=coords) for name, values in out.items()}
    dp = {"dataset": main["dataset"], "phase": main["phase"]}
    variables["matched_budget_oos"] = xr.DataArray(budget, dims=_DP, coords=dp)
    variables["n_reference_select"] = xr.DataArray(n_select, dims=_DP, coords=dp)
    variables["n_reference_report"] = xr.DataArray(n_report, dims=_DP, coords=dp)
    result = main.copy()
    for name in SELECTION_VARIABLES:
        result[lb(name)] = variables[name]
        attrs = SELECTION_VARIABLES[name].attrs
        if options.exhaustive:
            attrs["long_name"] = attrs["long_name"].replace(" (lower bound)", "")
        result[lb(name)].attrs.update(attrs)
    if selected is not None:
        stations = np.asarray([str(s) for s in main["station"].values], dtype=object)
        flag = np.zeros((nd, stations.size), dtype=bool)
        for d, dataset in enumerate(datasets):
            flag[d] = np.isin(stations, selected.get(dataset, []))
        result["station_selected"] = xr.DataArray(flag, dims=("dataset", "station"),
                                                  coords={"dataset": main["dataset"], "station": main["station"]})
        result["station_selected"].attrs.update(_STATION_SELECTED.attrs)
    result.attrs["select_on"] = rule
    said = list(result.attrs.get("warnings", []))
    new = [m for m in _absent_warnings(absent, rule) if m not in said]
    if new:  # a NaN out-of-sample reading is said, not left to be read as a result (SPEC §16)
        result.attrs["warnings"] = [*said, *new]
        emit_warnings(new)
    return result


def _absent_warnings(absent: dict[tuple[str, str], list[str]], rule: str) -> list[str]:
    """One message per (dataset, part) where models of the run have no pick: their out-of-sample readings
    are NaN there.

    Examples
    --------
    >>> _absent_warnings({("d", "report"): ["m"]}, "before:2024-01-01")[0][:78]
    "select_on before:2024-01-01: model 'm' has no pick in the report part of datas"
    """
    out = []
    for (dataset, part), models in sorted(absent.items()):
        names = ", ".join(repr(m) for m in models)
        what = ("its best threshold is not chosen, and the *_oos readings are NaN"
                if part == "selection" else "the *_oos readings are NaN (nothing to read the choice on)")
        out.append(f"select_on {rule}: model{'s' if len(models) > 1 else ''} {names} "
                   f"{'have' if len(models) > 1 else 'has'} no pick in the {part} part of dataset {dataset!r}: "
                   f"{what} there (SPEC §16).")
    return out


def detection_columns(table: dict, ds: xr.Dataset, lb) -> dict:
    """``detection.csv``'s columns and, when ``ds`` was scored with ``select_on``, the SPEC §16 ones after
    them (per dataset and phase ones repeated on each model's row); unchanged otherwise."""
    if "select_on" not in ds.attrs or lb("f1_lb_at_best_oos") not in ds:
        return table
    present = ds["model_present"].broadcast_like(ds["best_threshold_selected"])
    for name in SELECTION_VARIABLES:
        table[lb(name)] = ds[lb(name)].broadcast_like(present) if "model" not in ds[lb(name)].dims \
            else ds[lb(name)]
    return table
