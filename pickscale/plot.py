"""Figures of a pickscale results Dataset -- moved to :mod:`pickscale.report.figures`.

This module re-exports the public figure functions, :data:`FIGURES` and
:func:`model_styles` from there, so that ``pickscale.plot.<name>(ds)`` keeps
working for one release; new code should import from
:mod:`pickscale.report.figures`.

>>> import pickscale.plot, pickscale.report.figures
>>> pickscale.plot.timing is pickscale.report.figures.timing
True
"""

from __future__ import annotations

from .report.figures import (
    FIGURES,
    figures,
    model_colors,
    model_styles,
    operating_curves,
    recall_treatments,
    reliability,
    residuals,
    save_figures,
    stations,
    timing,
)

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
