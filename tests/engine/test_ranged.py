"""Issue 22, item 1: a stream too large for one task is cut into ranges of stations, each ordered on its own,
and its SPEC §5 statistics are combined from the ranges -- the same numbers as one task over the whole stream.

* any split of a stream's pairs into parts gives, through the parts' facts, selection by binary search and the
  candidates' counts, the whole stream's sweep and groups bit for bit, and the same most common residual and
  grid wherever SPEC §5's rules can fire (hypothesis, with concentrated and gridded residuals);
* a run on a cluster whose streams are all cut into ranges (``RANGE_ROWS`` made small) gives the same Dataset,
  pairs and store files as a run with whole streams, and an extension on the cluster the same tables.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.engine import ranged
from pickscale.engine.ranged import cut_points, part_of, statistics
from pickscale.metrics.flags import flag_facts
from pickscale.metrics.grid import on_grid
from pickscale.metrics.timing import concentrated, pair_statistics
from pickscale.options import Options
from tests.helpers.catalogues import trap_catalogue
from tests.helpers.checks import assert_same_results
from tests.helpers.extend import ranked_by_stream

GROUPED = Options(thresholds=[0.1, 0.3, 0.5, 0.8], group_by="network").with_group_labels(("a", "b", "c"))


def _columns(rows):
    return {"station": np.array([r[0] for r in rows], np.int32),
            "residual_ns": np.array([r[1] for r in rows], np.int64),
            "conf": np.array([r[2] for r in rows], np.float64), "group": np.array([r[3] for r in rows], np.int32)}


def _compare(rows, cuts, options, phase=0):
    cols = _columns(rows)
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    parts = [part_of({k: v[a:b] for k, v in cols.items()}, options=options, phase=phase)
             for a, b in zip(bounds[:-1], bounds[1:])]
    got = statistics({phase: parts}, None, options=options)[phase]
    want = pair_statistics(cols["residual_ns"], cols["conf"], cols["group"], thresholds=options.grid,
                           tol=options.tol, threshold=options.threshold_of(phase), n_groups=options.n_groups)
    for part in ("sweep", "by_group"):
        for name, values in want[part].items():
            assert np.asarray(got[part][name]).tobytes() == np.asarray(values).tobytes(), (part, name)
    assert got["grid"] == want["grid"]
    assert got["sums"].tobytes() == want["sums"].tobytes()  # (the exact sums kept: one form, however split)
    assert got["mode"]["n"] == want["mode"]["n"]
    assert concentrated(got["mode"]) == concentrated(want["mode"])
    if want["mode"]["count"] * 15 > want["mode"]["n"]:  # (a value that can be the rule's: found exactly)
        assert (got["mode"]["residual_ns"], got["mode"]["count"]) == (want["mode"]["residual_ns"],
                                                                     want["mode"]["count"])
    assert on_grid(got["grid"]) == on_grid(want["grid"])
    # What the results keep of the rules (metrics/flags.py) is the same however the stream was held.
    kept = [flag_facts({k: np.asarray(v) for k, v in one["mode"].items()},
                       {k: np.asarray(v) for k, v in one["grid"].items()}) for one in (got, want)]
    assert {k: int(v) for k, v in kept[0].items()} == {k: int(v) for k, v in kept[1].items()}


_RESIDUALS = st.one_of(
    st.integers(-2 * 10**9, 2 * 10**9),  # anywhere in residual_tol
    st.sampled_from([-200_000_000, -100_000_000, 0, 100_000_000, 200_000_000, 300_000_000]),  # on a 0.1 s grid
    st.sampled_from([0, 0, 0, 10_000_000, -10_000_000]),  # concentrated on one value
)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), _RESIDUALS, st.sampled_from([0.05, 0.1, 0.3, 0.31, 0.5, 0.9, 1.0]),
                          st.integers(0, 2)), min_size=0, max_size=80),
       st.lists(st.integers(0, 80), max_size=5))
def test_a_stream_in_parts_has_the_whole_streams_statistics(rows, cuts):
    _compare(rows, cuts, GROUPED)


def test_concentrated_and_gridded_streams_by_hand():
    # 30 pairs at exactly 0 and 6 at +10 ms, in three parts: concentrated on 0 (30 of 36).
    rows = [(s, 0, 0.9, 0) for s in range(30)] + [(s, 10_000_000, 0.9, 0) for s in range(6)]
    _compare(rows, [10, 20], Options())
    # GPD-like: every residual on the 0.1 s grid, 5 values: on a grid of 0.1 s (the 0.5, 0.25, 0.2 s steps hold
    # fewer than 90 %), whichever part holds which.
    rows = [(s, v, 0.9, 0) for s in range(40) for v in (-100_000_000, 0, 100_000_000, 200_000_000, 300_000_000)]
    _compare(rows, [7, 90, 150], Options())


def test_cut_points_cover_every_station_in_order():
    counts = np.array([5, 0, 2, 9, 0, 0, 3, 1])
    cuts = cut_points(counts, rows=6)
    assert cuts == [(0, 2), (2, 3), (3, 4), (4, 8)]  # 5 + 0 + 2 > 6; station 3 (9) alone
    assert all(counts[lo:hi].sum() <= 6 or hi - lo == 1 for lo, hi in cuts)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return trap_catalogue(seed=7, n_events=12).write_csv(tmp_path_factory.mktemp("ranged"))


@pytest.mark.cluster
def test_a_run_with_every_stream_in_ranges_is_the_same(inputs, client, monkeypatch, tmp_path):
    ref, picks = map(str, inputs)
    with client.as_current():
        whole = pickscale.score(ref, picks, client=client)
        a = pickscale.save(whole, tmp_path / "whole.zarr")
        monkeypatch.setattr(ranged, "RANGE_ROWS", 40)  # every stream of more than 40 pairs: ranges of stations
        real, seen = ranged.cut_points, []
        monkeypatch.setattr(ranged, "cut_points", lambda counts: seen.append(real(counts, 40)) or seen[-1])
        cut = pickscale.score(ref, picks, client=client)
        assert seen and max(len(c) for c in seen) > 1  # (streams in several ranges, several stations each)
        b = pickscale.save(cut, tmp_path / "cut.zarr")
        whole, cut = whole.load(), cut.load()
    # The same pairs and results; the ranked runs (SPEC §9) are the ranges' -- the same residuals per stream.
    assert_same_results(whole, cut, ranked=False)
    for name in ("pair_station", "residual", "pair_conf"):
        assert np.array_equal(whole[name].values, cut[name].values), name
    assert ranked_by_stream(whole) == ranked_by_stream(cut)
    assert len(cut.attrs["pair_runs"]) > len(whole.attrs["pair_runs"])
    files = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file() and "/c/" in p.as_posix()
                   and not p.relative_to(a).as_posix().startswith("ranked_"))
    assert files and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    # Cut the same way, a run without a cluster writes the cluster's store, byte for byte: the runs are the ranges
    # of the stream's pairs per station, whatever held them.
    here = pickscale.save(pickscale.score(ref, picks), tmp_path / "here.zarr")
    chunks = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file() and "/c/" in p.as_posix())
    assert any(f.startswith("ranked_") for f in chunks)
    assert all((b / f).read_bytes() == (here / f).read_bytes() for f in chunks)
    assert pickscale.open_results(here).attrs["pair_runs"] == cut.attrs["pair_runs"]


@pytest.mark.cluster
@pytest.mark.parametrize("ranked", [True, False])
def test_an_extension_times_large_streams_in_parts(client, monkeypatch, tmp_path, ranked):
    # (a store that keeps its pairs ranked has each merged stream timed by rank on a worker, its new ranges among
    # its parts there; one written before, here from the stored pairs' and the new ranges' parts)
    from tests.engine.test_extend_append import _halves, _tables
    from tests.helpers.stores import unranked

    (r1, p1), (r2, p2) = _halves()
    first = pickscale.score(r1, p1)
    target = pickscale.save(first if ranked else unranked(first), tmp_path / "results.zarr")
    monkeypatch.setattr(ranged, "RANGE_ROWS", 2)
    real, seen = ranged.statistics, []
    monkeypatch.setattr(ranged, "statistics",
                        lambda parts, *a, **k: seen.extend(parts.values()) or real(parts, *a, **k))
    with client.as_current():
        pickscale.extend(target, r2, p2, client=client)
    assert ranked or any(len(p) > 1 for p in seen)  # (merged streams timed from their parts)
    import pandas as pd

    whole = pickscale.score(pd.concat([r1, r2]), pd.concat([p1, p2]))
    assert _tables(pickscale.open_results(target, lazy=False)) == _tables(whole)
