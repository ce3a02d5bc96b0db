"""What the read tasks make on the workers: picks parts (normalised, encoded as arrays), their outlines.

Between the stages, picks never exist as rows of Python strings: a part is a
few numpy arrays (about 15 bytes a pick) and a small table of the distinct
(dataset, station, model) it holds.  This module imports only numpy, pandas,
pyarrow and the reader, so a worker starts working without loading xarray or
dask.dataframe.

Flow::

    read_part(file or frame)   -> PickPart   (kept on its worker)
    outline(PickPart)          -> PickPart without arrays
    merge_outlines(outlines…)  -> one outline (a reduction tree; to the client: SPEC §2 scope, work plan)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..io import Normalised, check_columns, join_failures, normalise, read_raw
from ..io.normalise import kept_name
from ..io.parquet import is_parquet, read_projected, read_projected_many
from ..io.raw import read_raw_batch
from ..io.storage import current, prefetched, storage_error, using
from ..kernel.rates import PickRates, count_rates, merge_rates, sorted_groups
from ..options import PHASES
from ..scope.placement import pick_offsets, summed_offsets

__all__ = [
    "PickPart",
    "Failure",
    "read_part",
    "read_files",
    "read_reference",
    "merge_parts",
    "read_frame",
    "report_of",
    "encode_picks",
    "outline",
    "part_cells",
    "merge_outlines",
]

_PHASE_CODE = {p: i for i, p in enumerate(PHASES)}
_NO_COLUMNS = pd.DataFrame()


@dataclass
class Failure:
    """An input error raised on a worker, returned as a value.

    Returning it (instead of raising) keeps the client's ``retries`` for
    lost workers: a bad file would otherwise be read again three times.
    """

    message: str
    storage: bool = False  # the object storage failed (endpoint, credentials, access), not the file


@dataclass
class PickPart:
    """The picks of one file (or row groups of it, or one frame partition), normalised and encoded.

    Attributes
    ----------
    report
        What normalising did (its ``frame`` is empty).
    combos
        One row per distinct (dataset, station, model) among the picks at or
        above the floor: ``dataset, station, model, n_picks, t_min, t_max``
        (strings as Python ``str``).  This is the part's SPEC §2 summary.
    below_floor
        Dataset -> picks below the floor (they take part in nothing).
    combo, phase, time, conf
        Per pick at or above the floor: its row of ``combos`` (int16, or int32 past 32,767 rows), phase
        code (int8, 0 = P), time (int64 ns) and confidence (float32 when every
        value is exactly a float32 — as a picker writes them — else float64).
    offsets
        An outline's, with coverage: its picks at the shared threshold inside a window, counted per
        (dataset, model, phase, offset bin) -- where they sit in their windows
        (:func:`pickscale.metrics.grid.offset_bin`; SPEC §5, "Residuals on a grid"); None otherwise.
    rates
        An outline's, given the grid: its picks counted per station at each threshold, and the days they fall
        on (SPEC §20, :mod:`pickscale.kernel.rates`); None otherwise.
    sizes
        An outline's: the picks at or above the floor of each read part it outlines, in the parts' order (int64;
        the exchange encodes small consecutive parts together, :func:`pickscale.engine.exchange.part_groups`);
        None for a part itself.
    """

    report: Normalised
    combos: pd.DataFrame
    below_floor: dict[str, int]
    combo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    phase: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    conf: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    offsets: pd.DataFrame | None = None
    rates: PickRates | None = None
    sizes: np.ndarray | None = None


def _raw(path: str, role: str, row_groups: tuple[int, int] | None = None, columns: Any = None,
         keep: str | tuple[str, ...] | None = None) -> pd.DataFrame:
    """One file as read: Parquet projected (text as dictionaries), anything else by ``read_raw``."""
    if is_parquet(path):
        return read_projected(path, role=role, row_groups=row_groups,
                              columns=_with_kept(check_columns(columns), keep))
    return read_raw(path, role=role)  # hive folder values added as for Parquet (SPEC §1)


def _with_kept(columns: dict[str, str], keep: str | tuple[str, ...] | None) -> dict[str, str]:
    """The explicit columns a Parquet projection reads, with the reference's group columns (SPEC §14) if any."""
    names = (keep,) if isinstance(keep, str) else keep or ()
    return {**columns, **{kept_name(i): name for i, name in enumerate(names)}}


def _joined(failures: list[Failure]) -> Failure:
    return Failure(join_failures([f.message for f in failures]))


def _storage_failure(exc: Exception, path: str, storage_options: dict[str, Any] | None = None) -> Failure | None:
    """A storage failure behind ``exc`` (endpoint, credentials, access, bucket) as a Failure naming what to check."""
    error = storage_error(exc, path, storage_options if storage_options is not None else current())
    return None if error is None else Failure(str(error), storage=True)


def read_part(path: str, *, drop_invalid: bool, floor: float, row_groups: tuple[int, int] | None = None,
              row_offset: int = 0, station_key: str = "as-is", columns: Any = None,
              storage_options: dict[str, Any] | None = None) -> PickPart | Failure:
    """Read, normalise and encode one picks file (or a range of its row groups).

    ``storage_options`` go to fsspec for a URL (:mod:`pickscale.io.storage`); a storage failure (no endpoint,
    no credentials, access refused) comes back as a :class:`Failure` naming the setting to check.
    """
    try:
        with using(storage_options):
            return encode_picks(normalise(_raw(path, "picks", row_groups, columns), role="picks", source=path,
                                          drop_invalid=drop_invalid, row_offset=row_offset, categorical=True,
                                          station_key=station_key, columns=columns), floor)
    except Exception as exc:
        failure = _storage_failure(exc, path, storage_options)
        if failure is not None:
            return failure
        if isinstance(exc, InputError):
            return Failure(str(exc))
        raise


def read_reference(paths: list[str], *, drop_invalid: bool, station_key: str = "as-is",
                   columns: Any = None, keep: str | tuple[str, ...] | None = None,
                   storage_options: dict[str, Any] | None = None) -> Normalised | Failure:
    """Read and normalise reference files (the reference is small: gathered on the client).

    Text columns come back as ``Categorical`` (codes, normalised per distinct
    value): a few bytes an arrival to gather, and the client's SPEC §2 scope
    works on the codes.  ``storage_options`` as in :func:`read_part`.
    """
    with using(storage_options), prefetched(paths):
        return _read_reference(paths, drop_invalid=drop_invalid, station_key=station_key, columns=columns,
                               keep=keep)


def _read_reference(paths: list[str], *, drop_invalid: bool, station_key: str, columns: Any,
                    keep: str | tuple[str, ...] | None) -> Normalised | Failure:
    if len(paths) > 1:  # clean files of one schema: one table (see read_files)

        raw = read_projected_many(paths, role="reference", columns=_with_kept(check_columns(columns), keep))
        if raw is not None:
            try:
                return normalise(raw, role="reference", source=", ".join(paths), drop_invalid=False,
                                 categorical=True, station_key=station_key, columns=columns, keep=keep)
            except InputError:
                pass  # read them one by one: the message then names the file and its rows

    def together(raw: pd.DataFrame, source: str) -> Normalised:
        return normalise(raw, role="reference", source=source, drop_invalid=False, categorical=True,
                         station_key=station_key, columns=columns, keep=keep)

    def alone(path: str) -> Normalised | Failure:
        try:
            return normalise(_raw(path, "reference", None, columns, keep), role="reference", source=path,
                             drop_invalid=drop_invalid, categorical=True, station_key=station_key,
                             columns=columns, keep=keep)
        except Exception as exc:
            failure = _storage_failure(exc, path)
            if failure is not None:
                return failure  # the storage, not the file: the next files would fail alike
            if not isinstance(exc, InputError):
                raise
            return Failure(str(exc))

    results = _in_groups(paths, "reference", together, alone)
    if isinstance(results, Failure):
        return results
    failures = [r for r in results if isinstance(r, Failure)]
    if failures:
        return _joined(failures)
    combined = Normalised.combine([r for r in results if isinstance(r, Normalised)])
    return dataclasses.replace(combined, source=", ".join(dict.fromkeys(paths)))


def _in_groups(paths: list[str], role: str, together: Any, alone: Any) -> list[Any] | Failure:
    """Every file of a batch read: small CSV files of one header as one table, the others one by one.

    ``together(raw, source)`` normalises the frame of several files (raising InputError for any invalid
    row), ``alone(path)`` reads one file as when it is read on its own.  Returns their results (one per
    group of files read together or file read alone, in the order of their first file), or the first
    storage :class:`Failure`.  A group with an invalid row anywhere is cut in halves until each half is
    clean or a single file, which is then read alone: its message names the file and its rows (counted
    from the top of the file) as when it is read alone, and clean files are still read together.
    """
    groups, single = read_raw_batch(paths, role=role) if len(paths) > 1 else ([], list(range(len(paths))))
    results: list[tuple[int, Any]] = []
    pending = [(g.files, g.rows, g.frame) for g in groups]
    while pending:
        files, rows, frame = pending.pop()
        try:
            results.append((files[0], together(frame, ", ".join(paths[i] for i in files))))
            continue
        except Exception:  # an invalid row (or anything else): those files are looked at more closely
            if len(files) == 1:
                single.append(files[0])  # read alone, it raises or reports as it would
                continue
        half = len(files) // 2
        cut = sum(rows[:half])
        pending.append((files[half:], rows[half:], frame.iloc[cut:]))
        pending.append((files[:half], rows[:half], frame.iloc[:cut]))
    for i in sorted(single):
        result = alone(paths[i])
        if isinstance(result, Failure) and result.storage:
            return result
        results.append((i, result))
    results.sort(key=lambda r: r[0])
    return [r for _, r in results]


def read_files(paths: list[str], *, drop_invalid: bool, floor: float, station_key: str = "as-is",
               columns: Any = None, storage_options: dict[str, Any] | None = None) -> PickPart | Failure:
    """Read several (small) picks files in one task: one :class:`PickPart` for all of them.

    A hive layout by station, or a glob of one small CSV file per trace, holds many small files; a task, a
    ``read_csv`` and a normalisation per file would cost more than the reading.  Parquet files of one
    schema are read as one table; small CSV files of one header line are parsed as one text and
    normalised once (:func:`pickscale.io.raw.read_raw_batch`); any other file is read on its own.  Every
    file's input errors are reported together, each as when the file is read alone (a storage failure
    once: the other files would fail alike).  ``storage_options`` as in :func:`read_part`.
    """
    with using(storage_options), prefetched(paths):
        if len(paths) > 1:
            together = _read_together(paths, floor=floor, station_key=station_key, columns=columns)
            if together is not None:
                return together

        def grouped(raw: pd.DataFrame, source: str) -> PickPart:
            return encode_picks(normalise(raw, role="picks", source=source, drop_invalid=False, categorical=True,
                                          station_key=station_key, columns=columns), floor)

        def alone(path: str) -> PickPart | Failure:
            return read_part(path, drop_invalid=drop_invalid, floor=floor, station_key=station_key,
                             columns=columns, storage_options=storage_options)

        try:
            results = _in_groups(paths, "picks", grouped, alone)
        except Exception as exc:
            failure = _storage_failure(exc, paths[0], storage_options)
            if failure is None:
                raise
            return failure
    if isinstance(results, Failure):
        return results
    failures = [r for r in results if isinstance(r, Failure)]
    if failures:
        return _joined(failures)
    merged = merge_parts([r for r in results if isinstance(r, PickPart)])
    return dataclasses.replace(merged, report=dataclasses.replace(merged.report,
                                                                  source=", ".join(dict.fromkeys(paths))))


def _read_together(paths: list[str], *, floor: float, station_key: str, columns: Any) -> PickPart | None:
    """Files of one schema read and normalised as one table; None when any file needs its own look.

    Only clean batches take this path: with an invalid row anywhere, the files
    are read one by one, so that the message names the file and its rows.
    """
    raw = read_projected_many(paths, role="picks", columns=check_columns(columns))
    if raw is None:
        return None
    try:
        norm = normalise(raw, role="picks", source=", ".join(paths), drop_invalid=False, categorical=True,
                         station_key=station_key, columns=columns)
    except InputError:
        return None
    return encode_picks(norm, floor)


def merge_parts(parts: list[PickPart]) -> PickPart:
    """One :class:`PickPart` holding the picks of several: combos re-coded over the union."""
    if len(parts) == 1:
        return parts[0]
    combos = pd.concat([p.combos for p in parts], ignore_index=True)
    names = ["dataset", "station", "model"] + (["cell"] if "cell" in combos else [])
    key, first = sorted_groups(combos, names)  # numbered in the sorted order of the keys
    uniques = combos.iloc[first].reset_index(drop=True)
    offsets = np.cumsum([0] + [len(p.combos) for p in parts])
    combo = np.concatenate([key[offsets[i] + p.combo.astype(np.int64)] for i, p in enumerate(parts)])
    n = len(uniques)
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, key, combos["t_min"].to_numpy(np.int64))
    np.maximum.at(t_max, key, combos["t_max"].to_numpy(np.int64))
    merged = pd.DataFrame({
        **{name: uniques[name].to_numpy(dtype=np.int64 if name == "cell" else object) for name in names},
        "n_picks": np.bincount(key, weights=combos["n_picks"].to_numpy(np.int64), minlength=n).astype(np.int64),
        "t_min": t_min, "t_max": t_max,
    })
    below: dict[str, int] = {}
    for p in parts:
        for d, k in p.below_floor.items():
            below[d] = below.get(d, 0) + k
    conf = np.concatenate([p.conf for p in parts])  # float32 with float64 widens, exactly
    found = [p.offsets for p in parts if p.offsets is not None]
    rates = [p.rates for p in parts if p.rates is not None]
    # The reports' frames are empty (report_of): joined without their columns, then the first stands for all
    # (pandas' concat of empty frames, their text columns' categories united, cost ~10 ms a node of the outline tree).
    report = Normalised.combine([dataclasses.replace(p.report, frame=_NO_COLUMNS) for p in parts])
    report = dataclasses.replace(report, frame=parts[0].report.frame)
    return PickPart(report=report, combos=merged, below_floor=below,
                    combo=combo.astype(np.int16 if n < np.iinfo(np.int16).max else np.int32),
                    phase=np.concatenate([p.phase for p in parts]),
                    time=np.concatenate([p.time for p in parts]), conf=conf,
                    offsets=summed_offsets(pd.concat(found, ignore_index=True)) if found else None,
                    rates=merge_rates(rates) if rates else None,
                    sizes=(np.concatenate([p.sizes for p in parts]) if all(p.sizes is not None for p in parts)
                           else None))


def read_frame(frame: pd.DataFrame, *, source: str, drop_invalid: bool, floor: float, row_offset: int = 0,
               station_key: str = "as-is", columns: Any = None) -> PickPart | Failure:
    """Normalise and encode picks given as a pandas DataFrame (or one partition of a Dask one)."""
    try:
        return encode_picks(normalise(frame, role="picks", source=source, drop_invalid=drop_invalid,
                                      row_offset=row_offset, categorical=True, station_key=station_key,
                                      columns=columns), floor)
    except InputError as exc:
        return Failure(str(exc))


def report_of(part: Normalised) -> Normalised:
    """What normalising did, without the rows (small enough to send to the client)."""
    # A copy: an empty slice is a view that would keep the whole frame's memory alive.
    return dataclasses.replace(part, frame=part.frame.iloc[:0].copy())


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, categories as an object array of str) of a text column."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype("category")
    cats = np.asarray(column.cat.categories.astype(object), dtype=object)
    return column.cat.codes.to_numpy(), cats


def encode_picks(part: Normalised, floor: float) -> PickPart:
    """Picks at or above the floor as (combo, phase, time, conf) arrays and their summary."""
    frame = part.frame
    report = report_of(part)
    conf = frame["conf"].to_numpy(np.float64)
    above = conf >= floor
    d_codes, d_names = _codes(frame["dataset"])
    s_codes, s_names = _codes(frame["station"])
    m_codes, m_names = _codes(frame["model"])
    p_codes, p_names = _codes(frame["phase"])
    below = np.bincount(d_codes[~above].astype(np.int64), minlength=d_names.size)
    below_floor = {str(d_names[i]): int(below[i]) for i in np.flatnonzero(below)}

    conf = conf[above]
    time_ns = frame["time"].to_numpy(np.int64)[above]
    phase_of_cat = np.array([_PHASE_CODE[str(p)] for p in p_names], dtype=np.int8)
    phase = phase_of_cat[p_codes[above]]
    # One integer per (dataset, station, model), then its distinct values in sorted order.
    key = ((d_codes[above].astype(np.int64) * s_names.size + s_codes[above]) * m_names.size
           + m_codes[above])
    distinct, combo = _dense(key, d_names.size * s_names.size * m_names.size)
    n = distinct.size
    m_of, rest = (distinct % m_names.size, distinct // m_names.size) if n else (distinct, distinct)
    s_of, d_of = (rest % s_names.size, rest // s_names.size) if n else (rest, rest)
    n_picks = np.bincount(combo, minlength=n).astype(np.int64)
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, combo, time_ns)
    np.maximum.at(t_max, combo, time_ns)
    combos = pd.DataFrame({
        "dataset": d_names[d_of] if n else np.zeros(0, object),
        "station": s_names[s_of] if n else np.zeros(0, object),
        "model": m_names[m_of] if n else np.zeros(0, object),  # (empty: no category to index)
        "n_picks": n_picks, "t_min": t_min, "t_max": t_max,
    })
    as32 = conf.astype(np.float32)
    if np.array_equal(as32.astype(np.float64), conf):
        conf = as32  # exact: the kernel widens it back to the same float64
    return PickPart(report=report, combos=combos, below_floor=below_floor,
                    combo=combo.astype(np.int16 if n < np.iinfo(np.int16).max else np.int32), phase=phase,
                    time=time_ns, conf=conf)


def _dense(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, each row's index among them), by counting when the key space is small."""
    if space <= max(4 * key.size, 1 << 16):
        present = np.bincount(key, minlength=space) > 0
        distinct = np.flatnonzero(present)
        index = np.cumsum(present) - 1
        return distinct, index[key]
    distinct, inverse = np.unique(key, return_inverse=True)
    return distinct, inverse.reshape(-1)


def part_cells(part: PickPart, coverage: Any) -> np.ndarray:
    """The coverage cell of each pick of a part (int64, −1: in no window; :mod:`pickscale.scope.coverage`)."""
    d_codes, d_names = pd.factorize(part.combos["dataset"].to_numpy(object))
    s_codes, s_names = pd.factorize(part.combos["station"].to_numpy(object))
    combo = part.combo.astype(np.int64)
    return coverage.cells(np.asarray(d_names, object), np.asarray(s_names, object), d_codes[combo],
                          s_codes[combo], part.time)


def _cell_combos(part: PickPart, coverage: Any) -> pd.DataFrame:
    """The part's summary per (dataset, station, model, cell): its picks counted per coverage cell."""
    cells = part_cells(part, coverage) + 1  # 0: in no window
    width = coverage.n_cells + 1
    distinct, row = _dense(part.combo.astype(np.int64) * width + cells, len(part.combos) * width)
    n = distinct.size
    combo_of, cell_of = distinct // width, distinct % width - 1
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, row, part.time)
    np.maximum.at(t_max, row, part.time)
    return pd.DataFrame({
        **{c: part.combos[c].to_numpy(object)[combo_of] for c in ("dataset", "station", "model")},
        "cell": cell_of.astype(np.int64), "n_picks": np.bincount(row, minlength=n).astype(np.int64),
        "t_min": t_min, "t_max": t_max,
    })


def outline(part: PickPart | Failure, coverage: Any = None, thresholds: tuple[float, float] | None = None,
            grid: np.ndarray | None = None) -> PickPart | Failure:
    """The part without its arrays: what the client needs to decide the scope and the plan.

    With a ``coverage`` (:class:`pickscale.scope.Coverage`), its summary is per (dataset, station, model,
    cell): the client decides the common coverage from counts, without a pick; and, with the shared
    ``thresholds`` (P, S), where its picks sit in their windows (:attr:`PickPart.offsets`).  With the
    threshold ``grid``, its pick rates (SPEC §20, :attr:`PickPart.rates`): every pick, whatever the scope.
    """
    if isinstance(part, Failure):
        return part
    rates = None
    if grid is not None:
        rates = count_rates(part.combos, part.combo, part.phase, part.time, part.conf, grid)
    combos = _cell_combos(part, coverage) if coverage is not None else part.combos
    offsets = None
    if coverage is not None and thresholds is not None:
        cells = part_cells(part, coverage)
        offsets = pick_offsets(coverage, cells, part.combos, part.combo, part.phase, part.time, part.conf,
                               thresholds)
    return dataclasses.replace(part, combos=combos, combo=part.combo[:0], phase=part.phase[:0],
                               time=part.time[:0], conf=part.conf[:0], offsets=offsets, rates=rates,
                               sizes=np.array([part.time.size], dtype=np.int64))


def merge_outlines(*items: PickPart | Failure | list[Failure]) -> PickPart | list[Failure]:
    """Outlines of several parts as one (a node of the reduction tree); or every input error, in order.

    The client then receives one summary of (dataset, station, model) rows,
    not one per part: its size does not grow with the number of read parts.
    """
    failures = [f for item in items for f in (item if isinstance(item, list) else [item])
                if isinstance(f, Failure)]
    if failures:
        return failures
    return merge_parts([item for item in items if isinstance(item, PickPart)])
