"""Text columns normalised per distinct value, and ``normalise(..., categorical=True)``.

``normalise`` runs its text parsers on the distinct values of a column only
(a ``Categorical`` input through its own codes) and can return the text
columns as ``Categorical``.  Whatever the input form and the output form, the
normalised values, the counts and the messages about invalid rows must be
those of the plain path.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.errors import InputError
from pickscale.io import COLUMNS, Normalised, fields, messages, normalise, text, times
from pickscale.io.times import _datetimes_to_ns

TEXT = ("dataset", "model", "station", "phase")
SETTINGS = settings(max_examples=150, derandomize=True)

# Messy values; several normalise to the same string ("CI.CLC", " CI.CLC", "CI.CLC. ").
NAN = float("nan")
STATIONS = ["CI.CLC", " CI.CLC", "CI.CLC.", "CI.CLC. ", "CLC", "CLC..", "CLC . ", "X", ".", "", "  ", None, NAN]
LABELS = ["a", " a", "a ", "a.", "b", "B", "", " ", None, NAN]
PHASES = ["P", "Pg", " Pg", "Sn", " Sn ", "S", "P*", "PKP", " PKP", "pP", "p", "", " ", None, NAN]
TIMES = ["2020-01-01T00:00:00Z", "2020-01-01T00:00:00.5Z", "2020-01-01 00:00:01", "2020-01-01T01:00:00+01:00",
         "2020-01-01T00:00:00+00:00", "1577836800", "1577836800.25", "1.5e9", "x", "2020-13-01T00:00:00", "",
         None]
CONFS = ["0.5", "0", "1", "0.99", "1.5", "-0.1", "85", "x", "", None]


def _text_values(role_columns: list[str], n: int) -> st.SearchStrategy:
    pools = {"dataset": LABELS, "model": LABELS, "station": STATIONS, "phase": PHASES}
    return st.fixed_dictionaries({c: st.lists(st.sampled_from(pools[c]), min_size=n, max_size=n)
                                  for c in role_columns})


@st.composite
def raw_tables(draw) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """(role, plain frame, the same frame with Categorical text columns)."""
    role = draw(st.sampled_from(["reference", "picks"]))
    n = draw(st.integers(1, 15))
    text_columns = [c for c in TEXT if c in COLUMNS[role]
                    and (c not in ("dataset", "model") or draw(st.booleans()))]
    values = draw(_text_values(text_columns, n))
    plain = pd.DataFrame(index=range(n))
    for c in text_columns:
        # object columns (None and NaN) or pandas' str dtype (NaN)
        plain[c] = pd.Series(values[c], dtype=draw(st.sampled_from([object, "str"])))
    plain["time"] = pd.Series(draw(st.lists(st.sampled_from(TIMES), min_size=n, max_size=n)), dtype=object)
    if role == "picks":
        if draw(st.booleans()):
            plain["conf"] = pd.Series(draw(st.lists(st.sampled_from(CONFS), min_size=n, max_size=n)), dtype=object)
        else:
            conf = draw(st.lists(st.sampled_from([0.0, 0.3, 1.0, 1.2, -0.5, NAN]), min_size=n, max_size=n))
            plain["conf"] = np.array(conf, dtype=np.float64)
    cat = plain.copy()
    for c in text_columns:
        present = list(dict.fromkeys(v for v in values[c] if isinstance(v, str)))
        # Categories in any order, some of them unused by the rows.
        unused = [v for v in draw(st.lists(st.sampled_from(["zz", " zz", "P", "CI.CLC"]), max_size=2))
                  if v not in present]
        categories = draw(st.permutations(present + list(dict.fromkeys(unused))))
        cat[c] = pd.Categorical(values[c], categories=categories)
    return role, plain, cat


def _outcome(raw: pd.DataFrame, role: str, drop: bool, categorical: bool) -> Normalised | str:
    try:
        return normalise(raw, role=role, source="picks.csv", drop_invalid=drop, categorical=categorical)
    except InputError as exc:
        return str(exc)


def _check_categorical_frame(frame: pd.DataFrame) -> None:
    for c in TEXT:
        if c not in frame:
            continue
        col = frame[c]
        assert isinstance(col.dtype, pd.CategoricalDtype), c
        categories = list(col.cat.categories)
        assert categories == sorted(categories), c
        # One category per distinct normalised string, and only those of the rows kept.
        assert len(set(categories)) == len(categories), c
        assert set(categories) == set(col.astype(object)), c
        assert (col.cat.codes.to_numpy() >= 0).all(), c


def _check_same(result: Normalised, reference: Normalised, categorical: bool) -> None:
    frame = result.frame
    assert list(frame.columns) == list(reference.frame.columns)
    assert frame.index.equals(pd.RangeIndex(len(frame)))
    assert frame["time"].dtype == np.int64
    if categorical:
        _check_categorical_frame(frame)
    else:
        pd.testing.assert_frame_equal(frame, reference.frame)
    for c in frame.columns:
        values = frame[c].astype(object).tolist() if c in TEXT else frame[c].tolist()
        assert values == reference.frame[c].tolist(), c
        if c in TEXT:
            assert all(type(v) is str for v in values), c
    assert frame.attrs == reference.frame.attrs
    for name in ("n_rows_read", "n_invalid", "invalid_counts", "invalid_examples", "dropped_phases",
                 "mapped_phases", "columns", "ignored_columns"):
        assert getattr(result, name) == getattr(reference, name), name
    assert list(result.invalid_counts) == list(reference.invalid_counts)


@SETTINGS
@given(table=raw_tables())
@pytest.mark.slow
def test_categorical_output_and_input_give_the_plain_result(table):
    role, plain, cat = table
    reference = _outcome(plain, role, True, False)
    assert isinstance(reference, Normalised)
    _check_same(reference, reference, False)  # the plain result's own form
    # Every other (input, output) form; the plain input's plain output is the reference's own call.
    for raw, categorical in ((plain, True), (cat, False), (cat, True)):
        result = _outcome(raw, role, True, categorical)
        assert isinstance(result, Normalised)
        _check_same(result, reference, categorical)


@SETTINGS
@given(table=raw_tables())
@pytest.mark.slow
def test_invalid_rows_raise_the_same_message(table):
    role, plain, cat = table
    reference = _outcome(plain, role, False, False)
    if isinstance(reference, Normalised):
        _check_same(reference, reference, False)  # as above
    for raw, categorical in ((plain, True), (cat, False), (cat, True)):
        result = _outcome(raw, role, False, categorical)
        if isinstance(reference, str):
            assert result == reference
        else:
            assert isinstance(result, Normalised), result
            _check_same(result, reference, categorical)


# --------------------------------------------------------------------------- no per-row strings

def _large_categorical_picks(n: int = 200_000) -> tuple[pd.DataFrame, int]:
    """Picks with Categorical text columns (as read with pyarrow's read_dictionary) and their
    largest number of distinct values."""
    rng = np.random.default_rng(7)
    stations = [f"NET.S{i:02d}" for i in range(40)]
    # Messy spellings of the same stations: they must end up as one category each.
    stations += [" NET.S00", "NET.S01.", "NET.S02. "]
    columns = {
        "dataset": ["ds", " ds"],
        "model": ["m1", "m2", " m1", "m3 "],
        "station": stations,
        "phase": ["P", "S", " Pg", "Sn ", "PKP", "pP"],
    }
    raw = pd.DataFrame({
        name: pd.Categorical.from_codes(rng.integers(0, len(values), n), categories=values)
        for name, values in columns.items()
    })
    raw["time"] = pd.to_datetime(1_600_000_000 * 10**9 + rng.integers(0, 10**15, n), unit="ns", utc=True)
    raw["conf"] = rng.random(n, dtype=np.float32)
    return raw, max(len(v) for v in columns.values())


def test_large_categorical_input_is_normalised_per_distinct_value(monkeypatch):
    raw, most_distinct = _large_categorical_picks()
    seen: list[tuple[str, int]] = []

    def recording(module, name):
        original = getattr(module, name)

        def wrapper(values, *args, **kwargs):
            seen.append((name, len(values)))
            return original(values, *args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    # Every binding of these names in the readers' modules (each module calls its own).
    for name in ("to_object", "as_text", "parse_label", "parse_station"):
        for module in (text, fields, times, messages):
            if hasattr(module, name):
                recording(module, name)
    n = normalise(raw, role="picks", source="picks.parquet", categorical=True)
    monkeypatch.undo()

    names = {name for name, _ in seen}
    assert {"to_object", "as_text", "parse_label", "parse_station"} <= names
    assert max(size for _, size in seen) <= most_distinct + 1, seen
    frame = n.frame
    for c in TEXT:
        assert isinstance(frame[c].dtype, pd.CategoricalDtype), c
    assert list(frame["dataset"].cat.categories) == ["ds"]
    assert list(frame["model"].cat.categories) == ["m1", "m2", "m3"]
    assert len(frame["station"].cat.categories) == 40
    assert list(frame["phase"].cat.categories) == ["P", "S"]
    kept = ~raw["phase"].isin(["PKP", "pP"]).to_numpy()
    assert n.n_rows == kept.sum()
    assert n.dropped_phases == {"PKP": int((raw["phase"] == "PKP").sum()), "pP": int((raw["phase"] == "pP").sum())}
    assert n.mapped_phases == {"P": "P", "S": "S", "Pg": "P", "Sn": "S"}
    np.testing.assert_array_equal(frame["time"].to_numpy(), raw["time"].to_numpy("datetime64[ns]")
                                  .view(np.int64)[kept])

    plain = normalise(raw, role="picks", source="picks.parquet")
    for c in frame.columns:
        assert frame[c].astype(object).tolist() == plain.frame[c].tolist(), c


def test_output_does_not_share_the_input_codes():
    # Categories already sorted, normalised and all used: the output codes must still be a copy,
    # or changing the output would change the caller's frame.
    raw = pd.DataFrame({
        "station": pd.Categorical(["A", "B", "A"]),
        "phase": pd.Categorical(["P", "S", "P"]),
        "time": pd.to_datetime([0, 1, 2], unit="s", utc=True),
        "conf": np.array([0.1, 0.2, 0.3]),
    })
    frame = normalise(raw, role="picks", source="p", categorical=True).frame
    for c in ("station", "phase"):
        assert not np.shares_memory(frame[c].cat.codes.to_numpy(), raw[c].cat.codes.to_numpy()), c
    assert not np.shares_memory(frame["conf"].to_numpy(), raw["conf"].to_numpy())
    frame.loc[0, "station"] = "B"
    assert raw["station"].tolist() == ["A", "B", "A"]


@pytest.mark.parametrize("categorical", [False, True])
def test_absent_labels_take_their_default(categorical):
    raw = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2020-01-01T00:00:00Z"], "conf": [0.5]})
    frame = normalise(raw, role="picks", source="p", categorical=categorical).frame
    assert frame["dataset"].astype(object).tolist() == ["all"]
    assert frame["model"].astype(object).tolist() == ["model"]


def test_nothing_left_gives_empty_columns_of_the_same_types():
    raw = pd.DataFrame({"station": pd.Categorical(["A"]), "phase": pd.Categorical(["PKP"]),
                        "time": ["2020-01-01T00:00:00Z"], "conf": [0.5]})
    plain = normalise(raw, role="picks", source="p").frame
    cat = normalise(raw, role="picks", source="p", categorical=True).frame
    assert len(plain) == len(cat) == 0
    assert plain["station"].dtype == object and isinstance(cat["station"].dtype, pd.CategoricalDtype)
    assert cat["time"].dtype == np.int64 and cat["conf"].dtype == np.float64


def test_mixed_objects_are_not_merged_by_equality():
    # 1 == 1.0 == True as Python objects, but their text differs: three stations.
    raw = pd.DataFrame({"station": pd.Series([1, 1.0, True], dtype=object), "phase": ["P"] * 3,
                        "time": ["2020-01-01T00:00:00Z"] * 3})
    for categorical in (False, True):
        frame = normalise(raw, role="reference", source="r", categorical=categorical).frame
        assert frame["station"].astype(object).tolist() == ["1", "1.0", "True"]


# --------------------------------------------------------------------------- datetime columns

@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
@pytest.mark.parametrize("unit", ["ns", "us", "s"])
def test_datetime_columns_to_ns(tz, unit):
    stamps = pd.Series(pd.to_datetime(["2020-01-01T00:00:00.123456", None, "2021-06-01T12:00:00"],
                                      format="ISO8601"))
    stamps = stamps.astype(f"datetime64[{unit}]")
    if tz is not None:
        stamps = stamps.dt.tz_localize("UTC").dt.tz_convert(tz)
    ns, valid = _datetimes_to_ns(stamps)
    expected = pd.to_datetime(["2020-01-01T00:00:00.123456", "2021-06-01T12:00:00"], format="ISO8601").astype(
        f"datetime64[{unit}]").as_unit("ns").asi8
    assert ns.dtype == np.int64
    assert valid.tolist() == [True, False, True]
    assert ns[[0, 2]].tolist() == expected.tolist() and ns[1] == 0


def test_datetimes_beyond_2262_are_invalid():
    stamps = pd.Series(np.array(["2500-01-01", "2000-01-01"], dtype="datetime64[s]"))
    ns, valid = _datetimes_to_ns(stamps.dt.tz_localize("UTC"))
    assert valid.tolist() == [False, True]
    assert ns.tolist() == [0, 946684800 * 10**9]
