"""One station in, additive counts out, and how counts add up.

- :mod:`~pickscale.kernel.matching`: SPEC §3's greedy matching, in vectorised rounds;
- :mod:`~pickscale.kernel.streams`: every (model, phase) stream of a station matched in one call;
- :mod:`~pickscale.kernel.station`: :func:`score_station`, every SPEC §4–§7 count of one station;
- :mod:`~pickscale.kernel.exact`: exact, order-free sums of confidences (fixed point in integer limbs);
- :mod:`~pickscale.kernel.blocks`: cutting a busy station into time blocks that add up exactly;
- :mod:`~pickscale.kernel.combine`: THE declaration of how each per-station field combines;
- :mod:`~pickscale.kernel.stacks`: station results stacked as arrays, combined on the reduction tree.

Numpy only: the Dask workers import this package.
"""

from __future__ import annotations

from .blocks import block_of, candidate_cuts, cut_points
from .combine import FIELDS, PAIR_KEY, PER_STATION, Kind, add_fine, finalize, merge, of_kind, pair_order
from .matching import greedy_match, match_sorted, priority_rank, range_max, range_min, windows
from .stacks import FAN_IN, Partial, StationStack, combine_partials, summed_fine
from .station import StationResult, calibration_bin, level, merge_results, score_station

__all__ = [
    "score_station",
    "StationResult",
    "merge_results",
    "level",
    "calibration_bin",
    "greedy_match",
    "match_sorted",
    "priority_rank",
    "range_min",
    "range_max",
    "windows",
    "candidate_cuts",
    "cut_points",
    "block_of",
    "Kind",
    "FIELDS",
    "PER_STATION",
    "PAIR_KEY",
    "of_kind",
    "merge",
    "finalize",
    "pair_order",
    "add_fine",
    "StationStack",
    "Partial",
    "combine_partials",
    "summed_fine",
    "FAN_IN",
]
