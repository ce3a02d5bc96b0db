"""Stacks whose stations repeat (time blocks; both sides of an extension) are merged all at once, by the
declaration of how each field combines: what merge_results gives each station, bit for bit, binned rows and
pairs included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.kernel import StationStack, merge_results, score_station
from pickscale.kernel.bins import bin_edges
from pickscale.options import Options

S = 1_000_000_000


def _options():
    o = Options(tol=0.5, residual_tol=1.0, thresholds=[0.1, 0.3, 0.5, 0.7], time_bin="1h")
    return o.with_bin_edges(bin_edges(0, 6 * 3600 * S, "1h"))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 2), st.integers(1, 4), st.integers(2, 3))
def test_repeated_stations_merge_as_merge_results_does(data, n_models, n_stations, n_stacks):
    o = _options()
    blocks: dict[int, list] = {}
    for key in range(n_stations):
        for _ in range(data.draw(st.integers(1, 3))):  # the station's pieces
            n_arr, n_pick = data.draw(st.integers(0, 6)), data.draw(st.integers(0, 12))
            a_t = np.array(data.draw(st.lists(st.integers(0, 6 * 3600), min_size=n_arr, max_size=n_arr))) * S
            p_t = np.array(data.draw(st.lists(st.integers(0, 6 * 3600), min_size=n_pick, max_size=n_pick)),
                           dtype=np.int64) * S
            blocks.setdefault(key, []).append(score_station(
                np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_arr, max_size=n_arr)), np.int8), a_t,
                np.array(data.draw(st.lists(st.integers(0, n_models - 1), min_size=n_pick, max_size=n_pick)),
                         np.int32),
                np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_pick, max_size=n_pick)), np.int8), p_t,
                np.array(data.draw(st.lists(st.integers(1, 20), min_size=n_pick, max_size=n_pick))) / 20.0,
                n_models=n_models, options=o))
    # Each piece in one of the stacks (a station at most once per stack).
    stacks: list[list] = [[] for _ in range(max(n_stacks, max(len(b) for b in blocks.values())))]
    for key, pieces in blocks.items():
        for i, piece in enumerate(pieces):
            stacks[i].append((key, piece))
    merged = StationStack.concat([StationStack.of(items) for items in stacks if items])
    assert merged.keys.tolist() == sorted(blocks)
    for row, key in enumerate(merged.keys.tolist()):
        got, want = merged.result(row), merge_results(blocks[key])
        got.fine_emitted, got.fine_matched = want.fine_emitted, want.fine_matched
        assert got.equals(want), key
