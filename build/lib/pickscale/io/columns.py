"""The columns of SPEC §1: canonical names and their aliases, and which column of a table holds which.

:data:`ALIASES` lists the names accepted for each canonical column (the first
found in a file wins), :data:`COLUMNS` and :data:`REQUIRED` the columns of
each role.  :func:`check_columns` validates explicit column names
(``columns={"model": "rid"}``), :func:`resolve_columns` maps a raw frame's
columns to the canonical names or says, naming the file, what is missing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import InputError, OptionsError

__all__ = ["ALIASES", "COLUMNS", "REQUIRED", "DEFAULTS", "column_key", "check_columns", "resolve_columns"]


#: Canonical column name -> accepted names, canonical first, in SPEC order
#: (the first name found in a file wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset", "sequence", "region", "study", "experiment", "catalogue"),
    "model": ("model", "weights", "picker", "method", "run", "rid", "version"),
    "station": ("station", "trace_id", "tid", "station_id", "sta"),
    "phase": ("phase", "phase_hint", "phase_type", "pha"),
    "time": (
        "time", "pick_time", "arrival_time", "peak_time", "phase_time", "peak",
        "onset", "timestamp",
    ),
    "conf": ("conf", "confidence", "probability", "peak_value", "phase_score", "prob", "score"),
}

#: Columns of a normalised frame, in order, per role.
COLUMNS: dict[str, tuple[str, ...]] = {
    "reference": ("dataset", "station", "phase", "time"),
    "picks": ("dataset", "model", "station", "phase", "time", "conf"),
}

#: Columns a file must have, per role.
REQUIRED: dict[str, tuple[str, ...]] = {
    "reference": ("station", "phase", "time"),
    "picks": ("station", "phase", "time", "conf"),
}

#: Values used when an optional column is absent.
DEFAULTS: dict[str, str] = {"dataset": "all", "model": "model"}

_WHAT = {
    "dataset": "the dataset name",
    "model": "the model name",
    "station": "the station, e.g. CI.CLC",
    "phase": "the phase name, e.g. P, Pg, S, Sn",
    "time": "the arrival/pick time: ISO-8601 or seconds since 1970",
    "conf": "the pick confidence, a number in [0, 1]",
}


def column_key(name: Any) -> str:
    """A column name as compared with the aliases: stripped, case-folded."""
    return str(name).strip().casefold()


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def check_columns(columns: Any) -> dict[str, str]:
    """Validate explicit column names (``columns={"model": "rid", "station": "tid"}``); canonical keys.

    Also accepts the CLI's text form ``"model=rid,station=tid"``.

    Examples
    --------
    >>> check_columns("model=rid, station=tid")
    {'model': 'rid', 'station': 'tid'}
    """
    if columns is None:
        return {}
    if isinstance(columns, str):
        pairs = [item.partition("=") for item in columns.split(",") if item.strip()]
        if any(not sep or not k.strip() or not v.strip() for k, sep, v in pairs):
            raise OptionsError(f"columns: {columns!r} is not of the form canonical=column[,canonical=column...], "
                               "e.g. model=rid,station=tid.")
        columns = {k.strip(): v.strip() for k, _, v in pairs}
    if not isinstance(columns, dict):
        raise OptionsError(f"columns must map SPEC names to column names, not {type(columns).__name__}.")
    out: dict[str, str] = {}
    for k, v in columns.items():
        key = column_key(k)
        if key not in ALIASES:
            raise OptionsError(f"columns: {k!r} is not one of {', '.join(ALIASES)}.")
        if not isinstance(v, str) or not v.strip():
            raise OptionsError(f"columns: the column for {key!r} must be a non-empty name, not {v!r}.")
        out[key] = v.strip()
    return out


def resolve_columns(raw: pd.DataFrame, role: str, source: str,
                     explicit: dict[str, str] | None = None) -> dict[str, str | None]:
    """Canonical name -> column of ``raw`` (an explicit name first, else the first alias found), or None."""
    by_key: dict[str, Any] = {}
    for col in raw.columns:
        # Among columns equal up to case, an exact canonical spelling is preferred,
        # otherwise the left-most one.
        k = column_key(col)
        if k not in by_key or str(col).strip() == k:
            by_key[k] = col
    found: dict[str, str | None] = {}
    explicit = explicit or {}
    for canonical, name in explicit.items():
        if canonical in COLUMNS[role] and column_key(name) not in by_key:
            in_file = raw.attrs.get("columns_in_file") or list(raw.columns)
            have = ", ".join(repr(str(c)) for c in in_file) or "none"
            raise InputError(f"{source}: no column {name!r}, which was given as the {canonical} column "
                             f"(columns found: {have}).")
    for canonical in COLUMNS[role]:
        if canonical in explicit:
            found[canonical] = by_key[column_key(explicit[canonical])]
            continue
        taken = {column_key(v) for v in explicit.values()}
        found[canonical] = next(
            (by_key[a] for a in ALIASES[canonical] if a in by_key and a not in taken), None
        )
    labels = list(raw.columns)
    for canonical, col in found.items():
        if col is not None and labels.count(col) > 1:
            raise InputError(
                f"{source}: the column name {str(col)!r} appears {labels.count(col)} times, so pickscale "
                f"cannot tell which one holds {_WHAT[canonical]}; rename or remove the extra columns."
            )
    missing = [c for c in REQUIRED[role] if found[c] is None]
    if missing:
        lines = [
            f"{source}: the {role} table has no column for "
            + _and([repr(m) for m in missing]) + "."
        ]
        # A reader that projected the file onto the columns it wanted records them all here.
        in_file = raw.attrs.get("columns_in_file") or list(raw.columns)
        have = ", ".join(repr(str(c)) for c in in_file) or "none"
        lines.append(f"  Columns found: {have}.")
        for m in missing:
            lines.append(
                f"  {m} ({_WHAT[m]}) is accepted under any of these names (any case): "
                + ", ".join(ALIASES[m]) + "."
            )
        if len(raw.columns) == 1 and any(d in str(raw.columns[0]) for d in ";\t|"):
            lines.append("  The single column name contains a delimiter: is the file "
                         "separated by something other than ',', ';' or tab?")
        raise InputError("\n".join(lines))
    return found
