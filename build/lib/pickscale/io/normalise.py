"""Mapping aliases, parsing and validating one raw table: :func:`normalise` (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from .candidates import few_distinct, unused_text_candidates
from .columns import COLUMNS, DEFAULTS, check_columns, resolve_columns
from .fields import (
    STATION_KEYS,
    default_column,
    label_column,
    parse_conf,
    phase_column,
    station_column,
    station_key_of,
)
from .formats.registry import layout_for
from .messages import describe_invalid, invalid_rows_message
from .table import NOTES_ATTR, Normalised, attach_report
from .text import Text, defused
from .times import parse_time, time_zones

__all__ = ["normalise"]


def normalise(
    raw: pd.DataFrame,
    *,
    role: str,
    source: str,
    drop_invalid: bool = False,
    row_offset: int = 0,
    categorical: bool = False,
    station_key: str = "as-is",
    columns: dict[str, str] | str | None = None,
    keep: str | tuple[str, ...] | None = None,
) -> Normalised:
    """Map aliases, parse and validate one raw table (SPEC §1).

    Parameters
    ----------
    raw
        A frame from :func:`~pickscale.io.read_raw` (or any frame with the same meaning).
    role
        ``"reference"`` (analyst arrivals) or ``"picks"`` (model output).
    source
        The file name shown in messages.
    drop_invalid
        Drop invalid rows (and count them) instead of raising.
    row_offset
        Data rows of the same file before this frame, so that row numbers in
        messages are those of the file.  Comment lines skipped above a CSV
        header (``raw.attrs["comment_lines"]``) are added, so that rows count
        from the top of the file.
    categorical
        Return the text columns (``dataset``, ``model``, ``station``,
        ``phase``) as pandas ``Categorical`` instead of object columns of
        ``str``: built from integer codes, so that no per-row Python string is
        made.  The categories are the distinct normalised strings of the rows
        kept, **sorted** (as ``astype("category")`` sorts them, ``str`` dtype);
        the values equal those of ``categorical=False`` row for row.
    station_key
        ``"as-is"`` (default) or ``"net.sta"``: stations ``NET.STA[.LOC[.CHA]]``
        reduced to ``NET.STA`` (see :func:`~pickscale.io.station_key_of`); give the same
        key for both sides.
    columns
        Explicit column names for SPEC names no alias covers, e.g.
        ``{"model": "rid", "station": "tid"}`` (or ``"model=rid,station=tid"``);
        they win over the aliases.
    keep
        Further columns to keep (what the reference's groups are made of, SPEC §14): the raw values of
        each, row for row, as the object columns :func:`kept_name` ``(0)`` (``group_value``), ``(1)`` …;
        ``None`` (default) keeps none.

    An EQTransformer prediction table (``p_arrival_time, p_probability,
    s_arrival_time, ...``) is first turned into one row per pick
    (:func:`pickscale.io.formats.eqtransformer.eqt_to_long`).

    Returns
    -------
    Normalised
        See the class.  Rows whose phase is neither P- nor S-like are dropped
        first (and counted per name) and are not validated further.

    Raises
    ------
    InputError
        A required column is missing (lists the columns found and the accepted
        names) or appears twice, or rows are invalid and ``drop_invalid`` is False (names the
        file, the count, the first five row numbers per column and their
        values; row numbers as a spreadsheet shows them, header = row 1).

    Notes
    -----
    Times: ISO-8601 strings with any UTC offset or none (= UTC); datetime
    columns (naive = UTC); numbers = seconds since 1970 (a float's value
    rounded to the nearest ns, ties to even; numeric strings parsed exactly
    from their digits).  Mixed time zones: in a column where some times carry
    a non-zero UTC offset, the times without one are invalid rows (problem
    ``"time zone"``): they are most likely local time with the offset left
    off.  ``Decimal('sNaN')`` values count as missing.  Stations: surrounding
    white space and trailing '.' removed.  Dataset/model names: surrounding white space
    removed; an empty one is invalid.  An ``event`` column is never a dataset.

    Text columns are normalised per distinct value, not per row: a pandas
    ``Categorical`` input (e.g. Parquet read with pyarrow's
    ``read_dictionary``) is used through its codes and categories, any other
    column is factorized first.  Distinct raw values that normalise to the
    same string (``" A"``, ``"A."``, ``"A"``) give the same output value.

    Examples
    --------
    >>> raw = pd.DataFrame({"station_id": ["CI.CLC."], "phase_type": ["Pg"],
    ...                     "phase_time": ["2020-01-01T00:00:00.5Z"], "phase_score": ["0.9"]})
    >>> n = normalise(raw, role="picks", source="picks.csv")
    >>> r = n.frame.iloc[0]
    >>> r["dataset"], r["model"], r["station"], r["phase"], int(r["time"]), float(r["conf"])
    ('all', 'model', 'CI.CLC', 'P', 1577836800500000000, 0.9)
    >>> n.columns["time"]
    'phase_time'
    >>> normalise(raw, role="picks", source="picks.csv", categorical=True).frame["station"].dtype
    CategoricalDtype(categories=['CI.CLC'], ordered=False, categories_dtype=str)
    """
    if role not in COLUMNS:
        raise ValueError(f"role must be 'reference' or 'picks', not {role!r}")
    explicit = check_columns(columns)
    if station_key not in STATION_KEYS:
        station_key_of(np.zeros(0, dtype=object), station_key)  # raises OptionsError
    row_offset += int(raw.attrs.get("comment_lines", 0))
    raw, found = _prepare(raw, role, source, explicit)
    n = len(raw)
    parsed = _parse(raw, found, role, station_key)

    invalid = np.zeros(n, dtype=bool)
    for bad in parsed.problems.values():
        invalid |= bad
    n_invalid = int(invalid.sum())
    examples: list[str] = []
    if n_invalid:
        lines, examples = describe_invalid(raw, found, parsed.problems, row_offset, parsed.with_offset)
        if not drop_invalid:
            raise InputError(invalid_rows_message(source, role, n_invalid, n, lines))

    kept_rows = np.flatnonzero(parsed.keep & ~invalid)
    frame = _frame(parsed, kept_rows, role, categorical)
    used = {c for c in found.values() if c is not None}
    for i, name in enumerate((keep,) if isinstance(keep, str) else keep or ()):
        used |= _keep_column(frame, raw, name, kept_rows, kept_name(i))
    attach_report(frame, n, n_invalid, parsed.dropped)
    return Normalised(
        frame=frame,
        role=role,
        source=source,
        columns={k: (None if v is None else str(v)) for k, v in found.items()},
        n_rows_read=n,
        n_invalid=n_invalid,
        invalid_counts={k: int(v.sum()) for k, v in parsed.problems.items() if v.any()},
        invalid_examples=examples,
        dropped_phases=parsed.dropped,
        mapped_phases=parsed.mapped,
        ignored_columns=[str(c) for c in raw.columns if c not in used],
        model_candidates=_model_candidates(raw, found, role),
        notes=list(raw.attrs.get(NOTES_ATTR) or []),
    )


def _prepare(raw: pd.DataFrame, role: str, source: str,
             explicit: dict[str, str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The table to parse and its resolved columns (canonical name -> column of the table, or None).

    An EQTransformer table is made long first; the index is reset, and
    columns pandas cannot test for missing values (``Decimal('sNaN')``) are
    made testable (on a shallow copy: the caller's frame is left as it is).
    """
    layout = layout_for(raw.columns)  # a tool's own layout (EQTransformer's wide table): made long first
    if layout is not None:
        raw = layout.open(raw, carry=explicit.values())
    found = resolve_columns(raw, role, source, explicit)
    raw = raw.reset_index(drop=True)
    copied = False
    for name in dict.fromkeys(c for c in found.values() if c is not None):
        safe = defused(raw[name])
        if safe is not None:
            if not copied:
                raw, copied = raw.copy(deep=False), True
            raw[name] = safe
    return raw, found


@dataclass
class _Parsed:
    """Every column of a table parsed, and each row's problems, before invalid rows are dropped."""

    #: ``dataset``, (``model``,) ``station``, ``phase``, per distinct value.
    texts: dict[str, Text]
    #: ``time`` (int64 ns) and, for picks, ``conf`` (float64), per row.
    numbers: dict[str, np.ndarray]
    #: Problem (a canonical column, or ``"time zone"``) -> rows that have it, in message order.
    problems: dict[str, np.ndarray]
    #: Rows whose phase is P- or S-like.
    keep: np.ndarray
    #: Rows whose time carries a non-zero UTC offset (for the time-zone hint).
    with_offset: np.ndarray
    #: Rows dropped per phase name that is not P/S-like, and the mapping of the names kept.
    dropped: dict[str, int]
    mapped: dict[str, str]


def _parse(raw: pd.DataFrame, found: dict[str, Any], role: str, station_key: str) -> _Parsed:
    """Parse every canonical column of ``raw``; a row whose phase is not P- or S-like is not validated."""
    n = len(raw)
    phase, dropped, mapped = phase_column(raw[found["phase"]])
    keep = phase.kept_rows()
    phase_ok = phase.valid_rows()
    # Rows of other phases leave first: a bulletin's PKP rows are not validated.
    considered = keep | ~phase_ok

    texts: dict[str, Text] = {}
    numbers: dict[str, np.ndarray] = {}
    problems: dict[str, np.ndarray] = {}
    for label in ("dataset", "model"):
        if label not in COLUMNS[role]:
            continue
        if found[label] is None:
            texts[label] = default_column(DEFAULTS[label], n)
        else:
            texts[label] = label_column(raw[found[label]])
            problems[label] = ~texts[label].valid_rows() & considered
    texts["station"] = station_column(raw[found["station"]], station_key)
    problems["station"] = ~texts["station"].valid_rows() & considered
    texts["phase"] = phase
    problems["phase"] = ~phase_ok
    numbers["time"], ok = parse_time(raw[found["time"]])
    problems["time"] = ~ok & considered
    naive, with_offset = time_zones(raw[found["time"]], ok & considered)
    if with_offset.any() and naive.any():
        # Mixed time zones: the values without an offset are ambiguous.
        problems["time zone"] = naive
    if role == "picks":
        numbers["conf"], ok = parse_conf(raw[found["conf"]])
        problems["conf"] = ~ok & considered
    return _Parsed(texts, numbers, problems, keep, with_offset, dropped, mapped)


def _frame(parsed: _Parsed, rows: np.ndarray, role: str, categorical: bool) -> pd.DataFrame:
    """The normalised frame of the rows kept (canonical columns of ``role``, in order)."""
    return pd.DataFrame({
        name: (parsed.texts[name].column(rows, categorical) if name in parsed.texts
               else pd.Series(_take_rows(parsed.numbers[name], rows), copy=False))
        for name in COLUMNS[role]
    }, copy=False)


#: The column of a normalised reference that holds the raw values of the column named by ``keep`` (SPEC §14).
KEPT_COLUMN = "group_value"


def kept_name(i: int) -> str:
    """The column of a normalised reference that holds the ``i``-th column ``keep`` names.

    Examples
    --------
    >>> kept_name(0), kept_name(2)
    ('group_value', 'group_value_2')
    """
    return KEPT_COLUMN if i == 0 else f"{KEPT_COLUMN}_{i}"


def _keep_column(frame: pd.DataFrame, raw: pd.DataFrame, keep: str, rows: np.ndarray, as_name: str) -> set[Any]:
    """Add ``raw[keep]``'s values of the rows kept as ``as_name`` (object); the column used, or none.

    The name is matched exactly, else ignoring case; a table without it gets no
    such column (the engine says so, naming the option).
    """
    name: Any = keep if keep in raw.columns else next(
        (c for c in raw.columns if str(c).strip().lower() == keep.strip().lower()), None)
    if name is None:
        return set()
    values = raw[name]
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    frame[as_name] = pd.Series(np.asarray(values.to_numpy(), dtype=object)[rows], copy=False)
    return {name}


def _take_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` as a new array (``values`` may be a view of the input frame).

    When every row is kept (the usual case) a copy is cheaper than a take.
    """
    return values.copy() if len(rows) == len(values) else values.take(rows)


def _model_candidates(raw: pd.DataFrame, found: dict[str, Any], role: str) -> dict[str, list[str]]:
    """Picks without a model column: unused text columns whose few values may name the model."""
    if role != "picks" or found["model"] is not None:
        return {}
    used = {c for c in found.values() if c is not None}
    candidates = dict(raw.attrs.get("unused_text_columns") or {})  # a projected Parquet file's own look
    candidates.update(unused_text_candidates([c for c in raw.columns if c not in used],
                                             lambda c: few_distinct(raw[c])))
    return candidates
