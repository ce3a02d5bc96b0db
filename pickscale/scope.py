"""What is scored (SPEC §2): floor, duplicates, scored stations, scored span.

:func:`apply_scope` takes the normalised reference and picks of every dataset
and returns a :class:`Scope`: the rows that are scored, the models and
stations of each dataset, and every exclusion with its count.  Mismatches that
make scoring meaningless (no shared station, disjoint time spans, no dataset
in common) are fatal :class:`InputError` s with the evidence and a likely cause.

The decisions are taken on small per-(dataset, station[, model]) summaries
(:func:`summarise_reference`, :func:`summarise_picks`, :func:`plan_scope`), so a
Dask engine can build the summaries per partition, combine them (counts add,
``t_min``/``t_max`` take min/max), plan once and filter every partition with
:meth:`ScopePlan.reference_mask` / :meth:`ScopePlan.picks_mask`.

Decisions where SPEC §2 is silent
---------------------------------
- A dataset with reference arrivals but no pick at or above the floor (or
  picks but no reference) is excluded with a warning and counted, as long as
  at least one dataset is scored; if none is, it is fatal.
- A dataset present on both sides that shares no station is always fatal.
- A dataset whose scored stations keep no arrival inside the scored span is
  fatal (this includes spans that do not overlap at all).
- A scored station keeps its status (and its picks) even when the span
  removes all its arrivals: stations are decided before the span.
- Picks are never removed by the span: the span is defined by them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = [
    "Scope",
    "ScopePlan",
    "dedupe_reference",
    "text_codes",
    "drop_below_floor",
    "summarise_reference",
    "summarise_picks",
    "scored_stations",
    "plan_scope",
    "apply_scope",
]

_KEY = ["dataset", "station", "phase", "time"]
_N_SHOWN = 5
_HOUR_NS = 3600 * 10**9
_DAY_NS = 24 * _HOUR_NS
_YEAR_NS = 365 * _DAY_NS


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #

@dataclass
class Scope:
    """The scored rows of every dataset and what was left out.

    Attributes
    ----------
    reference, picks
        Normalised frames (same columns as the input) restricted to what is
        scored: reference deduplicated, at scored stations, inside the span;
        picks at or above the floor at scored stations.  Index 0..n-1, rows in
        input order, dtypes as given (the engine's reference has ``Categorical``
        text columns, possibly with unused categories: read them through
        :func:`text_codes` or ``astype(object)``).
    models
        Dataset -> its models (≥1 pick at or above the floor at a scored
        station), sorted in code-point order.
    stations
        Dataset -> its scored stations, sorted.
    spans
        Dataset -> ``(first, last)`` inclusive scored span in int64 ns
        (first pick − residual_tol, last pick + residual_tol).
    exclusions
        Totals over all datasets, plain ints: ``picks_below_floor``,
        ``reference_duplicates``, ``reference_at_unpicked_stations``,
        ``picks_at_unreferenced_stations``, ``reference_outside_span``,
        ``reference_in_datasets_without_picks``,
        ``picks_in_datasets_without_reference``.
    exclusions_by_dataset
        The same counts per dataset (datasets of either side), plain ints.
    warnings
        One human-readable line per non-zero exclusion, with its count.
    """

    reference: pd.DataFrame
    picks: pd.DataFrame
    models: dict[str, list[str]]
    stations: dict[str, list[str]]
    spans: dict[str, tuple[int, int]]
    exclusions: dict[str, int]
    exclusions_by_dataset: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)
    plan: ScopePlan | None = None
    pick_summary: pd.DataFrame | None = None

    @property
    def datasets(self) -> list[str]:
        """The scored datasets, sorted."""
        return sorted(self.stations)


_EXCLUSION_KEYS = (
    "picks_below_floor",
    "reference_duplicates",
    "reference_in_datasets_without_picks",
    "picks_in_datasets_without_reference",
    "reference_at_unpicked_stations",
    "picks_at_unreferenced_stations",
    "reference_outside_span",
)


@dataclass
class ScopePlan:
    """Station- and dataset-level decisions, taken on summaries.

    Attributes
    ----------
    stations
        Dataset -> scored stations (sorted); only scored datasets appear.
    models
        Dataset -> models with ≥1 pick at or above the floor at a scored station.
    spans
        Dataset -> inclusive scored span ``(first pick − tol, last pick + tol)``.
    reference_spans
        Dataset -> ``(first, last)`` arrival at the scored stations.
    pick_spans
        Dataset -> ``(first, last)`` pick at the scored stations.
    counts
        Dataset -> station- and dataset-level exclusion counts.
    warnings
        Lines for the exclusions decided here.
    """

    stations: dict[str, list[str]]
    models: dict[str, list[str]]
    spans: dict[str, tuple[int, int]]
    reference_spans: dict[str, tuple[int, int]]
    pick_spans: dict[str, tuple[int, int]]
    counts: dict[str, dict[str, int]]
    warnings: list[str]

    def _scored_pairs(self) -> pd.MultiIndex:
        pairs = [(d, s) for d, sts in self.stations.items() for s in sts]
        return pd.MultiIndex.from_tuples(pairs, names=["dataset", "station"])

    def station_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """True for rows at a scored station of a scored dataset."""
        if frame.empty or not self.stations:
            return np.zeros(len(frame), dtype=bool)
        idx = pd.MultiIndex.from_arrays([frame["dataset"], frame["station"]])
        return np.asarray(idx.isin(self._scored_pairs()), dtype=bool)

    def span_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """True for rows whose time lies in their dataset's span (inclusive)."""
        lo = frame["dataset"].map({d: s[0] for d, s in self.spans.items()})
        hi = frame["dataset"].map({d: s[1] for d, s in self.spans.items()})
        t = frame["time"].to_numpy()
        ok = lo.notna().to_numpy() & hi.notna().to_numpy()
        lo_v = lo.fillna(0).to_numpy(dtype=np.int64)
        hi_v = hi.fillna(0).to_numpy(dtype=np.int64)
        return ok & (t >= lo_v) & (t <= hi_v)

    def reference_mask(self, ref: pd.DataFrame) -> np.ndarray:
        """Rows of the (deduplicated) reference that are scored."""
        return self.station_mask(ref) & self.span_mask(ref)

    def picks_mask(self, picks: pd.DataFrame) -> np.ndarray:
        """Rows of the picks (at or above the floor) that are scored."""
        return self.station_mask(picks)


# --------------------------------------------------------------------------- #
# Row-level steps
# --------------------------------------------------------------------------- #

def text_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int64 codes per row, the distinct values as an object array of ``str``) of a text column.

    A ``Categorical`` (``normalise(..., categorical=True)``) gives its own codes
    and categories (unused categories included), without a per-row string; any
    other column is factorized.  Codes index the values; -1 only for a missing
    value (a normalised frame has none).

    Examples
    --------
    >>> codes, names = text_codes(pd.Series(["b", "a", "b"]))
    >>> codes.tolist(), names.tolist()
    ([0, 1, 0], ['b', 'a'])
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        names = np.asarray(column.cat.categories.astype(object), dtype=object)
        return column.cat.codes.to_numpy().astype(np.int64), names
    codes, uniques = pd.factorize(column)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def _groups(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, each row's index among them); by counting when ``space`` is small."""
    if space <= max(4 * key.size, 1 << 16):
        present = np.bincount(key, minlength=space) > 0
        distinct = np.flatnonzero(present)
        return distinct, (np.cumsum(present) - 1)[key]
    distinct, inverse = np.unique(key, return_inverse=True)
    return distinct, inverse.reshape(-1)


def _duplicate_rows(group: np.ndarray, time_ns: np.ndarray) -> np.ndarray:
    """Per row: an earlier row has the same ``group`` (an integer key) and time (``duplicated(keep="first")``).

    One integer hash of (time, group) — wrapping int64 arithmetic — finds the
    candidate rows (every true duplicate and its first occurrence, plus rare
    collisions); the exact test then runs on those few rows only.
    """
    n = group.size
    dup = np.zeros(n, dtype=bool)
    if n < 2:
        return dup
    with np.errstate(over="ignore"):
        h = time_ns.astype(np.int64) * np.int64(1_000_003) + group.astype(np.int64)
    order = np.argsort(h)
    same = h[order[1:]] == h[order[:-1]]
    if not same.any():
        return dup
    both = np.zeros(n, dtype=bool)  # in sorted order: a row equal to its neighbour on either side
    both[1:] |= same
    both[:-1] |= same
    cand = np.sort(order[both])  # back in row order: "first" is the first row
    pairs = pd.DataFrame({"g": group[cand], "t": time_ns[cand]}, copy=False)
    dup[cand] = pairs.duplicated(keep="first").to_numpy()
    return dup


class _RefCodes:
    """The reference as integer codes: dataset, station, phase per row, and time."""

    def __init__(self, ref: pd.DataFrame) -> None:
        self.d, self.d_names = text_codes(ref["dataset"])
        self.s, self.s_names = text_codes(ref["station"])
        self.p, self.p_names = text_codes(ref["phase"])
        self.time = ref["time"].to_numpy(np.int64)
        self.nd, self.ns = max(len(self.d_names), 1), max(len(self.s_names), 1)
        self.ds = self.d * self.ns + self.s  # one integer per (dataset, station)

    def duplicates(self) -> np.ndarray:
        """Per row: a repeat of an earlier (dataset, station, phase, time)."""
        group = self.ds * max(len(self.p_names), 1) + self.p
        return _duplicate_rows(group, self.time)


def dedupe_reference(ref: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Keep one reference row per (dataset, station, phase, time).

    ``Pg`` and ``P`` at the same instant are one arrival after normalisation.
    The first occurrence is kept (the rows are identical in every scored
    column anyway).  Works on integer codes (text columns may be
    ``Categorical``).

    Returns
    -------
    (frame, n_removed)

    Examples
    --------
    >>> ref = pd.DataFrame({"dataset": ["a", "a"], "station": ["X", "X"],
    ...                     "phase": ["P", "P"], "time": [5, 5]})
    >>> frame, n = dedupe_reference(ref)
    >>> len(frame), n
    (1, 1)
    """
    dup = _RefCodes(ref).duplicates() if len(ref) else np.zeros(0, dtype=bool)
    return ref.loc[~dup].reset_index(drop=True), int(dup.sum())


def drop_below_floor(picks: pd.DataFrame, floor: float) -> tuple[pd.DataFrame, int]:
    """Picks with ``conf >= floor`` (SPEC §2: those below take part in nothing).

    Examples
    --------
    >>> p = pd.DataFrame({"conf": [0.01, 0.02, 0.5]})
    >>> kept, n = drop_below_floor(p, 0.02)
    >>> len(kept), n
    (2, 1)
    """
    keep = (picks["conf"].to_numpy(dtype=np.float64) >= floor)
    return picks.loc[keep].reset_index(drop=True), int((~keep).sum())


# --------------------------------------------------------------------------- #
# Summaries (additive across partitions)
# --------------------------------------------------------------------------- #

def summarise_reference(ref: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, station): ``n_reference``, ``t_min``, ``t_max``.

    Combine partial summaries by summing ``n_reference`` and taking the
    min/max of the times per key.
    """
    g = ref.groupby(["dataset", "station"], sort=True, observed=True)["time"]
    out = g.agg(n_reference="size", t_min="min", t_max="max").reset_index()
    return out.astype({"n_reference": np.int64, "t_min": np.int64, "t_max": np.int64})


def summarise_picks(picks: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, station, model): ``n_picks``, ``t_min``, ``t_max``.

    ``picks`` must already be at or above the floor.
    """
    g = picks.groupby(["dataset", "station", "model"], sort=True, observed=True)["time"]
    out = g.agg(n_picks="size", t_min="min", t_max="max").reset_index()
    return out.astype({"n_picks": np.int64, "t_min": np.int64, "t_max": np.int64})


def scored_stations(ref_counts: pd.DataFrame, pick_counts: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, station) of either side: counts and whether it is scored.

    Parameters
    ----------
    ref_counts
        Columns ``dataset``, ``station``, ``n_reference`` (e.g.
        :func:`summarise_reference`).
    pick_counts
        Columns ``dataset``, ``station``, ``n_picks`` of picks at or above the
        floor; further key columns such as ``model`` are summed over.

    Returns
    -------
    DataFrame
        ``dataset, station, n_reference, n_picks, scored`` sorted by
        (dataset, station); ``scored`` = both counts ≥ 1.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["d", "d"], "station": ["A", "B"], "n_reference": [2, 1]})
    >>> p = pd.DataFrame({"dataset": ["d", "d"], "station": ["A", "C"], "n_picks": [5, 1]})
    >>> scored_stations(r, p)["scored"].tolist()
    [True, False, False]
    """
    r = ref_counts.groupby(["dataset", "station"], sort=False)["n_reference"].sum()
    p = pick_counts.groupby(["dataset", "station"], sort=False)["n_picks"].sum()
    table = pd.concat([r, p], axis=1).fillna(0).astype(np.int64)
    table = table.sort_index().reset_index()
    table.columns = ["dataset", "station", "n_reference", "n_picks"]
    table["scored"] = (table["n_reference"] > 0) & (table["n_picks"] > 0)
    return table


# --------------------------------------------------------------------------- #
# Messages
# --------------------------------------------------------------------------- #

def _iso(ns: int) -> str:
    """int64 ns -> '2006-07-23T15:59:07.96Z' (trailing zeros of the fraction cut)."""
    ts = pd.Timestamp(int(ns), unit="ns")
    frac = f"{ts.microsecond * 1000 + ts.nanosecond:09d}".rstrip("0")
    return ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def _show_names(names: Iterable[str]) -> str:
    names = sorted(set(names))
    shown = ", ".join(repr(n) for n in names[:_N_SHOWN])
    more = f" … ({len(names)} in all)" if len(names) > _N_SHOWN else ""
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
    >>> station_hint(["CLC"], ["CI.CLC"])
    "Hint: picks has network prefixes ('CI.CLC') where reference has none ('CLC'): write the stations the same way on both sides."
    """
    a, b = set(ref_stations), set(pick_stations)
    side = {"a": ref_source, "b": picks_source}

    def meets(f) -> bool:
        return bool({f(s) for s in a} & {f(s) for s in b})

    if meets(str.casefold):
        x, y = _example_pair(a, b, str.casefold)
        return (f"Hint: the names differ only in case ({x!r} in {side['a']}, {y!r} in "
                f"{side['b']}); stations are compared case-sensitively.")
    a_dots = sum("." in s for s in a) > len(a) / 2
    b_dots = sum("." in s for s in b) > len(b) / 2
    if a_dots != b_dots and meets(_station_code):
        x, y = _example_pair(a, b, _station_code)
        with_net, without = ("b", "a") if b_dots else ("a", "b")
        ex = {"a": x, "b": y}
        return (f"Hint: {side[with_net]} has network prefixes ({ex[with_net]!r}) where "
                f"{side[without]} has none ({ex[without]!r}): write the stations the same way "
                "on both sides.")
    if meets(_net_sta):
        x, y = _example_pair(a, b, _net_sta)
        return (f"Hint: the same NET.STA with different location/channel codes ({x!r} in "
                f"{side['a']}, {y!r} in {side['b']}); rerun with --station-key net.sta (Python: "
                "station_key=\"net.sta\") to compare stations as NET.STA on both sides.")
    sep = str.maketrans({"_": ".", "-": ".", ":": ".", " ": "."})
    if meets(lambda s: s.translate(sep)):
        x, y = _example_pair(a, b, lambda s: s.translate(sep))
        return (f"Hint: the same codes with different separators ({x!r} in {side['a']}, {y!r} "
                f"in {side['b']}).")
    if meets(lambda s: _station_code(s).casefold()):
        x, y = _example_pair(a, b, lambda s: _station_code(s).casefold())
        return (f"Hint: the station codes match once network and case are ignored ({x!r} in "
                f"{side['a']}, {y!r} in {side['b']}).")
    return ""


def span_hint(ref_span: tuple[int, int], pick_span: tuple[int, int]) -> str:
    """A likely cause of disjoint reference and pick spans ('' if none is clear).

    Examples
    --------
    >>> h = 3600 * 10**9
    >>> span_hint((0 + 10**18, 10 * h + 10**18), (2 * h + 10**18, 12 * h + 10**18))
    'Likely cause: the picks are 2 h later than the arrivals — whole (or quarter) hours, the signature of a time-zone offset (local time read as UTC?). Give times in UTC or with their offset (e.g. +02:00).'
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


# --------------------------------------------------------------------------- #
# Planning on summaries
# --------------------------------------------------------------------------- #

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
    bulletin.csv: no reference arrival is left to score: none of its 3 row(s) has a P- or S-like phase (found 'PKP': 2, 'pP': 1). Scored are P, Pg, Pn, Pb, P* (as P) and S, Sg, Sn, Sb, S* (as S), case-sensitive: pP and sS are depth phases.
    """
    what = "reference arrival" if role == "reference" else "pick"
    head = f"{source}: no {what} is left to score"
    accepted = (f"Scored are {_P_LIKE} (as P) and {_S_LIKE} (as S), case-sensitive: pP and sS are "
                "depth phases.")
    rows = rows or {}
    n = int(rows.get("rows_read") or 0)
    invalid = int(rows.get("invalid_dropped") or 0)
    dropped = {str(k): int(v) for k, v in (rows.get("dropped_phases") or {}).items()}
    if not n:
        return f"{head} (no P- or S-like rows, or every row was dropped). {accepted}"
    parts = []
    if dropped:
        found = sorted(dropped.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{k!r}: {v}" for k, v in found[:10]) + (" …" if len(found) > 10 else "")
        parts.append(f"{sum(dropped.values())} have a phase that is neither P- nor S-like (found {shown})")
    if invalid:
        parts.append(f"{invalid} were dropped as invalid (--drop-invalid)")
    if not parts:
        return f"{head} (no P- or S-like rows, or every row was dropped). {accepted}"
    if dropped and not invalid and sum(dropped.values()) == n:
        return (f"{head}: none of its {n} row(s) has a P- or S-like phase "
                f"(found {shown}). {accepted}")
    return f"{head}: of its {n} row(s), " + " and ".join(parts) + f". {accepted}"


def _dataset_hint(ref_ds: list[str], pick_ds: list[str], ref_source: str,
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


def plan_scope(
    ref_summary: pd.DataFrame,
    pick_summary: pd.DataFrame,
    *,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
) -> ScopePlan:
    """Decide scored datasets, stations, models and spans from summaries.

    Parameters
    ----------
    ref_summary
        :func:`summarise_reference` of the deduplicated reference.
    pick_summary
        :func:`summarise_picks` of the picks at or above the floor.
    residual_tol_ns
        Half-width added on both sides of the picks' span (int ns).
    ref_source, picks_source
        Names used in messages.

    Raises
    ------
    InputError
        No dataset on both sides; a dataset on both sides without a shared
        station (up to five spellings from each side and a hint).
    """
    ref_ds = sorted(ref_summary["dataset"].unique().tolist())
    pick_ds = sorted(pick_summary["dataset"].unique().tolist())
    both = sorted(set(ref_ds) & set(pick_ds))
    counts: dict[str, dict[str, int]] = {d: {} for d in sorted(set(ref_ds) | set(pick_ds))}
    warnings: list[str] = []

    if not both:
        raise InputError(
            f"No dataset appears in both inputs: {ref_source} has {_show_names(ref_ds)}, "
            f"{picks_source} has {_show_names(pick_ds)} (picks at or above the floor)."
            + _dataset_hint(ref_ds, pick_ds, ref_source, picks_source)
        )
    n_ref_by_ds = ref_summary.groupby("dataset")["n_reference"].sum()
    n_pick_by_ds = pick_summary.groupby("dataset")["n_picks"].sum()
    for d in sorted(set(ref_ds) - set(pick_ds)):
        n = int(n_ref_by_ds[d])
        counts[d]["reference_in_datasets_without_picks"] = n
        warnings.append(f"dataset {d!r}: {n} reference arrival(s) excluded — {picks_source} has "
                        f"no pick at or above the floor in this dataset.")
    for d in sorted(set(pick_ds) - set(ref_ds)):
        n = int(n_pick_by_ds[d])
        counts[d]["picks_in_datasets_without_reference"] = n
        warnings.append(f"dataset {d!r}: {n} pick(s) excluded — {ref_source} has no arrival in "
                        f"this dataset.")

    table = scored_stations(ref_summary[ref_summary["dataset"].isin(both)],
                            pick_summary[pick_summary["dataset"].isin(both)])
    stations: dict[str, list[str]] = {}
    fatal: list[str] = []
    for d, t in table.groupby("dataset", sort=True):
        scored = t[t["scored"]]
        ref_only = t[(t["n_reference"] > 0) & (t["n_picks"] == 0)]
        pick_only = t[(t["n_picks"] > 0) & (t["n_reference"] == 0)]
        if scored.empty:
            ref_st = t.loc[t["n_reference"] > 0, "station"].tolist()
            pick_st = t.loc[t["n_picks"] > 0, "station"].tolist()
            hint = station_hint(ref_st, pick_st, ref_source, picks_source)
            fatal.append(
                f"dataset {d!r}: {ref_source} and {picks_source} share no station.\n"
                f"  {ref_source} stations: {_show_names(ref_st)}\n"
                f"  {picks_source} stations: {_show_names(pick_st)}"
                + (f"\n  {hint}" if hint else "")
            )
            continue
        stations[d] = sorted(scored["station"].tolist())
        n_ref_out = int(ref_only["n_reference"].sum())
        n_pick_out = int(pick_only["n_picks"].sum())
        counts[d]["reference_at_unpicked_stations"] = n_ref_out
        counts[d]["picks_at_unreferenced_stations"] = n_pick_out
        if n_ref_out:
            # A partial mismatch that NET.STA would mend gets the same hint as a total one.
            hint = station_hint(ref_only["station"].tolist(), pick_only["station"].tolist(), ref_source,
                                picks_source) if len(pick_only) else ""
            warnings.append(
                f"dataset {d!r}: {n_ref_out} reference arrival(s) at {len(ref_only)} station(s) "
                f"without any pick at or above the floor excluded "
                f"(e.g. {_show_names(ref_only['station'])})."
                + (f" {hint}" if hint.startswith("Hint: the same NET.STA") else ""))
        if n_pick_out:
            warnings.append(
                f"dataset {d!r}: {n_pick_out} pick(s) at {len(pick_only)} station(s) without "
                f"reference arrivals excluded (e.g. {_show_names(pick_only['station'])}).")
    if fatal:
        raise InputError(
            "\n".join(fatal)
            + "\nStations are compared as text after removing surrounding white space and "
              "trailing '.'."
        )

    models: dict[str, list[str]] = {}
    spans: dict[str, tuple[int, int]] = {}
    ref_spans: dict[str, tuple[int, int]] = {}
    pick_spans: dict[str, tuple[int, int]] = {}
    for d, sts in stations.items():
        ps = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(sts)]
        rs = ref_summary[(ref_summary["dataset"] == d) & ref_summary["station"].isin(sts)]
        models[d] = sorted(ps["model"].unique().tolist())
        first, last = int(ps["t_min"].min()), int(ps["t_max"].max())
        pick_spans[d] = (first, last)
        # Clipped to the instants a time can hold (pandas' range): nothing lies beyond, and int64 must not wrap.
        spans[d] = (max(first - int(residual_tol_ns), pd.Timestamp.min.value),
                    min(last + int(residual_tol_ns), pd.Timestamp.max.value))
        ref_spans[d] = (int(rs["t_min"].min()), int(rs["t_max"].max()))
    return ScopePlan(stations=stations, models=models, spans=spans, reference_spans=ref_spans,
                     pick_spans=pick_spans, counts=counts, warnings=warnings)


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


def _span_error(d: str, plan: ScopePlan, n_ref: int, residual_tol_ns: int,
                ref_source: str, picks_source: str, shift: str = "") -> str:
    r0, r1 = plan.reference_spans[d]
    p0, p1 = plan.pick_spans[d]
    overlap = not (r1 < plan.spans[d][0] or r0 > plan.spans[d][1])
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
        f"dataset {d!r}: {what} (± residual_tol {residual_tol_ns / 1e9:g} s), "
        f"so none of its {n_ref} arrival(s) at scored stations can be scored.\n"
        f"  {a_label} {_iso(r0)} … {_iso(r1)}\n"
        f"  {p_label} {_iso(p0)} … {_iso(p1)}"
        + (f"\n  {hint}" if hint else "")
    )


# --------------------------------------------------------------------------- #
# The whole step
# --------------------------------------------------------------------------- #

def apply_scope(
    ref: pd.DataFrame,
    picks: pd.DataFrame,
    *,
    floor: float,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
) -> Scope:
    """Apply SPEC §2 to normalised reference and picks of every dataset.

    In order: picks below ``floor`` are dropped; duplicate reference rows are
    kept once; datasets on one side only are excluded (fatal if no dataset is
    on both sides); scored stations are those with ≥1 arrival and ≥1 pick
    (any model, any phase) — the rest is excluded; arrivals outside
    ``[first pick − residual_tol, last pick + residual_tol]`` (inclusive,
    over the dataset's scored stations and all models) are excluded.

    Parameters
    ----------
    ref, picks
        Frames from :func:`pickscale.readers.normalise` (``Normalised.frame``),
        all datasets together.
    floor
        The lowest threshold of the grid.
    residual_tol_ns
        ``Options.residual_tol_ns``.
    ref_source, picks_source
        Names used in messages (e.g. the file names).

    Raises
    ------
    InputError
        Nothing left on one side; no dataset in common; a dataset whose
        inputs share no station; a dataset whose arrivals all lie outside the
        picks' span (both spans printed as ISO UTC, with a likely cause).

    Examples
    --------
    >>> ref = pd.DataFrame({"dataset": ["d"] * 3, "station": ["A", "A", "B"],
    ...                     "phase": ["P"] * 3, "time": [10**9, 10**9, 10**9]})
    >>> picks = pd.DataFrame({"dataset": ["d", "d"], "model": ["m", "m"], "station": ["A", "A"],
    ...                       "phase": ["P", "P"], "time": [10**9, 2 * 10**9], "conf": [0.9, 0.01]})
    >>> s = apply_scope(ref, picks, floor=0.02, residual_tol_ns=2 * 10**9)
    >>> len(s.reference), len(s.picks), s.stations, s.models
    (1, 1, {'d': ['A']}, {'d': ['m']})
    >>> s.exclusions["reference_duplicates"], s.exclusions["reference_at_unpicked_stations"]
    (1, 1)
    """
    if picks.empty:
        raise InputError(nothing_left(picks_source, "picks", picks.attrs.get("pickscale_rows")))
    picks_all_ds = picks["dataset"].value_counts()
    picks, _ = drop_below_floor(picks, floor)
    below_by_ds = _difference(picks_all_ds, picks["dataset"].value_counts())
    scope = scope_from_summary(ref, summarise_picks(picks), below_by_ds=below_by_ds, floor=floor,
                               residual_tol_ns=residual_tol_ns, ref_source=ref_source,
                               picks_source=picks_source)
    scope.picks = picks.loc[scope.plan.picks_mask(picks)].reset_index(drop=True)
    return scope


def scope_from_summary(
    ref: pd.DataFrame,
    pick_summary: pd.DataFrame,
    *,
    below_by_ds: dict[str, int],
    floor: float,
    residual_tol_ns: int,
    ref_source: str = "reference",
    picks_source: str = "picks",
    ref_rows: dict | None = None,
    picks_rows: dict | None = None,
) -> Scope:
    """SPEC §2 from the whole (small) reference and a summary of the (large) picks.

    This is :func:`apply_scope` for an engine that never gathers the picks:
    ``pick_summary`` is :func:`summarise_picks` of the picks at or above the
    floor, combined over partitions (counts summed, ``t_min``/``t_max`` as
    min/max), and ``below_by_ds`` counts the picks below the floor per
    dataset.  The returned :class:`Scope` has an empty ``picks`` frame; its
    ``plan`` filters the picks partition by partition.  (:func:`apply_scope`
    is a thin wrapper: it summarises the picks and calls this.)

    The reference's text columns may be ``Categorical`` (as
    ``normalise(..., categorical=True)`` gives them) or object: every per-row
    step — duplicates, the per-(dataset, station) summary, the station and
    span masks, the counts — runs on integer codes; strings are handled only
    for the distinct values.

    ``ref_rows`` and ``picks_rows`` (``rows_read``, ``invalid_dropped``,
    ``dropped_phases``; see :func:`nothing_left`) only improve the message
    when nothing is left to score; without them, ``ref.attrs`` is used.
    """
    if ref.empty:
        raise InputError(nothing_left(ref_source, "reference", ref_rows or ref.attrs.get("pickscale_rows")))
    n_below = int(sum(below_by_ds.values()))
    if pick_summary.empty:
        if n_below:
            raise InputError(f"{picks_source}: no pick has conf >= the floor {floor:g} "
                             f"(all {n_below} are below it); the floor is the lowest value of "
                             "--thresholds.")
        raise InputError(nothing_left(picks_source, "picks", picks_rows or pick_summary.attrs.get("pickscale_rows")))
    # Everything per row runs on integer codes; strings only for the distinct values.
    rc = _RefCodes(ref)
    dup = rc.duplicates()
    n_dup = int(dup.sum())
    dup_counts = np.bincount(rc.d[dup], minlength=len(rc.d_names))
    dup_by_ds = {str(rc.d_names[i]): int(dup_counts[i]) for i in np.flatnonzero(dup_counts)}
    unique = ~dup

    # Per (dataset, station) of the deduplicated rows: n_reference, t_min, t_max.
    distinct, group = _groups(rc.ds, rc.nd * rc.ns)
    n_groups = distinct.size
    n_ref = np.bincount(group[unique], minlength=n_groups).astype(np.int64)
    t_min = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, group[unique], rc.time[unique])
    np.maximum.at(t_max, group[unique], rc.time[unique])
    present = n_ref > 0
    g_d, g_s = distinct // rc.ns, distinct % rc.ns
    g_dataset, g_station = rc.d_names[g_d], rc.s_names[g_s]
    order = sorted(np.flatnonzero(present).tolist(), key=lambda i: (g_dataset[i], g_station[i]))
    ref_summary = pd.DataFrame({"dataset": g_dataset[order], "station": g_station[order],
                                "n_reference": n_ref[order], "t_min": t_min[order], "t_max": t_max[order]})

    plan = plan_scope(ref_summary, pick_summary,
                      residual_tol_ns=residual_tol_ns, ref_source=ref_source,
                      picks_source=picks_source)

    # The plan's decisions as tables over codes: scored (dataset, station) groups, span per dataset.
    d_of = {d: i for i, d in enumerate(rc.d_names.tolist())}
    s_of = {st: i for i, st in enumerate(rc.s_names.tolist())}
    # Every scored station has arrivals, so each of these keys is one of the groups.
    keys = np.array([d_of[d] * rc.ns + s_of[st] for d, sts in plan.stations.items() for st in sts],
                    dtype=np.int64)
    scored_group = np.zeros(n_groups, dtype=bool)
    scored_group[np.searchsorted(distinct, keys)] = True
    has_span = np.zeros(len(rc.d_names), dtype=bool)
    lo = np.zeros(len(rc.d_names), dtype=np.int64)
    hi = np.zeros(len(rc.d_names), dtype=np.int64)
    for i, d in enumerate(rc.d_names.tolist()):
        if d in plan.spans:
            has_span[i] = True
            lo[i], hi[i] = plan.spans[d]
    at_station = unique & scored_group[group]
    in_span = has_span[rc.d] & (rc.time >= lo[rc.d]) & (rc.time <= hi[rc.d])
    scored = at_station & in_span
    ref_scored = ref.loc[scored].reset_index(drop=True)
    outside_counts = np.bincount(rc.d[at_station & ~in_span], minlength=len(rc.d_names))
    kept_counts = np.bincount(rc.d[scored], minlength=len(rc.d_names))
    outside = {str(rc.d_names[i]): int(outside_counts[i]) for i in range(len(rc.d_names))}
    kept = {str(rc.d_names[i]): int(kept_counts[i]) for i in range(len(rc.d_names))}

    fatal = []
    for d in plan.stations:
        if int(kept.get(d, 0)):
            continue
        rows = np.flatnonzero(at_station & (rc.d == d_of[d]))
        summary = pick_summary[(pick_summary["dataset"] == d) & pick_summary["station"].isin(plan.stations[d])]
        shift = shift_hint(rc.s_names[rc.s[rows]], rc.time[rows], summary, residual_tol_ns)
        fatal.append(_span_error(d, plan, int(outside.get(d, 0)), residual_tol_ns, ref_source, picks_source,
                                 shift))
    if fatal:
        raise InputError("\n".join(fatal))

    warnings: list[str] = []
    if n_below:
        warnings.append(f"{picks_source}: {n_below} pick(s) with conf below the floor {floor:g} "
                        "ignored (they take part in nothing).")
    if n_dup:
        warnings.append(f"{ref_source}: {n_dup} duplicate reference row(s) (same dataset, "
                        "station, phase and time after normalisation) kept once.")
    warnings += plan.warnings
    by_ds = {d: dict(c) for d, c in plan.counts.items()}
    for d, n in below_by_ds.items():
        by_ds.setdefault(d, {})["picks_below_floor"] = n
    for d, n in dup_by_ds.items():
        by_ds.setdefault(d, {})["reference_duplicates"] = n
    for d in plan.stations:
        n_out = int(outside.get(d, 0))
        by_ds[d]["reference_outside_span"] = n_out
        if n_out:
            lo, hi = plan.spans[d]
            warnings.append(
                f"dataset {d!r}: {n_out} reference arrival(s) outside the picks' span "
                f"{_iso(lo)} … {_iso(hi)} (first/last pick ± residual_tol) excluded.")
    by_ds = {d: {k: int(c.get(k, 0)) for k in _EXCLUSION_KEYS} for d, c in sorted(by_ds.items())}
    totals = {k: sum(c[k] for c in by_ds.values()) for k in _EXCLUSION_KEYS}
    return Scope(
        reference=ref_scored,
        picks=pick_summary.iloc[:0],
        models=plan.models,
        stations=plan.stations,
        spans=plan.spans,
        exclusions=totals,
        exclusions_by_dataset=by_ds,
        warnings=warnings,
        plan=plan,
        pick_summary=pick_summary,
    )


def _difference(before: pd.Series, after: pd.Series) -> dict[str, int]:
    """Per-key counts removed between two ``value_counts`` (zeros left out)."""
    diff = before.sub(after, fill_value=0).astype(np.int64)
    return {str(k): int(v) for k, v in diff.items() if v}
