"""Time bins (SPEC §10): the bin edges of a run, and the bin of a time.

A time bin is given as a pandas offset alias (``"1h"``, ``"1D"``, ``"7D"``,
``"MS"`` for calendar months, ``"W-MON"``, ``"YS"`` …).  Its edges do not
depend on the data, only on where the data lies: a fixed-length bin (hours,
days, 7 days …) is anchored at 1970-01-01T00:00:00Z, a calendar bin (months,
weeks, years) at the calendar's own points (the first of each month …).  So
the bins of two runs over two stretches of time are the same bins wherever
they overlap, and the edges of a whole run are the union of its parts'
(filled in between): what :func:`pickscale.extend` relies on.

The edges are computed once, on the client (:func:`bin_edges`), and passed to
the kernel as int64 ns; the kernel finds a time's bin with ``searchsorted``
(:func:`bin_index`), whatever the partitioning.

Examples
--------
>>> day = 86_400 * 10**9
>>> bin_edges(day + 5, 3 * day - 1, "1D").tolist() == [day, 2 * day, 3 * day]
True
>>> bin_index(np.array([day, 2 * day - 1, 2 * day]), np.array([day, 2 * day, 3 * day])).tolist()
[0, 0, 1]
>>> [str(t.date()) for t in bin_starts(bin_edges(pd.Timestamp("2024-01-20").value, pd.Timestamp("2024-03-02").value,
...                                               "MS"))]
['2024-01-01', '2024-02-01', '2024-03-01']

Numpy and pandas only: the workers import this module.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import OptionsError

__all__ = ["MAX_BINS", "check_time_bin", "count_bins", "bin_edges", "bin_index", "bin_starts", "iso_utc",
           "scored_edges", "stretched_span"]

#: The most time bins a run may have (SPEC §10).  The workers keep a station's counts only for the bins it
#: occupies (issue 22), but the results Dataset holds them dense (3 counts × models × phases × bins × stations),
#: so the bins multiply the memory of the result.  A real study stays far below:
#: 100,000 bins are 11 years of hourly bins, 69 days of one-minute bins, 274 years of days; a span that needs
#: more is one stray row (a pick dated 1800, times in the wrong epoch unit) or a bin too short for the span.
MAX_BINS = 100_000


def _offset(freq: str):
    from pandas.tseries.frequencies import to_offset

    if not isinstance(freq, str) or not freq.strip():
        raise OptionsError(f"time_bin must be a pandas offset alias such as '1D', '7D' or 'MS'; got {freq!r}.",
                           options=("time_bin",))
    try:
        return to_offset(freq.strip())
    except (TypeError, ValueError) as exc:
        raise OptionsError(f"time_bin {freq!r} is not a pandas offset alias ({exc}); use e.g. '1h', '1D', '7D' "
                           "or 'MS' (calendar months).", options=("time_bin",)) from None


def _step_ns(offset) -> int | None:
    """The length in ns of a fixed-length offset; None for a calendar offset."""
    try:
        return int(pd.Timedelta(offset).value)
    except (TypeError, ValueError):
        return None


def check_time_bin(freq: str) -> str:
    """``freq`` checked: a fixed length > 0, or a calendar offset of one unit (``MS``, not ``2MS``).

    A calendar offset of several units would need an anchor of its own (which
    two months?), so it is refused; a fixed-length one is anchored at the epoch.

    Examples
    --------
    >>> check_time_bin(" 7D ")
    '7D'
    >>> check_time_bin("2MS")
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: time_bin '2MS': a calendar bin must be one unit long (e.g. 'MS', ...
    """
    offset = _offset(freq)
    step = _step_ns(offset)
    if step is not None:
        if step <= 0:
            raise OptionsError(f"time_bin {freq!r} must be longer than 0.", options=("time_bin",))
    elif offset.n != 1:
        raise OptionsError(f"time_bin {freq!r}: a calendar bin must be one unit long (e.g. 'MS', 'W-MON', 'YS'); "
                           "use a fixed length such as '14D' for longer bins.", options=("time_bin",))
    return freq.strip()


def count_bins(lo: int, hi: int, freq: str) -> int:
    """How many bins of ``freq`` cover ``[lo, hi]`` (int64 ns), computed without building them.

    Exact for a fixed length; for a calendar offset an upper bound from the span and the offset's shortest
    step (months: 28 days), exact when that bound is near :data:`MAX_BINS`.

    Examples
    --------
    >>> day = 86_400 * 10**9
    >>> count_bins(day + 5, 3 * day - 1, "1D"), count_bins(0, 366 * day, "1s")
    (2, 31622401)
    >>> count_bins(pd.Timestamp("2024-01-20").value, pd.Timestamp("2024-03-02").value, "MS")
    3
    """
    offset = _offset(freq)
    lo, hi = sorted((int(lo), int(hi)))
    step = _step_ns(offset)
    if step is not None:
        return int((hi - (lo // step) * step) // step + 1)
    start = offset.rollback(pd.Timestamp(lo, tz="UTC").normalize())
    shortest, t = None, start
    for _ in range(8):
        nxt = t + offset
        shortest = (nxt - t).value if shortest is None else min(shortest, (nxt - t).value)
        t = nxt
    estimate = int((hi - start.value) // max(int(shortest or 1), 1) + 2)
    if estimate > 4 * MAX_BINS:
        return estimate
    return int(_calendar_edges(offset, lo, hi).size - 1)


def _calendar_edges(offset, lo: int, hi: int) -> np.ndarray:
    start = offset.rollback(pd.Timestamp(lo, tz="UTC").normalize())
    # The start of the last time's bin (calendar offsets ignore the time of day), then one bin more.
    stop = offset.rollback(pd.Timestamp(hi, tz="UTC").normalize()) + offset
    starts = pd.date_range(start, stop, freq=offset)
    return np.asarray(starts.as_unit("ns").asi8, dtype=np.int64)


def _too_many(freq: str, lo: int, hi: int, n: int, extremes: str = "") -> OptionsError:
    days = (hi - lo) / 86_400e9
    length = f"{days / 365.25:,.1f} years" if days >= 730 else f"{days:,.1f} days"
    return OptionsError(
        f"time_bin {freq!r} over the scored span {_iso(lo)} … {_iso(hi)} ({length}) makes {n:,} bins, "
        f"more than the {MAX_BINS:,} a run may have (SPEC §10).{extremes} If a few stray rows far from the rest "
        "(a wrong year, times in the wrong epoch unit) stretch the span, fix or drop them; otherwise choose a "
        "longer time_bin.", options=("time_bin",))


def _iso(t: int) -> str:
    return pd.Timestamp(int(t), tz="UTC").strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def bin_edges(lo: int, hi: int, freq: str) -> np.ndarray:
    """Edges (int64 ns, ascending) of the bins of ``freq`` covering ``[lo, hi]`` (int64 ns, inclusive).

    ``edges[i] <= t < edges[i + 1]`` is bin ``i``; the first edge is at or
    before ``lo``, the last after ``hi``.  More than :data:`MAX_BINS` bins are
    refused (counted before any is built).

    Examples
    --------
    >>> bin_edges(0, 366 * 86_400 * 10**9, "1s")
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: time_bin '1s' over the scored span ... makes 31,622,401 bins, more than ...
    """
    offset = _offset(freq)
    lo, hi = int(lo), int(hi)
    if hi < lo:
        lo, hi = hi, lo
    n = count_bins(lo, hi, freq)
    if n > MAX_BINS:
        raise _too_many(freq, lo, hi, n)
    step = _step_ns(offset)
    if step is not None:
        first = (lo // step) * step  # floor division: anchored at the epoch, also before 1970
        n = (hi - first) // step + 1
        return first + step * np.arange(n + 1, dtype=np.int64)
    return _calendar_edges(offset, lo, hi)


def bin_index(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each time (int64): ``edges[b] <= t < edges[b + 1]``, clipped into ``0 … len(edges) − 2``."""
    b = np.searchsorted(edges, np.asarray(times, dtype=np.int64), side="right") - 1
    return np.clip(b, 0, max(edges.size - 2, 0)).astype(np.int64)


def bin_starts(edges: np.ndarray) -> pd.DatetimeIndex:
    """The bins' starts as UTC timestamps."""
    return pd.DatetimeIndex(pd.to_datetime(np.asarray(edges[:-1], dtype=np.int64), unit="ns", utc=True))


def iso_utc(starts: np.ndarray) -> list[str]:
    """Bin starts (datetime64[ns], UTC) as ISO-8601 strings with ``Z``.

    Examples
    --------
    >>> iso_utc(np.array(["2024-03-01T00:00"], dtype="datetime64[ns]"))
    ['2024-03-01T00:00:00Z']
    """
    values = np.asarray(starts).astype("datetime64[ns]")
    return [str(v)[:19] + "Z" for v in values.astype("datetime64[s]")]


def scored_edges(scope, pick_summary: pd.DataFrame, freq: str) -> np.ndarray:
    """The edges of a run: the bins of ``freq`` covering every scored arrival and every scored pick.

    ``scope`` is the run's :class:`~pickscale.scope.Scope` (its scored
    reference, stations and datasets); ``pick_summary`` has one row per
    (dataset, station, model) with ``t_min``/``t_max`` of the picks at or
    above the floor.
    """
    lows, highs = [], []
    arrived = scope.scored_summary  # per (dataset, station) of the scored arrivals: first and last
    if len(arrived):
        lows.append(int(arrived["t_min"].min()))
        highs.append(int(arrived["t_max"].max()))
    for d in scope.datasets:
        rows = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(scope.stations[d])
                            & pick_summary["model"].isin(scope.models[d])]
        if len(rows):
            lows.append(int(rows["t_min"].min()))
            highs.append(int(rows["t_max"].max()))
    if not lows:
        return np.zeros(0, dtype=np.int64)
    lo, hi = min(lows), max(highs)
    n = count_bins(lo, hi, freq)
    if n > MAX_BINS:
        raise _too_many(freq, lo, hi, n, _extremes(scope, pick_summary))
    return bin_edges(lo, hi, freq)


def _extremes(scope, pick_summary: pd.DataFrame, k: int = 3) -> str:
    """The scored times at both ends of the span (arrivals, and picks by dataset, station and model)."""
    from ..io.messages import quote  # lazy: kernel/ stays free of io/ (pyarrow, fsspec: ~0.4 s), for one message

    rows: list[tuple[int, str]] = []
    # The k first and k last scored arrivals in (time, input row) order: each bucket's, then the run's.
    ends = pd.concat(scope.arrivals.map(_end_rows, k), ignore_index=True)
    if len(ends):
        order = np.lexsort((ends["row"].to_numpy(np.int64), ends["time"].to_numpy(np.int64)))
        times, stations = ends["time"].to_numpy(np.int64), ends["station"].to_numpy(object)
        for i in np.unique(np.concatenate([order[:k], order[-k:]])):
            rows.append((int(times[i]), f"arrival {_iso(times[i])} (station {quote(stations[i])})"))
    for d in scope.datasets:
        sel = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(scope.stations[d])
                           & pick_summary["model"].isin(scope.models[d])]
        for col in ("t_min", "t_max"):
            part = sel.sort_values(col, kind="stable")
            for _, r in pd.concat([part.head(k), part.tail(k)]).iterrows():
                rows.append((int(r[col]), f"pick {_iso(r[col])} (station {quote(r['station'])}, "
                                          f"model {quote(r['model'])})"))
    rows = sorted(set(rows))
    if not rows:
        return ""
    first = [text for _, text in rows[:k]]
    last = [text for _, text in rows[-k:] if text not in first]
    return f" Earliest: {'; '.join(first)}." + (f" Latest: {'; '.join(last)}." if last else "")


def _end_rows(bucket, k: int) -> pd.DataFrame:
    """A bucket's ``k`` first and ``k`` last rows in (time, input row) order: ``time, row, station``."""
    frame = bucket.frame
    times, rows = frame["time"].to_numpy(np.int64), frame["row"].to_numpy(np.int64)
    order = np.lexsort((rows, times))
    pick = np.unique(np.concatenate([order[:k], order[-k:]]))
    return pd.DataFrame({"time": times[pick], "row": rows[pick],
                         "station": frame["station"].astype(object).to_numpy(object)[pick]})


def _occupied(bucket, edges: np.ndarray) -> np.ndarray:
    """The bins (of ``edges``) a bucket's arrivals fall in, each once."""
    return np.unique(bin_index(bucket.frame["time"].to_numpy(np.int64), edges))


#: A run of at least this many bins is looked at for a span that a few stray rows stretch.
STRETCH_MIN_BINS = 1_000
#: ... and warned about when one stretch of empty bins is more than this share of them.
STRETCH_EMPTY_SHARE = 0.9


def stretched_span(scope, pick_summary: pd.DataFrame, edges: np.ndarray, freq: str) -> str | None:
    """A warning when a few rows far from the rest stretch the run's bins, else None.

    The bins are bounded (:data:`MAX_BINS`), but a stray pick dated 1800 beside a catalogue of 2024 still makes
    daily bins over two centuries, nearly all empty.  Occupied are the bins of every scored arrival and of each
    (dataset, station, model)'s first and last scored pick; when one run of empty bins between two occupied ones
    holds more than :data:`STRETCH_EMPTY_SHARE` of :data:`STRETCH_MIN_BINS` or more bins, the warning names the
    span, the bin and the rows at both ends (a time-zone, epoch or unit error in a few rows is the usual cause).
    """
    n = edges.size - 1
    if n < STRETCH_MIN_BINS:
        return None
    bins = scope.arrivals.map(_occupied, edges)  # the bins of every scored arrival, per bucket
    times = [np.zeros(0, np.int64)]
    for d in scope.datasets:
        rows = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(scope.stations[d])
                            & pick_summary["model"].isin(scope.models[d])]
        times += [np.asarray(rows["t_min"], dtype=np.int64), np.asarray(rows["t_max"], dtype=np.int64)]
    occupied = np.unique(np.concatenate([*bins, bin_index(np.concatenate(times), edges)]))
    if occupied.size < 2:
        return None
    gaps = np.diff(occupied) - 1
    widest = int(gaps.max())
    if widest <= STRETCH_EMPTY_SHARE * n:
        return None
    at = int(np.argmax(gaps))
    return (f"time_bin {freq!r}: {n:,} bins from {_iso(edges[0])} to {_iso(edges[-1])}, but {widest:,} of them in "
            f"a row, from {_iso(edges[occupied[at] + 1])} to {_iso(edges[occupied[at + 1]])}, hold no arrival and "
            f"no pick: a few rows far from the rest stretch the span (a time-zone, epoch or unit error?)."
            + _extremes(scope, pick_summary))

