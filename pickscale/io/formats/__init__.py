"""Inputs as the tools write them: bulletins through ObsPy, SeisBench picks, EQTransformer tables.

:func:`as_frame` is the one entry point of the engine (``engine.load``): it
turns an in-memory object or a bulletin file into a raw pandas frame that
the ordinary normaliser (SPEC §1) then reads, or returns ``None`` for
anything else (CSV/Parquet paths, frames), which takes the usual path.

============================================  ==========================================================
input                                          read as
============================================  ==========================================================
ObsPy ``Catalog``; QuakeML / SC3ML /           reference arrivals: the picks of each event's preferred
NonLinLoc / hypoDD … file, folder or glob      origin's arrivals (:mod:`.bulletins`, :mod:`.quakeml`)
SeisBench ``PickList``, a list of objects      picks: ``trace_id, peak_time, peak_value, phase``
with SeisBench ``Pick``'s attributes           (:mod:`.seisbench`, duck-typed)
``{name: picks}``                              picks: one model per key (reference: one dataset per key)
EQTransformer ``X_prediction_results.csv``     recognised by its header in the normaliser (:mod:`.eqtransformer`)
============================================  ==========================================================

PhaseNet's ``picks.csv`` (``station_id, phase_time, phase_score,
phase_type``) and QuakeScope's Parquet (``tid, pha, peak, conf, rid``) need
no conversion: SPEC §1's aliases cover their columns.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from ...errors import InputError
from ..normalised import NOTES_ATTR
from .bulletins import BULLETIN_SUFFIXES, OBSPY_HINT, bulletin_files, read_bulletins
from .eqtransformer import eqt_to_long, is_eqt_wide
from .quakeml import catalog_to_frame, is_catalog
from .seisbench import is_pick_collection, is_pick_like, picks_to_frame

__all__ = [
    "as_frame",
    "catalog_to_frame",
    "read_bulletins",
    "bulletin_files",
    "is_catalog",
    "picks_to_frame",
    "is_pick_like",
    "is_eqt_wide",
    "eqt_to_long",
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
]

_LABEL = {"picks": "model", "reference": "dataset"}


def _one(obj: Any, role: str, *, manual_only: bool, dataset: str | None, label: str | None,
         source: str) -> pd.DataFrame | None:
    """One object (not a dict) as a raw frame, or None when it is no object of ours."""
    if is_catalog(obj):
        frame = catalog_to_frame(obj, manual_only=manual_only, dataset=dataset if label is None else None,
                                 source=source)
        if role == "picks":
            raise InputError(f"{source}: an ObsPy Catalog holds no pick confidence; pass it as the reference.")
    elif is_pick_collection(obj) or _is_pick_iterator(obj):
        items = obj if isinstance(obj, (list, tuple)) else list(obj)
        frame = picks_to_frame(items)
        frame.attrs["pickscale_description"] = f"{source} ({len(items):,} picks)"
    elif isinstance(obj, pd.DataFrame) and label is not None:
        frame = obj.copy(deep=False)
        frame.attrs = dict(obj.attrs)
    else:
        return None
    if label is not None:
        column = _LABEL[role]
        frame.insert(0, column, pd.Series([label] * len(frame), dtype=object, index=frame.index))
        if role == "picks" and any(str(c).strip().casefold() in ("model",) for c in frame.columns[1:]):
            raise InputError(f"{source}: picks given under the model name {label!r} already have a model column.")
    elif dataset is not None and "dataset" not in frame.columns:
        frame.insert(0, "dataset", dataset)
    return frame


def _is_pick_iterator(obj: Any) -> bool:
    # Generators and other one-pass iterables are looked at only if they are iterators of picks;
    # any other iterator is not a source pickscale reads (resolve_sources would refuse it as well).
    return (not isinstance(obj, (str, bytes, os.PathLike, pd.DataFrame, dict, list, tuple))
            and hasattr(obj, "__iter__") and hasattr(obj, "__next__"))


def as_frame(source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None) -> pd.DataFrame | None:
    """An input that is not a CSV/Parquet path or a frame, as a raw frame for the normaliser; else ``None``.

    Parameters
    ----------
    source
        What the user passed as the reference or the picks: an ObsPy
        ``Catalog``; a bulletin file, folder, glob or list of them (QuakeML
        ``.xml``/``.qml``/``.quakeml`` or any name ending in
        :data:`BULLETIN_SUFFIXES`, or XML under another name; read with
        ``obspy.read_events`` on the client — bulletins are small); a
        SeisBench ``PickList`` or any list or iterator of objects with
        SeisBench ``Pick``'s ``trace_id, peak_time, peak_value, phase``; or a
        dict of name → one of these (or a DataFrame): the name is the
        **model** of picks, the **dataset** of a reference.
    role
        ``"reference"`` or ``"picks"``.
    manual_only
        Bulletins: keep only the picks whose ``evaluation_mode`` is ``"manual"``.
    dataset
        The dataset name of a bulletin or pick list (default: none, which SPEC
        §1 reads as the single dataset ``all``).

    Returns
    -------
    pandas.DataFrame or None
        Columns in SPEC §1 names (``[dataset|model,] station, phase, time[, conf]``);
        ``attrs["pickscale_description"]`` says what it was,
        ``attrs["pickscale_notes"]`` what was left out (reported as warnings),
        ``attrs["pickscale_files"]`` the bulletin files read.

    Raises
    ------
    InputError
        A bulletin without ObsPy installed (names the extra), XML that is not
        a bulletin, a bulletin ObsPy cannot read, or a Catalog given as picks.
    """
    if role not in _LABEL:
        raise ValueError(f"role must be 'reference' or 'picks', not {role!r}")
    what = f"the {role}"
    if isinstance(source, dict):
        if not source or not all(isinstance(k, str) for k in source):
            return None
        frames = []
        for name, obj in source.items():
            frame = _one(obj, role, manual_only=manual_only, dataset=dataset, label=name,
                         source=f"{what} {_LABEL[role]} {name!r}")
            if frame is None:
                files = bulletin_files(obj) if role == "reference" else None
                if files is None:
                    raise InputError(
                        f"{what}: the value under {name!r} is a {type(obj).__name__}; a dict maps a "
                        f"{_LABEL[role]} name to a SeisBench PickList (or a list of pick-like objects), "
                        "an ObsPy Catalog, a bulletin file or a DataFrame.")
                frame = read_bulletins(files, manual_only=manual_only)
                frame.insert(0, "dataset", name)
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True)
        out.attrs = {
            NOTES_ATTR: [n for f in frames for n in f.attrs.get(NOTES_ATTR, [])],
            "pickscale_description": f"<{len(frames)} {_LABEL[role]}s: {', '.join(map(repr, source))}>",
            "pickscale_files": [p for f in frames for p in f.attrs.get("pickscale_files", [])],
        }
        return out
    frame = _one(source, role, manual_only=manual_only, dataset=dataset, label=None,
                 source=f"the {role} Catalog" if is_catalog(source) else f"the {role} picks")
    if frame is not None:
        return frame
    files = bulletin_files(source)
    if files is None:
        return None
    if role == "picks":
        raise InputError(
            f"{os.fspath(source) if isinstance(source, (str, os.PathLike)) else files[0]}: is a bulletin; "
            "a bulletin is read as the reference (its picks carry no confidence).")
    desc = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    return read_bulletins(files, manual_only=manual_only, dataset=dataset, description=desc)
