"""SPEC §4–§7 metrics from additive counts: one module per family.

Each function is a pure numpy kernel (broadcasting over leading axes where it
makes sense); :mod:`pickscale.results` applies them to the xarray Dataset.
"""

from . import calibration, curves, detection, timing

__all__ = ["calibration", "curves", "detection", "timing"]
