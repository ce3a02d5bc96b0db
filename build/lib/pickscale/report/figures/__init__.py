"""Figures of a pickscale results Dataset.

Every figure is a function of the results Dataset alone (what
:func:`pickscale.score` returns or :func:`pickscale.open_results` reads back)
and returns a :class:`matplotlib.figure.Figure`.  Nothing here touches pyplot's
global state: figures are plain ``Figure`` objects, so building many of them
does not accumulate open windows, and the caller decides how to show or save
them (``fig.savefig(...)``, or :func:`save_figures`).

The figures make one argument between them.  A shared confidence threshold
reads each model at a different operating point, because each model's
confidence sits on its own scale (:func:`reliability`); so recall at the
shared threshold measures how liberal a model is as much as how good it is
(:func:`recall_treatments`, :func:`operating_curves`).  Onset time is a
separate question with its own, wider tolerance (:func:`timing`,
:func:`residuals`), and where a model fails is a question about stations
(:func:`stations`).

A recall on few arrivals is drawn as what it is: groups, time bins and stations with fewer than
:data:`~.style.FEW_ARRIVALS` (10) reference arrivals are drawn hollow, faint or pooled, and each figure says so.

Naming follows SPEC §4: quantities that depend on a false-positive count carry
``_lb`` (a lower bound, because the analyst did not mark every arrival) unless
the Dataset was scored with ``exhaustive=True``.

The package, one module per figure family; each figure's data selection
(a function returning the numbers it draws, nothing drawn) sits next to its
drawing:

:mod:`~pickscale.report.figures.detection`
    :func:`recall_treatments` (:func:`~.detection.recall_bars`) and
    :func:`operating_curves` (:func:`~.detection.curves`);
:mod:`~pickscale.report.figures.onsets`
    :func:`timing` (:func:`~.onsets.onset_errors`) and
    :func:`residuals` (:func:`~.onsets.residual_histograms`);
:mod:`~pickscale.report.figures.calibration`
    :func:`reliability` (:func:`~.calibration.calibration_curves`);
:mod:`~pickscale.report.figures.station_recall`
    :func:`stations` (:func:`~.station_recall.station_rows`);
:mod:`~pickscale.report.figures.over_time`, :mod:`~pickscale.report.figures.by_group`
    ``recall_over_time`` (:func:`~.over_time.over_time_rows`: steps over each time bin, partial bins
    hatched) and ``recall_by_group`` (:func:`~.by_group.by_group_rows`: points for unordered groups, a line
    through ordered bins), laid out by :mod:`~pickscale.report.figures.recall_axis`;
:mod:`~pickscale.report.figures.tolerance`
    ``recall_vs_tolerance`` (:func:`~.tolerance.tolerance_rows`);
:mod:`~pickscale.report.figures.selection`
    data selection shared by all: options, subsets, which models to show;
:mod:`~pickscale.report.figures.style`
    the layout of every figure (:func:`~.style.panel_grid`), colours, line styles, the rc style, number
    formats, captions;
:mod:`~pickscale.report.figures.build`
    :func:`figures` and :func:`save_figures`.

(The modules are not named after the figures, so that a figure function
never hides a module of the same name.)

Example
-------
>>> from pickscale.report import figures
>>> figs = figures.figures(ds, names=["stations"])  # ds: the demo results (pickscale.score(*demo.catalogue()))
>>> figs["stations"].axes[0].get_ylabel()
'station · dataset  (reference arrivals)'
>>> [p.name for p in figures.save_figures(ds, tmp, format="svg", names=["stations"])]  # tmp: a temporary folder
['stations.svg']
>>> (tmp / "stations.svg").read_text()[:5]
'<?xml'
"""

from __future__ import annotations

from ..._lazy import lazy_names

#: Each name, and the module of this package that defines it (loaded on first use, PEP 562: the package is
#: imported without matplotlib, for the command's figure helper, :mod:`~pickscale.report.figures.helper`).
_LAZY = {
    "FIGURES": "build",
    "figures": "build",
    "save_figures": "build",
    "reliability": "calibration",
    "operating_curves": "detection",
    "recall_treatments": "detection",
    "residuals": "onsets",
    "timing": "onsets",
    "stations": "station_recall",
    "model_colors": "style",
    "model_styles": "style",
}

__all__ = [
    "FIGURES",
    "model_colors",
    "model_styles",
    "recall_treatments",
    "operating_curves",
    "timing",
    "residuals",
    "reliability",
    "stations",
    "figures",
    "save_figures",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
