"""Out-of-sample choice (SPEC §16): ``select_on``, the two parts of the inputs, and scoring them.

``select_on="before:2024-01-01"`` cuts the inputs at a time (an arrival or a pick belongs to the selection
part when its time is before the date); ``select_on="stations:0.5[:SEED]"`` takes a seeded share of each
dataset's scored stations (every arrival and pick at those stations).  :func:`score_out_of_sample` scores
all the inputs (the results every table reads), then each part as a run of its own with the same options,
and :func:`pickscale.results.selection.attach` adds the readings of the report part at the selection part's
choice.

A part is read as the whole is -- the same read tasks -- with one filter applied to each task's rows on the
worker that read them (:meth:`Part.restrict`, called by :func:`pickscale.engine.stages.prepare` of a part):
nothing of the inputs is gathered on the client, and a row's part depends on its own time (or its dataset and
station) alone, never on row order or partitioning.

Examples
--------
>>> parse_select_on("before:2024-01-01").text
'before:2024-01-01T00:00:00Z'
>>> parse_select_on("stations:0.5").text, parse_select_on("stations:0.25:7").seed
('stations:0.5:0', 7)
>>> selected_stations(["A", "B", "C", "D"], 0.5, 0)
['B', 'C']
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import InputError, OptionsError, PickscaleWarning
from ..io import Normalised
from .parts import PickPart

if TYPE_CHECKING:
    import xarray as xr

    from .inputs import Source
    from .stages import Keywords

__all__ = ["SelectOn", "Part", "parse_select_on", "selected_stations", "score_out_of_sample"]

_FORMS = "'before:DATE' (e.g. before:2024-01-01) or 'stations:FRACTION[:SEED]' (e.g. stations:0.5 or stations:0.5:3)"


@dataclass(frozen=True)
class SelectOn:
    """A parsed ``select_on``: ``kind`` ``"before"`` (``before_ns``) or ``"stations"`` (``fraction``, ``seed``)."""

    kind: str
    text: str  # canonical: before:<ISO-8601 UTC>, stations:<fraction>:<seed>
    before_ns: int = 0
    fraction: float = 0.0
    seed: int = 0

    def describe(self, side: str) -> str:
        """The part ``side`` (``"select"`` or ``"report"``) in words, for messages."""
        if self.kind == "before":
            when = self.text.split(":", 1)[1]
            return (f"the selection part (arrivals and picks before {when})" if side == "select" else
                    f"the report part (arrivals and picks at or after {when})")
        return (f"the selection part ({self.fraction:g} of each dataset's stations, seed {self.seed})"
                if side == "select" else f"the report part (the other {1 - self.fraction:g} of the stations)")


def _bad(value: Any, why: str) -> OptionsError:
    return OptionsError(f"select_on {value!r}: {why}; give {_FORMS}.", options=("select_on",))


def parse_select_on(value: Any) -> SelectOn:
    """``select_on`` checked (before anything is read); an :class:`OptionsError` naming it otherwise.

    Examples
    --------
    >>> parse_select_on("before:2024-03-01T12:00:00+02:00").before_ns == pd.Timestamp("2024-03-01T10:00Z").value
    True
    >>> parse_select_on("stations:1.5")
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: select_on 'stations:1.5': the fraction must lie strictly between 0 and 1; ...
    """
    if isinstance(value, SelectOn):
        return value
    if not isinstance(value, str):
        raise _bad(value, f"is a {type(value).__name__}, not text")
    kind, _, rest = value.strip().partition(":")
    if kind == "before":
        try:
            stamp = pd.Timestamp(rest.strip())
        except (ValueError, TypeError, OverflowError):
            stamp = None
        if stamp is None or stamp is pd.NaT or not rest.strip():
            raise _bad(value, f"{rest.strip()!r} is not an ISO-8601 date or time")
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
        ns = int(stamp.value)
        text = stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ns % 10**9:09d}".rstrip("0") if ns % 10**9 else "") + "Z"
        return SelectOn("before", f"before:{text}", before_ns=ns)
    if kind == "stations":
        fields = rest.split(":")
        if len(fields) > 2 or not fields[0].strip():
            raise _bad(value, "the stations form is stations:FRACTION or stations:FRACTION:SEED")
        try:
            fraction = float(fields[0])
        except ValueError:
            raise _bad(value, f"the fraction {fields[0]!r} is not a number") from None
        if not (math.isfinite(fraction) and 0.0 < fraction < 1.0):
            raise _bad(value, "the fraction must lie strictly between 0 and 1")
        seed = 0
        if len(fields) == 2:
            if not fields[1].strip().isdigit():
                raise _bad(value, f"the seed {fields[1]!r} is not a whole number >= 0")
            seed = int(fields[1])
        return SelectOn("stations", f"stations:{fraction:g}:{seed}", fraction=fraction, seed=seed)
    raise _bad(value, "unknown form")


def _rank_key(seed: int, station: str) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}:{station}".encode()).hexdigest(), station


def selected_stations(stations: Sequence[str], fraction: float, seed: int) -> list[str]:
    """SPEC §16: the stations of the selection part among one dataset's scored ``stations``, sorted by name.

    The stations ordered by the SHA-256 (hex) of ``f"{seed}:{station}"`` (UTF-8; ties by name), the first
    ``floor(fraction * n + 1/2)`` of them.
    """
    names = sorted({str(s) for s in stations})
    k = math.floor(fraction * len(names) + 0.5)
    return sorted(sorted(names, key=lambda s: _rank_key(seed, s))[:k])


@dataclass(frozen=True)
class Part:
    """One part of the inputs: ``side`` ``"select"`` or ``"report"``, and the rule that decides a row's part."""

    side: str
    before_ns: int | None = None
    stations: Mapping[str, frozenset[str]] | None = None  # the selection part's stations, per dataset

    def keep(self, dataset: Any, station: Any, time_ns: np.ndarray | None) -> np.ndarray:
        """Whether each row (its dataset, station, time in int64 ns: unused by a split on stations) belongs here."""
        if self.before_ns is not None:
            chosen = np.asarray(time_ns, dtype=np.int64) < self.before_ns
        else:
            chosen = _in_selection(dataset, station, self.stations or {})
        return chosen if self.side == "select" else ~chosen

    def restrict(self, ref_src: Source, pick_src: Source) -> tuple[Source, Source]:
        """The inputs' read tasks, each followed by this part's filter (:meth:`keep`) of its rows, applied on
        the worker that read them (:func:`pickscale.engine.stages.prepare` of a part)."""
        from dask import delayed

        shared = delayed(self, pure=True, traverse=False)
        return (dataclasses.replace(ref_src, parts=[delayed(_reference_part, pure=True)(p, shared)
                                                    for p in ref_src.parts]),
                dataclasses.replace(pick_src, parts=[delayed(_pick_part, pure=True)(p, shared)
                                                     for p in pick_src.parts]))


def _codes(values: Any) -> tuple[np.ndarray, np.ndarray]:
    column = pd.Series(values) if not isinstance(values, pd.Series) else values
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype(object).astype("category")
    return column.cat.codes.to_numpy(np.int64), np.asarray(column.cat.categories.astype(str), dtype=object)


def _in_selection(dataset: Any, station: Any, chosen: Mapping[str, frozenset[str]]) -> np.ndarray:
    d_codes, d_names = _codes(dataset)
    s_codes, s_names = _codes(station)
    table = np.zeros((max(d_names.size, 1), max(s_names.size, 1)), dtype=bool)
    for i, d in enumerate(d_names):
        table[i] = np.isin(s_names, list(chosen.get(str(d), ())))
    if d_codes.size == 0:
        return np.zeros(0, dtype=bool)
    return table[d_codes, s_codes]


def _reference_part(part: Any, rule: Part) -> Any:
    if not isinstance(part, Normalised):  # a Failure: said as it is
        return part
    frame = part.frame
    mask = rule.keep(frame["dataset"], frame["station"], frame["time"].to_numpy(np.int64))
    if mask.all():
        return part
    kept = frame[mask].reset_index(drop=True)
    kept.attrs = dict(frame.attrs)
    return dataclasses.replace(part, frame=kept)


def _pick_part(part: Any, rule: Part) -> Any:
    if not isinstance(part, PickPart):
        return part
    combos = part.combos
    combo = part.combo.astype(np.int64)
    if rule.before_ns is not None:  # by each pick's own time
        mask = rule.keep(None, None, part.time)
    else:  # by its (dataset, station): decided once per row of the part's summary
        mask = rule.keep(combos["dataset"].to_numpy(object), combos["station"].to_numpy(object), None)[combo]
    if mask.all():
        return part
    used = np.unique(combo[mask])
    index = np.full(len(combos), -1, dtype=np.int64)
    index[used] = np.arange(used.size)
    new = index[combo[mask]]
    time = part.time[mask]
    n = used.size
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, new, time)
    np.maximum.at(t_max, new, time)
    kept = combos.iloc[used].reset_index(drop=True).assign(
        n_picks=np.bincount(new, minlength=n).astype(np.int64), t_min=t_min, t_max=t_max)
    return dataclasses.replace(part, combos=kept, combo=new.astype(part.combo.dtype), phase=part.phase[mask],
                               time=time, conf=part.conf[mask])


def _reusable(source: Any) -> Any:
    """An input read three times: an iterator (of SeisBench picks …) is taken into a list first."""
    return list(source) if isinstance(source, Iterator) else source


def score_out_of_sample(select_on: Any, reference: Any, picks: Any, keywords: Keywords) -> xr.Dataset:
    """SPEC §16: the results of all the inputs, with the out-of-sample readings of ``select_on``'s parts.

    ``keywords``: the run's (:class:`pickscale.engine.stages.Keywords`).  Each part is scored with the same
    options (:func:`pickscale.engine.stages.prepare` of the :class:`Part`); its own warnings are not said
    again (they are the whole run's, on fewer rows).  A part without an arrival in a dataset, or that cannot
    be scored, is an :class:`OptionsError` naming ``select_on``.
    """
    # lazy: the filters of this module (_reference_part, _pick_part) run on the workers, which never import
    # results/ or the run's stages (xarray)
    from ..results.selection import attach
    from .stages import execute, finalize, prepare

    rule = parse_select_on(select_on)
    reference, picks = _reusable(reference), _reusable(picks)
    run = prepare(reference, picks, keywords)
    main = finalize(run, execute(run))
    datasets = [str(d) for d in main["dataset"].values]
    selected: dict[str, list[str]] | None = None
    if rule.kind == "before":
        parts = {side: Part(side, before_ns=rule.before_ns) for side in ("select", "report")}
    else:
        names = np.asarray([str(s) for s in main["station"].values], dtype=object)
        scored = main["station_scored"].transpose("dataset", "station").values
        selected = {}
        for d, dataset in enumerate(datasets):
            stations = names[scored[d]]
            chosen = selected_stations(stations, rule.fraction, rule.seed)
            if not chosen or len(chosen) == len(stations):
                raise OptionsError(
                    f"select_on {rule.text}: dataset {dataset} has {len(stations)} scored station(s), and "
                    f"{rule.fraction:g} of them leaves {'no' if not chosen else 'every'} station in the selection "
                    "part: each part needs at least one station (give another fraction, or select on time with "
                    "before:DATE).", options=("select_on",))
            selected[dataset] = chosen
        frozen = {d: frozenset(s) for d, s in selected.items()}
        parts = {side: Part(side, stations=frozen) for side in ("select", "report")}
    results = {}
    for side, part in parts.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PickscaleWarning)
                one = prepare(reference, picks, keywords, part=part)
                results[side] = finalize(one, execute(one))
        except InputError as exc:
            raise OptionsError(f"select_on {rule.text}: {rule.describe(side)} cannot be scored on its own: {exc}",
                               options=("select_on",)) from None
        n_ref = results[side]["n_reference"].sum(["station", "phase"])
        have = {str(d): int(n) for d, n in zip(n_ref["dataset"].values, n_ref.values)}
        empty = [d for d in datasets if have.get(d, 0) == 0]
        if empty:
            raise OptionsError(f"select_on {rule.text}: {rule.describe(side)} holds no scored reference arrival "
                               f"of dataset {', '.join(empty)}; both parts need arrivals in every dataset (choose "
                               "another date or fraction).", options=("select_on",))
    return attach(main, results["select"], results["report"], rule=rule.text, selected=selected)
