"""Reproducibility of a pick set (SPEC §18): two pick sets of one model compared per station-day.

:func:`compare` reads two pick sets (anything pickscale reads as picks: CSV or Parquet files, folders,
globs, EQTransformer tables, pandas frames, SeisBench pick lists), normalises both as SPEC §1 says, matches
them one to one with :func:`pickscale.metrics.reproducibility.match` and returns one row per
(dataset, model, station, phase, day) that either side has picks in.  :func:`describe` says in a few lines
where they differ (what ``pickscale compare`` prints).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

from .errors import InputError, OptionsError, PickscaleError, emit_warnings

if TYPE_CHECKING:  # numpy and pandas are imported on use: `import pickscale` stays light (it exports compare)
    import pandas as pd

__all__ = ["compare", "describe", "check_tol", "KEYS", "COLUMNS", "MAX_TOL_S"]

#: The key columns of the comparison table, in sort order.
KEYS = ("dataset", "model", "station", "phase", "day")
#: Every column of the comparison table (the counts: :data:`pickscale.metrics.reproducibility.COUNT_NAMES`).
COLUMNS = (*KEYS, "n_a", "n_b", "matched", "only_a", "only_b", "max_dconf", "max_dt")
#: Largest ``tol`` in seconds: picks of one phase at one station further apart than this are picks of
#: different arrivals, and the pairs to rank grow with the picks within ``tol`` of one another.
MAX_TOL_S = 10.0

_DAY_NS = 86_400 * 10**9
_TEXT = ("dataset", "model", "station", "phase")


def check_tol(tol: Any) -> float:
    """``tol`` as a float in seconds, or an :class:`~pickscale.errors.OptionsError` naming it.

    Examples
    --------
    >>> check_tol("0.05")
    0.05
    >>> check_tol(-1)
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: tol must be a number of seconds in [0, 10]; got -1.
    """
    try:
        value = float(tol)
    except (TypeError, ValueError):
        raise OptionsError(f"tol must be a number of seconds in [0, 10]; got {tol!r}.", options=("tol",)) from None
    if not (math.isfinite(value) and 0 <= value <= MAX_TOL_S):
        raise OptionsError(f"tol must be a number of seconds in [0, 10]; got {tol!r}.", options=("tol",))
    return value


def _is_paths(source: Any) -> bool:
    if isinstance(source, (str, os.PathLike)):
        return True
    return (isinstance(source, (list, tuple)) and len(source) > 0
            and all(isinstance(s, (str, os.PathLike)) for s in source))


def _read(source: Any, *, label: str, drop_invalid: bool, station_key: str,
          columns: Any) -> tuple[pd.DataFrame, list[str]]:
    """One pick set as SPEC §1's normalised frame, and the lines of what normalising it dropped."""
    import pandas as pd

    # lazy: `import pickscale` (so `pickscale --help`, and a worker) imports this module; io/ brings pandas
    from .io import Normalised, normalise, read_raw, resolve_sources
    from .io.formats import as_frame

    reading: dict[str, Any] = {"role": "picks", "drop_invalid": drop_invalid, "station_key": station_key,
                               "columns": columns}
    try:
        if isinstance(source, pd.DataFrame):
            parts = [normalise(source.reset_index(drop=True), source="the DataFrame", **reading)]
        elif _is_paths(source):
            parts = [normalise(read_raw(path, role="picks"), source=path, **reading)
                     for path in resolve_sources(source)]
        else:
            raw = as_frame(source, role="picks")
            if raw is None:
                raise InputError(f"cannot read picks from a {type(source).__name__}: give a CSV or Parquet path, "
                                 "a folder, a glob, a pandas DataFrame or SeisBench picks.")
            parts = [normalise(raw, source=str(raw.attrs.get("pickscale_description", "the picks")), **reading)]
    except PickscaleError as exc:
        # Which side: both sets are picks, and a message about "picks.csv" alone may not say which one.
        kind = type(exc) if type(exc) in (InputError, OptionsError) else InputError
        raise kind(f"pick set {label}: {exc}", options=exc.options) from None
    combined = Normalised.combine(parts)
    return combined.frame, [f"pick set {label}: {line}" for line in combined.warnings()]


def compare(a: Any, b: Any, *, tol: float = 0.1, station_key: str = "as-is", columns: Any = None,
            drop_invalid: bool = False) -> pd.DataFrame:
    """Compare two pick sets of one model (production against a rerun) per station-day (SPEC §18).

    Parameters
    ----------
    a, b
        The two pick sets: a CSV or Parquet file, a folder, a glob or a list of them, a pandas DataFrame, or
        SeisBench picks, read and normalised as SPEC §1 says (any conf, no floor).
    tol
        Seconds (inclusive, in ``[0, 10]``, default 0.1) within which a pick of A and a pick of B of the same
        dataset, model, station, phase and UTC day can be the same pick.
    station_key, columns, drop_invalid
        As in :func:`pickscale.score`, for both sets.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, model, station, phase, day) with a pick in A or B, sorted by those keys
        (code-point order; ``day`` is the UTC date ``YYYY-MM-DD``): ``n_a``, ``n_b``, ``matched``,
        ``only_a``, ``only_b``, ``max_dconf`` (largest ``|conf_a − conf_b|`` of a matched pair) and
        ``max_dt`` (largest ``|time_a − time_b|`` of a matched pair, seconds), both NaN without a matched
        pair.  ``attrs["summary"]`` holds the totals (:func:`describe` says them), ``attrs["warnings"]`` what
        reading dropped (also issued as :class:`~pickscale.PickscaleWarning`).

    Raises
    ------
    InputError
        A set cannot be read (a missing file, a missing column, invalid rows without ``drop_invalid`` …; the
        message names the set), or neither set has a P or S pick.
    OptionsError
        ``tol`` is not a number of seconds in [0, 10].

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"station": ["CI.CLC", "CI.CLC", "CI.SRT"], "phase": ["P", "S", "P"],
    ...                   "time": ["2020-01-01T10:00:00Z", "2020-01-01T10:00:05Z", "2020-01-02T03:00:00Z"],
    ...                   "conf": [0.9, 0.6, 0.7]})
    >>> b = a.assign(conf=[0.9, 0.55, 0.7])
    >>> b.loc[2, "time"] = "2020-01-02T03:00:00.5Z"  # 0.5 s later: beyond tol
    >>> table = compare(a, b, tol=0.1)
    >>> print(table.to_string())  # doctest: +NORMALIZE_WHITESPACE
      dataset  model station phase         day  n_a  n_b  matched  only_a  only_b  max_dconf  max_dt
    0     all  model  CI.CLC     P  2020-01-01    1    1        1       0       0       0.00     0.0
    1     all  model  CI.CLC     S  2020-01-01    1    1        1       0       0       0.05     0.0
    2     all  model  CI.SRT     P  2020-01-02    1    1        0       1       1        NaN     NaN
    >>> print("\\n".join(describe(table)))
    2 of 3 station-day(s) differ (tol 0.1 s): 1 pick(s) only in A, 1 only in B, of 3 in A and 3 in B
      most only in A: all model CI.SRT P 2020-01-02 (1)
      most only in B: all model CI.SRT P 2020-01-02 (1)
      largest conf difference: all model CI.CLC S 2020-01-01 (0.050)
    """
    tol = check_tol(tol)
    tol_ns = int(round(tol * 1e9))  # rounded, not truncated: 0.3 s is 299999999.99999994 ns in float64
    fa, notes_a = _read(a, label="A", drop_invalid=drop_invalid, station_key=station_key, columns=columns)
    fb, notes_b = _read(b, label="B", drop_invalid=drop_invalid, station_key=station_key, columns=columns)
    if len(fa) == 0 and len(fb) == 0:
        raise InputError("neither pick set has a P or S pick: nothing to compare.")
    notes = [*notes_a, *notes_b]
    table = _table(fa, fb, tol_ns)
    table.attrs["summary"] = _summary(table, fa, fb, tol)
    table.attrs["warnings"] = notes
    emit_warnings(notes)
    return table


def _table(fa: pd.DataFrame, fb: pd.DataFrame, tol_ns: int) -> pd.DataFrame:
    """Group codes of both sets in key order, the kernel's counts, the table."""
    import numpy as np
    import pandas as pd

    from .metrics.reproducibility import compare_counts  # lazy: `import pickscale` imports this module
    day_a = np.asarray(fa["time"], dtype=np.int64) // _DAY_NS  # floor division: a day before 1970 too
    day_b = np.asarray(fb["time"], dtype=np.int64) // _DAY_NS
    keys = pd.DataFrame({k: np.concatenate([fa[k].astype(object).to_numpy(), fb[k].astype(object).to_numpy()])
                         for k in _TEXT})
    keys["day"] = np.concatenate([day_a, day_b])
    codes, uniques = pd.MultiIndex.from_frame(keys).factorize()
    tuples = list(uniques)
    # Python's comparison of str is code-point order (SPEC §8's row order); the day as its integer is
    # chronological, as its date string is.
    order = sorted(range(len(tuples)), key=lambda i: tuples[i])
    position = np.empty(len(tuples), dtype=np.int64)
    position[np.asarray(order, dtype=np.int64)] = np.arange(len(tuples), dtype=np.int64)
    group = position[np.asarray(codes, dtype=np.int64)]
    n = len(fa)
    counts = compare_counts(len(tuples), group[:n], fa["time"].to_numpy(np.int64), fa["conf"].to_numpy(np.float64),
                            group[n:], fb["time"].to_numpy(np.int64), fb["conf"].to_numpy(np.float64),
                            tol_ns=tol_ns)
    ordered = [tuples[i] for i in order]
    out: dict[str, Any] = {k: np.array([t[j] for t in ordered], dtype=object) for j, k in enumerate(_TEXT)}
    days = np.array([t[4] for t in ordered], dtype=np.int64).astype("datetime64[D]")
    out["day"] = np.datetime_as_string(days, unit="D").astype(object)
    out.update(counts)
    return pd.DataFrame(out, columns=list(COLUMNS))


def _differs(table: pd.DataFrame) -> pd.Series:
    # A matched pair that moved or changed confidence is a difference too: "identical" means every pick of A
    # has a partner in B at the same nanosecond with the same confidence.
    return ((table["only_a"] > 0) | (table["only_b"] > 0) | (table["max_dconf"].fillna(0) > 0)
            | (table["max_dt"].fillna(0) > 0))


def _largest(table: pd.DataFrame, column: str) -> dict[str, Any] | None:
    """The first row (in key order) holding the largest value of ``column``, if it is above 0."""
    import numpy as np

    values = table[column].to_numpy(np.float64)
    if not (values > 0).any():  # NaN compares False
        return None
    row = int(np.nanargmax(values))  # the first of equal maxima: the first in key order
    value = table[column].iat[row]
    return {"where": [str(table[k].iat[row]) for k in KEYS],
            "value": int(value) if column.startswith("only") else float(value)}


def _summary(table: pd.DataFrame, fa: pd.DataFrame, fb: pd.DataFrame, tol: float) -> dict[str, Any]:
    pairs_a = set(zip(fa["dataset"].astype(object), fa["model"].astype(object)))
    pairs_b = set(zip(fb["dataset"].astype(object), fb["model"].astype(object)))
    differs = _differs(table)
    return {
        "tol": tol,
        "station_days": len(table),
        "differ": int(differs.sum()),
        "identical": not bool(differs.any()),
        "n_a": int(table["n_a"].sum()),
        "n_b": int(table["n_b"].sum()),
        "matched": int(table["matched"].sum()),
        "only_a": int(table["only_a"].sum()),
        "only_b": int(table["only_b"].sum()),
        "max_dconf": float(table["max_dconf"].max()) if table["matched"].any() else math.nan,
        "max_dt": float(table["max_dt"].max()) if table["matched"].any() else math.nan,
        "largest": {c: _largest(table, c) for c in ("only_a", "only_b", "max_dconf", "max_dt")},
        "models_only_a": sorted([d, m] for d, m in pairs_a - pairs_b),
        "models_only_b": sorted([d, m] for d, m in pairs_b - pairs_a),
    }


_LARGEST = {"only_a": "most only in A", "only_b": "most only in B", "max_dconf": "largest conf difference",
            "max_dt": "largest time difference"}


def describe(table: pd.DataFrame) -> list[str]:
    """A few lines saying whether two pick sets differ and where (``attrs["summary"]`` of :func:`compare`).

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"], "time": [10.0, 20.0], "conf": [0.5, 0.9]})
    >>> describe(compare(a, a.iloc[::-1]))
    ['identical: 2 pick(s) in 1 station-day(s), every pick of A at the same time with the same conf in B (tol 0.1 s)']
    """
    s = table.attrs["summary"]
    lines: list[str] = []
    if s["identical"]:
        lines.append(f"identical: {s['n_a']:,} pick(s) in {s['station_days']:,} station-day(s), every pick of A at "
                     f"the same time with the same conf in B (tol {s['tol']:g} s)")
    else:
        lines.append(f"{s['differ']:,} of {s['station_days']:,} station-day(s) differ (tol {s['tol']:g} s): "
                     f"{s['only_a']:,} pick(s) only in A, {s['only_b']:,} only in B, of {s['n_a']:,} in A and "
                     f"{s['n_b']:,} in B")
        for column, what in _LARGEST.items():
            found = s["largest"][column]
            if found is None:
                continue
            value = found["value"]
            shown = f"{value:,}" if isinstance(value, int) else f"{value:.3f}" + (" s" if column == "max_dt" else "")
            lines.append(f"  {what}: {' '.join(found['where'])} ({shown})")
    for side, other, key in (("A", "B", "models_only_a"), ("B", "A", "models_only_b")):
        if s[key]:
            names = ", ".join(f"{d}/{m}" for d, m in s[key][:5]) + (" …" if len(s[key]) > 5 else "")
            lines.append(f"  dataset/model only in {side}, so every pick of it is only in {side}: {names} "
                         f"(picks compare only within the same dataset and model: are they named alike in {other}?)")
    return lines

