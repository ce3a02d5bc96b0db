"""Hypothesis fuzzing of the readers (issue 6).

Random column names (aliases in any case and spacing, garbage, duplicates, non-strings), dtypes (text,
numbers, booleans, datetimes naive and aware, nullable and pyarrow types, categoricals, mixed objects),
missing values and garbage strings — as frames, as CSV bytes in any delimiter and encoding, and as
Parquet files of any Arrow type — never make the readers fail with anything but pickscale's own
``InputError``, whose message names the file.  When a table is accepted, the normalised frame keeps
the contract of ``pickscale.io.normalise`` (SPEC §1).

Deterministic (``derandomize=True``): the same examples on every run, in CI too;
``PICKSCALE_FUZZ_EXAMPLES=N`` runs N fresh random examples per test instead.
"""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import os
import tempfile
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pickscale.errors import InputError
from pickscale.io import ALIASES, COLUMNS, normalise, read_raw

# PICKSCALE_FUZZ_EXAMPLES=5000 explores further, with fresh random examples (e.g. in a nightly job).
_DEEP = os.environ.get("PICKSCALE_FUZZ_EXAMPLES")
# The profile's suppressed health checks (conftest.py), and filtering: many fuzzed frames are assumed away.
SETTINGS = settings(max_examples=int(_DEEP or 100), derandomize=not _DEEP,
                    suppress_health_check=[*settings().suppress_health_check, HealthCheck.filter_too_much])

ALL_ALIASES = sorted({a for names in ALIASES.values() for a in names})

# Strings that mean something to a reader, mixed with garbage.
MEANINGFUL = [
    "", " ", "  \t", "nan", "NaN", "NA", "null", "None", "inf", "-inf", "1e400", "-0", "+", "-", ".", "..",
    "P", "S", "Pg", "Sn", "P*", "pP", "sS", "PKP", "p", " P ", "CI.CLC.", "CI.CLC", ".", "XX..",
    "2024-03-01T00:00:00Z", "2024-03-01 00:00:00", "2024-03-01T00:00:00+02:00", "2024-03-01T00:00:00-0530",
    "2024-03-01T00:00:00.123456789Z", "2024-13-45T00:00:00", "9999-12-31T23:59:59", "0001-01-01T00:00:00",
    "1709251200", "1709251200.5", "1709251200123", "1709251200123456", "1709251200123456789", "-1.5",
    "1.7e9", "0x10", "1,5", "0.5", "85", "100", "1.0000001", "2024-03-01", "20240301T000000Z", "T", "Z",
    "=cmd|' /C calc'!A0", "<script>", "\x00", "\ufeff", "é", "日本", "🙂", "\u202e", "a\nb", '"', "''",
]
texts = st.one_of(st.sampled_from(MEANINGFUL), st.text(max_size=12))


def column_names() -> st.SearchStrategy:
    alias = st.builds(lambda a, case, pad: (pad[0] + (a.upper() if case == 1 else a.title() if case == 2 else a)
                                            + pad[1]),
                      st.sampled_from(ALL_ALIASES), st.integers(0, 2),
                      st.sampled_from([("", ""), (" ", ""), ("", " "), ("\t", "")]))
    return st.one_of(alias, alias, alias, st.text(max_size=6), st.integers(-3, 3), st.just("event"))


def _datetimes(tz: bool):
    base = st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2261, 12, 31))
    if tz:
        return base.map(lambda d: d.replace(tzinfo=dt.timezone(dt.timedelta(minutes=90))))
    return base


def column(n: int) -> st.SearchStrategy:
    """One column of length ``n`` in one of many dtypes."""
    def of(elements, dtype=None):
        return st.lists(elements, min_size=n, max_size=n).map(
            lambda values: pd.Series(values, dtype=dtype) if dtype is not None else pd.Series(values, dtype=object))

    mixed = st.one_of(texts, st.none(), st.floats(allow_nan=True), st.integers(-2**70, 2**70), st.booleans(),
                      # (signalling NaNs break pandas' own repr of the example: tested on their own below)
                      st.binary(max_size=4), st.decimals(allow_nan=True).filter(lambda d: not d.is_snan()),
                      _datetimes(False), _datetimes(True),
                      st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                                           max_size=1))
    return st.one_of(
        of(st.one_of(texts, st.none())),  # object text with missing values
        of(texts, "str"),
        of(st.one_of(texts, st.none()), "string[pyarrow]"),
        of(st.integers(-2**63, 2**63 - 1), "int64"),
        of(st.integers(0, 2**64 - 1), "uint64"),
        of(st.one_of(st.integers(-2**63, 2**63 - 1), st.none()), "Int64"),
        of(st.floats(allow_nan=True, allow_infinity=True), "float64"),
        of(st.floats(width=32, allow_nan=True), "float32"),
        of(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.none()), "Float64"),
        of(st.booleans(), "bool"),
        of(st.one_of(st.booleans(), st.none()), "boolean"),
        of(st.one_of(_datetimes(False), st.none())).map(lambda s: pd.to_datetime(s)),
        of(_datetimes(True)).map(lambda s: pd.to_datetime(s, utc=True)),
        of(st.one_of(texts, st.none())).map(lambda s: s.astype("category")),
        of(st.timedeltas(min_value=dt.timedelta(days=-9999), max_value=dt.timedelta(days=9999))).map(
            lambda s: pd.to_timedelta(s)),
        of(mixed),
    )


@st.composite
def raw_frames(draw) -> pd.DataFrame:
    n = draw(st.integers(0, 12))
    names = draw(st.lists(column_names(), max_size=8))  # repeats give duplicate labels
    if not names:
        return pd.DataFrame(index=range(n))
    return pd.concat([draw(column(n)).rename(name) for name in names], axis=1)


def check_normalised(n, role: str, drop: bool) -> None:
    """The contract of a normalised table (SPEC §1)."""
    frame = n.frame
    assert list(frame.columns) == list(COLUMNS[role])
    assert frame.index.equals(pd.RangeIndex(len(frame)))
    assert frame["time"].dtype == np.int64
    for name in ("dataset", "station", "phase") + (("model",) if role == "picks" else ()):
        values = frame[name].tolist()
        assert all(type(v) is str for v in values), name
        assert all(v != "" and v == v.strip() for v in values), name
    assert set(frame["phase"]) <= {"P", "S"}
    assert not any(v.endswith(".") for v in frame["station"])
    if role == "picks":
        conf = frame["conf"].to_numpy()
        assert frame["conf"].dtype == np.float64 and np.all((conf >= 0) & (conf <= 1))
    if not drop:
        assert n.n_invalid == 0
    assert n.n_rows + n.n_invalid + n.n_dropped_phases == n.n_rows_read


def only_input_errors(call, source: str):
    """Run ``call``; it may raise InputError (naming ``source``) and nothing else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call()
        except InputError as exc:
            assert str(exc).startswith(source), str(exc)
            return None


@pytest.mark.slow
@SETTINGS
@given(frame=raw_frames(), role=st.sampled_from(["reference", "picks"]), drop=st.booleans())
def test_frames_of_any_shape_and_dtype(frame, role, drop):
    n = only_input_errors(lambda: normalise(frame, role=role, source="fuzz.csv", drop_invalid=drop), "fuzz.csv")
    if n is not None:
        check_normalised(n, role, drop)


@st.composite
def plausible_frames(draw) -> pd.DataFrame:
    """Frames that have every required column (under some alias), so that rows get validated."""
    n = draw(st.integers(1, 15))
    role_cols = ["station", "phase", "time", "conf"] + sorted(draw(st.sets(st.sampled_from(["dataset", "model"]))))
    frame = pd.DataFrame(index=range(n))
    for c in role_cols:
        name = draw(st.sampled_from(ALIASES[c]))
        name = draw(st.sampled_from([name, name.upper(), f" {name}"]))
        frame[name] = draw(column(n)).array if draw(st.booleans()) else draw(
            st.lists(texts, min_size=n, max_size=n))
    return frame


@SETTINGS
@given(frame=plausible_frames(), role=st.sampled_from(["reference", "picks"]), drop=st.booleans(),
       offset=st.integers(0, 10**6))
@pytest.mark.slow
def test_frames_with_every_column_and_garbage_values(frame, role, drop, offset):
    n = only_input_errors(lambda: normalise(frame, role=role, source="picks.parquet", drop_invalid=drop,
                                            row_offset=offset), "picks.parquet")
    if n is not None:
        check_normalised(n, role, drop)


# --------------------------------------------------------------------------- files


def _read(path: str, role: str, drop: bool):
    return normalise(read_raw(path), role=role, source=path, drop_invalid=drop)


@st.composite
def csv_files(draw) -> tuple[bytes, str]:
    """CSV-like bytes: random header (aliases and garbage), delimiter, quoting, line ends, encoding."""
    delim = draw(st.sampled_from([",", ";", "\t", "|", " "]))
    names = draw(st.lists(st.one_of(st.sampled_from(ALL_ALIASES), st.text(max_size=5)), max_size=7))
    rows = draw(st.lists(st.lists(texts, min_size=0, max_size=len(names) + 1), max_size=10))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))

    def cell(v: str) -> str:
        return f'"{v}"' if draw(st.booleans()) else v

    text = newline.join([delim.join(cell(x) for x in names)] + [delim.join(cell(x) for x in r) for r in rows])
    text = draw(st.sampled_from(["", "\ufeff"])) + text + draw(st.sampled_from(["", newline]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16", "cp1252"]))
    data = text.encode(encoding, errors="replace")
    if draw(st.integers(0, 9)) == 0:
        data = gzip.compress(data)
    suffix = draw(st.sampled_from([".csv", ".csv", ".csv.gz", ".txt", ".parquet", ".pq"]))
    return data, suffix


@pytest.mark.slow
@SETTINGS
@given(file=st.one_of(csv_files(), st.tuples(st.binary(max_size=300), st.sampled_from([".csv", ".parquet"]))),
       role=st.sampled_from(["reference", "picks"]), drop=st.booleans())
def test_csv_and_other_bytes(file, role, drop):
    data, suffix = file
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "input" + suffix)
        with open(path, "wb") as f:
            f.write(data)
        n = only_input_errors(lambda: _read(path, role, drop), path)
        if n is not None:
            check_normalised(n, role, drop)


def arrow_columns(n: int) -> st.SearchStrategy:
    """An Arrow array of length ``n`` of one of many types."""
    def arr(elements, typ):
        return st.lists(elements, min_size=n, max_size=n).map(lambda v: pa.array(v, type=typ))

    small_text = st.one_of(texts, st.none())
    return st.one_of(
        arr(small_text, pa.string()),
        arr(small_text, pa.large_string()),
        arr(small_text, pa.string()).map(lambda a: a.dictionary_encode()),
        arr(st.one_of(st.integers(-2**63, 2**63 - 1), st.none()), pa.int64()),
        arr(st.one_of(st.integers(0, 2**64 - 1), st.none()), pa.uint64()),
        arr(st.one_of(st.integers(-128, 127), st.none()), pa.int8()),
        arr(st.one_of(st.floats(), st.none()), pa.float64()),
        arr(st.one_of(st.floats(width=32), st.none()), pa.float32()),
        arr(st.one_of(st.booleans(), st.none()), pa.bool_()),
        arr(st.one_of(st.integers(-2**62, 2**62), st.none()), pa.timestamp("ns")),
        arr(st.one_of(st.integers(-2**62, 2**62), st.none()), pa.timestamp("us", tz="UTC")),
        arr(st.one_of(st.integers(-2**62, 2**62), st.none()), pa.timestamp("s", tz="+05:30")),
        arr(st.one_of(st.integers(-2**62, 2**62), st.none()), pa.timestamp("ms")),
        arr(st.one_of(st.integers(-10**6, 10**6), st.none()), pa.date32()),
        arr(st.one_of(st.integers(0, 86400 * 10**6 - 1), st.none()), pa.time64("us")),
        arr(st.one_of(st.integers(-2**62, 2**62), st.none()), pa.duration("ns")),
        arr(st.one_of(st.decimals(min_value=-10**6, max_value=10**6, places=3, allow_nan=False), st.none()),
            pa.decimal128(12, 3)),
        arr(st.one_of(st.binary(max_size=5), st.none()), pa.binary()),
        arr(st.one_of(st.lists(st.integers(-5, 5), max_size=3), st.none()), pa.list_(pa.int64())),
        arr(st.one_of(st.fixed_dictionaries({"a": st.integers(0, 3)}), st.none()), pa.struct([("a", pa.int64())])),
        st.just(pa.nulls(n)),
    )


@st.composite
def parquet_tables(draw) -> pa.Table:
    n = draw(st.integers(0, 10))
    names = draw(st.lists(st.one_of(st.sampled_from(ALL_ALIASES), st.text(max_size=5)), max_size=7))
    columns = [draw(arrow_columns(n)) for _ in names]
    return pa.Table.from_arrays(columns, names=[str(x) for x in names]) if names else pa.table(
        {"x": pa.nulls(n)})


def _projected(path: str, role: str) -> pd.DataFrame:
    from pickscale.io import read_projected  # what the engine reads Parquet files with

    return read_projected(path, role=role)


PARQUET_READERS = {"read_raw": lambda path, role: read_raw(path), "read_projected": _projected}


@pytest.mark.parametrize("reader", sorted(PARQUET_READERS))
@SETTINGS
@given(table=parquet_tables(), role=st.sampled_from(["reference", "picks"]), drop=st.booleans())
@pytest.mark.slow
def test_parquet_files_of_any_arrow_type(reader, table, role, drop):
    read = PARQUET_READERS[reader]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "input.parquet")
        try:
            pq.write_table(table, path)
        except (pa.ArrowException, ValueError, TypeError):
            assume(False)  # a table Parquet itself cannot hold
        n = only_input_errors(lambda: normalise(read(path, role), role=role, source=path, drop_invalid=drop), path)
        if n is not None:
            check_normalised(n, role, drop)


def test_duplicate_column_labels_are_an_input_error():
    """Found by fuzzing: a frame (or Parquet file) with the same column label twice."""
    frame = pd.DataFrame([["A", "P", "2024-03-01T00:00:00Z", "2024-03-01T00:00:01Z"]],
                         columns=["station", "phase", "time", "time"])
    with pytest.raises(InputError, match=r"ref\.csv: the column name 'time' appears 2 times"):
        normalise(frame, role="reference", source="ref.csv")


def test_bytes_that_are_not_utf8_in_a_parquet_binary_column(tmp_path):
    """Found by fuzzing: a binary column of non-UTF-8 bytes crashed the text conversion."""
    path = tmp_path / "ref.parquet"
    pq.write_table(pa.table({"sta": pa.array([b"\x80AB", b"CLC"], pa.binary()), "phase": ["P", "S"],
                             "time": ["2024-03-01T00:00:00Z", "2024-03-01T00:00:01Z"]}), path)
    n = normalise(read_raw(str(path)), role="reference", source=str(path))
    assert n.frame["station"].tolist() == ["\\x80AB", "CLC"]


def test_signalling_nan_decimals():
    """Found by fuzzing: Decimal('sNaN') makes every pandas missing-value check raise InvalidOperation."""
    frame = pd.DataFrame({
        "station": pd.Series(["A", decimal.Decimal("sNaN"), "B"], dtype=object), "phase": ["P", "P", "S"],
        "time": pd.Series([decimal.Decimal("sNaN"), "2024-03-01T00:00:00Z", decimal.Decimal("1709251200.5")],
                          dtype=object),
        "conf": pd.Series([decimal.Decimal("-sNaN"), 0.5, decimal.Decimal("0.25")], dtype=object)})
    with pytest.raises(InputError, match="2 invalid row"):
        normalise(frame, role="picks", source="p.parquet")
    n = normalise(frame, role="picks", source="p.parquet", drop_invalid=True)
    assert n.frame["time"].tolist() == [1_709_251_200_500_000_000] and n.frame["conf"].tolist() == [0.25]


@pytest.mark.parametrize("reader", [
    "read_raw",
    "read_projected",
])
def test_parquet_dates_pandas_cannot_hold(reader, tmp_path):
    """Found by fuzzing: a date32 before year 1 makes pyarrow's conversion to pandas raise ValueError."""
    path = tmp_path / "reference.parquet"
    pq.write_table(pa.table({"station": ["A"], "phase": ["P"],
                             "arrival_time": pa.array([-719163], pa.date32())}), path)  # 0000-12-31
    with pytest.raises(InputError, match="reference.parquet"):
        PARQUET_READERS[reader](str(path), "reference")
