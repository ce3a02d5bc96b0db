"""The verdict ``score`` and ``report`` print last: which model, which threshold, and what changes the reading.

Per dataset and phase with reference arrivals (a phase without any is not scored, SPEC §4, and gets no
row), from the results Dataset alone:

1. **best at matched budget**: the model with the highest ``recall_at_budget`` (SPEC §7: every model read
   at the same number of picks), with its interval when the run has them (``--ci``, SPEC §12), and its
   lead over the runner-up (``recall_at_budget_diff``, paired over the same draws) and whether that
   interval excludes 0;
2. **own best threshold**: each model's ``best_threshold`` and ``f1_lb_at_best``, flagged ``ON THE EDGE``
   where ``best_on_edge`` (SPEC §7);
3. **warnings** that change the reading: few arrivals (fewer than :data:`FEW_ARRIVALS`), models without
   picks where arrivals are and no coverage given (``attrs["unpicked"]``, SPEC §2), and the data-quality
   flags of SPEC §5 (``attrs["data_quality"]``: concentrated residuals, picks at a fixed grid, a reference at
   a fixed offset into windows).

Wording rules (each a line; numbers to 3 decimals, thresholds as the grid writes them):

- ``best at matched budget (B picks): A, recall_at_budget 0.830 [0.790, 0.860]; lead over C +0.040
  [+0.010, +0.070] excludes 0`` -- or ``… does not exclude 0: A and C are not told apart`` -- at the run's
  interval level; without intervals ``A, recall_at_budget 0.830 (no interval: run with --ci); lead over C
  +0.040``;
- a dataset with one scored station, with intervals: ``A, recall_at_budget 0.830 (one scored station: no
  interval); lead over C +0.040`` -- resampling one station gives zero-width intervals (SPEC §12), which would
  "exclude 0" whatever the lead;
- models tied at the top (equal ``recall_at_budget``): ``best at matched budget (B picks): tie between A and
  C, recall_at_budget 0.830`` (no lead);
- one model: ``only model: A, recall_at_budget 0.830 …`` (nothing to compare);
- no model with a reading (a budget of 0): ``no reading at the matched budget (budget 0)``;
- ``own best threshold: A 0.42 (f1_lb 0.910); C 0.94 (f1_lb 0.797, ON THE EDGE of the thresholds searched)``.

Examples
--------
>>> import pickscale
>>> from pickscale.demo import write_inputs
>>> import tempfile, warnings
>>> ref, picks = write_inputs(tempfile.mkdtemp())
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     ds = pickscale.score(str(ref), str(picks))
>>> lines = verdict_lines(ds)
>>> lines[0]
'VERDICT per dataset and phase (the full tables: the CSV files, or --verbose)'
>>> print(next(line for line in lines if "best at matched budget" in line).split(";")[0])
    best at matched budget (136 picks): liberal, recall_at_budget 0... (no interval: run with --ci)
"""

from __future__ import annotations

import re
import sys
import textwrap
from typing import Any, TextIO

import numpy as np

__all__ = ["FEW_ARRIVALS", "verdict_rows", "verdict_lines", "print_verdict"]

#: Fewer reference arrivals than this in a (dataset, phase) are "few" (warned about here, drawn apart in the
#: figures): with n arrivals one arrival more or less moves recall by 1/n, more than 0.1 below 10, and the
#: 95 % Wilson interval of 7 found of 9 spans 0.45–0.94.
FEW_ARRIVALS = 10
#: Lines are wrapped at this width.
WIDTH = 120


def _f(value: float) -> str:
    return f"{value:.3f}"


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _theta(value: float) -> str:
    return f"{value:g}"


def _has(ds: Any, *names: str) -> bool:
    return all(name in ds.variables for name in names)


def verdict_rows(ds: Any) -> list[dict[str, Any]]:
    """The verdict's numbers: one record per (dataset, phase) with reference arrivals, in coordinate order.

    Parameters
    ----------
    ds : xarray.Dataset
        Results (:func:`pickscale.score`, :func:`pickscale.open_results`), with or without intervals.

    Returns
    -------
    list of dict
        ``dataset``, ``phase``, ``n_reference``, ``matched_budget``; ``best`` (list of the models at the highest
        ``recall_at_budget``: one unless tied; empty when no model has a reading), ``recall``, ``lo``, ``hi``
        (NaN without intervals); ``runner_up`` (None when one model, a tie or none), ``lead``, ``lead_lo``,
        ``lead_hi`` and ``excludes_0`` (None without an interval); ``stations`` (scored in the dataset) and
        ``intervals`` (the run has them and the dataset at least two scored stations); ``n_models`` and ``models``:
        per model present,
        ``(model, best_threshold, f1_at_best, on_edge)``; ``warnings``: list of str.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> dmp = ("dataset", "model", "phase")
    >>> ds = xr.Dataset(
    ...     {"n_reference": (("dataset", "phase", "station"), [[[40], [0]]]),
    ...      "matched_budget": (("dataset", "phase"), [[40, 0]]),
    ...      "model_present": (("dataset", "model"), [[True, True]]),
    ...      "recall_at_budget": (dmp, [[[0.9, np.nan], [0.5, np.nan]]]),
    ...      "best_threshold": (dmp, [[[0.3, np.nan], [0.94, np.nan]]]),
    ...      "best_on_edge": (dmp, [[[False, False], [True, False]]]),
    ...      "f1_lb_at_best": (dmp, [[[0.8, np.nan], [0.4, np.nan]]])},
    ...     coords={"dataset": ["d"], "model": ["A", "B"], "phase": ["P", "S"]},
    ...     attrs={"options": {"exhaustive": False}})
    >>> [(r["phase"], r["best"], r["runner_up"], round(r["lead"], 3)) for r in verdict_rows(ds)]
    [('P', ['A'], 'B', 0.4)]
    """
    exhaustive = bool(ds.attrs.get("options", {}).get("exhaustive", False))
    f1_name = "f1_at_best" if exhaustive else "f1_lb_at_best"
    datasets, models, phases = (list(map(str, ds[c].values)) for c in ("dataset", "model", "phase"))
    n_ref = np.asarray(ds["n_reference"].sum("station").transpose("dataset", "phase").values)
    budget = (np.asarray(ds["matched_budget"].transpose("dataset", "phase").values) if "matched_budget" in ds
              else None)
    present = np.asarray(ds["model_present"].transpose("dataset", "model").values, dtype=bool)

    def dmp(name: str) -> np.ndarray:
        return np.asarray(ds[name].transpose("dataset", "model", "phase").values)

    recall = dmp("recall_at_budget")
    best_t, f1 = dmp("best_threshold"), dmp(f1_name)
    on_edge = dmp("best_on_edge").astype(bool) if "best_on_edge" in ds else np.zeros(best_t.shape, bool)
    ci = _has(ds, "recall_at_budget_lo", "recall_at_budget_hi")
    lo, hi = (dmp("recall_at_budget_lo"), dmp("recall_at_budget_hi")) if ci else (None, None)
    paired = _has(ds, "recall_at_budget_diff", "recall_at_budget_diff_lo", "recall_at_budget_diff_hi")
    if paired:
        b_names = list(map(str, ds["model_b"].values))
        diff = {end: np.asarray(ds[f"recall_at_budget_diff{end}"].transpose("dataset", "model", "model_b",
                                                                              "phase").values)
                for end in ("", "_lo", "_hi")}
    # SPEC §12: intervals resample a dataset's stations; with one scored station they have zero width.
    stations = (np.asarray(ds["station_scored"].transpose("dataset", "station").values).sum(axis=1)
                if "station_scored" in ds else np.full(len(datasets), 2))
    quality = [q for q in ds.attrs.get("data_quality", []) if isinstance(q, dict)]
    unpicked = ds.attrs.get("unpicked", {})
    rows = []
    for d, dataset in enumerate(datasets):
        for p, phase in enumerate(phases):
            n = int(n_ref[d, p])
            if n == 0:
                continue  # SPEC §4: nothing to score against; not a result
            here = [m for m in range(len(models)) if present[d, m]]
            scored = [m for m in here if np.isfinite(recall[d, m, p])]
            order = sorted(scored, key=lambda m: (-recall[d, m, p], models[m]))
            row: dict[str, Any] = {
                "dataset": dataset, "phase": phase, "n_reference": n,
                "matched_budget": int(budget[d, p]) if budget is not None else None,
                "best": [], "recall": float("nan"), "lo": float("nan"), "hi": float("nan"),
                "runner_up": None, "lead": float("nan"), "lead_lo": float("nan"), "lead_hi": float("nan"),
                "excludes_0": None, "n_models": len(here), "stations": int(stations[d]),
                "intervals": ci and int(stations[d]) >= 2,
                "models": [(models[m], float(best_t[d, m, p]), float(f1[d, m, p]), bool(on_edge[d, m, p]))
                           for m in here],
            }
            if order:
                top = recall[d, order[0], p]
                row["best"] = [models[m] for m in order if recall[d, m, p] == top]
                row["recall"] = float(top)
                if row["intervals"] and lo is not None and hi is not None:
                    row["lo"], row["hi"] = float(lo[d, order[0], p]), float(hi[d, order[0], p])
                if len(row["best"]) == 1 and len(order) > 1:
                    a, b = order[0], order[1]
                    row["runner_up"] = models[b]
                    row["lead"] = float(recall[d, a, p] - recall[d, b, p])
                    if paired and row["intervals"] and models[b] in b_names:
                        k = b_names.index(models[b])
                        est, dlo, dhi = (float(diff[end][d, a, k, p]) for end in ("", "_lo", "_hi"))
                        if np.isfinite(dlo) and np.isfinite(dhi):
                            row["lead"], row["lead_lo"], row["lead_hi"] = est, dlo, dhi
                            row["excludes_0"] = bool(dlo > 0 or dhi < 0)
            row["warnings"] = _warnings(row, quality, unpicked.get(dataset, {}) if isinstance(unpicked, dict)
                                        else {})
            rows.append(row)
    return rows


def _warnings(row: dict[str, Any], quality: list[dict[str, Any]], unpicked: dict[str, Any]) -> list[str]:
    """The warnings of one (dataset, phase) that change its reading."""
    out = []
    n = row["n_reference"]
    if n < FEW_ARRIVALS:
        out.append(f"few arrivals: {n} reference arrival(s) (< {FEW_ARRIVALS}): one arrival moves recall by "
                   f"{1 / n:.2f}; read the numbers as anecdotes")
    for model, info in unpicked.items():
        if isinstance(info, dict) and info.get("stations_without_picks"):
            out.append(f"no coverage: {model} has no pick at {info['stations_without_picks']} station(s) holding "
                       f"{info.get('reference_there', '?')} arrival(s) of the dataset, counted as its misses "
                       "(give --coverage if it was not run there)")
    mine = [q for q in quality if q.get("dataset") == row["dataset"] and q.get("phase") == row["phase"]]
    kinds = {"concentrated": ("residuals concentrated on one value", "that value"),
             "pick_grid": ("picks at a fixed grid", "the grid")}
    for flag, (words, what) in kinds.items():
        those = [f"{q['model']} ({q['note']})" for q in mine if q.get("flag") == flag]
        if those:
            out.append(f"{words}: {'; '.join(those)}: medae, bias and fraction_within_0.1 read {what}, not the "
                       "picker's timing")
    for q in mine:
        if q.get("flag") == "reference_offset":
            out.append(f"reference at a fixed offset into windows ({q['note']}): labels placed, not read off "
                       "the waveform")
    return out


def verdict_lines(ds: Any) -> list[str]:
    """The verdict as printed: a title, then per dataset and phase with reference arrivals a block of lines
    (the wording rules of the module's docstring).

    Parameters
    ----------
    ds : xarray.Dataset
        Results, with or without intervals (``--ci``).

    Returns
    -------
    list of str
    """
    exhaustive = bool(ds.attrs.get("options", {}).get("exhaustive", False))
    f1 = "f1" if exhaustive else "f1_lb"
    level = ds.attrs.get("bootstrap", {}).get("level") if isinstance(ds.attrs.get("bootstrap"), dict) else None
    at = f" at {float(level):.0%}" if level is not None else ""
    ci = "recall_at_budget_lo" in ds.variables
    lines = ["VERDICT per dataset and phase (the full tables: the CSV files, or --verbose)"]
    rows = verdict_rows(ds)
    if not rows:
        lines.append("  no dataset has reference arrivals: nothing is scored")
    for row in rows:
        budget = "" if row["matched_budget"] is None else f" ({row['matched_budget']} picks)"
        lines.append("")
        lines.append(f"{row['dataset']} {row['phase']}: {row['n_reference']} reference arrivals, "
                     f"{row['n_models']} model(s)")
        if not row["best"]:
            lines.append(f"    no reading at the matched budget (budget {row['matched_budget']})")
        else:
            if np.isfinite(row["lo"]) and np.isfinite(row["hi"]):
                interval = f" [{_f(row['lo'])}, {_f(row['hi'])}]"
            elif row["intervals"] or not ci:
                interval = " (no interval: run with --ci)" if not ci else " (no interval)"
            else:  # SPEC §12: resampling one station gives zero-width intervals, which say nothing
                interval = " (one scored station: no interval)"
            if len(row["best"]) > 1:
                lines.append(f"    best at matched budget{budget}: tie between {' and '.join(row['best'])}, "
                             f"recall_at_budget {_f(row['recall'])}")
            elif row["runner_up"] is None:
                lines.append(f"    only model: {row['best'][0]}, recall_at_budget {_f(row['recall'])}{interval}")
            else:
                lead = f"lead over {row['runner_up']} {_signed(row['lead'])}"
                if row["excludes_0"] is not None:
                    lead += f" [{_signed(row['lead_lo'])}, {_signed(row['lead_hi'])}]"
                    lead += (f" excludes 0{at}" if row["excludes_0"] else
                             f" does not exclude 0{at}: {row['best'][0]} and {row['runner_up']} are not told apart")
                lines.append(f"    best at matched budget{budget}: {row['best'][0]}, recall_at_budget "
                             f"{_f(row['recall'])}{interval}; {lead}")
        own = []
        for model, theta, f1_best, edge in row["models"]:
            if not np.isfinite(theta):
                own.append(f"{model} none")
                continue
            mark = ", ON THE EDGE of the thresholds searched" if edge else ""
            own.append(f"{model} {_theta(theta)} ({f1} {_f(f1_best)}{mark})")
        if own:
            lines.append(f"    own best threshold: {'; '.join(own)}")
        for warning in row["warnings"]:
            lines.append(f"    warning: {warning}")
    if not exhaustive:
        lines += ["", "_lb = lower bound: an unmatched pick may be a real arrival the analyst never marked "
                      "(use --exhaustive if the reference marks every arrival)."]
    return [wrapped for line in lines for wrapped in _wrapped(line)]


def _wrapped(line: str) -> list[str]:
    """A 120-column terminal, as the tables: a long line wrapped (never inside an interval), its continuation
    indented two columns past the line's own indent."""
    indent = len(line) - len(line.lstrip(" "))
    kept = re.sub(r"\[([^\]\s]*), ([^\]\s]*)\]", "[\\1\0\\2]", line)  # an interval is one word
    parts = textwrap.wrap(kept, width=WIDTH, subsequent_indent=" " * (indent + 2 if indent else 0),
                          break_long_words=False, break_on_hyphens=False)
    return [part.replace("\0", ", ") for part in parts] or [line]


def print_verdict(ds: Any, file: TextIO | None = None) -> None:
    """Print :func:`verdict_lines` (to ``file``, default stdout), as ``score`` and ``report`` end."""
    out = sys.stdout if file is None else file
    print("\n" + "\n".join(verdict_lines(ds)), file=out)
