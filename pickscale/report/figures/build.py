"""Every figure of a results Dataset, by name, and writing them to files.

Examples
--------
>>> FIGURES[:2]
('recall_treatments', 'operating_curves')
"""

from __future__ import annotations

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
from .onsets import residuals, timing
from .over_time import has_time_bins, recall_over_time
from .processes import draw_all, figure_costs, figure_processes, in_memory
from .rates import has_rates, pick_rates
from .station_recall import stations
from .style import STYLE
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

    def render(i: int) -> bytes:
        fig = _BUILDERS[chosen[i]](ds)
        data = io.BytesIO()
        with mpl.rc_context(STYLE):
            if fmt == "png":
                lay_out(fig, dpi=dpi)
            fig.savefig(data, format=fmt, dpi=dpi, metadata=_metadata(fmt, chosen[i]))
        fig.clear()  # a plain Figure is not registered with pyplot: clearing it releases it
        return data.getvalue()

    def write(i: int, data: bytes) -> None:
        paths[i].write_bytes(data)
        if on_written is not None:
            on_written(paths[i])

    ds = _as_drawn(ds, chosen)
    # Each figure drawn once, by one process; in several where it pays (figures/processes.py); written here.
    draw_all(render, chosen, processes=figure_processes(ds, chosen), write=write, meanwhile=meanwhile,
             costs=figure_costs(ds, chosen))
    return paths


#: The residual pairs' variables each figure reads, every row of them (no other figure reads a pair variable).
PAIRS_READ: dict[str, tuple[str, ...]] = {
    "residuals": ("residual", "pair_conf", "pair_model", "pair_phase", "pair_dataset"),
}


def _as_drawn(ds: xr.Dataset, names: Sequence[str]) -> xr.Dataset:
    """``ds`` as the figures ``names`` read it: when the only variables not in memory are residual pairs read
    from a store (a run on a cluster, ``pickscale report``), those a figure reads whole (:data:`PAIRS_READ`) are
    read here, once, and the others left out -- the figures read nothing more and hold no more memory than
    drawn from ``ds`` itself, and a Dataset now wholly in memory can be drawn by several processes
    (:func:`~pickscale.report.figures.processes.figure_processes`).  Otherwise ``ds`` as it is."""
    lazy = [name for name, var in ds.variables.items() if not in_memory(var)]
    if not lazy or any(ds[name].dims[:1] != ("pair",) for name in lazy):
        return ds
    read = {name for figure in names for name in PAIRS_READ.get(figure, ())}
    # (compute(), not load(): the caller's Dataset keeps reading its pairs lazily)
    return ds.drop_vars([name for name in lazy if name not in read]).assign(
        {name: ds[name].compute() for name in lazy if name in read})


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
