"""Messages and likely causes when the reference and the picks do not meet (SPEC §2's fatal mismatches).

A fatal :class:`~pickscale.errors.InputError` shows its evidence (names, spans
as ISO UTC) and, when one is clear, a likely cause: station names written
differently, epoch units mixed up, a time-zone offset, a wrong date.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..io.text import quote

__all__ = ["station_hint", "span_hint", "shift_hint", "dataset_hint", "nothing_left", "span_error", "iso",
           "show_names", "shown_names", "N_SHOWN"]

#: How many names a message shows (:func:`show_names`).
N_SHOWN = 5
_HOUR_NS = 3600 * 10**9
_DAY_NS = 24 * _HOUR_NS
_YEAR_NS = 365 * _DAY_NS


def iso(ns: int) -> str:
    """int64 ns -> '2006-07-23T15:59:07.96Z' (trailing zeros of the fraction cut)."""
    ts = pd.Timestamp(int(ns), unit="ns")
    frac = f"{ts.microsecond * 1000 + ts.nanosecond:09d}".rstrip("0")
    return ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def show_names(names: Iterable[str]) -> str:
    names = sorted(set(names))
    return shown_names(names[:N_SHOWN], len(names))


def shown_names(first: Sequence[str], total: int) -> str:
    """:func:`show_names` of ``total`` distinct names from their first :data:`N_SHOWN` (sorted) alone.

    For many such lists (one per model) read off arrays, without building each whole list.

    Examples
    --------
    >>> shown_names(["A", "B", "C", "D", "E"], 7) == show_names("ABCDEFG")
    True
    >>> shown_names([], 0)
    'none'
    """
    shown = ", ".join(quote(n) for n in first[:N_SHOWN])
    more = f" … ({total} in all)" if total > N_SHOWN else ""
    return (shown or "none") + more


def _station_code(s: str) -> str:
    # NET.STA[.LOC[.CHA]] -> STA; a bare code stays as it is.
    parts = s.split(".")
    return parts[1] if len(parts) >= 2 else parts[0]


def _net_sta(s: str) -> str:
    return ".".join(s.split(".")[:2])


def _example_pair(a: set[str], b: set[str], f) -> tuple[str, str]:
    fb: dict[str, str] = {}
    for s in sorted(b):
        fb.setdefault(f(s), s)
    for s in sorted(a):
        if f(s) in fb:
            return s, fb[f(s)]
    return "", ""


def station_hint(ref_stations: Iterable[str], pick_stations: Iterable[str],
                 ref_source: str = "reference", picks_source: str = "picks") -> str:
    """A likely reason why two sets of station names do not meet ('' if none).

    Examples
    --------
    >>> print(station_hint(["CLC"], ["CI.CLC"]))
    Hint: picks has network prefixes ('CI.CLC') where reference has none ('CLC'):
    write the stations the same way on both sides.
    """
    a, b = set(ref_stations), set(pick_stations)
    side = {"a": ref_source, "b": picks_source}

    def meets(f) -> bool:
        return bool({f(s) for s in a} & {f(s) for s in b})

    if meets(str.casefold):
        x, y = _example_pair(a, b, str.casefold)
        return (f"Hint: the names differ only in case ({quote(x)} in {side['a']}, {quote(y)} in "
                f"{side['b']}); stations are compared case-sensitively.")
    a_dots = sum("." in s for s in a) > len(a) / 2
    b_dots = sum("." in s for s in b) > len(b) / 2
    if a_dots != b_dots and meets(_station_code):
        x, y = _example_pair(a, b, _station_code)
        with_net, without = ("b", "a") if b_dots else ("a", "b")
        ex = {"a": x, "b": y}
        return (f"Hint: {side[with_net]} has network prefixes ({quote(ex[with_net])}) where "
                f"{side[without]} has none ({quote(ex[without])}): write the stations the same way "
                "on both sides.")
    if meets(_net_sta):
        x, y = _example_pair(a, b, _net_sta)
        return (f"Hint: the same NET.STA with different location/channel codes ({quote(x)} in "
                f"{side['a']}, {quote(y)} in {side['b']}); rerun with --station-key net.sta (Python: "
                "station_key=\"net.sta\") to compare stations as NET.STA on both sides.")
    sep = str.maketrans({"_": ".", "-": ".", ":": ".", " ": "."})
    if meets(lambda s: s.translate(sep)):
        x, y = _example_pair(a, b, lambda s: s.translate(sep))
        return (f"Hint: the same codes with different separators ({quote(x)} in {side['a']}, {quote(y)} "
                f"in {side['b']}).")
    if meets(lambda s: _station_code(s).casefold()):
        x, y = _example_pair(a, b, lambda s: _station_code(s).casefold())
        return (f"Hint: the station codes match once network and case are ignored ({quote(x)} in "
                f"{side['a']}, {quote(y)} in {side['b']}).")
    return ""


def span_hint(ref_span: tuple[int, int], pick_span: tuple[int, int]) -> str:
    """A likely cause of disjoint reference and pick spans ('' if none is clear).

    Examples
    --------
    >>> h = 3600 * 10**9
    >>> print(span_hint((0 + 10**18, 10 * h + 10**18), (2 * h + 10**18, 12 * h + 10**18)))
    Likely cause: the picks are 2 h later than the arrivals — whole (or quarter) hours, the signature of a
    time-zone offset (local time read as UTC?). Give times in UTC or with their offset (e.g. +02:00).
    """
    (r0, r1), (p0, p1) = ref_span, pick_span
    mid_r, mid_p = (r0 + r1) / 2, (p0 + p1) / 2
    if mid_r > 0 and mid_p > 0:
        ratio = max(mid_r, mid_p) / min(mid_r, mid_p)
        for factor, what in ((1e3, "milliseconds and seconds"), (1e6, "microseconds and seconds"),
                             (1e9, "nanoseconds and seconds")):
            if abs(ratio / factor - 1) < 0.2:
                big = "picks" if mid_p > mid_r else "arrivals"
                return (f"Likely cause: the {big}' epoch values are ~{factor:g}× the others' — "
                        f"{what} mixed up.")
    for label, (lo, hi) in (("arrivals", ref_span), ("picks", pick_span)):
        if abs(lo) < _YEAR_NS and abs(hi) < _YEAR_NS:
            return (f"Likely cause: the {label} lie within a year of 1970-01-01: their times "
                    "look like seconds since a trace or window start, not since 1970.")
    # Shift estimated from both ends, so that spans of similar extent give a clean value.
    shift = ((p0 - r0) + (p1 - r1)) / 2
    later = "later" if shift > 0 else "earlier"
    hours = abs(shift) / _HOUR_NS
    quarter = round(hours * 4) / 4
    if 0 < quarter <= 26 and abs(hours - quarter) * 3600 <= 120:
        q = f"{quarter:g}"
        return (f"Likely cause: the picks are {q} h {later} than the arrivals — whole (or quarter) "
                "hours, the signature of a time-zone offset (local time read as UTC?). "
                "Give times in UTC or with their offset (e.g. +02:00).")
    days = abs(shift) / _DAY_NS
    if days >= 1 and abs(days - round(days)) * 86400 <= 120:
        return (f"Likely cause: the picks are {round(days)} whole days {later} than the "
                "arrivals — a wrong date (day/month swapped, wrong year?).")
    return ""


_P_LIKE = "P, Pg, Pn, Pb, P*"
_S_LIKE = "S, Sg, Sn, Sb, S*"


def nothing_left(source: str, role: str, rows: dict | None = None) -> str:
    """The message when one input has no row left to score.

    ``rows`` (optional) says why: ``rows_read``, ``invalid_dropped`` (rows
    dropped by ``--drop-invalid``) and ``dropped_phases`` (phase name -> rows
    dropped because the phase is neither P- nor S-like).

    Examples
    --------
    >>> print(nothing_left("bulletin.csv", "reference",
    ...                    {"rows_read": 3, "invalid_dropped": 0, "dropped_phases": {"PKP": 2, "pP": 1}}))
    bulletin.csv: no reference arrival is left to score: none of its 3 row(s) has a P- or S-like phase
    (found 'PKP': 2, 'pP': 1). Scored are P, Pg, Pn, Pb, P* (as P) and S, Sg, Sn, Sb, S* (as S),
    case-sensitive: pP and sS are depth phases.
    """
    what = "reference arrival" if role == "reference" else "pick"
    head = f"{source}: no {what} is left to score"
    accepted = (f"Scored are {_P_LIKE} (as P) and {_S_LIKE} (as S), case-sensitive: pP and sS are "
                "depth phases.")
    rows = rows or {}
    n = int(rows.get("rows_read") or 0)
    invalid = int(rows.get("invalid_dropped") or 0)
    # The phases as io.text.top_counts caps them: a few names, and under "…" how many more names and rows.
    dropped = dict(rows.get("dropped_phases") or {})
    rest = dropped.pop("…", None) or {}
    dropped = {str(k): int(v) for k, v in dropped.items()}
    n_dropped = sum(dropped.values()) + int(rest.get("rows", 0))
    if not n:
        return f"{head} (no P- or S-like rows, or every row was dropped). {accepted}"
    parts = []
    if dropped:
        found = sorted(dropped.items(), key=lambda kv: (-kv[1], kv[0]))
        more = len(found) - 10 + int(rest.get("names", 0))
        shown = ", ".join(f"{quote(k)}: {v}" for k, v in found[:10]) + (f" and {more:,} more" if more > 0 else "")
        parts.append(f"{n_dropped} have a phase that is neither P- nor S-like (found {shown})")
    if invalid:
        parts.append(f"{invalid} were dropped as invalid (drop_invalid)")
    if not parts:
        return f"{head} (no P- or S-like rows, or every row was dropped). {accepted}"
    if dropped and not invalid and n_dropped == n:
        return (f"{head}: none of its {n} row(s) has a P- or S-like phase "
                f"(found {shown}). {accepted}")
    return f"{head}: of its {n} row(s), " + " and ".join(parts) + f". {accepted}"


def dataset_hint(ref_ds: list[str], pick_ds: list[str], ref_source: str,
                  picks_source: str) -> str:
    if ref_ds == ["all"] and pick_ds != ["all"]:
        return (f" {ref_source} seems to have no dataset column (every row is dataset 'all') "
                f"while {picks_source} has one: add the column, or drop it from the picks.")
    if pick_ds == ["all"] and ref_ds != ["all"]:
        return (f" {picks_source} seems to have no dataset column (every row is dataset 'all') "
                f"while {ref_source} has one: add the column, or drop it from the reference.")
    folded = {d.casefold().strip() for d in ref_ds} & {d.casefold().strip() for d in pick_ds}
    if folded:
        return " Some names differ only in case: dataset names are compared case-sensitively."
    return ""


_MAX_SHIFT_SAMPLE = 100_000


def shift_hint(ref_station: np.ndarray, ref_time: np.ndarray, pick_summary: pd.DataFrame,
               tol_ns: int) -> str:
    """A whole (or quarter) hour shift that puts the arrivals inside their stations' pick spans.

    ``span_hint`` only sees the two overall spans, whose ends differ for reasons
    other than the offset (the first pick is rarely on the first arrival).  Here
    every arrival is compared with the pick span of its own station, for every
    shift of ±¼ … 26 h: if one shift puts most arrivals inside while none is
    inside unshifted, that is a time-zone offset.  Computed only for a fatal
    error, on at most 100 000 arrivals.

    Examples
    --------
    >>> h = 3600 * 10**9
    >>> summary = pd.DataFrame({"station": ["A", "B"], "t_min": [10 * h, 20 * h], "t_max": [11 * h, 21 * h]})
    >>> shift_hint(np.array(["A", "B"]), np.array([8 * h + 5, 18 * h + 9]), summary, 0)[:50]
    'Likely cause: the picks are 2 h later than the arr'
    """
    if len(ref_time) == 0 or pick_summary.empty:
        return ""
    spans = pick_summary.groupby("station")[["t_min", "t_max"]].agg({"t_min": "min", "t_max": "max"})
    if len(ref_time) > _MAX_SHIFT_SAMPLE:
        keep = np.linspace(0, len(ref_time) - 1, _MAX_SHIFT_SAMPLE).astype(np.int64)
        ref_station, ref_time = ref_station[keep], ref_time[keep]
    idx = spans.index.get_indexer(pd.Index(ref_station))
    ok = idx >= 0
    if not ok.any():
        return ""
    # Float seconds: a hint needs no nanoseconds, and times near the ends of int64 must not wrap.
    t = ref_time[ok].astype(np.int64) / 1e9
    lo = spans["t_min"].to_numpy(np.int64)[idx[ok]] / 1e9 - tol_ns / 1e9
    hi = spans["t_max"].to_numpy(np.int64)[idx[ok]] / 1e9 + tol_ns / 1e9
    quarter = _HOUR_NS / 4e9
    best, best_k = 0.0, 0
    for k in range(-26 * 4, 26 * 4 + 1):
        if k == 0:
            continue
        shifted = t + k * quarter
        inside = float(np.mean((shifted >= lo) & (shifted <= hi)))
        if inside > best + 1e-12:
            best, best_k = inside, k
    unshifted = float(np.mean((t >= lo) & (t <= hi)))
    if best < 0.5 or unshifted > 0.1 * best:
        return ""
    hours = best_k / 4
    later = "later" if hours > 0 else "earlier"
    return (f"Likely cause: the picks are {abs(hours):g} h {later} than the arrivals (shifted by that much, "
            f"{best:.0%} of the arrivals fall inside their station's pick span) — a time-zone offset "
            "(local time read as UTC?). Give times in UTC or with their offset (e.g. +02:00).")


def span_error(d: str, spans: tuple[tuple[int, int], tuple[int, int], tuple[int, int]], n_ref: int,
               residual_tol_ns: int, ref_source: str, picks_source: str, shift: str = "") -> str:
    """Why dataset ``d`` has nothing to score; ``spans``: its arrivals', its picks' and its scored span
    (:class:`pickscale.scope.plan.ScopePlan`'s ``reference_spans``, ``pick_spans``, ``spans``)."""
    (r0, r1), (p0, p1), scored = spans
    overlap = not (r1 < scored[0] or r0 > scored[1])
    what = ("no arrival falls inside the picks' span" if overlap
            else "the time spans do not overlap")
    hint = span_hint((r0, r1), (p0, p1))
    if shift and not hint.startswith(("Likely cause: the arrivals lie", "Likely cause: the picks lie",
                                      "Likely cause: the picks'", "Likely cause: the arrivals'")):
        hint = shift  # per station, it sees a time-zone offset the overall spans blur
    if overlap and not shift:
        hint = ""
    a_label, p_label = f"{ref_source} arrivals:", f"{picks_source} picks:"
    width = max(len(a_label), len(p_label))
    a_label, p_label = a_label.ljust(width), p_label.ljust(width)
    return (
        f"dataset {quote(d)}: {what} (± residual_tol {residual_tol_ns / 1e9:g} s), "
        f"so none of its {n_ref} arrival(s) at scored stations can be scored.\n"
        f"  {a_label} {iso(r0)} … {iso(r1)}\n"
        f"  {p_label} {iso(p0)} … {iso(p1)}"
        + (f"\n  {hint}" if hint else "")
    )
