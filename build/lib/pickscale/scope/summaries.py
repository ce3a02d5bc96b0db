"""Per-row codes and per-key summaries of the reference and the picks (SPEC §2's inputs to its decisions).

Summaries are small and additive across partitions (counts add, ``t_min`` /
``t_max`` take min/max), so a Dask engine builds them per partition, combines
them and decides once (:func:`pickscale.scope.plan_scope`).  Per-row work runs
on integer codes; strings are handled only for the distinct values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "text_codes",
    "ReferenceCodes",
    "dedupe_reference",
    "drop_below_floor",
    "summarise_reference",
    "summarise_picks",
    "pick_cells",
    "scored_stations",
]


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


def _duplicate_rows(group: np.ndarray | Callable[[np.ndarray | None], np.ndarray],
                    time_ns: np.ndarray) -> np.ndarray:
    """Per row: an earlier row has the same ``group`` (an integer key) and time (``duplicated(keep="first")``).

    One integer hash of (time, group) — wrapping int64 arithmetic — finds the
    candidate rows (every true duplicate and its first occurrence, plus rare
    collisions); the exact test then runs on those few rows only.  ``group``
    may be a function of the rows wanted (None: every row), so that the keys
    are not held beside the hash and its order (one array per arrival less at
    the client's peak).
    """
    key_of = group if callable(group) else (lambda rows: group if rows is None else group[rows])
    n = time_ns.size
    dup = np.zeros(n, dtype=bool)
    if n < 2:
        return dup
    with np.errstate(over="ignore"):
        h = time_ns.astype(np.int64, copy=False) * np.int64(1_000_003)
        h += key_of(None).astype(np.int64, copy=False)  # (in place: one array per arrival, not three)
    order = np.argsort(h)
    h = h[order]  # sorted once: neighbours compared without two more copies
    same = h[1:] == h[:-1]
    del h
    if not same.any():
        return dup
    both = np.zeros(n, dtype=bool)  # in sorted order: a row equal to its neighbour on either side
    both[1:] |= same
    both[:-1] |= same
    cand = np.sort(order[both])  # back in row order: "first" is the first row
    pairs = pd.DataFrame({"g": key_of(cand), "t": time_ns[cand]}, copy=False)
    dup[cand] = pairs.duplicated(keep="first").to_numpy()
    return dup


def _int32(codes: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes as int32 (a column has far fewer than 2^31 distinct values), with their names."""
    return codes.astype(np.int32), names


class ReferenceCodes:
    """The reference as integer codes: dataset, station, phase per row, and time; summaries on those codes."""

    def __init__(self, ref: pd.DataFrame) -> None:
        # int32 codes: three per arrival is what the client holds while the scope is decided (issue 22).
        self.d, self.d_names = _int32(*text_codes(ref["dataset"]))
        self.s, self.s_names = _int32(*text_codes(ref["station"]))
        self.p, self.p_names = _int32(*text_codes(ref["phase"]))
        self.time = ref["time"].to_numpy(np.int64)
        self.nd, self.ns = max(len(self.d_names), 1), max(len(self.s_names), 1)
        self.ds = self.d.astype(np.int64) * self.ns + self.s  # one integer per (dataset, station)
        self._d_of: dict[str, int] | None = None
        self._s_of: dict[str, int] | None = None

    def duplicates(self) -> np.ndarray:
        """Per row: a repeat of an earlier (dataset, station, phase, time)."""
        k = max(len(self.p_names), 1)

        def key_of(rows: np.ndarray | None) -> np.ndarray:
            return self.ds * k + self.p if rows is None else self.ds[rows] * k + self.p[rows]

        return _duplicate_rows(key_of, self.time)


    def summary(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        """:func:`summarise_reference` of the ``rows`` (a mask), on codes.

        Returns the distinct (dataset, station) keys of every row, each row's
        index among them, and the summary of the selected rows, sorted by
        (dataset, station).
        """
        distinct, group = _groups(self.ds, self.nd * self.ns)
        n_groups = distinct.size
        n_ref = np.bincount(group[rows], minlength=n_groups).astype(np.int64)
        t_min = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
        t_max = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(t_min, group[rows], self.time[rows])
        np.maximum.at(t_max, group[rows], self.time[rows])
        g_dataset, g_station = self.d_names[distinct // self.ns], self.s_names[distinct % self.ns]
        order = sorted(np.flatnonzero(n_ref > 0).tolist(), key=lambda i: (g_dataset[i], g_station[i]))
        summary = pd.DataFrame({"dataset": g_dataset[order], "station": g_station[order],
                                "n_reference": n_ref[order], "t_min": t_min[order], "t_max": t_max[order]})
        return distinct, group, summary

    def count_by_dataset(self, rows: np.ndarray) -> dict[str, int]:
        """Number of ``rows`` (a mask) per dataset name, zeros included."""
        counts = np.bincount(self.d[rows], minlength=len(self.d_names))
        return {str(self.d_names[i]): int(counts[i]) for i in range(len(self.d_names))}

    def dataset_code(self, name: str) -> int:
        """The code of a dataset name."""
        if self._d_of is None:
            self._d_of = {d: i for i, d in enumerate(self.d_names.tolist())}
        return self._d_of[name]

    def station_code(self, name: str) -> int:
        """The code of a station name."""
        if self._s_of is None:
            self._s_of = {st: i for i, st in enumerate(self.s_names.tolist())}
        return self._s_of[name]


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
    dup = ReferenceCodes(ref).duplicates() if len(ref) else np.zeros(0, dtype=bool)
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


def summarise_reference(ref: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, station): ``n_reference``, ``t_min``, ``t_max``.

    Combine partial summaries by summing ``n_reference`` and taking the
    min/max of the times per key.
    """
    g = ref.groupby(["dataset", "station"], sort=True, observed=True)["time"]
    out = g.agg(n_reference="size", t_min="min", t_max="max").reset_index()
    return out.astype({"n_reference": np.int64, "t_min": np.int64, "t_max": np.int64})


def pick_cells(picks: pd.DataFrame, coverage) -> np.ndarray:
    """The coverage cell of each pick (int64, −1 outside every window; :mod:`pickscale.scope.coverage`)."""
    d_codes, d_names = text_codes(picks["dataset"])
    s_codes, s_names = text_codes(picks["station"])
    return coverage.cells(d_names, s_names, d_codes, s_codes, picks["time"].to_numpy(np.int64))


def summarise_picks(picks: pd.DataFrame, *, coverage=None) -> pd.DataFrame:
    """Per (dataset, station, model): ``n_picks``, ``t_min``, ``t_max``.

    ``picks`` must already be at or above the floor.  With a ``coverage``
    (:class:`~pickscale.scope.coverage.Coverage`), per (dataset, station,
    model, cell) instead.
    """
    keys = ["dataset", "station", "model"]
    if coverage is not None:
        picks = picks.assign(cell=pick_cells(picks, coverage))
        keys.append("cell")
    g = picks.groupby(keys, sort=True, observed=True)["time"]
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
