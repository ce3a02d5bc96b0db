"""Deprecated import path, kept for one release: the readers now live in :mod:`pickscale.io`.

``from pickscale.readers import normalise`` still works; write
``from pickscale.io import normalise`` instead.
"""

from .io import (
    ALIASES,
    COLUMNS,
    DEFAULTS,
    DROP_HINT,
    NOTES_ATTR,
    REQUIRED,
    STATION_KEYS,
    Normalised,
    check_columns,
    join_failures,
    map_phase,
    normalise,
    parse_conf,
    parse_label,
    parse_phase,
    parse_station,
    parse_time,
    read_raw,
    resolve_sources,
    station_key_of,
    time_zones,
    unused_text_candidates,
)

__all__ = [
    "ALIASES",
    "COLUMNS",
    "REQUIRED",
    "DEFAULTS",
    "DROP_HINT",
    "NOTES_ATTR",
    "STATION_KEYS",
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
]
