"""SPEC §2 "Coverage": the windows each model was run on, as cells, and the common coverage of a dataset.

The windows of one key — (dataset, station), or the station alone when the coverage file has no dataset
column — cut time into *cells*: the pieces between consecutive window edges (half-open ``[a, b)`` in ns,
a window ``[start, end]`` being ``[start, end + 1)``).  Every window is a run of whole cells, so a cell is
either inside or outside each window, and which models saw a cell is one row of a small boolean table
(:class:`Coverage`).  Picks are counted per (dataset, station, model, cell) on the workers
(:func:`pickscale.engine.parts.outline`), arrivals per cell on the client: the client then decides the
common coverage of every dataset from counts alone, and never sees a pick.

:func:`apply_coverage` is the decision: each model's own coverage; the models of a dataset (those with a
pick inside their own coverage); the dataset's **common coverage** — the cells every one of its models was
run on; arrivals and picks outside it excluded and counted, per model.  Imports numpy and pandas only (the
workers use :meth:`Coverage.cells`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["Coverage", "CoverageResult", "apply_coverage", "COVERAGE_KEYS"]

#: The exclusions coverage adds to SPEC §2's (always present; 0 without coverage).
COVERAGE_KEYS = ("reference_outside_coverage", "picks_outside_coverage")
_EVERY = ""  # the model slot of windows every model saw


@dataclass(frozen=True)
class Coverage:
    """Windows as cells: which (key, time) falls in which cell, and which models saw each cell.

    Build it with :meth:`from_windows` (a frame from :func:`pickscale.io.coverage_file.read_coverage`).

    Attributes
    ----------
    source
        Where the windows came from (for messages).
    by_dataset, by_model
        Whether the file had a ``dataset`` / ``model`` column.
    key_dataset, key_station
        The keys, sorted (``key_dataset`` all ``""`` when not ``by_dataset``).
    bounds, bound_start
        Every key's cell edges, concatenated (int64 ns, ascending within a key); key k's are
        ``bounds[bound_start[k]:bound_start[k + 1]]``.
    cell_start
        Key k's cells are numbered ``cell_start[k] … cell_start[k + 1] − 1``.
    slots, covered
        Model names (``""`` first: windows every model saw) and, per cell and slot, whether a window of
        that slot holds the cell.
    n_windows
        Rows of the file.
    window_start
        Per cell: the start (int64 ns) of the latest-starting window, of any model, that holds it -- where
        the window a time falls in begins (SPEC §5, "Residuals on a grid": offsets into windows).

    Examples
    --------
    >>> w = pd.DataFrame({"station": ["A", "A"], "model": ["m", "n"], "start": [0, 5], "end": [9, 19]})
    >>> cov = Coverage.from_windows(w)
    >>> cov.bounds.tolist(), cov.covered.astype(int).tolist()  # cells [0,5) [5,10) [10,20); slots "", m, n
    ([0, 5, 10, 20], [[0, 1, 0], [0, 1, 1], [0, 0, 1]])
    >>> cov.cells(np.array([""], object), np.array(["A"], object), np.zeros(3, int), np.zeros(3, int),
    ...           np.array([4, 9, 20])).tolist()
    [0, 1, -1]
    """

    source: str
    by_dataset: bool
    by_model: bool
    key_dataset: np.ndarray
    key_station: np.ndarray
    bounds: np.ndarray
    bound_start: np.ndarray
    cell_start: np.ndarray
    slots: tuple[str, ...]
    covered: np.ndarray
    n_windows: int = 0
    window_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _key_of: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_windows(cls, windows: pd.DataFrame, *, source: str | None = None) -> Coverage:
        by_dataset, by_model = "dataset" in windows, "model" in windows
        n = len(windows)
        ds = windows["dataset"].to_numpy(object) if by_dataset else np.full(n, "", dtype=object)
        st = windows["station"].to_numpy(object)
        models = windows["model"].to_numpy(object) if by_model else np.full(n, _EVERY, dtype=object)
        keys = pd.MultiIndex.from_arrays([ds, st])
        key, uniques = pd.factorize(keys, sort=True)
        key = np.asarray(key, dtype=np.int64)
        key_dataset = np.asarray(uniques.get_level_values(0), dtype=object)
        key_station = np.asarray(uniques.get_level_values(1), dtype=object)
        lo = windows["start"].to_numpy(np.int64)
        hi = windows["end"].to_numpy(np.int64)
        # Half-open [start, end + 1); an end at the last representable ns stays inside int64.
        hi = np.where(hi < np.iinfo(np.int64).max, hi + 1, hi)
        slots = (_EVERY, *sorted({str(m) for m in models} - {_EVERY}))
        slot_of = {s: i for i, s in enumerate(slots)}
        slot = np.array([slot_of[str(m)] for m in models], dtype=np.int64)
        n_keys = len(key_station)
        # Every key's distinct edges: sort (key, point) once.
        pk = np.concatenate([key, key])
        pt = np.concatenate([lo, hi])
        order = np.lexsort((pt, pk))
        pk, pt = pk[order], pt[order]
        first = np.ones(pk.size, dtype=bool)
        first[1:] = (pk[1:] != pk[:-1]) | (pt[1:] != pt[:-1])
        pk, bounds = pk[first], pt[first]
        n_bounds = np.bincount(pk, minlength=n_keys)
        bound_start = np.concatenate([[0], np.cumsum(n_bounds)]).astype(np.int64)
        n_cells = np.maximum(n_bounds - 1, 0)
        cell_start = np.concatenate([[0], np.cumsum(n_cells)]).astype(np.int64)
        total = int(cell_start[-1])
        marks = np.zeros((total + 1, len(slots)), dtype=np.int64)
        for k in np.unique(key):
            b = bounds[bound_start[k]:bound_start[k + 1]]
            rows = np.flatnonzero(key == k)
            i0 = np.searchsorted(b, lo[rows]) + cell_start[k]
            i1 = np.searchsorted(b, hi[rows]) + cell_start[k]
            np.add.at(marks, (i0, slot[rows]), 1)
            np.add.at(marks, (i1, slot[rows]), -1)
        covered = np.cumsum(marks, axis=0)[:-1] > 0
        return cls(source=source or str(windows.attrs.get("source", "coverage")), by_dataset=by_dataset,
                   by_model=by_model, key_dataset=key_dataset, key_station=key_station, bounds=bounds,
                   bound_start=bound_start, cell_start=cell_start, slots=slots, covered=covered, n_windows=n,
                   window_start=_window_starts(key, lo, hi, bounds, bound_start, cell_start))

    def held(self, cell: np.ndarray) -> np.ndarray:
        """Per cell id (−1 allowed): whether some window (of any model) holds it -- a cell between two windows
        of its key does not."""
        return np.concatenate([self.covered.any(axis=1), [False]])[np.asarray(cell, dtype=np.int64)]

    def offsets(self, cell: np.ndarray, time_ns: np.ndarray) -> np.ndarray:
        """Per row: ns since the start of the window it is in (:attr:`window_start` of its cell, one that
        :meth:`held` says a window holds).

        Examples
        --------
        >>> w = pd.DataFrame({"station": ["A", "A"], "start": [0, 5], "end": [9, 19]})  # overlapping
        >>> cov = Coverage.from_windows(w)
        >>> cov.window_start.tolist(), cov.offsets(np.array([0, 1, 2]), np.array([4, 7, 12])).tolist()
        ([0, 5, 5], [4, 2, 7])
        """
        return np.asarray(time_ns, dtype=np.int64) - self.window_start[np.asarray(cell, dtype=np.int64)]

    @property
    def n_cells(self) -> int:
        return int(self.cell_start[-1])

    def _keys(self) -> dict[tuple[str, str], int]:
        if not self._key_of:
            self._key_of.update({(str(d), str(s)): i for i, (d, s) in
                                 enumerate(zip(self.key_dataset.tolist(), self.key_station.tolist()))})
        return self._key_of

    def cells(self, d_names: np.ndarray, s_names: np.ndarray, d_codes: np.ndarray, s_codes: np.ndarray,
              time_ns: np.ndarray) -> np.ndarray:
        """The cell of each row (int64; −1: in no window of its key), rows given as dataset/station codes."""
        out = np.full(time_ns.size, -1, dtype=np.int64)
        if time_ns.size == 0:
            return out
        keys = self._keys()
        ns = max(len(s_names), 1)
        pair = d_codes.astype(np.int64) * ns + s_codes.astype(np.int64)
        distinct, inverse = np.unique(pair, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        edges = np.searchsorted(inverse[order], np.arange(distinct.size + 1))
        for j, p in enumerate(distinct.tolist()):
            d = str(d_names[p // ns]) if self.by_dataset else ""
            k = keys.get((d, str(s_names[p % ns])))
            if k is None:
                continue
            rows = order[edges[j]:edges[j + 1]]
            b = self.bounds[self.bound_start[k]:self.bound_start[k + 1]]
            local = np.searchsorted(b, time_ns[rows], side="right") - 1
            inside = (local >= 0) & (local < b.size - 1)
            out[rows[inside]] = local[inside] + self.cell_start[k]
        return out

    def own(self, cell: np.ndarray, model: str) -> np.ndarray:
        """Per cell id (−1 allowed): whether ``model`` was run on it (its windows, or windows of every model)."""
        seen = self.covered[:, 0].copy()
        if model in self.slots[1:]:
            seen |= self.covered[:, self.slots.index(model)]
        return np.concatenate([seen, [False]])[cell]  # cell −1 reads the trailing False

    def common(self, models: list[str]) -> np.ndarray:
        """Per cell (plus a trailing False for −1): whether every one of ``models`` was run on it."""
        seen = self.covered[:, 0].copy()
        named = [self.slots.index(m) for m in models if m in self.slots[1:]]
        if len(named) == len(models) and named:
            seen |= np.logical_and.reduce(self.covered[:, named], axis=1)
        return np.concatenate([seen, [False]])


def _window_starts(key: np.ndarray, lo: np.ndarray, hi: np.ndarray, bounds: np.ndarray, bound_start: np.ndarray,
                   cell_start: np.ndarray) -> np.ndarray:
    """Per cell, the latest start among the windows holding it (windows as rows: key, [lo, hi))."""
    out = np.full(int(cell_start[-1]), np.iinfo(np.int64).min, dtype=np.int64)
    if not key.size:
        return out
    i0 = np.empty(key.size, dtype=np.int64)
    i1 = np.empty(key.size, dtype=np.int64)
    for k in np.unique(key):
        rows = np.flatnonzero(key == k)
        b = bounds[bound_start[k]:bound_start[k + 1]]
        i0[rows] = np.searchsorted(b, lo[rows]) + cell_start[k]
        i1[rows] = np.searchsorted(b, hi[rows]) + cell_start[k]
    # Every (window, cell it holds) once: a window of w cells is w rows; the latest start wins.
    width = i1 - i0
    cells = np.repeat(i0 - np.cumsum(width) + width, width) + np.arange(int(width.sum()))
    np.maximum.at(out, cells, np.repeat(lo, width))
    return out


@dataclass
class CoverageResult:
    """What :func:`apply_coverage` decided.

    Attributes
    ----------
    common
        Per dataset with models: its common coverage, per cell plus a trailing False for −1
        (:meth:`Coverage.common`); the considered arrivals of such a dataset outside it are excluded (those of a
        dataset without models are kept).
    reference_kept
        The considered arrivals kept, over every dataset.
    pick_summary
        The picks' summary per (dataset, station, model) over the picks inside the common coverage.
    keep
        The (dataset, station, model, cell) rows of picks kept: what the exchange lets through.
    counts
        Dataset -> ``reference_outside_coverage``, ``picks_outside_coverage``.
    report
        JSON-ready record per dataset and model: arrivals covered, lost, picks outside.
    warnings
        One line per dataset with exclusions.
    """

    common: dict[str, np.ndarray]
    reference_kept: int
    pick_summary: pd.DataFrame
    keep: pd.DataFrame
    counts: dict[str, dict[str, int]]
    report: dict
    warnings: list[str]


def apply_coverage(coverage: Coverage, ref_cells: pd.DataFrame, pick_cells: pd.DataFrame) -> CoverageResult:
    """Each dataset's common coverage, and the arrivals and picks outside it (SPEC §2, "Coverage").

    Parameters
    ----------
    coverage
        The windows as cells.
    ref_cells
        The considered reference rows (not duplicates) counted per (dataset, cell): ``dataset, cell, n``
        (cell −1: in no window; :func:`pickscale.scope.rows.start_facts`, summed over the buckets).
    pick_cells
        The picks' summary per (dataset, station, model, cell): ``n_picks, t_min, t_max``.

    Raises
    ------
    InputError
        The file names models (a ``model`` column) but a model of the picks has no window and no window is
        marked for every model.
    """
    models_in_picks = sorted(set(pick_cells["model"].astype(str)))
    if coverage.by_model and not coverage.covered[:, 0].any():
        unnamed = [m for m in models_in_picks if m not in coverage.slots[1:]]
        if unnamed:
            raise InputError(
                f"{coverage.source}: the coverage file names the models {', '.join(map(repr, coverage.slots[1:]))} "
                f"(column model), but the picks' model(s) {', '.join(map(repr, unnamed))} have no window there: "
                "add their windows, or rows with an empty model for windows every model was run on.")
    cell = pick_cells["cell"].to_numpy(np.int64)
    model = pick_cells["model"].astype(str).to_numpy(object)
    dataset = pick_cells["dataset"].astype(str).to_numpy(object)
    n_picks = pick_cells["n_picks"].to_numpy(np.int64)
    own = np.zeros(len(pick_cells), dtype=bool)
    for m in models_in_picks:
        rows = model == m
        own[rows] = coverage.own(cell[rows], m)
    kept = np.zeros(len(pick_cells), dtype=bool)
    counts: dict[str, dict[str, int]] = {}
    report: dict[str, dict] = {}
    warnings: list[str] = []
    common_of: dict[str, np.ndarray] = {}
    ref_dataset = ref_cells["dataset"].astype(str).to_numpy(object)
    ref_cell = ref_cells["cell"].to_numpy(np.int64)
    ref_n = ref_cells["n"].to_numpy(np.int64)
    ref_kept = int(ref_n.sum())
    datasets = sorted(set(dataset.tolist()) | set(ref_dataset[ref_n > 0].tolist()))
    for d in datasets:
        in_d = dataset == d
        models = sorted(set(model[in_d & own & (n_picks > 0)].tolist()))
        ref_rows = ref_dataset == d
        if not models:  # no model was run where it picked: every pick here is outside, the arrivals stay
            n_pick_out = int(n_picks[in_d].sum())  # for SPEC §2's other rules (a dataset without picks)
            if n_pick_out:
                counts[d] = {"reference_outside_coverage": 0, "picks_outside_coverage": n_pick_out}
                warnings.append(f"dataset {d!r}: all {n_pick_out} pick(s) lie outside the windows of their "
                                f"model ({coverage.source}) and are excluded.")
            continue
        common = coverage.common(models)
        common_of[d] = common
        kept[in_d] = common[cell[in_d]] & own[in_d]
        r_cells, r_n = ref_cell[ref_rows], ref_n[ref_rows]
        r_common = common[r_cells]
        n_common, n_ref = int(r_n[r_common].sum()), int(r_n.sum())
        ref_kept -= n_ref - n_common
        per_model: dict[str, dict[str, int]] = {}
        for m in sorted(set(model[in_d].tolist())):
            r_own = coverage.own(r_cells, m)
            rows = in_d & (model == m)
            per_model[m] = {
                "reference_covered": int(r_n[r_own].sum()),
                "reference_lost": int(r_n[r_own & ~r_common].sum()),
                "picks_outside_own": int(n_picks[rows & ~own].sum()),
                "picks_outside_common": int(n_picks[rows & own & ~kept].sum()),
            }
        n_ref_out = n_ref - n_common
        n_pick_out = int(n_picks[in_d & ~kept].sum())
        counts[d] = {"reference_outside_coverage": n_ref_out, "picks_outside_coverage": n_pick_out}
        report[d] = {"models": per_model, "reference_in_common_coverage": n_common}
        warnings += _words(d, coverage, per_model, n_ref_out, n_pick_out, n_common, n_ref)
    keep = pick_cells.loc[kept, ["dataset", "station", "model", "cell"]].reset_index(drop=True)
    summary = (pick_cells.loc[kept].groupby(["dataset", "station", "model"], sort=True, observed=True)
               .agg(n_picks=("n_picks", "sum"), t_min=("t_min", "min"), t_max=("t_max", "max")).reset_index())
    summary = summary.astype({"dataset": object, "station": object, "model": object, "n_picks": np.int64,
                              "t_min": np.int64, "t_max": np.int64})
    return CoverageResult(common=common_of, reference_kept=ref_kept, pick_summary=summary, keep=keep,
                          counts=counts, report=report, warnings=warnings)


def _words(d: str, coverage: Coverage, per_model: dict[str, dict[str, int]], n_ref_out: int, n_pick_out: int,
           n_common: int, n_ref: int) -> list[str]:
    out = []
    if n_ref_out:
        out.append(f"dataset {d!r}: {n_ref_out} of {n_ref} reference arrival(s) outside the coverage "
                   f"({coverage.source}) excluded: no window that every model of the dataset was run on holds them.")
    if coverage.by_model and any(c["reference_lost"] for c in per_model.values()):
        each = "; ".join(f"{m!r} covered {c['reference_covered']}, lost {c['reference_lost']}"
                         for m, c in per_model.items())
        out.append(f"dataset {d!r}: the models were run on different windows; every model is scored over their "
                   f"common coverage ({n_common} arrival(s)): {each}. To score a model over all of its own "
                   "windows, score it alone.")
    if n_pick_out:
        each = "; ".join(f"{m!r} {c['picks_outside_own']} outside its own windows"
                         + (f", {c['picks_outside_common']} in windows not every model was run on"
                            if coverage.by_model else "")
                         for m, c in per_model.items() if c["picks_outside_own"] or c["picks_outside_common"])
        out.append(f"dataset {d!r}: {n_pick_out} pick(s) outside the coverage excluded ({each}).")
    return out
