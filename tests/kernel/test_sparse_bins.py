"""Time-binned counts are sparse in the bin axis on the workers (issue 22, item 4): a station keeps a row per
bin it occupies, and rows combine (time blocks, partitions, the reduction tree, the client's join) to the
same counts as dense arrays summed; they are made dense only where the results Dataset is laid out."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.engine.collect import join
from pickscale.kernel import Partial, StationStack, combine_partials, merge_results, score_station
from pickscale.kernel.combine import BINNED_ROWS
from pickscale.options import Options
from pickscale.results import counts_from_stack
from tests.helpers.examples import examples

S = 10**9
HOUR = 3600 * S


def _options(n_bins: int) -> Options:
    return Options(thresholds=[0.3, 0.5, 0.7], time_bin="1h").with_bin_edges(np.arange(n_bins + 1) * HOUR)


def _binned_nbytes(r) -> int:
    return sum(getattr(r, name).nbytes for name in BINNED_ROWS)


def test_a_station_keeps_only_the_bins_it_occupies():
    """10,000 bins in the run, one station active in 3: O(3) rows, not 10,000 (dense: 10,000 × 14 int64)."""
    n_bins, n_models = 10_000, 3
    o = _options(n_bins)
    at = np.array([5, 5_000, 9_998]) * HOUR + 60 * S
    r = score_station([0, 1, 0], at, [0, 1, 2], [0, 1, 0], at + S // 10, [0.9, 0.8, 0.6], n_models=n_models,
                      options=o)
    assert r.binned_bin.tolist() == [5, 5_000, 9_998]
    dense_bytes = (2 + 2 * 2 * n_models) * n_bins * 8
    assert _binned_nbytes(r) == 3 * (1 + 2 + 2 * 2 * n_models) * 8  # 3 rows: bin, 2 arrivals, 2 × (M × 2) picks
    assert _binned_nbytes(r) * 1000 < dense_bytes
    # The dense views are still the run's bins.
    assert r.emitted_over_time.shape == (n_models, 2, n_bins) and int(r.matched_over_time.sum()) == 3
    assert r.n_reference_over_time[:, [5, 5_000, 9_998]].tolist() == [[1, 0, 1], [0, 1, 0]]
    # A stack of 200 such stations: rows for 600 bins, not 200 × 10,000.
    stack = StationStack.of([(k, r) for k in range(200)])
    assert stack.binned_nbytes() < 200 * 500 and stack.binned["binned_emitted"].shape == (600, n_models, 2)
    assert stack.n_time_bins == n_bins


def _dense_brute(pieces_of: dict[int, list], n_bins: int, n_models: int) -> dict[str, np.ndarray]:
    """Every piece's dense counts, summed per station: (S, ..., G) in station-key order."""
    keys = sorted(pieces_of)
    out = {"n_reference_over_time": np.zeros((len(keys), 2, n_bins), np.int64),
           "emitted_over_time": np.zeros((len(keys), n_models, 2, n_bins), np.int64),
           "matched_over_time": np.zeros((len(keys), n_models, 2, n_bins), np.int64)}
    for i, k in enumerate(keys):
        for r in pieces_of[k]:
            for name in out:
                out[name][i] += getattr(r, name)
    return out


_piece = st.tuples(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 10**6)), max_size=6),  # arrivals (phase, time in s/10)
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 10**6),
                       st.sampled_from([0.2, 0.3, 0.5, 0.9])), max_size=8),  # picks (model, phase, time, conf)
)


@pytest.mark.slow
@settings(max_examples=examples(75), deadline=None)
@given(n_bins=st.integers(1, 40),
       stations=st.lists(st.lists(st.tuples(_piece, st.integers(0, 3)), min_size=1, max_size=3), min_size=1,
                         max_size=5))
def test_sparse_rows_combine_to_the_dense_sums(n_bins, stations):
    """Random stations cut into random pieces spread over random partitions: the combined sparse rows, made
    dense, equal each piece's dense counts summed (and the stack's rows are exactly the nonzero bins)."""
    o = Options(thresholds=[0.3, 0.5, 0.7], time_bin="1h").with_bin_edges(
        np.arange(n_bins + 1) * (10**6 * S // 10 // n_bins + 1))
    n_models = 2
    pieces_of: dict[int, list] = {}
    partitions: list[list] = [[] for _ in range(4)]
    for key, pieces in enumerate(stations):
        for (arrivals, picks), where in pieces:
            a = list(zip(*arrivals)) or [(), ()]
            p = list(zip(*picks)) or [(), (), (), ()]
            r = score_station(np.array(a[0], np.int64), np.array(a[1], np.int64) * S // 10,
                              np.array(p[0], np.int64), np.array(p[1], np.int64), np.array(p[2], np.int64) * S // 10,
                              np.array(p[3], np.float64), n_models=n_models, options=o)
            pieces_of.setdefault(key, []).append(r)
            partitions[where].append((0, key, r))
    parts = [Partial.of(items, fine={}) for items in partitions if items]
    # The client's join of the reduction's top pieces (engine/collect.py) gives the reduction's rows.
    joined = join(copy.deepcopy(parts), lambda i, d, rows: parts[i].stacks[d].take(rows)).stacks[0]
    total = combine_partials(*parts) if len(parts) > 1 else parts[0]
    stack = total.stacks[0]
    assert joined.bin_key.tobytes() == stack.bin_key.tobytes() and joined.n_time_bins == stack.n_time_bins
    for name, rows in stack.binned.items():
        assert joined.binned[name].dtype == rows.dtype and joined.binned[name].tobytes() == rows.tobytes(), name
    want = _dense_brute(pieces_of, n_bins, n_models)
    # Per station (the kernel's merge of a station's pieces) ...
    for i, key in enumerate(stack.keys.tolist()):
        merged = merge_results(list(pieces_of[key]))
        for name, dense in want.items():
            assert np.array_equal(getattr(merged, name), dense[i]), name
        assert np.all(np.diff(merged.binned_bin) > 0)
        nonzero = (want["n_reference_over_time"][i].sum(0) + want["emitted_over_time"][i].sum((0, 1))
                   + want["matched_over_time"][i].sum((0, 1))) > 0
        assert merged.binned_bin.tolist() == np.flatnonzero(nonzero).tolist()
    # ... and the whole stack made dense where the Dataset is laid out.
    names = np.array([f"S{k}" for k in stack.keys.tolist()], dtype=object)
    counts = counts_from_stack(stack, names=names, models=["a", "b"], options=o, fine=None)
    for name, dense in want.items():
        assert np.array_equal(counts.counts.pop(name), np.moveaxis(dense, 0, -1)), name
