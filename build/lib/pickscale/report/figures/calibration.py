"""The calibration figure: does a confidence of 0.7 mean 70 % of picks match?

Each model's confidence sits on its own scale, which is why a shared
threshold reads each model at a different operating point.
:func:`reliability` draws the reliability diagrams; the numbers come from
:func:`calibration_curves`, which draws nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...options import PHASES, SharedThreshold
from ...results import metric_name
from .selection import cap_models, is_present, n_reference, names_of, options_of, subsets
from .style import MAX_MODELS, REF, caption, empty_note, fmt_theta, lb_label, model_colors, panel_grid, styled

__all__ = ["CalibrationLine", "CalibrationPanel", "CalibrationCurves", "calibration_curves", "wilson_interval",
           "reliability"]

#: Round counts offered as keys to the marker size.
_SIZE_KEYS = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)


@dataclass(frozen=True)
class CalibrationLine:
    """One model's non-empty calibration bins at one dataset and phase."""

    model: str
    #: Mean confidence, observed share matched and picks, per non-empty bin.
    conf: np.ndarray
    observed: np.ndarray
    n: np.ndarray
    #: The 95 % Wilson interval of each bin's share.
    low: np.ndarray
    high: np.ndarray
    #: Expected calibration error (``ece_lb`` unless exhaustive).
    ece: float
    #: Its bootstrap interval (SPEC §12), or None when the results hold none.
    ece_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class CalibrationPanel:
    """One dataset and phase; ``ran`` is False when no shown model ran on the dataset."""

    dataset: str
    phase: str
    n_reference: int
    ran: bool
    lines: list[CalibrationLine]

    @property
    def picks(self) -> int:
        """Picks in the panel's bins, over its models."""
        return sum(int(line.n.sum()) for line in self.lines)


@dataclass(frozen=True)
class CalibrationCurves:
    """The numbers :func:`reliability` draws."""

    threshold: SharedThreshold
    floor: float
    exhaustive: bool
    observed_name: str
    ece_name: str
    datasets: list[str]
    models: list[str]
    cap_note: str
    #: (dataset, phase) -> its panel.
    panels: dict[tuple[str, str], CalibrationPanel]
    #: The most picks in one bin of the figure (at least 1): the marker area's scale.
    n_max: float
    #: The counts shown in the key to the marker size.
    size_keys: list[int]


def wilson_interval(k: np.ndarray, n: np.ndarray, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (95 % by default).

    >>> low, high = wilson_interval(np.array([0.0, 5.0]), np.array([10.0, 10.0]))
    >>> low.round(3).tolist(), high.round(3).tolist()
    ([0.0, 0.237], [0.278, 0.763])
    """
    centre = (k + z * z / 2) / (n + z * z)
    half = z * np.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def calibration_curves(
    ds: xr.Dataset, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None
) -> CalibrationCurves:
    """What :func:`reliability` draws: each model's calibration bins per dataset and phase.

    Examples
    --------
    >>> cal = calibration_curves(ds)  # ds: the demo results
    >>> [line.model for line in cal.panels[("aftershocks_north", "P")].lines]
    ['late', 'liberal', 'sharp']
    """
    opts = options_of(ds)
    ex = opts.exhaustive
    obs_name, ece_name = metric_name("observed_lb", ex), metric_name("ece_lb", ex)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["reliability"])
    cal_n = ds.cal_n.sum("station").sel(dataset=dsets, model=mods).load() if mods else None
    n_ref = n_reference(ds)
    # Marker area grows with the picks behind the point, on one scale for the whole figure.
    n_max = max(float(cal_n.max()) if cal_n is not None else 1.0, 1.0)
    panels = {}
    for d in dsets:
        ms = [m for m in mods if is_present(ds, d, m)]
        for phase in PHASES:
            n = int(n_ref.sel(dataset=d, phase=phase))
            lines = []
            if n and ms:
                assert cal_n is not None
                for m in ms:
                    nb = cal_n.sel(dataset=d, model=m, phase=phase).values.astype(float)
                    if nb.sum() == 0:
                        continue
                    x = ds.mean_conf.sel(dataset=d, model=m, phase=phase).values
                    yv = ds[obs_name].sel(dataset=d, model=m, phase=phase).values
                    ok = nb > 0
                    # 95 % Wilson interval of each bin's share: a jump on 3 picks is noise, on 300 it is not.
                    low, high = wilson_interval(yv[ok] * nb[ok], nb[ok])
                    lines.append(CalibrationLine(
                        model=m, conf=x[ok], observed=yv[ok], n=nb[ok], low=low, high=high,
                        ece=float(ds[ece_name].sel(dataset=d, model=m, phase=phase)),
                        ece_ci=((float(ds[ece_name + "_lo"].sel(dataset=d, model=m, phase=phase)),
                                 float(ds[ece_name + "_hi"].sel(dataset=d, model=m, phase=phase)))
                                if ece_name + "_lo" in ds else None),
                    ))
            panels[d, phase] = CalibrationPanel(d, phase, n, bool(ms), lines)
    # The key to the marker size: round counts within the figure's range.
    keys = [v for v in _SIZE_KEYS if v <= n_max]
    if n_max > keys[-1] * 2:
        keys.append(int(float(f"{n_max:.1g}")))
    return CalibrationCurves(
        threshold=opts.threshold, floor=opts.floor, exhaustive=ex, observed_name=obs_name, ece_name=ece_name,
        datasets=dsets, models=mods, cap_note=cap_note, panels=panels, n_max=n_max, size_keys=keys[-4:],
    )


@styled
def reliability(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """Reliability diagrams: does a confidence of 0.7 mean 70 % of picks match?

    One panel per dataset and phase, one line per model through the
    non-empty calibration bins (``mean_conf`` against ``observed_lb``; marker
    area proportional to the share of the model's picks in the bin, from
    ``cal_n``), the diagonal of perfect calibration, and the expected
    calibration error (``ece_lb``) in the legend.  Different curves are why a
    shared threshold reads each model at a different operating point.  With a
    non-exhaustive reference the observed frequency is a lower bound: curves
    below the diagonal are expected.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  Absent models are skipped.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per dataset and phase (rows: datasets, columns: P, S).

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.reliability(ds)  # ds: the demo results
    >>> len(fig.axes), fig.axes[0].get_xlabel()  # one panel per (dataset, phase)
    (4, 'confidence of the picks (mean of the bin)')
    """
    data = calibration_curves(ds, datasets=datasets, models=models)
    colors = model_colors(names_of(ds.model.values))
    obs_name, n_max = data.observed_name, data.n_max

    def area(count: object) -> np.ndarray:
        return 6 + 230 * np.sqrt(np.asarray(count, dtype=float) / n_max)

    longest = max([len(m) for m in data.models] + [4])
    legend_w = 0.7 + 0.055 * longest
    fig, axes = panel_grid(rows=len(data.datasets), cols=2, width=2 * (3.5 + legend_w) + 0.4, row_height=3.6,
                           extra=1.2)
    for r, d in enumerate(data.datasets):
        for p, phase in enumerate(PHASES):
            ax = axes[r, p]
            panel = data.panels[d, phase]
            n = panel.n_reference
            if n == 0 or not panel.ran:
                # Without reference arrivals every pick is "unmatched": a calibration of nothing.
                ax.set_title(f"{d} · {phase}\n{n} arrivals")
                empty_note(ax, f"no {phase} arrivals in the reference" if n == 0 else "no model ran on this dataset")
                continue
            _calibration_panel(ax, panel, data, colors, area)
    size_handles = [
        Line2D([], [], marker="o", ls="none", color="#bbbbbb", mec=REF, mew=0.4,
               ms=float(np.sqrt(area(v))), label=f"{v:,}")
        for v in data.size_keys
    ]
    size_handles.append(Line2D([], [], color="#888888", lw=1.0, label="95 % interval"))
    # The small print goes with the key, below the panels (one bottom block for constrained layout).
    small_print = [
        data.cap_note,
        "" if data.exhaustive else f"{obs_name} is a lower bound (unmarked arrivals): curves below the diagonal "
        "are expected",
    ]
    title = "picks in the bin (marker area)" + "".join(f"\n{t}" for t in small_print if t)
    fig.legend(handles=size_handles, loc="outside lower center", ncols=len(size_handles),
               title=title, title_fontsize=7.5, fontsize=7.5, columnspacing=1.6)
    caption(
        fig,
        f"Reliability: do picks of confidence c match an arrival a fraction c of the time? Dashed: perfect "
        f"calibration; dotted: the shared threshold {fmt_theta(data.threshold)}.",
    )
    return fig


def _calibration_panel(ax: Axes, panel: CalibrationPanel, data: CalibrationCurves, colors: dict[str, str],
                       area: Callable[[object], np.ndarray]) -> None:
    """One dataset and phase: the diagonal, the shared threshold, and a line with intervals per model."""
    ax.plot([0, 1], [0, 1], color="#9a9a9a", ls="--", lw=0.9, zorder=1)
    theta = data.threshold[panel.phase] if isinstance(data.threshold, Mapping) else data.threshold
    ax.axvline(theta, color="#9a9a9a", ls=":", lw=0.9, zorder=1)
    for line in panel.lines:
        m, c = line.model, colors[line.model]
        ci = f" [{line.ece_ci[0]:.3f}, {line.ece_ci[1]:.3f}]" if line.ece_ci is not None else ""
        ax.plot(line.conf, line.observed, "-", color=c, lw=1.2, alpha=0.9, label=f"{m}  {line.ece:.3f}{ci}")
        ax.vlines(line.conf, line.low, line.high, color=c, lw=1.0, alpha=0.45, zorder=2,
                  gid=f"interval:{m}")
        ax.scatter(line.conf, line.observed, s=area(line.n), color=c, edgecolor=REF,
                   linewidth=0.4, zorder=3, alpha=0.9)
    ax.set_xlim(-0.04, 1.04)
    ax.set_ylim(-0.04, 1.04)
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_aspect("equal")
    ax.set_xlabel("confidence of the picks (mean of the bin)")
    ax.set_ylabel(lb_label("share of the bin's picks matched", data.observed_name, exhaustive=data.exhaustive))
    ax.set_title(f"{panel.dataset} · {panel.phase}\n{panel.picks:,} picks ≥ floor {data.floor:g} · "
                 f"{panel.n_reference} arrivals")
    if panel.picks:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title=f"calibration error\n({data.ece_name})",
                  title_fontsize=7.5,
                  fontsize=7, labelspacing=0.3, handlelength=1.2, borderaxespad=0.0, alignment="left")
