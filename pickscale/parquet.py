"""Deprecated import path, kept for one release: Parquet reading now lives in :mod:`pickscale.io.parquet`.

``from pickscale.parquet import csv_to_parquet`` still works; write
``from pickscale.io import csv_to_parquet`` instead.
"""

from .io.parquet import (
    csv_to_parquet,
    hive_columns,
    is_parquet,
    read_projected,
    read_projected_many,
    row_group_ranges,
)

__all__ = ["hive_columns", "is_parquet", "read_projected", "read_projected_many", "row_group_ranges", "csv_to_parquet"]
