"""EQTransformer's ``X_prediction_results.csv``: one row per detection, P and S side by side.

EQTransformer (``EQTransformer/core/predictor.py``, ``mseed_predictor.py``)
writes, per station folder::

    file_name, network, station, instrument_type, station_lat, station_lon, station_elv,
    event_start_time, event_end_time, detection_probability, detection_uncertainty,
    p_arrival_time, p_probability, p_uncertainty, p_snr,
    s_arrival_time, s_probability, s_uncertainty, s_snr

with ``network`` and ``station`` left-justified and padded with spaces
(``"{:<2}"``, ``"{:<4}"``), times as naive Python datetimes
(``2019-07-04 17:33:52.120000``, UTC) and an empty cell where a detection has
no P or no S pick.  :func:`eqt_to_long` turns such a table into pickscale's
long form: one row per pick (``station`` = ``NET.STA``, ``phase``, ``time``,
``conf``), P before S within a detection, detections without a pick skipped.
The normaliser calls it whenever the header matches (:func:`is_eqt_wide`), so
a glob of station folders read in worker tasks works as a single CSV does;
:class:`EqtTables` is the reader in the table of
:mod:`pickscale.io.formats.registry` (a file, a frame or a header).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ..columns import ALIASES
from ..sniff import text_encoding
from .reader import LayoutReader, probe_of

__all__ = ["EqtTables", "EQT_COLUMNS", "is_eqt_wide", "eqt_to_long"]

#: Columns that make a table an EQTransformer prediction table.
EQT_COLUMNS = ("station", "p_arrival_time", "p_probability", "s_arrival_time", "s_probability")
_EQT_DESCRIPTION = "EQTransformer prediction table (p_*/s_* columns read as one row per pick)"


def _keys(columns: Iterable[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in columns:
        out.setdefault(str(c).strip().casefold(), c)
    return out


def is_eqt_wide(columns: Iterable[Any]) -> bool:
    """True for a header with EQTransformer's ``station, p_arrival_time, p_probability, s_…`` and no phase column.

    Examples
    --------
    >>> is_eqt_wide(["network", "station", "p_arrival_time", "p_probability", "s_arrival_time", "s_probability"])
    True
    >>> is_eqt_wide(["station", "phase", "time", "conf"])
    False
    """
    keys = _keys(columns)
    return all(c in keys for c in EQT_COLUMNS) and not any(a in keys for a in ALIASES["phase"])


def _text(col: pd.Series) -> pd.Series:
    return col.astype("str").str.strip().where(col.notna(), "")


def eqt_to_long(raw: pd.DataFrame, carry: Iterable[str] = ()) -> pd.DataFrame:
    """One row per P or S pick of an EQTransformer table (see the module); ``attrs`` kept.

    ``station`` is ``NET.STA`` from the stripped ``network`` and ``station``
    (just ``STA`` without a network); a ``dataset`` or ``model`` column (any
    SPEC §1 alias), if the table has one, is carried along, and so are the
    columns named in ``carry`` (explicit column names).

    Examples
    --------
    >>> raw = pd.DataFrame({"network": ["CI"], "station": ["CLC "], "p_arrival_time": ["2019-07-04 17:33:52.12"],
    ...                     "p_probability": ["0.9"], "s_arrival_time": [""], "s_probability": [""]})
    >>> eqt_to_long(raw).to_dict("records")
    [{'station': 'CI.CLC', 'phase': 'P', 'time': '2019-07-04 17:33:52.12', 'conf': '0.9'}]
    """
    keys = _keys(raw.columns)
    station = _text(raw[keys["station"]])
    if "network" in keys:
        net = _text(raw[keys["network"]])
        station = (net + "." + station).where(net != "", station)
    carried = {}
    for canonical in ("dataset", "model"):
        name = next((keys[a] for a in ALIASES[canonical] if a in keys), None)
        if name is not None:
            carried[str(name)] = raw[name].to_numpy()
    for name in carry:
        key = str(name).strip().casefold()
        if key in keys and key not in ("station", "network"):
            carried[str(keys[key])] = raw[keys[key]].to_numpy()
    n = len(raw)
    rows, phases, times, confs = [], [], [], []
    for i, phase in enumerate(("P", "S")):
        t = raw[keys[f"{phase.lower()}_arrival_time"]]
        has = (t.notna() & (_text(t) != "")).to_numpy(dtype=bool)
        idx = np.flatnonzero(has)
        rows.append(idx * 2 + i)  # detection order, P before S
        phases.append(np.full(idx.size, phase, dtype=object))
        times.append(t.to_numpy()[idx])
        confs.append(raw[keys[f"{phase.lower()}_probability"]].to_numpy()[idx])
    order = np.argsort(np.concatenate(rows), kind="stable")
    src = np.concatenate(rows)[order] // 2
    data: dict[str, Any] = {name: values[src] for name, values in carried.items()}
    data["station"] = station.to_numpy()[src] if n else np.zeros(0, dtype=object)
    data["phase"] = np.concatenate(phases)[order]
    data["time"] = np.concatenate(times)[order]
    data["conf"] = np.concatenate(confs)[order]
    out = pd.DataFrame(data)
    out.attrs.update(raw.attrs)
    out.attrs["pickscale_layout"] = _EQT_DESCRIPTION
    out.attrs["pickscale_wide_rows"] = n
    return out


def _header(content: bytes) -> list[str]:
    """The field names of a text table's first line (after ``#`` comment lines), split at the likeliest delimiter."""
    text = content.decode(text_encoding(content), errors="replace")
    line = next((t for t in text.splitlines() if t.strip() and not t.lstrip().startswith("#")), "")
    delimiter = max((",", ";", "\t"), key=line.count)
    return line.split(delimiter)


class EqtTables(LayoutReader):
    """EQTransformer's ``X_prediction_results.csv``: a file, a frame or a header with its columns (:func:`is_eqt_wide`).

    Examples
    --------
    >>> EqtTables().guess_can_open(list(EQT_COLUMNS)), EqtTables().guess_can_open(["station", "phase", "time"])
    (True, False)
    """

    name = "eqtransformer"
    description = "EQTransformer X_prediction_results.csv"

    def guess_can_open(self, source: Any) -> bool:
        if isinstance(source, pd.DataFrame):
            return is_eqt_wide(source.columns)
        if isinstance(source, (pd.Index, list, tuple)):
            return is_eqt_wide(source)
        probe = probe_of(source)
        if probe is None:
            return False
        try:
            return is_eqt_wide(_header(probe.content))
        except InputError:
            return False

    def open(self, raw: pd.DataFrame, *, carry: Iterable[str] = ()) -> pd.DataFrame:
        return eqt_to_long(raw, carry)
