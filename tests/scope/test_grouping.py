"""SPEC §14: the group_by option, the group labels and each arrival's group code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pickscale.errors import InputError, OptionsError
from pickscale.options import Options
from pickscale.scope.grouping import group_codes, join_stations, parse_group_by, read_stations


def test_bins_are_left_closed_with_open_ends_and_missing_last():
    spec = parse_group_by("magnitude:0,1,2.5")
    codes, labels = group_codes(spec, [-0.1, 0, 0.99, 1, 2.4999, 2.5, 7, None, float("nan"), "", " 1.5 "])
    assert labels == ["<0", "[0,1)", "[1,2.5)", ">=2.5", "missing"]
    assert codes.tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 2]
    assert group_codes(spec, [0.5, 3])[1] == ["<0", "[0,1)", "[1,2.5)", ">=2.5"]  # no missing value: no group


def test_text_groups_are_the_sorted_distinct_values():
    codes, labels = group_codes(parse_group_by("network"), ["CI", "AZ ", None, "CI", "BK", ""])
    assert labels == ["AZ", "BK", "CI", "missing"] and codes.tolist() == [2, 0, 3, 2, 1, 3]


@pytest.mark.slow
@given(st.lists(st.one_of(st.none(), st.floats(-10, 10)), max_size=30),
       st.lists(st.floats(-5, 5), min_size=1, max_size=4, unique=True))
def test_numeric_codes_against_the_rule(values, edges):
    edges = sorted(edges)
    spec = parse_group_by("m:" + ",".join(repr(e) for e in edges))
    codes, labels = group_codes(spec, values)
    for v, c in zip(values, codes.tolist()):
        if v is None:
            expected = "missing"
        elif v < edges[0]:
            expected = f"<{edges[0]:g}"
        elif v >= edges[-1]:
            expected = f">={edges[-1]:g}"
        else:
            i = max(j for j, e in enumerate(edges) if e <= v)
            expected = f"[{edges[i]:g},{edges[i + 1]:g})"
        assert labels[c] == expected, (v, edges)


@pytest.mark.parametrize("spec, message", [
    ("", "column name"), (":1,2", "column name is empty"), ("m:", "numbers"), ("m:1,x", "numbers"),
    ("m:2,1", "strictly ascending"), ("m:1,1", "strictly ascending"), ("m:1,inf", "finite"), (3, "column name"),
])
def test_bad_specs_name_the_option(spec, message):
    with pytest.raises(OptionsError, match=message) as info:
        Options(group_by=spec)
    assert info.value.options == ("group_by",)


def test_group_by_round_trips_through_attrs_and_is_absent_by_default():
    o = Options(group_by=" magnitude : 0, 1.50 ").with_group_labels(["<0", "[0,1.5)", ">=1.5"])
    assert o.group_by == "magnitude:0,1.5" and o.n_groups == 3
    back = Options.from_attrs(o.to_attrs())
    assert back == o and back.group_labels == o.group_labels
    assert "group_by" not in Options().to_attrs() and Options().n_groups == 0
    assert Options(group_by="m:1").n_groups == 0  # no labels yet: the kernel counts no group


def test_stations_table_joins_by_dataset_and_station(tmp_path):
    table = pd.DataFrame({"Dataset": ["d1", "d2"], "Station": ["A", "A"], "site": ["rock", "soil"]})
    table.to_csv(tmp_path / "st.csv", index=False)
    stations = read_stations(str(tmp_path / "st.csv"))
    ref = pd.DataFrame({"dataset": ["d2", "d1", "d1"], "station": ["A", "A", "B"]})
    assert join_stations(ref, stations, "SITE").tolist()[:2] == ["soil", "rock"]
    assert pd.isna(join_stations(ref, stations, "site")[2])
    with pytest.raises(OptionsError, match="group_by 'depth'"):
        join_stations(ref, stations, "depth")


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"name": ["A"]}), "needs a 'station' column"),
    (pd.DataFrame({"station": ["A", "A"], "x": [1, 2]}), "more than once"),
    (pd.DataFrame({"station": ["A", None]}), "without a valid station"),
])
def test_bad_stations_tables(frame, message):
    with pytest.raises(InputError, match=message):
        read_stations(frame)


def test_station_names_are_normalised_as_the_inputs():
    stations = read_stations(pd.DataFrame({"station": [" XX.A.00.HHZ ", "CI.CLC."], "x": [1, 2]}),
                             station_key="net.sta")
    assert stations["station"].tolist() == ["XX.A", "CI.CLC"] and np.asarray(stations["x"]).tolist() == [1, 2]
