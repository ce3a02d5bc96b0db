"""From per-station counts to the results Dataset.

- :mod:`~pickscale.results.assembly`: stations stacked per dataset (:func:`combine`, :func:`counts_from_stack`),
  every dataset laid out on shared coordinates (:func:`assemble`);
- :mod:`~pickscale.results.derived`: every SPEC metric derived from the counts (:func:`derive`);
- :mod:`~pickscale.results.variables`: every variable's dims, long_name, units and description, and
  :func:`metric_name`;
- :mod:`~pickscale.results.bootstrap`: intervals by resampling stations (:func:`bootstrap`, SPEC §12).
"""

from __future__ import annotations

from .assembly import DatasetCounts, assemble, combine, counts_from_stack
from .bootstrap import bootstrap
from .derived import derive
from .variables import COORDINATES, STATION_FIELDS, VARIABLES, Variable, describe, metric_name

__all__ = [
    "DatasetCounts",
    "combine",
    "counts_from_stack",
    "assemble",
    "derive",
    "bootstrap",
    "metric_name",
    "STATION_FIELDS",
    "VARIABLES",
    "COORDINATES",
    "Variable",
    "describe",
]
