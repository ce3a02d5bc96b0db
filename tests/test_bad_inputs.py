"""The bad-input catalogue of issue 6, end to end.

Every case is run twice:

- through the command, ``pickscale score ...`` (``pickscale.cli.main`` in-process, on one shared
  cluster through ``--scheduler``): exit status 2, one ``pickscale: error:`` message that names the
  file, the column or rows and what was expected, no traceback, and nothing written — no
  ``results.zarr``, no table, no ``figures/``, no temporary sibling, not even the ``--out`` folder;
- through the Python API (``pickscale.score`` on Dask's local scheduler, ``pickscale.save``,
  ``pickscale.config.load_config``): a typed exception (``InputError``, ``OptionsError``,
  ``StoreError``) with the same content.

With ``--drop-invalid`` the row-level cases complete, with a warning that counts the rows dropped.
One case runs the installed console script with its own LocalCluster, where the workers' own logs
would show (they must not: no "Compute Failed", no traceback).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pickscale
from pickscale.cli import main
from pickscale.config import load_config
from pickscale.errors import InputError, OptionsError, PickscaleError, StoreError
from tests.helpers.catalogues import S, iso, plain_catalogue

# SPEC §1 aliases (canonical first), as the message must list them.
ALIASES = {
    "station": ("station", "trace_id", "tid", "station_id", "sta"),
    "phase": ("phase", "phase_hint", "phase_type", "pha"),
    "time": ("time", "pick_time", "arrival_time", "peak_time", "phase_time", "peak", "onset", "timestamp"),
    "conf": ("conf", "confidence", "probability", "peak_value", "phase_score", "prob", "score"),
}
P_LIKE = "P, Pg, Pn, Pb, P*"


def row(i: int) -> str:
    """How a message names the data row with 0-based index i (the header is row 1)."""
    return f"row {i + 2}"


# --------------------------------------------------------------------------- the catalogue


@pytest.fixture(scope="module")
def cat():
    # One dataset, six stations (so that "no shared station" has more than five spellings a side).
    return plain_catalogue(seed=8, n_datasets=1, n_stations=7, n_events=6)


@dataclass
class Built:
    """One case, written to files."""

    reference: Path
    picks: Path
    argv: list[str] = field(default_factory=list)  # extra command-line arguments
    api: dict = field(default_factory=dict)  # extra keyword arguments of pickscale.score
    config: Path | None = None  # a study file (API: load_config)
    needles: list[str] = field(default_factory=list)  # what the message must contain
    error: type = InputError
    invalid_rows: int | None = None  # row-level cases: rows --drop-invalid drops


@dataclass
class Case:
    id: str
    build: Callable  # (cat, folder, ref_path, picks_path) -> Built
    row_level: bool = False  # --drop-invalid applies
    xfail: str = ""  # a fix outside this files is pending (the reason)


def _csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def _bytes(data: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _ref_with(cat, folder, changes: dict) -> Path:
    """The reference with some cells changed: {(column, row index): value}."""
    ref = cat.reference.copy()
    for (col, i), value in changes.items():
        ref.loc[i, col] = value
    return _csv(ref, folder / "bad_reference.csv")


# Each builder gets the catalogue, a folder and the paths of the good reference and picks.

def b_missing_file(cat, d, ref, picks):
    p = d / "no-such-file.csv"
    return Built(p, picks, needles=[str(p), "no such file or folder", "--reference"])


def b_empty_folder(cat, d, ref, picks):
    (d / "empty-folder").mkdir()
    (d / "empty-folder" / "notes.txt").write_text("not a table")
    p = d / "empty-folder"
    return Built(ref, p, needles=[
        str(p), "holds no *.csv, *.csv.gz, *.csv.bz2, *.csv.xz, *.csv.zst, *.parquet or *.pq file", "--picks"])


def b_empty_file(cat, d, ref, picks):
    p = _bytes(b"", d / "empty.csv")
    return Built(p, picks, needles=[str(p), "empty (0 bytes)"])


def b_blank_file(cat, d, ref, picks):
    p = _bytes(b"\n  \n\t\n", d / "blank.csv")
    return Built(p, picks, needles=[str(p), "no header and no rows"])


def b_header_only(cat, d, ref, picks):
    p = _bytes(b"dataset,model,station,phase,time,conf\n", d / "header.csv")
    return Built(ref, p, needles=[str(p), "has a header (dataset, model, station, phase, time, conf) but no data rows"])


def b_empty_gzip(cat, d, ref, picks):
    p = _bytes(gzip.compress(b""), d / "empty.csv.gz")
    return Built(ref, p, needles=[str(p), "empty"])


def b_empty_parquet(cat, d, ref, picks):
    p = d / "empty.parquet"
    cat.picks.iloc[:0].to_parquet(p, index=False)
    return Built(ref, p, needles=[str(p), "the Parquet file has no rows"])


def b_binary(cat, d, ref, picks):
    data = bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)) + b"\x00"
    p = _bytes(data, d / "picks.csv")
    return Built(ref, p, needles=[str(p), "binary data", "neither a CSV (text) nor a Parquet file"])


def b_pipe_delimited(cat, d, ref, picks):
    p = _bytes(cat.reference.to_csv(index=False, sep="|").encode(), d / "reference.csv")
    return Built(p, picks, needles=[str(p), "no column for 'station', 'phase' and 'time'",
                                    "Columns found: 'dataset|station|phase|time'",
                                    "separated by something other than ',', ';' or tab"])


def b_html(cat, d, ref, picks):
    page = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please log in</body></html>\n"
    p = _bytes(page, d / "picks.csv")
    return Built(ref, p, needles=[str(p), "HTML/XML page, not a CSV or Parquet file"])


def b_xlsx(cat, d, ref, picks):
    p = _bytes(b"PK\x03\x04" + b"\x14\x00" * 200, d / "reference.csv")
    return Built(p, picks, needles=[str(p), "ZIP archive", "export it as CSV"])


def b_text_as_parquet(cat, d, ref, picks):
    p = _bytes(cat.picks.to_csv(index=False).encode(), d / "picks.parquet")
    return Built(ref, p, needles=[str(p), "not a Parquet file (it does not start with 'PAR1')"])


def b_corrupt_parquet(cat, d, ref, picks):
    good = d / "good.parquet"
    cat.picks.to_parquet(good, index=False)
    data = good.read_bytes()
    p = _bytes(data[:4] + data[len(data) // 2:], d / "picks.parquet")
    # The footer survives the cut, but its offsets point past the end: refused before any read, saying so.
    return Built(ref, p, needles=[str(p), "the Parquet footer is damaged or forged", "beyond the end of the"])


def b_not_utf8(cat, d, ref, picks):
    text = cat.reference.assign(station=np.where(np.arange(len(cat.reference)) == 3, "CH.ZÜR",
                                                 cat.reference["station"])).to_csv(index=False)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if "ZÜR" in row)
    p = _bytes(text.encode("latin-1"), d / "reference.csv")
    return Built(p, picks, needles=[str(p), "byte 0xDC", f"(line {line} of the file) is not UTF-8",
                                    "save the file as UTF-8"])


def b_missing_time_column(cat, d, ref, picks):
    p = _csv(cat.reference.rename(columns={"time": "when"}), d / "reference.csv")
    return Built(p, picks, needles=[str(p), "the reference table has no column for 'time'",
                                    "Columns found: 'dataset', 'station', 'phase', 'when'",
                                    "accepted under any of these names (any case): " + ", ".join(ALIASES["time"])])


def b_missing_conf_column(cat, d, ref, picks):
    p = _csv(cat.picks.rename(columns={"conf": "certainty"}), d / "picks.csv")
    return Built(ref, p, needles=[str(p), "the picks table has no column for 'conf'", "'certainty'",
                                  ", ".join(ALIASES["conf"])])


def b_missing_columns_parquet(cat, d, ref, picks):
    p = d / "picks.parquet"
    cat.picks.drop(columns=["station", "phase"]).to_parquet(p, index=False)
    return Built(ref, p, needles=[str(p), "no column for 'station' and 'phase'",
                                  "Columns found: 'dataset', 'model', 'time', 'conf'",
                                  ", ".join(ALIASES["station"]), ", ".join(ALIASES["phase"])])


def b_missing_time_column_parquet(cat, d, ref, picks):
    # Parquet is read with column projection: the message must still list what the file holds.
    p = d / "reference.parquet"
    cat.reference.rename(columns={"time": "when"}).assign(amplitude=1.5).to_parquet(p, index=False)
    return Built(p, picks, needles=[str(p), "the reference table has no column for 'time'",
                                    "Columns found: 'dataset', 'station', 'phase', 'when', 'amplitude'",
                                    ", ".join(ALIASES["time"])])


def b_unparseable_times(cat, d, ref, picks):
    p = _ref_with(cat, d, {("time", 1): "yesterday", ("time", 4): "2024-13-40T00:00:00"})
    return Built(p, picks, invalid_rows=2, needles=[
        str(p), "2 invalid row(s) of", "header = row 1", "time (column 'time')", "unreadable time",
        f"{row(1)}: 'yesterday'", f"{row(4)}: '2024-13-40T00:00:00'", "Expected ISO-8601", "--drop-invalid"])


def _epoch(cat, factor: int) -> pd.Series:
    return (cat.picks_canonical["time"].to_numpy(np.int64) // (10**9 // factor)).astype(str)


def b_times_in_ms(cat, d, ref, picks):
    p = _csv(cat.picks.assign(time=_epoch(cat, 1000)), d / "picks.csv")
    first = _epoch(cat, 1000)[0]
    return Built(ref, p, invalid_rows=len(cat.picks), needles=[
        str(p), f"{row(0)}: '{first}'", "look like milliseconds since 1970", "divide by 1000"])


def b_times_in_us(cat, d, ref, picks):
    p = _csv(cat.picks.assign(time=_epoch(cat, 10**6)), d / "picks.csv")
    return Built(ref, p, invalid_rows=len(cat.picks), needles=[
        str(p), "look like microseconds since 1970", "divide by 1e6"])


def b_times_in_ms_parquet(cat, d, ref, picks):
    p = d / "reference.parquet"
    ms = cat.ref_canonical["time"].to_numpy(np.int64) // 10**6
    cat.reference.assign(time=ms).to_parquet(p, index=False)
    return Built(p, picks, invalid_rows=len(cat.reference), needles=[
        str(p), f"{row(0)}: '{ms[0]}'", "look like milliseconds since 1970", "divide by 1000"])


def b_mixed_time_zones(cat, d, ref, picks):
    # Written in local time (UTC+2) with the offset, except three rows where it was left off.
    local = cat.picks_canonical["time"].to_numpy(np.int64) + 2 * 3600 * S
    text = [iso(t, "naive") + "+02:00" for t in local]
    naive_rows = [2, 5, 9]
    for i in naive_rows:
        text[i] = iso(local[i], "naive")
    p = _csv(cat.picks.assign(time=text), d / "picks.csv")
    return Built(ref, p, invalid_rows=3, needles=[
        str(p), "3 invalid row(s)", "time (column 'time')", "without a UTC offset",
        *[f"{row(i)}: '{text[i]}'" for i in naive_rows], f"{row(0)}: '{text[0]}'", "give every time its UTC offset"])


def _bad_times(values: dict, *, parquet: bool = False, column=None):
    """Picks with some times replaced ({row index: value}); the message names each row and its value."""
    def build(cat, d, ref, picks):
        if column is not None:  # a typed column (Parquet): the whole column, as given
            frame = cat.picks.assign(time=column(cat))
            shown = {i: str(frame["time"].iloc[i]) for i in values}
        else:
            frame = cat.picks.copy()
            frame["time"] = frame["time"].astype(object)
            for i, v in values.items():
                frame.loc[i, "time"] = v
            shown = dict(values)
        if parquet:
            p = d / "picks.parquet"
            d.mkdir(parents=True, exist_ok=True)
            frame.to_parquet(p, index=False)
        else:
            p = _csv(frame, d / "picks.csv")
        return Built(ref, p, invalid_rows=len(values), needles=[
            str(p), f"{len(values)} invalid row(s)", "time (column 'time')", "unreadable time",
            *[f"{row(i)}: {v!r}" for i, v in shown.items()], "Expected ISO-8601", "--drop-invalid"])
    return build


def _seconds(cat) -> np.ndarray:
    return cat.picks_canonical["time"].to_numpy(np.int64) // S


def _int_seconds_with(i: int, value: int):
    def column(cat):
        x = _seconds(cat).copy()
        x[i] = value
        return x
    return column


def _float_seconds_with(i: int, value: float):
    def column(cat):
        x = (cat.picks_canonical["time"].to_numpy(np.int64) / S).copy()
        x[i] = value
        return x
    return column


def b_timestamp_year_1_parquet(cat, d, ref, picks):
    # A Parquet timestamp column with a date pandas' nanoseconds cannot hold.
    import datetime

    ns = cat.picks_canonical["time"].to_numpy(np.int64)
    stamps = [datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=int(t) // 1000) for t in ns]
    stamps[4] = datetime.datetime(1, 1, 1)
    table = pa.Table.from_pandas(cat.picks.drop(columns="time"), preserve_index=False)
    table = table.append_column("time", pa.array(stamps, type=pa.timestamp("us", tz="UTC")))
    d.mkdir(parents=True, exist_ok=True)
    p = d / "picks.parquet"
    pq.write_table(table, p)
    return Built(ref, p, invalid_rows=1, needles=[str(p), "1 invalid row(s)", "time (column 'time')",
                                                  "unreadable time (or one outside 1677-2262)",
                                                  f"{row(4)}: '0001-01-01 00:00:00+00:00'"])


def _conf_case(value, *extra):
    def build(cat, d, ref, picks):
        frame = cat.picks.copy()
        frame.loc[3, "conf"] = value
        p = _csv(frame, d / "picks.csv")
        return Built(ref, p, invalid_rows=1, needles=[
            str(p), "1 invalid row(s)", "conf (column 'conf')", f"{row(3)}: {value!r}",
            "Expected a number in [0, 1]", *extra])
    return build


def b_conf_percent(cat, d, ref, picks):
    pct = [f"{100 * c:.2f}" for c in cat.picks_canonical["conf"]]
    p = _csv(cat.picks.assign(conf=pct), d / "picks.csv")
    bad = [i for i, c in enumerate(cat.picks_canonical["conf"]) if 100 * c > 1.0 or 100 * c < 0][:5]
    return Built(ref, p, invalid_rows=sum(float(x) > 1 for x in pct), needles=[
        str(p), "conf (column 'conf')", *[f"{row(i)}: '{pct[i]}'" for i in bad[:2]],
        "conf looks like a percentage (0-100); divide by 100"])


def b_station_empty(cat, d, ref, picks):
    frame = cat.picks.copy()
    frame.loc[[0, 7], "station"] = ["", "  "]
    p = _csv(frame, d / "picks.csv")
    return Built(ref, p, invalid_rows=2, needles=[str(p), "station (column 'station'): 2 row(s) with an empty station",
                                                  f"{row(0)}: ''", f"{row(7)}: '  '"])


def b_phase_empty(cat, d, ref, picks):
    p = _ref_with(cat, d, {("phase", 2): ""})
    return Built(p, picks, invalid_rows=1, needles=[str(p), "phase (column 'phase'): 1 row(s) with an empty phase",
                                                    f"{row(2)}: ''"])


def b_only_unknown_phases_reference(cat, d, ref, picks):
    frame = cat.reference.assign(phase=np.where(np.arange(len(cat.reference)) % 3 == 0, "pP", "PKP"))
    p = _csv(frame, d / "reference.csv")
    n_pp = int((np.arange(len(frame)) % 3 == 0).sum())
    return Built(p, picks, needles=[
        str(p), "no reference arrival is left to score",
        f"none of its {len(frame)} row(s) has a P- or S-like phase",
        f"'PKP': {len(frame) - n_pp}", f"'pP': {n_pp}", P_LIKE, "case-sensitive"])


def b_only_unknown_phases_picks(cat, d, ref, picks):
    p = _csv(cat.picks.assign(phase="Lg"), d / "picks.csv")
    return Built(ref, p, needles=[str(p), "no pick is left to score",
                                  f"none of its {len(cat.picks)} row(s) has a P- or S-like phase "
                                  f"(found 'Lg': {len(cat.picks)})", P_LIKE])


def b_no_shared_station(cat, d, ref, picks):
    # The picks spell every station with another network code and a location code.
    frame = cat.picks.assign(station="XX." + cat.picks["station"].str.split(".").str[1] + ".00")
    p = _csv(frame, d / "picks.csv")
    ref_st = sorted(set(cat.reference["station"]))
    pick_st = sorted(set(frame["station"]))
    assert len(ref_st) > 5 and len(pick_st) > 5
    return Built(ref, p, needles=[
        str(ref), str(p), "dataset 'ds0'", "share no station",
        "stations: " + ", ".join(repr(s) for s in ref_st[:5]) + f" … ({len(ref_st)} in all)",
        "stations: " + ", ".join(repr(s) for s in pick_st[:5]) + f" … ({len(pick_st)} in all)",
        "Hint:"])


def b_disjoint_spans(cat, d, ref, picks):
    shift = 3 * 3600 * S  # local time written as if it were UTC
    t = cat.picks_canonical["time"].to_numpy(np.int64) + shift
    p = _csv(cat.picks.assign(time=[iso(x, "Z") for x in t]), d / "picks.csv")
    r = cat.ref_canonical["time"].to_numpy(np.int64)
    spans = [iso(int(x) // S * S, "Z")[:19] for x in (r.min(), r.max(), t.min(), t.max())]
    return Built(ref, p, needles=[str(ref), str(p), "the time spans do not overlap", *spans,
                                  "picks are 3 h later than the arrivals", "time-zone offset"])


def _option_case(argv, api, *needles, error=OptionsError):
    def build(cat, d, ref, picks):
        return Built(ref, picks, argv=list(argv), api=dict(api), needles=list(needles), error=error)
    return build


def _config_case(text, *needles):
    def build(cat, d, ref, picks):
        path = _bytes(text.encode() if isinstance(text, str) else text, d / "study.toml")
        return Built(ref, picks, argv=["--config", str(path)], config=path,
                     needles=[f"config file {path}", *needles], error=OptionsError)
    return build



def b_utf16_without_bom(cat, d, ref, picks):
    p = _bytes(cat.reference.to_csv(index=False, sep="\t").encode("utf-16-le"), d / "reference.txt")
    return Built(p, picks, needles=[str(p), "UTF-16 text without a byte-order mark", "save it as UTF-8"])


def b_only_comment_lines(cat, d, ref, picks):
    p = _bytes(b"# exported by scolv\n# no rows\n", d / "picks.csv")
    return Built(ref, p, needles=[str(p), "only comment lines (starting with '#')", "no header and no rows"])


def b_comment_lines_then_bad_time(cat, d, ref, picks):
    # Rows count from the top of the file: two comment lines put data row i on line i + 4.
    frame = cat.reference.copy()
    frame.loc[3, "time"] = "yesterday"
    p = _bytes(b"# exported by scolv\n# 2024-01-01\n" + frame.to_csv(index=False).encode(), d / "reference.csv")
    return Built(p, picks, needles=[str(p), "1 invalid row(s)", "row 7: 'yesterday'"])


CASES = [
    Case("missing-file", b_missing_file),
    Case("folder-without-tables", b_empty_folder),
    Case("empty-file", b_empty_file),
    Case("blank-file", b_blank_file),
    Case("header-only", b_header_only),
    Case("empty-gzip", b_empty_gzip),
    Case("parquet-without-rows", b_empty_parquet),
    Case("binary", b_binary),
    Case("wrong-delimiter", b_pipe_delimited),
    Case("html-page", b_html),
    Case("xlsx-workbook", b_xlsx),
    Case("csv-named-parquet", b_text_as_parquet),
    Case("corrupt-parquet", b_corrupt_parquet),
    Case("not-utf8", b_not_utf8),
    Case("missing-time-column", b_missing_time_column),
    Case("missing-conf-column", b_missing_conf_column),
    Case("missing-columns-parquet", b_missing_columns_parquet),
    Case("missing-time-column-parquet", b_missing_time_column_parquet),
    Case("unparseable-times", b_unparseable_times, row_level=True),
    Case("times-in-milliseconds", b_times_in_ms, row_level=True),
    Case("times-in-microseconds", b_times_in_us, row_level=True),
    Case("times-in-milliseconds-parquet", b_times_in_ms_parquet, row_level=True),
    Case("mixed-time-zones", b_mixed_time_zones, row_level=True),
    # Non-ASCII digits are not read as numbers (pandas and pyarrow do not): an unreadable time.
    Case("time-full-width-digits", _bad_times({3: "１５７７８３６８１０.１", 8: "１５７７８３６８１０"}),
         row_level=True),
    Case("time-arabic-indic-digits", _bad_times({5: "١٥٧٧٨٣٦٨١٠"}), row_level=True),
    Case("time-full-width-digits-parquet", _bad_times({3: "１５７７８３６８１０.１"}, parquet=True), row_level=True),
    Case("time-full-width-iso-date", _bad_times({2: "２０２０-01-01T00:00:00Z"}), row_level=True),
    # Numbers of seconds whose nanoseconds overflow int64, and dates outside pandas' range.
    Case("time-epoch-overflows-int64", _bad_times({1: "1e12", 6: "-1000000000000", 9: "99999999999999999999"}),
         row_level=True),
    Case("time-epoch-overflows-int64-parquet-float", _bad_times({2: None}, parquet=True,
                                                                column=_float_seconds_with(2, 1e12)),
         row_level=True),
    Case("time-epoch-int64-min-parquet", _bad_times({7: None}, parquet=True,
                                                    column=_int_seconds_with(7, np.iinfo(np.int64).min)),
         row_level=True),
    Case("time-outside-pandas-range", _bad_times({0: "0001-01-01T00:00:00Z", 4: "9999-12-31T23:59:59Z",
                                                  5: "1677-09-21T00:12:43Z"}), row_level=True),
    Case("time-outside-pandas-range-parquet-timestamp", b_timestamp_year_1_parquet, row_level=True),
    Case("conf-missing", _conf_case(""), row_level=True),
    Case("conf-nan", _conf_case("nan"), row_level=True),
    Case("conf-negative", _conf_case("-0.2"), row_level=True),
    Case("conf-above-1", _conf_case("1.5"), row_level=True),
    Case("conf-text", _conf_case("high"), row_level=True),
    Case("conf-percent", b_conf_percent, row_level=True),
    Case("station-empty", b_station_empty, row_level=True),
    Case("phase-empty", b_phase_empty, row_level=True),
    Case("only-unknown-phases-reference", b_only_unknown_phases_reference),
    Case("only-unknown-phases-picks", b_only_unknown_phases_picks),
    Case("no-shared-station", b_no_shared_station),
    Case("disjoint-time-spans", b_disjoint_spans),
    Case("grid-empty", _option_case(["--thresholds", ""], {"thresholds": []}, "thresholds is empty")),
    Case("grid-unsorted", _option_case(["--thresholds", "0.5,0.3"], {"thresholds": [0.5, 0.3]},
                                       "thresholds must be strictly ascending", "[0.5, 0.3]")),
    Case("grid-repeated", _option_case(["--thresholds", "0.3,0.3"], {"thresholds": [0.3, 0.3]},
                                       "thresholds must be strictly ascending")),
    Case("grid-outside-0-1", _option_case(["--thresholds", "0.1,1.5"], {"thresholds": [0.1, 1.5]},
                                          "thresholds must lie in [0, 1]", "1.5")),
    Case("grid-negative", _option_case(["--thresholds=-0.1,0.5"], {"thresholds": [-0.1, 0.5]},
                                       "thresholds must lie in [0, 1]", "-0.1")),
    Case("threshold-outside-0-1", _option_case(["--threshold", "30"], {"threshold": 30},
                                               "threshold must lie in [0, 1]", "30")),
    Case("tol-negative", _option_case(["--tol", "-0.5"], {"tol": -0.5}, "tol must be >= 0 seconds", "-0.5")),
    Case("residual-tol-below-tol", _option_case(["--residual-tol", "0.2"], {"residual_tol": 0.2},
                                                "(0.2 s) must be >=", "(0.5 s): residuals are matched")),
    Case("budget-negative", _option_case(["--budget", "-3"], {"budget": -3}, "budget must be a whole number", ">= 0")),
    Case("config-unknown-key", _config_case('reference = "r.csv"\ntoll = 0.3\n', "unknown key 'toll'",
                                            "known keys:", "residual_tol")),
    Case("config-unknown-key-in-table", _config_case("[options]\ntolerance = 0.3\n",
                                                     "unknown key [options] 'tolerance'", "allowed there:")),
    Case("config-wrong-type", _config_case('tol = "0.5"\n', "tol should be a float", "'0.5'")),
    Case("config-not-toml", _config_case("tol: 0.5\n", "is not valid TOML")),
    Case("config-not-utf8", _config_case(b"reference = '\xff'\n", "is not UTF-8")),
    Case("utf16-without-bom", b_utf16_without_bom),
    Case("only-comment-lines", b_only_comment_lines),
    Case("comment-lines-then-bad-time", b_comment_lines_then_bad_time),
]

CASE_IDS = [c.id for c in CASES]


def params(cases) -> list:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else [])
            for c in cases]


# --------------------------------------------------------------------------- running

@pytest.fixture(scope="module")
def scheduler():
    """One LocalCluster for every case of this module (``--scheduler``), not the default client."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address="127.0.0.1:0", silence_logs=50)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def good(cat, tmp_path_factory):
    """The good reference and picks, written once."""
    folder = tmp_path_factory.mktemp("good")
    return _csv(cat.reference, folder / "reference.csv"), _csv(cat.picks, folder / "picks.csv")


def build(case: Case, cat, folder: Path, good) -> Built:
    folder.mkdir(parents=True, exist_ok=True)
    return case.build(cat, folder, *good)


def run_cli(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(folder: Path) -> list:
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


def assert_nothing_written(out: Path, root: Path, before: list | None = None) -> None:
    """No store, table, figure or temporary sibling; a folder the run created is gone again."""
    if before is None:
        assert not out.exists(), sorted(p.name for p in out.iterdir())
    else:
        assert snapshot(out) == before
    leftovers = [p for p in root.rglob("*") if p.name.startswith(".results.zarr.") or p.name == "figures"]
    assert not leftovers, leftovers


def in_api_terms(needle: str) -> str:
    """``--drop-invalid`` -> ``drop_invalid``: an option as the Python API names it."""
    options = ("--drop-invalid", "--residual-tol", "--station-key", "--manual-only", "--block-picks", "--thresholds",
               "--threshold", "--budget", "--tol")
    for flag in options:
        needle = needle.replace(flag, flag[2:].replace("-", "_"))
    return needle


def assert_message(err: str, needles: list[str]) -> None:
    assert "Traceback" not in err and "Compute Failed" not in err, err
    assert err.startswith("pickscale: error: "), err
    assert err.count("pickscale: error:") == 1, err
    missing = [n for n in needles if n not in err]
    assert not missing, f"missing {missing} in:\n{err}"


@pytest.mark.cluster
@pytest.mark.parametrize("case", params(CASES))
def test_bad_input_through_the_command(case, cat, good, tmp_path, capsys, scheduler):
    b = build(case, cat, tmp_path / "in", good)
    out = tmp_path / "out" / "run"  # neither exists: the run must not leave them behind
    argv = ["score", "--reference", b.reference, "--picks", b.picks, "--out", out, "--scheduler", scheduler, *b.argv]
    code, stdout, err = run_cli(argv, capsys)
    assert code == 2, (code, err)
    assert_message(err, b.needles)
    assert not (tmp_path / "out").exists()
    assert_nothing_written(out, tmp_path)


@pytest.mark.parametrize("case", params(CASES))
def test_bad_input_through_the_python_api(case, cat, good, tmp_path):
    b = build(case, cat, tmp_path / "in", good)
    if b.config is not None:
        with pytest.raises(OptionsError) as info:
            load_config(b.config)
    else:
        with pytest.raises(PickscaleError) as info:
            pickscale.score(str(b.reference), str(b.picks), **b.api)
    assert type(info.value) is b.error, (type(info.value), info.value)
    msg = str(info.value)
    cli_only = ("--reference", "--picks")  # the command says which option named the missing file
    # The needles are written as the command says them; the library names options as the API does.
    missing = [n for n in b.needles if in_api_terms(n) not in msg and n not in cli_only]
    assert not missing, f"missing {missing} in:\n{msg}"
    assert not [p for p in tmp_path.rglob("*") if p.suffix == ".zarr" or p.name.startswith(".")]


@pytest.mark.cluster
@pytest.mark.parametrize("case", params([c for c in CASES if c.row_level]))
def test_drop_invalid_completes_with_a_counted_warning(case, cat, good, tmp_path, capsys, scheduler):
    b = build(case, cat, tmp_path / "in", good)
    n = b.invalid_rows
    bad_file = b.picks if b.picks != good[1] else b.reference
    rows = len(pd.read_csv(bad_file, dtype=str) if bad_file.suffix == ".csv" else pd.read_parquet(bad_file))
    role = "picks" if bad_file == b.picks else "reference"
    out = tmp_path / "out"
    argv = ["score", "--reference", b.reference, "--picks", b.picks, "--out", out, "--scheduler", scheduler,
            "--drop-invalid", "--quiet", "--no-figures"]
    code, _, err = run_cli(argv, capsys)
    if n == rows:  # every row is invalid: nothing is left to score, and the message says why
        assert code == 2, err
        what = "no pick is left to score" if role == "picks" else "no reference arrival is left to score"
        needles = [str(bad_file), what, f"of its {rows} row(s), {rows} were dropped as invalid (--drop-invalid)"]
        assert_message(err, needles)
        assert_nothing_written(out, tmp_path)
        return
    assert code == 0, err
    assert "Traceback" not in err
    assert f"warning: {bad_file}: dropped {n} invalid row(s) of" in err, err
    # The count the store keeps: its root attributes, one read of its root zarr.json (opening the whole store,
    # manifest and consistency checks, is other tests' business: tests/store).
    attrs = json.loads((out / "results.zarr" / "zarr.json").read_text())["attributes"]
    assert attrs["inputs"][role]["rows_invalid_dropped"] == n
    # The Python API says the same, in the dataset's warnings.
    api = pickscale.score(str(b.reference), str(b.picks), drop_invalid=True)
    assert any(f"dropped {n} invalid row(s)" in w for w in api.attrs["warnings"])


@pytest.mark.cluster
def test_drop_invalid_scores_what_is_left(cat, good, tmp_path, capsys, scheduler):
    """The tables of a run that dropped rows are those of the file without them."""
    b = build(next(c for c in CASES if c.id == "mixed-time-zones"), cat, tmp_path / "in", good)
    out = tmp_path / "out"
    code, _, err = run_cli(["score", "--reference", b.reference, "--picks", b.picks, "--out", out,
                            "--scheduler", scheduler, "--drop-invalid", "--quiet", "--no-figures"], capsys)
    assert code == 0, err
    clean = pd.read_csv(b.picks, dtype=str, keep_default_na=False).drop(index=[2, 5, 9])
    clean_path = _csv(clean, tmp_path / "clean.csv")
    want = pickscale.tables(pickscale.score(str(b.reference), str(clean_path)))
    from pickscale.report.tables import to_csv_bytes

    for name, frame in want.items():
        assert (out / f"{name}.csv").read_bytes() == to_csv_bytes(frame), name


# --------------------------------------------------------------------------- the output path

@pytest.fixture(scope="module")
def small_results(good):
    return pickscale.score(str(good[0]), str(good[1]))


@pytest.mark.cluster
def test_output_store_exists_without_overwrite(good, small_results, tmp_path, capsys, scheduler):
    out = tmp_path / "out"
    out.mkdir()
    pickscale.save(small_results, out / "results.zarr")
    (out / "detection.csv").write_text("an earlier table\n")
    before = snapshot(out)
    code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", out,
                            "--scheduler", scheduler], capsys)
    assert code == 2
    assert_message(err, [str(out / "results.zarr"), "already exists", "pass --overwrite to replace it"])
    assert_nothing_written(out, tmp_path, before)
    with pytest.raises(StoreError, match="already exists; pass overwrite=True"):
        pickscale.save(small_results, out / "results.zarr")
    assert snapshot(out) == before


@pytest.mark.cluster
@pytest.mark.parametrize("what", ["empty-folder", "other-zarr", "file"])
def test_output_path_holds_something_else(what, good, small_results, tmp_path, capsys, scheduler):
    """Never replaced, not even with --overwrite."""
    out = tmp_path / "out"
    out.mkdir()
    store = out / "results.zarr"
    if what == "empty-folder":
        store.mkdir()
    elif what == "other-zarr":
        import zarr

        zarr.open_group(store, mode="w", zarr_format=3).attrs["owner"] = "someone else"
    else:
        store.write_text("my notes")
    before = snapshot(out)
    code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", out,
                            "--scheduler", scheduler, "--overwrite"], capsys)
    assert code == 2
    assert_message(err, [str(store), "is not a pickscale results store", "never replaces it"])
    assert_nothing_written(out, tmp_path, before)
    with pytest.raises(StoreError, match="is not a pickscale\\s+results store"):
        pickscale.save(small_results, store, overwrite=True)
    assert snapshot(out) == before


@pytest.mark.slow
@pytest.mark.parametrize("where", ["out-is-a-file", "parent-is-a-file"])
def test_output_path_is_not_a_folder(where, good, small_results, tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    out = blocker if where == "out-is-a-file" else blocker / "run"
    code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", out], capsys)
    assert code == 2
    needle = "is a file, not a folder"
    assert_message(err, [str(blocker), needle])
    assert blocker.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    with pytest.raises(StoreError):
        pickscale.save(small_results, out / "results.zarr")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores permissions")
def test_output_folder_not_writable(good, small_results, tmp_path, capsys):
    ro = tmp_path / "read-only"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        for out in (ro, ro / "run"):
            code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", out], capsys)
            assert code == 2
            assert_message(err, [str(ro), "is not writable"])
            assert list(ro.iterdir()) == []
        with pytest.raises(StoreError, match="not writable"):
            pickscale.save(small_results, ro / "results.zarr")
    finally:
        ro.chmod(0o755)


def test_workers_must_be_positive(good, tmp_path, capsys):
    code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", tmp_path / "o",
                            "--workers", "0"], capsys)
    assert code == 2
    assert_message(err, ["--workers must be a whole number >= 1", "0"])
    assert not (tmp_path / "o").exists()


def test_threshold_grid_that_is_not_numbers(good, tmp_path, capsys):
    code, _, err = run_cli(["score", "--reference", good[0], "--picks", good[1], "--out", tmp_path / "o",
                            "--thresholds", "0.1,x"], capsys)
    assert code == 2
    assert "--thresholds" in err and "expected numbers separated by commas" in err and "Traceback" not in err
    with pytest.raises(OptionsError, match="thresholds must be numbers"):
        pickscale.score(str(good[0]), str(good[1]), thresholds=[0.1, "x"])


# --------------------------------------------------------------------------- the real command

def _console_script() -> list[str]:
    exe = Path(sys.executable).with_name("pickscale")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "import sys; from pickscale.cli import main; "
                                                                   "sys.exit(main())"]


@pytest.mark.cluster
def test_console_script_with_its_own_cluster_prints_one_message(cat, good, tmp_path):
    """With a LocalCluster of its own, the workers' logs reach the terminal too: they must stay quiet."""
    b = build(next(c for c in CASES if c.id == "unparseable-times"), cat, tmp_path / "in", good)
    out = tmp_path / "out"
    proc = subprocess.run(_console_script() + ["score", "--reference", str(b.reference), "--picks", str(b.picks),
                                               "--out", str(out), "--workers", "1"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stderr
    assert_message(proc.stderr, b.needles)
    assert proc.stdout == ""
    assert not out.exists()
