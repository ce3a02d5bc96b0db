"""The reference in buckets of stations (issue 22): SPEC §2, the extent, groups and events, whatever the buckets.

The rules run bucket by bucket (:mod:`pickscale.scope.rows`) and the client decides from the buckets' summaries;
here every result is compared, in any cut of the reference into read parts and buckets, with the brute force
of SPEC §2 on whole frames (:func:`tests.helpers.checks.expected_scope`), with the reference held as one
frame (the whole reference in one place, as the client held it before), and with the digest of the whole
frame (:func:`pickscale.engine.extent.reference_digest`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.engine.encoding import event_names, group_labels_of
from pickscale.engine.extent import digest_of, facts_of, reference_digest
from pickscale.scope import scope_from_summary, summarise_picks
from pickscale.scope.arrivals import ROW, Arrivals, bucket_bounds, join_pieces, split_rows, station_counts
from pickscale.scope.events import event_codes
from pickscale.scope.grouping import group_codes, parse_group_by
from tests.helpers.checks import expected_scope
from tests.helpers.examples import examples

S = 10**9
TOL = 2 * S
FLOOR = 0.02


def _bucketed(frame: pd.DataFrame, part_cuts: list[int], target_rows: int) -> Arrivals:
    """``frame`` read as parts cut at ``part_cuts`` and joined into buckets of about ``target_rows`` rows, as the
    engine makes them (:class:`pickscale.engine.arrivals.ReferenceRead`)."""
    edges = [0, *sorted({c for c in part_cuts if 0 < c < len(frame)}), len(frame)]
    parts = [frame.iloc[a:b].reset_index(drop=True) for a, b in zip(edges, edges[1:])]
    counts = pd.concat([station_counts(p) for p in parts]).groupby(level=0).sum()
    bounds = bucket_bounds(counts, target_rows)
    pieces = [split_rows(p, bounds, a) for p, a in zip(parts, edges)]
    return Arrivals([join_pieces(*[s[k] for s in pieces]) for k in range(len(bounds) + 1)])


def test_buckets_hold_ranges_of_stations_in_input_order():
    ref = pd.DataFrame({"dataset": ["d"] * 6, "station": ["C", "A", "B", "A", "C", "B"], "phase": ["P"] * 6,
                        "time": [6, 5, 4, 3, 2, 1]}).astype({"station": "category"})
    counts = station_counts(ref)
    assert counts.to_dict() == {"A": 2, "B": 2, "C": 2}
    assert bucket_bounds(counts, 2) == ["B", "C"] and bucket_bounds(counts, 4) == ["C"]  # cut where rows start
    assert bucket_bounds(counts, 100) == [] and bucket_bounds(counts, 100, at_least=2) == ["C"]
    arrivals = _bucketed(ref, [3], 2)  # read as two parts: rows 0-2 and 3-5
    got = [(b.frame["station"].astype(str).tolist(), b.frame[ROW].tolist()) for b in arrivals.buckets]
    assert got == [(["A", "A"], [1, 3]), (["B", "B"], [2, 5]), (["C", "C"], [0, 4])]
    whole = arrivals.frame()
    assert whole["station"].astype(str).tolist() == ["C", "A", "B", "A", "C", "B"] and ROW not in whole


def test_a_duplicate_across_read_parts_is_kept_once_as_its_first_row():
    """Hand-worked: A's P at 10 s is in both parts (kept once: the first, with its magnitude and event); B is
    alone in its bucket; the picks span 9–30 s, so A's S at 50 s is outside the span."""
    ref = pd.DataFrame({"dataset": ["d"] * 5, "station": ["A", "B", "A", "A", "B"], "phase": ["P", "P", "S", "P", "S"],
                        "time": [10 * S, 12 * S, 50 * S, 10 * S, 20 * S], "group_value": ["1.5", "0.5", "2", "9", "x"]})
    picks = pd.DataFrame({"dataset": ["d"] * 2, "station": ["A", "B"], "model": ["m", "m"], "phase": ["P", "P"],
                          "time": [11 * S, 28 * S], "conf": [0.9, 0.9]})
    arrivals = _bucketed(ref, [3], 1)
    assert len(arrivals.buckets) == 2
    scope = scope_from_summary(arrivals, summarise_picks(picks), below_by_ds={}, floor=FLOOR, residual_tol_ns=TOL)
    assert scope.exclusions["reference_duplicates"] == 1 and scope.exclusions["reference_outside_span"] == 1
    kept = scope.reference
    assert kept["time"].tolist() == [10 * S, 12 * S, 20 * S] and kept["group_value"].tolist() == ["1.5", "0.5", "x"]
    assert scope.scored_summary[["station", "n_reference", "t_min", "t_max"]].values.tolist() == [
        ["A", 1, 10 * S, 10 * S], ["B", 2, 12 * S, 20 * S]]
    grouping = group_labels_of(scope.arrivals, parse_group_by("group_value"))
    assert grouping.labels == ("0.5", "1.5", "x")
    facts = facts_of(scope, summarise_picks(picks))
    entry = facts["datasets"]["d"][0]
    assert entry["arrivals"] == 3 and entry["arrival_spans"] == [[10 * S, 10 * S], [12 * S, 20 * S]]
    assert entry["reference_sha256"] == reference_digest(kept, "d")[0]


@st.composite
def catalogues(draw):
    n_ref = draw(st.integers(1, 40))
    stations = [f"S{i}" for i in range(draw(st.integers(1, 6)))]
    rows = {
        "dataset": draw(st.lists(st.sampled_from(["a", "b"]), min_size=n_ref, max_size=n_ref)),
        "station": draw(st.lists(st.sampled_from(stations), min_size=n_ref, max_size=n_ref)),
        "phase": draw(st.lists(st.sampled_from(["P", "S"]), min_size=n_ref, max_size=n_ref)),
        "time": [t * S for t in draw(st.lists(st.integers(0, 30), min_size=n_ref, max_size=n_ref))],
        "group_value": draw(st.lists(st.sampled_from(["0.5", "1.5", "3", None, "x", " y"]), min_size=n_ref,
                                     max_size=n_ref)),
        "event": draw(st.lists(st.sampled_from(["e1", "e2", "e3", "", None]), min_size=n_ref, max_size=n_ref)),
    }
    ref = pd.DataFrame(rows)
    n_picks = draw(st.integers(1, 30))
    picks = pd.DataFrame({
        "dataset": draw(st.lists(st.sampled_from(["a", "b"]), min_size=n_picks, max_size=n_picks)),
        "station": draw(st.lists(st.sampled_from(stations), min_size=n_picks, max_size=n_picks)),
        "model": draw(st.lists(st.sampled_from(["m", "n"]), min_size=n_picks, max_size=n_picks)),
        "phase": draw(st.lists(st.sampled_from(["P", "S"]), min_size=n_picks, max_size=n_picks)),
        "time": [t * S for t in draw(st.lists(st.integers(3, 25), min_size=n_picks, max_size=n_picks))],
        "conf": draw(st.lists(st.sampled_from([0.01, 0.5, 0.9]), min_size=n_picks, max_size=n_picks)),
    })
    cuts = draw(st.lists(st.integers(0, n_ref), max_size=4))
    target = draw(st.integers(1, 20))
    categorical = draw(st.booleans())
    return ref, picks, cuts, target, categorical


def _scope(ref, picks):
    above = picks[picks["conf"] >= FLOOR]
    below = picks.loc[picks["conf"] < FLOOR, "dataset"].value_counts()
    return summarise_picks(above), {str(k): int(v) for k, v in below.items()}


@settings(max_examples=examples(150), deadline=None)
@given(catalogues())
def test_scope_extent_groups_and_events_do_not_depend_on_the_buckets(case):
    ref, picks, cuts, target, categorical = case
    if categorical:
        ref = ref.astype({"dataset": "category", "station": "category", "phase": "category"})
    summary, below = _scope(ref, picks)
    keywords = dict(below_by_ds=below, floor=FLOOR, residual_tol_ns=TOL, event_column="event")
    try:
        whole = scope_from_summary(ref, summary, **keywords)
    except Exception as exc:  # the same error, word for word, in any buckets
        try:
            scope_from_summary(_bucketed(ref, cuts, target), summary, **keywords)
        except Exception as again:
            assert type(again) is type(exc) and str(again) == str(exc)
            return
        raise AssertionError(f"only the whole reference raised {exc!r}") from None
    parts = scope_from_summary(_bucketed(ref, cuts, target), summary, **keywords)

    # SPEC §2 on whole frames (events settled first: a duplicate's rows share one id, the first in code-point order).
    want = expected_scope(ref.astype({"dataset": object, "station": object, "phase": object}),
                          picks.astype({"dataset": object}), floor=FLOOR, residual_tol_ns=TOL)
    for scope in (whole, parts):
        assert scope.stations == want.stations and scope.models == want.models and scope.spans == want.spans
        assert scope.exclusions == want.exclusions
        # (a dataset with no exclusion may be listed with zeros, or not at all: the counts are what is compared)
        assert ({d: c for d, c in scope.exclusions_by_dataset.items() if any(c.values())}
                == {d: c for d, c in want.exclusions_by_dataset.items() if any(c.values())})
        got = scope.reference.astype({"dataset": object, "station": object, "phase": object})
        key = ["dataset", "station", "phase", "time"]
        pd.testing.assert_frame_equal(got[key].sort_values(key).reset_index(drop=True),
                                      want.reference[key].astype({"time": np.int64}).sort_values(key)
                                      .reset_index(drop=True), check_dtype=False)
    assert parts.warnings == whole.warnings and parts.report == whole.report
    pd.testing.assert_frame_equal(parts.scored_summary, whole.scored_summary)
    scored = whole.reference
    assert parts.reference.astype(object).equals(scored.astype(object))  # the same rows, in input order

    # The extent: the digest of every bucket's rows, one after the other, is the whole frame's.
    assert facts_of(parts, summary) == facts_of(whole, summary)
    for d in whole.datasets:
        assert digest_of(parts.arrivals, d) == reference_digest(scored, d)
        window = (8 * S, 20 * S)
        raw = _bucketed(ref, cuts, target)
        assert digest_of(raw, d, stations=["S0", "S2"], span=window) == reference_digest(
            ref, d, stations=["S0", "S2"], span=window)

    # Groups (SPEC §14) and events (SPEC §19): labels, codes and each event's group, as from one frame.
    for spec in ("group_value", "group_value:1,2"):
        parsed = parse_group_by(spec)
        try:
            codes, labels = group_codes(parsed, scored["group_value"].to_numpy(object))
        except Exception as exc:
            try:
                group_labels_of(parts.arrivals, parsed)
            except Exception as again:
                assert str(again) == str(exc)
                continue
            raise AssertionError("only the whole reference raised") from None
        grouping = group_labels_of(parts.arrivals, parsed)
        assert list(grouping.labels) == labels
        events = event_names(parts.arrivals, "event", grouping)
        expected = event_codes(scored, "event", group=codes)
        assert (events is None) == (expected is None)
        if events is not None:
            assert events.names == expected.names and events.groups == expected.groups


def test_bad_coordinates_are_said_for_the_whole_reference_whatever_the_buckets():
    """A distance group's bad coordinates: counted over every bucket, the first distinct values in input order."""
    from pickscale.io.normalise import kept_name
    from pickscale.scope.distance import kept_columns
    from pickscale.scope.grouping import reference_group_codes

    n = 9
    ref = pd.DataFrame({"dataset": ["d"] * n, "station": [f"S{i % 3}" for i in range(n)], "phase": ["P"] * n,
                        "time": [i * S for i in range(n)]})
    names = kept_columns()
    columns = {name: [0.0] * n for name in ("event_latitude", "event_longitude", "station_latitude",
                                            "station_longitude")}
    columns["station_latitude"] = [0.0, "north", 91.0, 0.0, "north", 0.0, "south", 0.0, 95.0]
    columns["event_longitude"] = [0.0] * 8 + [400.0]
    for i, name in enumerate(names):
        if name in columns:
            ref[kept_name(i)] = pd.Series(columns[name], dtype=object)
    spec = parse_group_by("distance:0,10")
    with pytest.raises(Exception) as whole:
        reference_group_codes(ref, spec)
    for target in (1, 2, 4):
        with pytest.raises(Exception) as parts:
            group_labels_of(_bucketed(ref, [4], target), spec)
        assert str(parts.value) == str(whole.value)
