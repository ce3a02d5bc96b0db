"""Tests of pickscale.io (SPEC §1): sources, raw reading, normalisation."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pickscale.errors import InputError
from pickscale.io import (
    ALIASES,
    Normalised,
    map_phase,
    normalise,
    parse_time,
    read_raw,
    resolve_sources,
)

DATA = Path("/work/shared/data")
T0 = "2020-01-01T00:00:00Z"
T0_NS = 1577836800 * 10**9


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def ref_frame(**cols) -> pd.DataFrame:
    base = {"station": ["CLC"], "phase": ["P"], "time": [T0]}
    base.update(cols)
    return pd.DataFrame(base)


def picks_frame(**cols) -> pd.DataFrame:
    base = {"station": ["CLC"], "phase": ["P"], "time": [T0], "conf": ["0.5"]}
    base.update(cols)
    return pd.DataFrame(base)


def norm_picks(raw: pd.DataFrame, **kw) -> Normalised:
    return normalise(raw, role="picks", source="picks.csv", **kw)


def norm_ref(raw: pd.DataFrame, **kw) -> Normalised:
    return normalise(raw, role="reference", source="reference.csv", **kw)


# --------------------------------------------------------------------------- #
# resolve_sources
# --------------------------------------------------------------------------- #

class TestResolveSources:
    def test_single_file(self, tmp_path):
        p = write(tmp_path / "a.csv", "x\n1\n")
        assert resolve_sources(p) == [p]

    def test_pathlike(self, tmp_path):
        p = write(tmp_path / "a.csv", "x\n1\n")
        assert resolve_sources(Path(p)) == [p]

    def test_folder_recursive_sorted_filtered(self, tmp_path):
        (tmp_path / "sub").mkdir()
        (tmp_path / ".ipynb_checkpoints").mkdir()
        for name in ["b.csv", "a.parquet", "sub/c.pq", "sub/d.csv.gz", "notes.txt",
                     ".ipynb_checkpoints/b-checkpoint.csv", "E.CSV"]:
            (tmp_path / name).write_bytes(b"x")
        got = [str(Path(p).relative_to(tmp_path)) for p in resolve_sources(tmp_path)]
        assert got == ["E.CSV", "a.parquet", "b.csv", "sub/c.pq", "sub/d.csv.gz"]

    def test_glob(self, tmp_path):
        for name in ["p1.csv", "p2.csv", "r.csv"]:
            (tmp_path / name).write_text("x")
        got = resolve_sources(str(tmp_path / "p*.csv"))
        assert [Path(p).name for p in got] == ["p1.csv", "p2.csv"]

    def test_file_url(self, tmp_path):
        p = write(tmp_path / "a.csv", "x\n1\n")
        assert resolve_sources("file://" + p) == [p]

    def test_memory_url_keeps_protocol(self):
        import fsspec

        fs = fsspec.filesystem("memory")
        fs.pipe("/pickscale_test/x.csv", b"station,phase,time\nA,P,0\n")
        got = resolve_sources("memory://pickscale_test")
        assert got == ["memory:///pickscale_test/x.csv"]
        assert len(read_raw(got[0])) == 1

    def test_list_of_sources(self, tmp_path):
        a = write(tmp_path / "a.csv", "x")
        b = write(tmp_path / "b.csv", "x")
        assert resolve_sources([b, a, b]) == [b, a]

    def test_missing_file(self, tmp_path):
        with pytest.raises(InputError, match="no such file or folder") as e:
            resolve_sources(str(tmp_path / "nope.csv"))
        assert "nope.csv" in str(e.value)

    def test_empty_folder(self, tmp_path):
        (tmp_path / "readme.txt").write_text("x")
        with pytest.raises(InputError, match=r"\*\.csv"):
            resolve_sources(tmp_path)

    def test_glob_without_match(self, tmp_path):
        with pytest.raises(InputError, match="no file matches"):
            resolve_sources(str(tmp_path / "*.csv"))


# --------------------------------------------------------------------------- #
# read_raw
# --------------------------------------------------------------------------- #

class TestReadRaw:
    def test_csv_all_strings_empty_cells(self, tmp_path):
        p = write(tmp_path / "r.csv", "station,phase,time,conf\n007,P,1.50,\n")
        df = read_raw(p)
        assert df.iloc[0].tolist() == ["007", "P", "1.50", ""]  # nothing mis-parsed
        assert df.attrs["format"] == "csv" and df.attrs["delimiter"] == ","

    def test_semicolon_delimiter_accepted(self, tmp_path):
        p = write(tmp_path / "r.csv", "station;phase;time\nCLC;P;2020-01-01T00:00:00Z\n")
        df = read_raw(p)
        assert list(df.columns) == ["station", "phase", "time"]
        assert df.attrs["delimiter"] == ";"

    def test_semicolon_with_decimal_commas(self, tmp_path):
        p = write(tmp_path / "r.csv", "station;phase;time;conf\nCLC;P;1,5;0,9\nX;S;2,5;0,8\n")
        df = read_raw(p)
        assert df.attrs["delimiter"] == ";" and df.shape == (2, 4)

    def test_tab_delimiter(self, tmp_path):
        p = write(tmp_path / "r.tsv", "station\tphase\ttime\nCLC\tP\t0\n")
        assert read_raw(p).attrs["delimiter"] == "\t"

    def test_bom_is_ignored(self, tmp_path):
        p = tmp_path / "r.csv"
        p.write_bytes("\ufeffstation,phase,time\nA,P,0\n".encode("utf-8"))
        assert list(read_raw(str(p)).columns) == ["station", "phase", "time"]

    def test_gzip_csv(self, tmp_path):
        p = tmp_path / "r.csv.gz"
        p.write_bytes(gzip.compress(b"station,phase,time\nA,P,0\n"))
        assert read_raw(str(p)).shape == (1, 3)

    def test_empty_file(self, tmp_path):
        p = tmp_path / "empty.csv"
        p.write_bytes(b"")
        with pytest.raises(InputError, match=r"empty\.csv: the file is empty"):
            read_raw(str(p))

    def test_whitespace_only(self, tmp_path):
        p = write(tmp_path / "blank.csv", "\n\n  \n")
        with pytest.raises(InputError, match="blank.csv.*no header"):
            read_raw(p)

    def test_header_only(self, tmp_path):
        p = write(tmp_path / "h.csv", "station,phase,time\n")
        with pytest.raises(InputError, match=r"h\.csv: the file has a header .* but no data rows"):
            read_raw(p)

    def test_binary(self, tmp_path):
        p = tmp_path / "b.csv"
        p.write_bytes(bytes(range(256)) * 4)
        with pytest.raises(InputError, match=r"b\.csv: holds binary data"):
            read_raw(str(p))

    def test_html(self, tmp_path):
        p = write(tmp_path / "page.csv", "<!DOCTYPE html>\n<html><body>Sign in</body></html>\n")
        with pytest.raises(InputError, match=r"page\.csv: is an HTML"):
            read_raw(p)

    def test_xlsx(self, tmp_path):
        p = tmp_path / "book.csv"
        p.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
        with pytest.raises(InputError, match="ZIP archive"):
            read_raw(str(p))

    def test_non_utf8_in_head(self, tmp_path):
        p = tmp_path / "latin.csv"
        p.write_bytes("station,phase,time\nSÉO,P,0\n".encode("latin-1"))
        with pytest.raises(InputError) as e:
            read_raw(str(p))
        msg = str(e.value)
        assert "latin.csv" in msg and "0xC9" in msg and "byte offset 20" in msg
        assert "line 2" in msg and "UTF-8" in msg

    def test_non_utf8_far_into_the_file(self, tmp_path):
        # Beyond the sniffed block: found while parsing, then located by streaming.
        body = "A,P,0\n" * 20000
        data = ("station,phase,time\n" + body).encode() + "B\xe9,P,0\n".encode("latin-1")
        p = tmp_path / "far.csv"
        p.write_bytes(data)
        with pytest.raises(InputError) as e:
            read_raw(str(p))
        msg = str(e.value)
        bad_at = data.index(b"\xe9")
        assert f"byte offset {bad_at}" in msg
        assert "line 20002" in msg

    def test_one_column_with_other_delimiter(self, tmp_path):
        # A '|' file is read as one column; normalise then lists it with a hint.
        p = write(tmp_path / "pipe.csv", "station|phase|time\nA|P|0\n")
        raw = read_raw(p)
        with pytest.raises(InputError) as e:
            normalise(raw, role="reference", source="pipe.csv")
        assert "'station|phase|time'" in str(e.value) and "delimiter" in str(e.value)

    def test_ragged_csv(self, tmp_path):
        p = write(tmp_path / "rag.csv", "station,phase,time\nA,P,0\nB,P,0,extra,more\n")
        with pytest.raises(InputError, match=r"rag\.csv: not a well-formed CSV"):
            read_raw(p)

    def test_parquet_native_dtypes(self, tmp_path):
        df = pd.DataFrame({
            "station": ["A", "B"],
            "time": pd.to_datetime([T0, T0], utc=True).as_unit("ns"),
            "conf": [0.5, 0.6],
        })
        p = tmp_path / "x.parquet"
        df.to_parquet(p)
        got = read_raw(str(p))
        assert str(got["time"].dtype) == "datetime64[ns, UTC]"
        assert got["conf"].dtype == np.float64
        assert got.attrs["format"] == "parquet"

    def test_parquet_sniffed_without_extension(self, tmp_path):
        p = tmp_path / "picks.dat"
        pd.DataFrame({"a": [1]}).to_parquet(p)
        assert read_raw(str(p)).attrs["format"] == "parquet"

    def test_csv_sniffed_without_extension(self, tmp_path):
        p = write(tmp_path / "picks.dat", "station,phase,time\nA,P,0\n")
        assert read_raw(p).attrs["format"] == "csv"

    def test_parquet_extension_but_text(self, tmp_path):
        p = write(tmp_path / "x.parquet", "station,phase,time\nA,P,0\n")
        with pytest.raises(InputError, match=r"x\.parquet: is not a Parquet file"):
            read_raw(p)

    def test_parquet_without_rows(self, tmp_path):
        p = tmp_path / "e.parquet"
        pd.DataFrame({"station": pd.Series([], dtype=str)}).to_parquet(p)
        with pytest.raises(InputError, match=r"e\.parquet: the Parquet file has no rows"):
            read_raw(str(p))

    def test_corrupt_parquet(self, tmp_path):
        p = tmp_path / "c.parquet"
        p.write_bytes(b"PAR1" + b"garbage" * 10)
        with pytest.raises(InputError, match=r"c\.parquet: cannot be read as Parquet"):
            read_raw(str(p))

    def test_missing_file(self, tmp_path):
        with pytest.raises(InputError, match="no such file"):
            read_raw(str(tmp_path / "gone.csv"))


# --------------------------------------------------------------------------- #
# Column aliases
# --------------------------------------------------------------------------- #

class TestAliases:
    def test_seisbench(self):
        raw = pd.DataFrame({"station": ["CI.CLC."], "time": [T0], "probability": [0.7],
                            "phase": ["P"]})
        n = norm_picks(raw)
        assert n.columns == {"dataset": None, "model": None, "station": "station",
                             "phase": "phase", "time": "time", "conf": "probability"}
        assert n.frame["station"].tolist() == ["CI.CLC"]

    def test_phasenet(self):
        raw = pd.DataFrame({"station_id": ["CI.CLC.."], "phase_time": ["2020-01-01T00:00:00.000"],
                            "phase_score": ["0.9"], "phase_type": ["S"]})
        n = norm_picks(raw)
        assert (n.columns["station"], n.columns["time"], n.columns["conf"],
                n.columns["phase"]) == ("station_id", "phase_time", "phase_score", "phase_type")
        assert n.frame.iloc[0]["time"] == T0_NS and n.frame.iloc[0]["phase"] == "S"

    def test_quakescope(self):
        raw = pd.DataFrame({"tid": ["CI.CLC."], "pha": ["P"], "peak": [T0], "conf": [0.3]})
        n = norm_picks(raw)
        assert (n.columns["station"], n.columns["phase"], n.columns["time"]) == (
            "tid", "pha", "peak")

    def test_case_insensitive_and_stripped_names(self):
        raw = pd.DataFrame({" Station ": ["A"], "PHASE": ["P"], "Time": [T0], "Conf": ["1"]})
        n = norm_picks(raw)
        assert n.columns["station"] == " Station " and n.columns["time"] == "Time"

    def test_canonical_wins_over_alias(self):
        raw = pd.DataFrame({"peak_time": ["1970-01-01T00:00:09Z"], "time": [T0],
                            "station": ["A"], "phase": ["P"]})
        n = norm_ref(raw)
        assert n.columns["time"] == "time" and n.frame["time"].tolist() == [T0_NS]
        assert n.ignored_columns == ["peak_time"]

    def test_alias_order_of_the_table_decides(self):
        # 'confidence' comes before 'score' in SPEC's table, whatever the file's order.
        raw = pd.DataFrame({"score": ["0.1"], "confidence": ["0.9"], "station": ["A"],
                            "phase": ["P"], "time": [T0]})
        n = norm_picks(raw)
        assert n.columns["conf"] == "confidence" and n.frame["conf"].tolist() == [0.9]

    def test_exact_spelling_preferred_among_case_variants(self):
        raw = pd.DataFrame({"TIME": ["1970-01-01T00:00:09Z"], "time": [T0],
                            "station": ["A"], "phase": ["P"]})
        assert norm_ref(raw).columns["time"] == "time"

    @pytest.mark.slow
    def test_every_alias_is_accepted(self):
        for canonical, names in ALIASES.items():
            for name in names:
                cols = {"station": ["A"], "phase": ["P"], "time": [T0], "conf": ["0.5"],
                        "dataset": ["d"], "model": ["m"]}
                cols[name] = cols.pop(canonical)
                n = norm_picks(pd.DataFrame(cols))
                assert n.columns[canonical] == name

    def test_event_is_not_a_dataset(self):
        raw = ref_frame(event=["ev1"])
        n = norm_ref(raw)
        assert n.frame["dataset"].tolist() == ["all"]
        assert n.columns["dataset"] is None and "event" in n.ignored_columns

    def test_defaults_for_dataset_and_model(self):
        n = norm_picks(picks_frame())
        assert n.frame["dataset"].tolist() == ["all"] and n.frame["model"].tolist() == ["model"]

    def test_reference_has_no_model_or_conf(self):
        n = norm_ref(ref_frame(model=["m"], conf=["0.5"]))
        assert list(n.frame.columns) == ["dataset", "station", "phase", "time"]

    def test_missing_required_column_message(self):
        raw = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": [T0]})
        with pytest.raises(InputError) as e:
            norm_picks(raw)
        msg = str(e.value)
        assert msg.startswith("picks.csv: the picks table has no column for 'conf'")
        assert "'station', 'phase', 'time'" in msg
        assert "conf, confidence, probability, peak_value, phase_score, prob, score" in msg

    def test_two_missing_columns(self):
        with pytest.raises(InputError) as e:
            norm_ref(pd.DataFrame({"sta": ["A"]}))
        msg = str(e.value)
        assert "'phase' and 'time'" in msg and "pick_time" in msg and "phase_hint" in msg


# --------------------------------------------------------------------------- #
# Values: dtypes, stations, phases
# --------------------------------------------------------------------------- #

class TestValues:
    def test_frame_dtypes_and_python_strings(self):
        raw = picks_frame(dataset=[" d "], model=["m"])
        f = norm_picks(raw).frame
        assert list(f.columns) == ["dataset", "model", "station", "phase", "time", "conf"]
        assert [str(f[c].dtype) for c in f.columns] == [
            "object", "object", "object", "object", "int64", "float64"]
        assert all(type(f[c].iloc[0]) is str for c in ["dataset", "model", "station", "phase"])
        assert f["dataset"].iloc[0] == "d"  # surrounding white space removed

    def test_station_strip(self):
        raw = ref_frame(station=[" CI.CLC. ", "CI.CLC..", "CI.CLC", "CLC"], phase=["P"] * 4,
                        time=[T0] * 4)
        assert norm_ref(raw).frame["station"].tolist() == ["CI.CLC", "CI.CLC", "CI.CLC", "CLC"]

    def test_numeric_station_column(self):
        raw = pd.DataFrame({"station": [101, 102], "phase": ["P", "S"], "time": [0.0, 1.0]})
        assert norm_ref(raw).frame["station"].tolist() == ["101", "102"]

    @pytest.mark.parametrize("name,expected", [
        ("P", "P"), ("Pg", "P"), ("Pn", "P"), ("Pb", "P"), ("P*", "P"),
        ("S", "S"), ("Sg", "S"), ("Sn", "S"), ("Sb", "S"), ("S*", "S"),
        ("pP", None), ("sS", None), ("p", None), ("s", None), ("PKP", None), ("PG", None),
        ("PcP", None),
    ])
    def test_map_phase(self, name, expected):
        assert map_phase(name) == expected

    def test_phase_mapping_and_dropped_counts(self):
        phases = ["P", " Pg ", "Sn", "pP", "sS", "pP", "P*", "p", "PKP"]
        raw = ref_frame(station=["A"] * 9, phase=phases, time=[T0] * 9)
        n = norm_ref(raw)
        assert n.frame["phase"].tolist() == ["P", "P", "S", "P"]
        assert n.dropped_phases == {"pP": 2, "sS": 1, "p": 1, "PKP": 1}
        assert n.mapped_phases == {"P": "P", "Pg": "P", "Sn": "S", "P*": "P"}
        assert n.n_rows_read == 9 and n.n_rows == 4 and n.n_invalid == 0
        assert any("'pP': 2" in w for w in n.warnings())

    def test_dropped_phase_rows_are_not_validated(self):
        raw = ref_frame(station=["A", ""], phase=["P", "PKiKP"], time=[T0, "bad"])
        n = norm_ref(raw)
        assert n.n_rows == 1 and n.dropped_phases == {"PKiKP": 1}


# --------------------------------------------------------------------------- #
# Times
# --------------------------------------------------------------------------- #

class TestTimes:
    def test_iso_variants(self):
        values = ["2020-01-01T00:00:00Z", "2020-01-01 00:00:00", "2020-01-01T02:00:00+02:00",
                  "2019-12-31T19:00:00-05:00", "2020-01-01T00:00:00.000000Z",
                  " 2020-01-01T00:00:00z "]
        ns, ok = parse_time(pd.Series(values))
        assert ok.all() and (ns == T0_NS).all()

    def test_nanosecond_strings_kept(self):
        ns, ok = parse_time(pd.Series(["2020-01-01T00:00:00.123456789Z", "2020-01-01T00:00:00.1Z"]))
        assert ns.tolist() == [T0_NS + 123456789, T0_NS + 100000000]

    def test_mixed_naive_and_offsets(self):
        # Naive values are UTC, offset values converted: mixing is allowed.
        ns, ok = parse_time(pd.Series(["2020-01-01T00:00:00", "2020-01-01T01:00:00+01:00",
                                       "2020-01-01T00:00:00Z"]))
        assert ok.all() and (ns == T0_NS).all()

    def test_epoch_seconds_strings_exact(self):
        ns, ok = parse_time(pd.Series(["1577836800", "1577836800.123456789", "-1.5",
                                       "1577836800.0000000005", "1.5778368e9"]))
        assert ok.all()
        assert ns.tolist() == [T0_NS, T0_NS + 123456789, -1_500_000_000, T0_NS + 1,
                               1_577_836_800 * 10**9]

    def test_epoch_seconds_numeric_columns(self):
        ns, ok = parse_time(pd.Series([1577836800, 0], dtype=np.int64))
        assert ns.tolist() == [T0_NS, 0] and ok.all()
        ns, ok = parse_time(pd.Series([1577836800.25, np.nan]))
        assert ns[0] == T0_NS + 250_000_000 and ok.tolist() == [True, False]

    def test_datetime_columns(self):
        naive = pd.Series(pd.to_datetime(["2020-01-01 00:00:00"]).as_unit("us"))
        aware = pd.Series(pd.to_datetime(["2020-01-01 02:00:00+02:00"], utc=False))
        for s in (naive, aware, aware.dt.tz_convert("UTC").dt.as_unit("ns")):
            ns, ok = parse_time(s)
            assert ns.tolist() == [T0_NS] and ok.all()

    def test_out_of_ns_range_is_invalid_not_a_crash(self):
        us = pd.Series(np.array(["2300-01-01", "2020-01-01"], dtype="datetime64[us]"))
        ns, ok = parse_time(us)
        assert ok.tolist() == [False, True] and ns[1] == T0_NS
        ns, ok = parse_time(pd.Series(["2300-01-01T00:00:00", "1e12", "99999999999"]))
        assert not ok.any()

    def test_object_column_of_datetimes(self):
        import datetime as dt

        s = pd.Series([dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
                       dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))],
                      dtype=object)
        ns, ok = parse_time(s)
        assert ok.all() and (ns == T0_NS).all()

    def test_parquet_datetime_utc(self, tmp_path):
        p = tmp_path / "picks.parquet"
        pd.DataFrame({
            "station": ["A"], "phase": ["P"], "conf": [0.5],
            "time": pd.to_datetime(["2020-01-01T00:00:00.123456789Z"], utc=True).as_unit("ns"),
        }).to_parquet(p)
        raw = read_raw(str(p))
        assert str(raw["time"].dtype) == "datetime64[ns, UTC]"
        n = normalise(raw, role="picks", source="picks.parquet")
        assert n.frame["time"].tolist() == [T0_NS + 123456789]

    def test_parquet_naive_datetime_is_utc(self, tmp_path):
        p = tmp_path / "ref.parquet"
        pd.DataFrame({"station": ["A"], "phase": ["P"],
                      "time": pd.to_datetime(["2020-01-01 00:00:00.5"])}).to_parquet(p)
        n = normalise(read_raw(str(p)), role="reference", source="ref.parquet")
        assert n.frame["time"].tolist() == [T0_NS + 500_000_000]

    def test_parquet_numeric_seconds(self, tmp_path):
        p = tmp_path / "ref.parquet"
        pd.DataFrame({"station": ["A", "B"], "phase": ["P", "S"],
                      "time": [1577836800.5, 1577836801.0]}).to_parquet(p)
        n = normalise(read_raw(str(p)), role="reference", source="ref.parquet")
        assert n.frame["time"].tolist() == [T0_NS + 500_000_000, T0_NS + 1_000_000_000]


# --------------------------------------------------------------------------- #
# Invalid rows
# --------------------------------------------------------------------------- #

INVALID_CASES = [
    # (column, bad value, words expected in the message)
    ("time", "2020-13-45T00:00:00", "unreadable time"),
    ("time", "", "unreadable time"),
    ("station", "", "empty station"),
    ("station", " . ", "empty station"),
    ("phase", "", "empty phase"),
    ("conf", "", "conf missing"),
    ("conf", "nan", "conf missing"),
    ("conf", "-0.1", "outside [0, 1]"),
    ("conf", "1.0001", "outside [0, 1]"),
    ("conf", "high", "outside [0, 1]"),
    ("dataset", "", "empty dataset"),
    ("model", " ", "empty model"),
]


class TestInvalidRows:
    @staticmethod
    def raw_with(column: str, bad: str, n: int = 4, bad_rows=(2,)) -> pd.DataFrame:
        raw = pd.DataFrame({"dataset": ["d"] * n, "model": ["m"] * n, "station": ["A"] * n,
                            "phase": ["P"] * n, "time": [T0] * n, "conf": ["0.5"] * n})
        for i in bad_rows:
            raw.loc[i, column] = bad
        return raw

    @pytest.mark.parametrize("column,bad,words", INVALID_CASES)
    def test_fatal(self, column, bad, words):
        with pytest.raises(InputError) as e:
            norm_picks(self.raw_with(column, bad))
        msg = str(e.value)
        assert msg.startswith("picks.csv: 1 invalid row(s) of 4 in the picks table")
        assert "header = row 1" in msg
        assert f"{column} (column '{column}')" in msg and words in msg
        assert f"row 4: {bad!r}" in msg  # data row index 2 -> spreadsheet row 4
        assert "drop_invalid" in msg

    @pytest.mark.parametrize("column,bad,words", INVALID_CASES)
    def test_dropped(self, column, bad, words):
        n = norm_picks(self.raw_with(column, bad), drop_invalid=True)
        assert n.n_invalid == 1 and n.n_rows == 3 and n.n_rows_read == 4
        assert n.invalid_counts == {column: 1}
        assert n.invalid_examples == [f"row 4: {column} {bad!r}"]
        assert "dropped 1 invalid row(s)" in n.warnings()[0]

    def test_first_five_rows_and_count(self):
        raw = self.raw_with("time", "garbage", n=10, bad_rows=range(1, 9))
        with pytest.raises(InputError) as e:
            norm_picks(raw)
        msg = str(e.value)
        assert "8 invalid row(s) of 10" in msg and "first 5 shown" in msg
        assert "row 3: 'garbage', row 4:" in msg and "row 7: 'garbage'." in msg
        assert "row 8" not in msg
        assert "ISO-8601" in msg

    def test_row_offset(self):
        raw = self.raw_with("conf", "2")
        with pytest.raises(InputError, match=r"row 1004: '2'"):
            norm_picks(raw, row_offset=1000)

    def test_several_columns_in_one_message(self):
        raw = self.raw_with("time", "x")
        raw.loc[0, "station"] = ""
        raw.loc[2, "conf"] = "5"
        with pytest.raises(InputError) as e:
            norm_picks(raw)
        msg = str(e.value)
        assert "2 invalid row(s)" in msg
        assert "station (column 'station'): 1 row(s) with an empty station" in msg and "row 2: ''" in msg
        assert "time (column 'time'): 1 row(s)" in msg and "conf (column 'conf')" in msg

    def test_alias_named_in_message(self):
        raw = pd.DataFrame({"station_id": ["A"], "phase_type": ["P"], "phase_time": ["x"],
                            "phase_score": ["0.5"]})
        with pytest.raises(InputError, match=r"time \(column 'phase_time'\)"):
            norm_picks(raw)

    @pytest.mark.parametrize("values,unit", [
        (["1577836800123", "1577836800456"], "milliseconds"),
        (["1577836800123456", "1577836800456789"], "microseconds"),
        (["1577836800123456789", "1577836800456789000"], "nanoseconds"),
    ])
    def test_epoch_unit_hint(self, values, unit):
        raw = pd.DataFrame({"station": ["A", "B"], "phase": ["P", "P"], "time": values})
        with pytest.raises(InputError) as e:
            norm_ref(raw)
        assert f"look like {unit} since 1970; convert to seconds" in str(e.value)

    def test_epoch_unit_hint_numeric_parquet_column(self, tmp_path):
        p = tmp_path / "p.parquet"
        pd.DataFrame({"station": ["A"], "phase": ["P"],
                      "time": np.array([1577836800123], dtype=np.int64)}).to_parquet(p)
        with pytest.raises(InputError, match="milliseconds since 1970"):
            normalise(read_raw(str(p)), role="reference", source="p.parquet")

    def test_percentage_hint(self):
        raw = picks_frame(station=["A", "B", "C"], phase=["P"] * 3, time=[T0] * 3,
                          conf=["85", "0.5", "99.5"])
        with pytest.raises(InputError) as e:
            norm_picks(raw)
        msg = str(e.value)
        assert "2 invalid row(s)" in msg and "row 2: '85', row 4: '99.5'" in msg
        assert "conf looks like a percentage (0-100); divide by 100" in msg

    def test_no_percentage_hint_for_wild_values(self):
        raw = picks_frame(conf=["1000"])
        with pytest.raises(InputError) as e:
            norm_picks(raw)
        assert "percentage" not in str(e.value)

    def test_decimal_comma_hint(self, tmp_path):
        p = write(tmp_path / "p.csv", f"station;phase;time;conf\nA;P;{T0};0,5\n")
        with pytest.raises(InputError, match="decimal comma"):
            normalise(read_raw(p), role="picks", source="p.csv")

    def test_all_invalid_dropped_leaves_empty_frame_with_dtypes(self):
        n = norm_picks(self.raw_with("time", "x", bad_rows=range(4)), drop_invalid=True)
        assert n.n_rows == 0 and n.frame["time"].dtype == np.int64
        assert n.frame["conf"].dtype == np.float64


# --------------------------------------------------------------------------- #
# Files end to end, combine, real data
# --------------------------------------------------------------------------- #

def test_csv_file_end_to_end(tmp_path):
    p = write(tmp_path / "picks.csv",
              "Dataset,Model,station_id,phase_type,phase_time,probability,event\n"
              "d1,pn,CI.CLC.,Pg,2020-01-01T00:00:00.5Z,0.9,ev1\n"
              "d1,pn,CI.CLC.,pP,2020-01-01T00:00:01Z,0.8,ev1\n"
              "d2,eqt,CI.JRC2,S,1577836802.25,0.4,ev2\n")
    n = normalise(read_raw(p), role="picks", source="picks.csv")
    f = n.frame
    assert f["dataset"].tolist() == ["d1", "d2"] and f["model"].tolist() == ["pn", "eqt"]
    assert f["station"].tolist() == ["CI.CLC", "CI.JRC2"] and f["phase"].tolist() == ["P", "S"]
    assert f["time"].tolist() == [T0_NS + 500_000_000, T0_NS + 2_250_000_000]
    assert f["conf"].tolist() == [0.9, 0.4]
    assert n.dropped_phases == {"pP": 1}


def test_combine_partitions():
    raw = picks_frame(station=["A", "B"], phase=["P", "pP"], time=[T0, T0], conf=["0.5", "0.4"])
    a = norm_picks(raw)
    bad = picks_frame(conf=["2"])
    b = norm_picks(bad, drop_invalid=True, row_offset=2)
    c = Normalised.combine([a, b])
    assert c.n_rows == 1 and c.n_rows_read == 3 and c.n_invalid == 1
    assert c.dropped_phases == {"pP": 1} and c.invalid_examples == ["row 4: conf '2'"]


@pytest.mark.slow
def test_vectorised_on_many_rows():
    n = 200_000
    raw = pd.DataFrame({"station": np.repeat(["A.", "B"], n // 2), "phase": ["Pg", "S"] * (n // 2),
                        "time": [T0] * n, "conf": ["0.5"] * n})
    out = norm_picks(raw)
    assert out.n_rows == n and set(out.frame["phase"]) == {"P", "S"}


@pytest.mark.parametrize("folder,role,rows", [
    ("stead50_phasenet", "reference", 99),
    ("stead50_phasenet", "picks", 140),
    ("paired_windows", "reference", 506),
    ("paired_windows", "picks", 28_991),
])
def test_real_data(folder, role, rows):
    path = DATA / folder / ("reference.csv" if role == "reference" else "picks.csv")
    if not path.exists():
        pytest.skip(f"{path} not available")
    n = normalise(read_raw(str(path)), role=role, source=path.name)
    assert n.n_rows_read == rows and n.n_rows == rows
    assert n.n_invalid == 0 and n.dropped_phases == {}
    assert set(n.frame["phase"]) == {"P", "S"}
    assert n.frame["time"].dtype == np.int64
    if role == "picks":
        assert n.frame["conf"].between(0, 1).all()


def test_real_data_counts_per_phase():
    path = DATA / "paired_windows" / "reference.csv"
    if not path.exists():
        pytest.skip("paired_windows not available")
    f = normalise(read_raw(str(path)), role="reference", source="reference.csv").frame
    assert f["phase"].value_counts().to_dict() == {"P": 303, "S": 203}
    assert f["station"].nunique() == 144
    # stead50: first arrival 2006-07-23T15:59:07.960Z (ms precision, UTC)
    g = normalise(read_raw(str(DATA / "stead50_phasenet" / "reference.csv")),
                  role="reference", source="reference.csv").frame
    assert g["time"].iloc[0] == pd.Timestamp("2006-07-23T15:59:07.960Z").value


def test_pyarrow_and_nullable_dtypes():
    import pyarrow as pa

    aware = pd.Series(pd.to_datetime(["2020-01-01T02:00:00+02:00"])).astype(
        pd.ArrowDtype(pa.timestamp("us", tz="Europe/Berlin")))
    naive = pd.Series(["2020-01-01T00:00:00"]).astype(pd.ArrowDtype(pa.timestamp("ns")))
    for s in (aware, naive):
        ns, ok = parse_time(s)
        assert ns.tolist() == [T0_NS] and ok.all()
    ns, ok = parse_time(pd.Series([1577836800, None], dtype="Int64"))
    assert ns[0] == T0_NS and ok.tolist() == [True, False]
    raw = pd.DataFrame({"station": pd.Series(["A", "B"], dtype=pd.ArrowDtype(pa.string())),
                        "phase": ["P", "S"], "time": [T0, T0],
                        "conf": pd.Series([0.5, None], dtype="Float64")})
    n = norm_picks(raw, drop_invalid=True)
    assert n.frame["station"].tolist() == ["A"] and n.invalid_counts == {"conf": 1}
    assert type(n.frame["station"].iloc[0]) is str
