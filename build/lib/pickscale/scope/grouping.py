"""SPEC §14: groups of arrivals — the ``group_by`` option, the group labels and each arrival's group code.

A group is a property of an arrival, decided on the client from the reference
(or from a stations file joined to it):

* ``"COLUMN:E0,E1,...,EK"``: a numeric column cut at the edges (ascending):
  bins ``[e_i, e_{i+1})`` (left-closed), values below ``e0`` in ``"<e0"``, at or
  above the last edge in ``">=eK"``;
* ``"COLUMN"``: a text column, one group per distinct value (stripped), sorted;
* a missing value (empty, NaN) is the group ``"missing"``, the last group (there when some scored arrival
  has no value).

Emitted picks and extra picks have no group: nothing per group is said about precision.

Examples
--------
>>> spec = parse_group_by("magnitude:1,2,3")
>>> spec.column, spec.edges, group_labels(spec, [], with_missing=True)
('magnitude', (1.0, 2.0, 3.0), ['<1', '[1,2)', '[2,3)', '>=3', 'missing'])
>>> codes, labels = group_codes(spec, ["0.5", 2.9, None, "3", ""])
>>> codes.tolist()
[0, 2, 4, 3, 4]
>>> codes, labels = group_codes(parse_group_by("network"), ["CI", " AZ", None, "CI"])
>>> codes.tolist(), labels
([1, 0, 2, 1], ['AZ', 'CI', 'missing'])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, OptionsError
from ..io import read_raw
from ..io.fields import station_column
from ..io.normalise import KEPT_COLUMN, kept_name
from ..io.stationxml import is_station_source, read_station_xml
from .distance import DISTANCE, arrival_distances, kept_columns

__all__ = ["GroupSpec", "MISSING", "parse_group_by", "group_labels", "group_codes", "read_stations",
           "join_stations", "reference_group_codes", "GroupFacts", "group_facts", "labels_of", "codes_of",
           "group_values"]

#: The label of the group of arrivals whose value is missing.
MISSING = "missing"


@dataclass(frozen=True)
class GroupSpec:
    """A parsed ``group_by``: the column, and the bin edges of a numeric column (``None``: a text column)."""

    column: str
    edges: tuple[float, ...] | None = None

    @property
    def is_distance(self) -> bool:
        """Whether the groups are of the epicentral distance computed per arrival (:mod:`.distance`)."""
        return self.column.strip().lower() == DISTANCE

    @property
    def columns(self) -> tuple[str, ...]:
        """The reference columns the reader keeps for these groups: the column, or what a distance is made of
        (:func:`pickscale.scope.distance.kept_columns`: a ``distance`` column first, used as it is if there)."""
        return kept_columns() if self.is_distance else (self.column,)

    def __str__(self) -> str:
        if self.edges is None:
            return self.column
        return f"{self.column}:{','.join(_num(e) for e in self.edges)}"


def _num(x: float) -> str:
    return f"{x:g}"


def parse_group_by(spec: Any) -> GroupSpec:
    """``"COLUMN"`` or ``"COLUMN:E0,E1,..."`` (edges finite, strictly ascending) as a :class:`GroupSpec`.

    Examples
    --------
    >>> str(parse_group_by(" magnitude : 0, 1.5 ,3 "))
    'magnitude:0,1.5,3'
    >>> parse_group_by("magnitude:2,1")
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: group_by 'magnitude:2,1': the edges must be finite numbers in strictly ascending ...
    """
    if isinstance(spec, GroupSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise OptionsError(f"group_by must be a column name, or COLUMN:E0,E1,... (bin edges); got {spec!r}.",
                           options=("group_by",))
    column, sep, rest = spec.partition(":")
    column = column.strip()
    if not column:
        raise OptionsError(f"group_by {spec!r}: the column name is empty.", options=("group_by",))
    if not sep:
        if column.lower() == DISTANCE:
            raise OptionsError(f"group_by {spec!r}: distance groups need bin edges in km, e.g. distance:0,20,50,100.",
                               options=("group_by",))
        return GroupSpec(column)
    try:
        edges = tuple(float(e) for e in rest.split(","))
    except ValueError:
        raise OptionsError(f"group_by {spec!r}: the bin edges must be numbers separated by commas "
                           "(e.g. magnitude:0,1,2,3).", options=("group_by",)) from None
    if not edges or not all(math.isfinite(e) for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise OptionsError(f"group_by {spec!r}: the edges must be finite numbers in strictly ascending order.",
                           options=("group_by",))
    return GroupSpec(column, edges)


def group_labels(spec: GroupSpec, values: Sequence[str], *, with_missing: bool) -> list[str]:
    """The labels of the groups: bins of a numeric column, else the sorted distinct ``values``; then ``missing``
    when ``with_missing``.

    Examples
    --------
    >>> group_labels(parse_group_by("x:0"), [], with_missing=False), group_labels(parse_group_by("net"), ["b", "a"],
    ...                                                                          with_missing=False)
    (['<0', '>=0'], ['a', 'b'])
    """
    tail = [MISSING] if with_missing else []
    if spec.edges is None:
        return [*sorted(set(values) - {MISSING}), *tail]
    e = [_num(x) for x in spec.edges]
    return [f"<{e[0]}", *(f"[{a},{b})" for a, b in zip(e, e[1:])), f">={e[-1]}", *tail]


def _missing(values: np.ndarray) -> np.ndarray:
    text = pd.Series(values, dtype=object)
    return (text.isna() | text.map(lambda v: isinstance(v, str) and not v.strip())).to_numpy(bool)


@dataclass
class GroupFacts:
    """What the groups' labels are decided from, for some rows (additive: :meth:`merged`): the distinct values of
    a text column (stripped), whether a value is missing, and the values of a numeric column that are no
    number (how many, and the first five with their row numbers)."""

    distinct: frozenset[str]
    missing: bool
    n_bad: int
    bad: tuple[tuple[int, str], ...]

    @classmethod
    def merged(cls, facts: Sequence[GroupFacts]) -> GroupFacts:
        bad = tuple(sorted((b for f in facts for b in f.bad), key=lambda b: b[0])[:5])
        return cls(frozenset().union(*(f.distinct for f in facts)), any(f.missing for f in facts),
                   sum(f.n_bad for f in facts), bad)


def group_facts(spec: GroupSpec, values: Any, rows: np.ndarray | None = None) -> GroupFacts:
    """:class:`GroupFacts` of ``values`` (one per row; ``rows``: their row numbers, 0, 1, … by default)."""
    values = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
    rows = np.arange(values.size) if rows is None else np.asarray(rows, dtype=np.int64)
    missing = _missing(values)
    if spec.edges is None:
        text = {str(v).strip() for v in values[~missing].tolist()}
        return GroupFacts(frozenset(text), bool(missing.any()), 0, ())
    numbers = pd.to_numeric(pd.Series(values[~missing], dtype=object), errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(~missing)[~np.isfinite(numbers)]
    return GroupFacts(frozenset(), bool(missing.any()), int(bad.size),
                      tuple((int(rows[r]), repr(values[r])) for r in bad[:5]))


def labels_of(spec: GroupSpec, facts: GroupFacts, *, where: str = "the reference") -> list[str]:
    """The labels of the groups (:func:`group_labels`) from the facts of every row; a value of a numeric column
    that is not a number is an input error naming the column and the first values."""
    if spec.edges is None:
        return group_labels(spec, sorted(facts.distinct), with_missing=facts.missing or MISSING in facts.distinct)
    if facts.n_bad:
        shown = ", ".join(value for _, value in facts.bad)
        raise InputError(f"{where}: column {spec.column!r} (group_by {str(spec)!r}) must hold numbers; "
                         f"{facts.n_bad} value(s) are not ({shown}).")
    return group_labels(spec, [], with_missing=facts.missing)


def codes_of(spec: GroupSpec, values: Any, labels: Sequence[str]) -> np.ndarray:
    """Each value's group code (int32, an index into ``labels``: :func:`labels_of` of these values and others)."""
    values = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
    missing = _missing(values)
    codes = np.full(values.size, len(labels) - 1, dtype=np.int32)
    if spec.edges is None:
        text = np.array([str(v).strip() for v in values[~missing]], dtype=object)
        codes[~missing] = pd.Index(list(labels), dtype=object).get_indexer(text)
        return codes
    numbers = pd.to_numeric(pd.Series(values[~missing], dtype=object), errors="coerce").to_numpy(np.float64)
    # searchsorted right: value < e0 -> 0 ("<e0"), e_i <= value < e_{i+1} -> i + 1, value >= e_last -> K.
    codes[~missing] = np.searchsorted(np.asarray(spec.edges), numbers, side="right").astype(np.int32)
    return codes


def group_codes(spec: GroupSpec, values: Any, *, where: str = "the reference") -> tuple[np.ndarray, list[str]]:
    """Each value's group code (int32, an index into the labels) and the labels (:func:`group_labels`).

    A value of a numeric column that is not a number is an input error naming the column and rows.
    """
    labels = labels_of(spec, group_facts(spec, values), where=where)
    return codes_of(spec, values, labels), labels


def read_stations(source: Any, *, station_key: str = "as-is") -> pd.DataFrame:
    """A stations table (CSV/Parquet path or DataFrame): ``station`` (normalised as the inputs' stations),
    optionally ``dataset``, and attribute columns (``instrument``, ``site_class``, ``latitude`` …); or FDSN
    StationXML (a path, or an ObsPy ``Inventory``): ``station`` = ``NET.STA``, ``latitude``, ``longitude``.

    Each (dataset, station) once; the station names as SPEC §1 normalises them.
    """
    if is_station_source(source):  # FDSN StationXML or an ObsPy Inventory: NET.STA with its coordinates
        source = read_station_xml(source)
    if isinstance(source, pd.DataFrame):
        frame, where = source.copy(), "the stations DataFrame"
    else:
        where = str(source)
        try:
            frame = read_raw(str(source), role="reference")
        except InputError:
            raise
        except (OSError, ValueError) as exc:
            raise InputError(f"{where}: cannot be read as a stations table ({exc}).") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    lower = {c.lower(): c for c in frame.columns}
    if "station" not in lower:
        raise InputError(f"{where}: the stations table needs a 'station' column; found {', '.join(frame.columns)}.")
    frame = frame.rename(columns={lower["station"]: "station", **({lower["dataset"]: "dataset"}
                                                                  if "dataset" in lower else {})})
    text = station_column(frame["station"].reset_index(drop=True), station_key)  # as SPEC §1 for the inputs
    bad = ~text.valid_rows()
    if bad.any():
        rows = np.flatnonzero(bad)
        shown = ", ".join(str(r + 2) for r in rows[:5])
        raise InputError(f"{where}: {rows.size} row(s) without a valid station (rows {shown}, counting the "
                         "header as row 1).")
    frame = frame.reset_index(drop=True)
    frame["station"] = text.column(np.arange(len(frame)), False)
    keys = ["dataset", "station"] if "dataset" in frame else ["station"]
    twice = frame.duplicated(keys, keep=False).to_numpy(bool)
    if twice.any():
        shown = ", ".join(sorted({str(s) for s in frame.loc[twice, "station"]})[:5])
        raise InputError(f"{where}: {int(twice.sum())} rows name a station more than once ({shown}).")
    frame.attrs["pickscale_source"] = where
    return frame.reset_index(drop=True)


def join_stations(reference: pd.DataFrame, stations: pd.DataFrame, column: str) -> np.ndarray:
    """Per reference row, the station attribute ``column`` (object; missing where the station is not listed).

    Joined by (dataset, station) when the stations table has ``dataset``, else by station.
    """
    where = stations.attrs.get("pickscale_source", "the stations table")
    lower = {c.lower(): c for c in stations.columns}
    name = column if column in stations.columns else lower.get(column.strip().lower())
    if name is None:
        raise OptionsError(f"group_by {column!r}: neither the reference nor {where} has that column "
                           f"(the stations table has {', '.join(stations.columns)}).", options=("group_by",))
    keys = ["dataset", "station"] if "dataset" in stations else ["station"]
    left = pd.DataFrame({k: reference[k].astype(object).to_numpy() for k in keys})
    right = stations[keys + [name]].rename(columns={name: "__value"}).astype({k: object for k in keys})
    joined = left.merge(right, on=keys, how="left", sort=False)
    return joined["__value"].to_numpy(object)


def group_values(reference: pd.DataFrame, spec: GroupSpec, *, stations: pd.DataFrame | None = None,
                 found_columns: Sequence[str] = ()) -> np.ndarray:
    """Each reference row's value of the groups' column: the reference's kept column, else the distance computed
    per arrival, else the stations table's column (object; missing where there is none)."""
    if KEPT_COLUMN in reference:
        return reference[KEPT_COLUMN].to_numpy(object)
    if spec.is_distance:  # SPEC §14, "Epicentral distance": computed per arrival, in km
        where = {name: kept_name(i) for i, name in enumerate(spec.columns)}

        def kept(name: str) -> np.ndarray | None:
            return reference[where[name]].to_numpy(object) if where[name] in reference else None

        def from_table() -> tuple[np.ndarray, np.ndarray] | None:
            if stations is None:
                return None
            return join_stations(reference, stations, "latitude"), join_stations(reference, stations, "longitude")

        return arrival_distances(kept, len(reference), from_table)
    if stations is not None:
        return join_stations(reference, stations, spec.column)
    shown = ", ".join(str(c) for c in found_columns) or "none"
    raise OptionsError(f"group_by {str(spec)!r}: the reference has no column {spec.column!r} (its other "
                       f"columns: {shown}); name a reference column, or give a stations table with it "
                       "(stations).", options=("group_by", "stations"))


def reference_group_codes(reference: pd.DataFrame, spec: GroupSpec, *, stations: pd.DataFrame | None = None,
                          found_columns: Sequence[str] = ()) -> tuple[np.ndarray, list[str]]:
    """Each scored arrival's group code, and the labels: from the reference's kept column, else the stations table.

    ``reference`` is the scope's reference (its ``group_value`` column holds the
    raw values of ``spec.column`` when the reference has it).
    """
    return group_codes(spec, group_values(reference, spec, stations=stations, found_columns=found_columns))
