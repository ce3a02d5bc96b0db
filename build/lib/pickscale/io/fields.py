"""SPEC §1's rules for the values of every column but time: station, phase, dataset and model names, conf.

Each ``parse_*`` function takes a column and returns the values and a
"valid" mask; the ``*_column`` functions apply the text rules per distinct
value (:mod:`pickscale.io.text`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import OptionsError
from .text import Text, as_text, distinct_values, quote, row_counts, to_object

__all__ = ["STATION_KEYS", "parse_station", "station_key_of", "map_phase", "parse_phase", "parse_label",
           "parse_conf", "station_column", "phase_column", "label_column", "default_column"]


#: How stations are compared (SPEC §1): as written, or reduced to ``NET.STA`` on both sides.
STATION_KEYS = ("as-is", "net.sta")


def parse_station(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Station strings stripped of surrounding white space and trailing dots.

    Returns ``(values, valid)``: an object array of ``str`` and a mask that is
    False for empty or missing stations.

    Examples
    --------
    >>> v, ok = parse_station(pd.Series([" CI.CLC. ", "", "X.."]))
    >>> v.tolist(), ok.tolist()
    (['CI.CLC', '', 'X'], [True, False, True])
    """
    text, missing = as_text(col)
    # strip -> rstrip('.') -> strip keeps the operation idempotent ("CLC . " -> "CLC").
    text = text.str.rstrip(".").str.strip().fillna("")
    valid = ~missing & (text != "").to_numpy(dtype=bool)
    return to_object(text), valid


def station_key_of(values: np.ndarray, station_key: str = "as-is") -> np.ndarray:
    """Normalised station strings reduced as ``station_key`` says (per distinct value).

    ``"as-is"``: unchanged; ``"net.sta"``: ``NET.STA[.LOC[.CHA]]`` -> ``NET.STA``
    (a bare ``STA`` stays as it is), so that PhaseNet's ``CI.CLC..HH``, a
    SeisBench ``CI.CLC.00`` and a bulletin's ``CI.CLC`` are one station.

    Examples
    --------
    >>> station_key_of(np.array(["CI.CLC..HH", "CI.CLC.00", "CLC", "CI.CLC"], dtype=object), "net.sta").tolist()
    ['CI.CLC', 'CI.CLC', 'CLC', 'CI.CLC']
    """
    if station_key == "as-is":
        return values
    if station_key != "net.sta":
        raise OptionsError(f"station_key must be one of {', '.join(STATION_KEYS)}, not {quote(station_key)}.")
    out = [".".join(str(v).split(".")[:2]).rstrip(".").strip() if isinstance(v, str) else v for v in values]
    return np.array(out, dtype=object)


def station_column(col: pd.Series, station_key: str = "as-is") -> Text:
    """A station column per distinct value (see :func:`parse_station` and :func:`station_key_of`)."""
    codes, distinct = distinct_values(col)
    values, valid = parse_station(distinct)
    if station_key != "as-is":
        values = station_key_of(values, station_key)
        valid = valid & np.array([v != "" for v in values], dtype=bool)
    return Text(codes, values, valid, np.ones(len(values), dtype=bool))


_P_NAMES = frozenset({"P", "Pg", "Pn", "Pb", "P*"})
_S_NAMES = frozenset({"S", "Sg", "Sn", "Sb", "S*"})


def map_phase(name: str) -> str | None:
    """SPEC §1 phase mapping for one (already stripped) name; ``None`` = dropped.

    Case-sensitive: ``pP``/``sS`` are depth phases and ``p``/``s`` are not
    ``P``/``S``.  ``P*``/``S*`` are the literal phase names (Conrad phases).

    Examples
    --------
    >>> [map_phase(x) for x in ["P", "Pg", "Sn", "P*", "pP", "p", "PKP"]]
    ['P', 'P', 'S', 'P', None, None, None]
    """
    if name in _P_NAMES:
        return "P"
    if name in _S_NAMES:
        return "S"
    return None


def parse_phase(col: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int],
                                           dict[str, str]]:
    """Map phase names to ``P``/``S`` over unique values.

    Returns ``(phase, valid, keep, counts_dropped, mapped)``: ``phase`` object
    array (``None`` where not P/S-like), ``valid`` False for empty phases,
    ``keep`` True for P/S-like phases, counts of dropped rows per original
    (stripped) name, and the mapping used for the names kept.

    Examples
    --------
    >>> phase, ok, keep, dropped, used = parse_phase(pd.Series(["Pg", " PKP", None, "PKP"]))
    >>> phase.tolist(), ok.tolist(), keep.tolist(), dropped, used
    (['P', None, None, None], [True, True, False, True], [True, False, False, False], {'PKP': 2}, {'Pg': 'P'})
    """
    phase, dropped, used = phase_column(col)
    values = np.append(phase.values, np.array([None], dtype=object)).take(phase.codes)  # -1: the trailing None
    return values, phase.valid_rows(), phase.kept_rows(), dropped, used


def phase_column(col: pd.Series) -> tuple[Text, dict[str, int], dict[str, str]]:
    """A phase column per distinct value, and what :func:`parse_phase` reports.

    Returns ``(phase, dropped, used)``: ``phase.values`` holds ``"P"``/``"S"``
    (``None`` where not P/S-like), ``phase.valid`` is False for empty phases
    and ``phase.keep`` True for P/S-like ones; ``dropped`` counts the rows of
    each (stripped) name not P/S-like, ``used`` maps each name kept (on at
    least one row) to ``"P"``/``"S"``.  Distinct raw values with the same
    stripped name (``" Sn "``, ``"Sn"``) add up under that name.
    """
    codes, distinct = distinct_values(col)
    text, missing = as_text(distinct)
    names = to_object(text.fillna(""))
    # Vectorised over the distinct names (a file may hold a million distinct unknown phases): no Python
    # work per name except for the few kept and the dict of the dropped ones.
    index = pd.Index(names, dtype=object)
    is_p, is_s = index.isin(_P_NAMES), index.isin(_S_NAMES)
    mapped = np.full(len(names), None, dtype=object)
    mapped[is_p], mapped[is_s] = "P", "S"
    keep = np.asarray(is_p | is_s, dtype=bool)
    valid = ~np.asarray(missing, dtype=bool)
    rows_of = row_counts(codes, len(names))
    drop = np.flatnonzero(valid & ~keep & (rows_of > 0))
    dropped: dict[str, int] = {}
    if drop.size:
        names_dropped, rows_dropped = index[drop], rows_of[drop]
        if not names_dropped.is_unique:
            # Distinct raw values with the same stripped name add up under it (first-seen order).
            summed = pd.Series(rows_dropped, index=names_dropped).groupby(level=0, sort=False).sum()
            names_dropped, rows_dropped = summed.index, summed.to_numpy()
        dropped = dict(zip(map(str, names_dropped.tolist()), np.asarray(rows_dropped, dtype=np.int64).tolist()))
    used = {str(names[i]): str(mapped[i]) for i in np.flatnonzero(keep & (rows_of > 0))}
    return Text(codes, mapped, valid, keep), dropped, used


def parse_label(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A dataset or model name: stripped string; empty or missing is invalid."""
    text, missing = as_text(col)
    text = text.fillna("")
    return to_object(text), ~missing


def label_column(col: pd.Series) -> Text:
    """A dataset or model column per distinct value (see :func:`parse_label`)."""
    codes, distinct = distinct_values(col)
    values, valid = parse_label(distinct)
    return Text(codes, values, valid, np.ones(len(values), dtype=bool))


def default_column(value: str, n: int) -> Text:
    """An absent optional column: ``value`` on every row."""
    one = np.ones(1, dtype=bool)
    return Text(np.zeros(n, dtype=np.int8), np.array([value], dtype=object), one, one)


def parse_conf(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Confidence as float64 and a mask: valid = finite and within [0, 1]."""
    if col.dtype.kind in "iuf":
        conf = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text, _ = as_text(col)
        conf = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    valid = np.isfinite(conf) & (conf >= 0.0) & (conf <= 1.0)
    return conf, valid
