"""Reading reference and pick tables, and normalising them (SPEC §1).

Three steps, each usable on its own so that a Dask engine can run the last one
on partitions:

1. :func:`resolve_sources` (:mod:`.sources`) turns what the user typed (a file,
   a folder, a glob, an fsspec URL) into a sorted list of files.
2. :func:`read_raw` (:mod:`.raw`) reads one CSV or Parquet file *as it is*:
   CSV cells stay strings (:mod:`.csv`), so that nothing is guessed by pandas
   before pickscale decides; what a file holds is sniffed from its first bytes
   (:mod:`.sniff`).  The engine reads Parquet projected onto the columns it
   needs (:func:`read_projected`, :mod:`.parquet`).  Inputs in a tool's own
   layout (bulletins, SeisBench picks, EQTransformer tables) are converted by
   :mod:`.formats`.
3. :func:`normalise` (:mod:`.normalise`) maps column aliases to the canonical
   names (:mod:`.columns`), parses times to int64 nanoseconds since 1970 UTC
   (:mod:`.times`), maps phase names to ``P``/``S`` and validates every row
   (:mod:`.fields`).  Invalid rows are a fatal :class:`~pickscale.errors.InputError`
   unless ``drop_invalid`` (then they are dropped and counted; :mod:`.messages`).
   The result is a :class:`Normalised` (:mod:`.normalised`).

Row numbers in messages are spreadsheet row numbers: the header is row 1, the
first data row is row 2 (``row_offset`` shifts them for later partitions).

Everything here is vectorised: there is no Python loop over rows.  Text
columns (dataset, model, station, phase) are normalised per distinct value and
mapped back to rows through integer codes (a ``Categorical`` input's own codes;
:mod:`.text`), so that no per-row Python string is made;
``normalise(..., categorical=True)`` keeps them as codes in its output too.
"""

from __future__ import annotations

from . import formats
from .candidates import unused_text_candidates
from .columns import ALIASES, COLUMNS, DEFAULTS, REQUIRED, check_columns
from .fields import STATION_KEYS, map_phase, parse_conf, parse_label, parse_phase, parse_station, station_key_of
from .messages import DROP_HINT, join_failures
from .normalise import normalise
from .parquet import (
    csv_to_parquet,
    hive_columns,
    is_parquet,
    read_projected,
    read_projected_many,
    row_group_ranges,
)
from .raw import read_raw
from .sources import resolve_sources
from .table import NOTES_ATTR, Normalised
from .times import parse_time, time_zones

__all__ = [
    "ALIASES",
    "COLUMNS",
    "REQUIRED",
    "DEFAULTS",
    "NOTES_ATTR",
    "STATION_KEYS",
    "DROP_HINT",
    "Normalised",
    "resolve_sources",
    "read_raw",
    "normalise",
    "check_columns",
    "map_phase",
    "parse_station",
    "parse_phase",
    "parse_label",
    "parse_conf",
    "parse_time",
    "time_zones",
    "station_key_of",
    "join_failures",
    "unused_text_candidates",
    "hive_columns",
    "is_parquet",
    "read_projected",
    "read_projected_many",
    "row_group_ranges",
    "csv_to_parquet",
    "formats",
]
