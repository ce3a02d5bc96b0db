"""Every figure of a results Dataset, by name, and writing them to files.

Examples
--------
>>> FIGURES[:2]
('recall_treatments', 'operating_curves')
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib as mpl
import xarray as xr
from matplotlib.figure import Figure

from ..names import EVENT_FIGURES, FIGURES, GROUP_FIGURES, RATE_FIGURES, TIME_BIN_FIGURES, TOLERANCE_FIGURES
from .by_group import has_groups, recall_by_group
from .calibration import reliability
from .detection import operating_curves, recall_treatments
from .events import event_detection, has_events
from .helper import take_handed
from .onsets import residuals, timing
from .over_time import has_time_bins, recall_over_time
from .processes import as_drawn, draw_all, figure_costs, figure_processes, handout_order
from .rates import has_rates, pick_rates
from .station_recall import stations
from .style import STYLE, panel_grid
from .tolerance import has_tols, recall_vs_tolerance

__all__ = ["FIGURES", "figures", "save_figures", "figure_names", "lay_out"]


_BUILDERS: dict[str, Callable[..., Figure]] = {
    "recall_treatments": recall_treatments,
    "operating_curves": operating_curves,
    "timing": timing,
    "residuals": residuals,
    "reliability": reliability,
    "stations": stations,
    "recall_over_time": recall_over_time,
    "recall_vs_tolerance": recall_vs_tolerance,
    "recall_by_group": recall_by_group,
    "event_detection": event_detection,  # SPEC §19 (figures/events.py)
    "pick_rates": pick_rates,  # SPEC §20 (figures/rates.py)
}


def figure_names(ds: xr.Dataset) -> list[str]:
    """The figures :func:`save_figures` writes for ``ds`` by default: :data:`FIGURES`, then those of time bins,
    tolerances, groups, events and pick rates when ``ds`` has them."""
    return _default_names(ds)


def _default_names(ds: xr.Dataset) -> list[str]:
    """:data:`FIGURES`, then those of each family ``ds`` has, in :mod:`pickscale.report.names`'s order."""
    return [*FIGURES, *(TIME_BIN_FIGURES if has_time_bins(ds) else ()), *(TOLERANCE_FIGURES if has_tols(ds) else ()),
            *(GROUP_FIGURES if has_groups(ds) else ()), *(EVENT_FIGURES if has_events(ds) else ()),
            *(RATE_FIGURES if has_rates(ds) else ())]


def figures(ds: xr.Dataset, *, names: Sequence[str] | None = None) -> dict[str, Figure]:
    """Every figure of a results Dataset, by name.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    names
        Which figures (default: all of :data:`FIGURES`, in that order, then ``recall_over_time`` for
        results scored with ``time_bin``).

    Returns
    -------
    dict
        ``{name: Figure}``.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> figs = pickscale.report.figures.figures(ds, names=["timing", "stations"])  # ds: the demo results
    >>> {name: type(fig).__name__ for name, fig in figs.items()}
    {'timing': 'Figure', 'stations': 'Figure'}
    >>> figure_names(ds)  # the default: FIGURES, then those of time bins, tolerances, groups and pick rates
    ['recall_treatments', 'operating_curves', 'timing', 'residuals', 'reliability', 'stations',
     'recall_over_time', 'recall_vs_tolerance', 'recall_by_group', 'pick_rates']
    """
    chosen = _default_names(ds) if names is None else list(names)
    unknown = [n for n in chosen if n not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    return {name: _BUILDERS[name](ds) for name in chosen}


def save_figures(
    ds: xr.Dataset,
    out_dir: str | Path,
    *,
    format: str = "png",
    dpi: float = 150,
    names: Sequence[str] | None = None,
    on_written: Callable[[Path], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> list[Path]:
    """Write every figure to ``out_dir/<name>.<format>``; return the paths.

    Figures are built, written and released one at a time, so memory does not
    grow with the number of figures; on two CPUs or more, a Dataset in memory has them drawn by as many
    processes (forked, each figure drawn once: the same bytes; :mod:`~pickscale.report.figures.processes`).

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    out_dir
        Folder to write into (created if missing).
    format
        ``"png"``, ``"svg"`` or ``"pdf"``.
    dpi
        Resolution of PNG output.
    names
        Which figures (default: all of :data:`FIGURES`).
    on_written
        Called with each figure's path once it is written (the progress display counts figures).
    meanwhile
        Other work of this process (``pickscale score``'s tables), called once the other processes drawing
        figures have started, before any figure is written (first of all when this process draws them alone).

    Returns
    -------
    list of pathlib.Path
        The files written, in :data:`FIGURES` order.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> paths = pickscale.report.figures.save_figures(ds, tmp / "figures", names=["recall_treatments", "timing"],
    ...                                               dpi=50)  # ds: the demo results; tmp: a temporary folder
    >>> [(p.parent.name, p.name, p.read_bytes()[1:4]) for p in paths]
    [('figures', 'recall_treatments.png', b'PNG'), ('figures', 'timing.png', b'PNG')]
    """
    fmt = format.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"format must be 'png', 'svg' or 'pdf'; got {format!r}")
    chosen = _default_names(ds) if names is None else list(names)
    unknown = [n for n in chosen if n not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{fmt}" for name in chosen]

    def write(i: int, data: bytes) -> None:
        paths[i].write_bytes(data)
        if on_written is not None:
            on_written(paths[i])

    ds = as_drawn(ds, chosen)
    # A helper the command started (figures/helper.py) was handed this Dataset and the default figures.
    helper = take_handed() if names is None else None
    # Each figure drawn once, by one process; in several where it pays (figures/processes.py); written here.
    draw_all(functools.partial(_render, ds, chosen, fmt=fmt, dpi=dpi), chosen,
             processes=figure_processes(ds, chosen), write=write, meanwhile=meanwhile,
             costs=figure_costs(ds, chosen), helper=helper)
    return paths


def _render(ds: xr.Dataset, names: Sequence[str], i: int, *, fmt: str, dpi: float) -> bytes:
    """The bytes of figure ``names[i]`` of ``ds``, as ``fmt`` at ``dpi``."""
    fig = _BUILDERS[names[i]](ds)
    data = io.BytesIO()
    with mpl.rc_context(STYLE):
        if fmt == "png":
            lay_out(fig, dpi=dpi)
        fig.savefig(data, format=fmt, dpi=dpi, metadata=_metadata(fmt, names[i]))
    fig.clear()  # a plain Figure is not registered with pyplot: clearing it releases it
    return data.getvalue()


def warm_up(*, fmt: str = "png", dpi: float = 150) -> None:
    """Draw a small figure once and throw it away: what a process's first figure loads besides the figure
    itself (the fonts, their glyphs at the style's sizes, the image writer) is then loaded.  For a process
    that has time before its first figure (a helper, :mod:`~pickscale.report.figures.helper`); nothing any
    figure draws depends on it (matplotlib only caches what it loaded).

    Examples
    --------
    >>> warm_up(dpi=20)
    """
    fig, axes = panel_grid(rows=1, cols=1, width=3.0, height=2.0)
    ax = axes.flat[0]
    ax.plot([0.0, 0.5, 1.0], [0.2, 0.9, 0.4], marker="o", label="recall")
    ax.set_title("pickscale 0123456789")
    ax.set_xlabel("confidence threshold")
    ax.legend()
    with mpl.rc_context(STYLE):
        if fmt == "png":
            lay_out(fig, dpi=dpi)
        fig.savefig(io.BytesIO(), format=fmt, dpi=dpi)
    fig.clear()


def helper_job(ds: xr.Dataset, fmt: str, dpi: float) -> tuple[Callable[[int], bytes], list[int]]:
    """What a helper (:mod:`~pickscale.report.figures.helper`) handed ``ds`` draws: figure ``i`` of the default
    names (:func:`figure_names`), and the order they are handed out in -- as :func:`save_figures` with
    ``names=None`` lays them out, so that the two take the same figures from one counter."""
    chosen = _default_names(ds)
    return (functools.partial(_render, ds, chosen, fmt=fmt, dpi=dpi),
            handout_order(figure_costs(ds, chosen)))


def lay_out(fig: Figure, *, dpi: float) -> None:
    """Run ``fig``'s layout engine once, as saving it as a PNG at ``dpi`` would, and then leave it without one.

    Saving a figure that has a layout engine draws it twice: once with drawing turned off, only so that the
    engine runs (at the start of that draw) on a renderer of the output's size, then for real.  Everything the
    first draw computes besides the layout (~10 % of a figure's time) the second draw computes again.  Here the
    engine runs alone on the same renderer (an Agg canvas at ``dpi``: what ``savefig`` uses for PNG), then the
    figure is saved with the layout it gave: the same PNG, byte for byte, drawn once.  Call under the style the
    figure is saved under.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(layout="constrained")
    >>> _ = fig.add_subplot().set_title("recall")
    >>> lay_out(fig, dpi=150)
    >>> fig.get_layout_engine() is None, fig.dpi
    (True, 150)
    """
    engine = fig.get_layout_engine()
    if engine is None or not fig.axes:  # (Figure.draw runs no engine on a figure without axes)
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # the canvas savefig uses for PNG; its renderer is kept for the real draw
    fig.set_dpi(dpi)
    try:
        engine.execute(fig)
    except ValueError:  # what Figure.draw tolerates from an engine (it then draws without a new layout)
        pass
    with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)  # (None, whatever a matplotlibrc says: no engine to run again)


def _metadata(fmt: str, name: str) -> dict[str, str]:
    title = f"pickscale: {name}"
    if fmt == "png":
        return {"Title": title, "Software": "pickscale"}
    if fmt == "pdf":
        return {"Title": title, "Creator": "pickscale"}
    return {"Title": title}
