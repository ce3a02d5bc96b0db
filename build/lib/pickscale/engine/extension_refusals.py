"""What an extension is refused for once its new part is scored (SPEC §11), and the extent it then records.

:func:`check_extent` compares the new run's extent (its pick spans, models and reference digests,
:mod:`pickscale.engine.extent`) with the store's: a (dataset, model) stored over an overlapping span (unless
replaced), a reference that disagrees over the same span, or arrivals where the two stretches' scored spans
meet are refused.  :func:`merged_extent` is the extent the extended store records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InputError, StoreError
from .extent import digest_of

if TYPE_CHECKING:
    import xarray as xr

    from ..scope.arrivals import Arrivals

__all__ = ["check_extent", "merged_extent", "arrivals_where_spans_meet", "iso", "overlap"]


def iso(ns: int) -> str:
    return pd.Timestamp(int(ns), tz="UTC").strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def overlap(a: Sequence[int], b: Sequence[int]) -> bool:
    return int(a[0]) <= int(b[1]) and int(b[0]) <= int(a[1])


def check_extent(stored: xr.Dataset, new: xr.Dataset, reference: Arrivals, *, replace: bool
                  ) -> tuple[dict[str, bool], dict[str, list[str]]]:
    """The refusals that need the new run; per dataset whether both sides scored the same arrivals, and the
    stored models replaced.  ``reference``: the new run's normalised reference, as buckets where they are
    (:attr:`~pickscale.engine.stages.Run.reference`): its digests are computed there (:func:`digest_of`)."""
    old = stored.attrs.get("extent")
    if not isinstance(old, dict):
        raise StoreError("the store records no extent (pick spans and reference hashes): an earlier pickscale "
                         "wrote it; score all the inputs again with `pickscale score`.")
    mine = new.attrs["extent"]
    same: dict[str, bool] = {}
    replaced: dict[str, list[str]] = {}
    for d, (entry,) in mine["datasets"].items():
        stored_entries = old["datasets"].get(d, [])
        if not stored_entries:
            continue
        clashes = []
        for m, (span,) in mine["models"][d].items():
            for s in old["models"].get(d, {}).get(m, []):
                if overlap(span, s):
                    clashes.append(f"{m} (stored {iso(s[0])} – {iso(s[1])}, now {iso(span[0])} – "
                                   f"{iso(span[1])})")
                    replaced.setdefault(d, []).append(m) if m not in replaced.get(d, []) else None
        if clashes and not replace:
            raise InputError(f"dataset {d!r}: already stored over an overlapping span: {'; '.join(clashes[:5])}. "
                             "Pass replace to score these models again in place of the stored ones.",
                             options=("replace",))
        overlapping = [e for e in stored_entries if overlap(entry["picks"], e["picks"])]
        same[d] = bool(overlapping)
        for e in overlapping:
            digest, n = digest_of(reference, d, stations=e["stations"], span=e["scored"])
            if digest != e["reference_sha256"]:
                raise InputError(
                    f"dataset {d!r}: the reference disagrees with the one stored for {iso(e['scored'][0])} – "
                    f"{iso(e['scored'][1])} ({e['arrivals']} arrival(s) stored at its {len(e['stations'])} "
                    f"station(s), {n} now): new models must be scored against the same reference; score all the "
                    "inputs again with `pickscale score` if the reference changed.")
        # A stretch of time that does not overlap a stored one may still meet it: both scored spans
        # (picks ± residual_tol) can share a window at their ends. An arrival of either side at a station
        # scored on both sides inside that window could be matched by the other side's picks in one run, and
        # is not when the parts are scored apart: refused, whichever side holds it (the same answer in
        # either order).
        for e in stored_entries:
            if overlap(entry["picks"], e["picks"]):
                continue
            met = arrivals_where_spans_meet(e, entry)
            if met:
                lo, hi = max(entry["scored"][0], e["scored"][0]), min(entry["scored"][1], e["scored"][1])
                said = ", ".join(f"{station} ({side})" for station, side in met[:5]) + (
                    f" and {len(met) - 5} more" if len(met) > 5 else "")
                raise InputError(
                    f"dataset {d!r}: the store's and the new picks' scored spans meet between {iso(lo)} and "
                    f"{iso(hi)}, and reference arrivals lie there at {len(met)} station(s) scored on both sides: "
                    f"{said}. Scored apart, those arrivals could be matched otherwise than in one run (or count "
                    "twice). Cut the catalogue at a quiet gap (no arrival within residual_tol of either side's "
                    "picks), or score all the inputs together with `pickscale score`.")
    return same, replaced


def arrivals_where_spans_meet(stored: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    """The stations scored on both sides with a reference arrival (of either side) where the two stretches'
    scored spans meet, each with the side(s) holding it: ``[(station, "stored" | "new" | "stored and new")]``.

    The pick spans do not overlap, so the window where the scored spans meet reaches the end of each (it runs
    from the later stretch's scored start to the earlier one's scored end): a side has an arrival at a station
    inside it exactly when its ``[first, last]`` arrival there overlaps the window.  A stored stretch written
    before the stretches kept their arrival spans is taken to have arrivals wherever the window is.
    """
    lo, hi = max(new["scored"][0], stored["scored"][0]), min(new["scored"][1], stored["scored"][1])
    if lo > hi:
        return []
    window = (lo, hi)

    def holds(entry: dict[str, Any]) -> dict[str, bool]:
        spans = entry.get("arrival_spans")
        if spans is None:
            return {str(s): True for s in entry["stations"]}
        return {str(s): span is not None and overlap(span, window) for s, span in zip(entry["stations"], spans)}

    old_side, new_side = holds(stored), holds(new)
    met = []
    for station in sorted(set(old_side) & set(new_side)):
        sides = [name for name, side in (("stored", old_side), ("new", new_side)) if side[station]]
        if sides:
            met.append((station, " and ".join(sides)))
    return met


def merged_extent(old: dict[str, Any], new: dict[str, Any], replaced: dict[str, list[str]]) -> dict[str, Any]:
    datasets = {d: list(v) for d, v in old["datasets"].items()}
    models = {d: {m: list(s) for m, s in v.items()} for d, v in old["models"].items()}
    for d, entries in new["datasets"].items():
        datasets.setdefault(d, []).extend(entries)
        datasets[d].sort(key=lambda e: (e["picks"][0], e["picks"][1]))
    for d, per in new["models"].items():
        for m, spans in per.items():
            kept = [] if m in replaced.get(d, []) else models.get(d, {}).get(m, [])
            models.setdefault(d, {})[m] = sorted(kept + spans)
    merged: dict[str, Any] = {"datasets": dict(sorted(datasets.items())),
                              "models": {d: dict(sorted(v.items())) for d, v in sorted(models.items())}}
    key = old.get("station_key", new.get("station_key"))
    if key is not None:
        merged["station_key"] = key
    return merged
