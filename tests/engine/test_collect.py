"""On a cluster the combined results come to the client one station field at a time (engine/collect.py)."""

from __future__ import annotations

import copy
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.engine.collect import JoinedFields, _batches, bring_back, join
from pickscale.kernel import PER_STATION, Partial, combine_partials, score_station
from pickscale.options import Options
from tests.helpers.checks import start_cluster

S = 10**9


def _pieces(o: Options) -> list[Partial]:
    """Three pieces of a reduction: stations 0-5 in two datasets, stations 1 and 4 cut into time blocks
    that ended in different pieces."""
    rows: list[list] = [[], [], []]
    for key in range(6):
        first, second = _blocks(key, o)
        a, b = (0, 2) if key in (1, 4) else (key % 3, key % 3)
        rows[a].append((key % 2, key, first))
        rows[b].append((key % 2, key, second))
    return [Partial.of(r, fine={d: (np.full((2, 2, o.fine.size), 1 + d, np.int64),
                                    np.zeros((2, 2, o.fine.size), np.int64)) for d in (0, 1)}) for r in rows]


@pytest.mark.cluster
def test_pieces_on_a_cluster_come_back_joined_and_are_then_released():
    o = Options(thresholds=[0.5])
    want = combine_partials(*_pieces(o))
    cluster, client = start_cluster(1)
    try:
        pieces = _pieces(o)
        tops = [client.submit(lambda p: p, piece, pure=False) for piece in pieces]
        keys = [t.key for t in tops]
        # (a piece without stations has no fields to hold: its future goes with the client's own handle, and
        # whether the scheduler has heard of that yet when asked below is a race)
        holding = [key for key, piece in zip(keys, pieces) if piece.stacks]
        small = bring_back(tops, client)  # small: gathered whole, joined on the client
        _equal_partials(small, copy.deepcopy(want), pairs=False)
        back = bring_back(tops, client, batch_bytes=300)  # as if large: fields fetched in small batches
        del tops  # the client's own handles: what is left is the fields' hold
        assert all(isinstance(s.fields, JoinedFields) for s in back.stacks.values())
        assert holding and set(holding) <= set(client.who_has())  # still on the cluster: nothing was fetched yet
        _equal_partials(back, want, pairs=False)  # takes every field out
        deadline = time.monotonic() + 10
        while set(keys) & set(client.who_has()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not set(keys) & set(client.who_has())  # every field taken: the cluster let the pieces go
    finally:
        client.close()
        cluster.close()


def test_batches_keep_field_order_and_hold_at_most_the_limit():
    sizes = {"a": 10, "b": 50, "c": 45, "d": 200, "e": 5, "f": 95}
    assert _batches(sizes, 100) == [["a", "b"], ["c"], ["d"], ["e", "f"]]
    assert _batches(sizes, 1) == [[n] for n in sizes]  # a field larger than the limit is a batch of its own
    assert _batches({}, 100) == []


def _blocks(key: int, o: Options) -> list:
    """Two time blocks of one station (cut at a quiet gap, as the plan cuts), scored apart."""
    t0 = (100 + 50 * key) * S
    first = score_station([0], [t0], [0, 1], [0, 0], [t0 + key, t0 + 2 * S], [0.9, 0.45], n_models=2, options=o)
    second = score_station([1, 0], [t0 + 30 * S, t0 + 31 * S], [1, 0, 1], [1, 0, 1],
                           [t0 + 30 * S + 7, t0 + 31 * S - 3, t0 + 40 * S], [0.6, 0.8, 0.35], n_models=2, options=o)
    return [first, second]


def _equal_partials(got: Partial, want: Partial, *, pairs: bool = True) -> None:
    """``got`` is ``want``; without ``pairs``, with no residual pairs (brought back without them: they stay on
    the cluster, engine/pairs.py)."""
    assert sorted(got.stacks) == sorted(want.stacks) and sorted(got.fine) == sorted(want.fine)
    for d, w in want.stacks.items():
        g = got.stacks[d]
        assert g.keys.tolist() == w.keys.tolist()
        if not pairs:
            assert g.pair_key.size == 0 and all(v.size == 0 for v in g.pairs.values())
        else:
            assert g.pair_key.tolist() == w.pair_key.tolist()
        for name in PER_STATION:
            a, b = g.fields.pop(name), w.fields[name]
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (d, name)
        for name, values in w.pairs.items() if pairs else ():
            assert g.pairs[name].tobytes() == values.tobytes(), (d, name)
        assert all(np.array_equal(a, b) for a, b in zip(got.fine[d], want.fine[d]))


@pytest.mark.slow
@given(assignment=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), min_size=1, max_size=9))
@settings(max_examples=40, deadline=None)
def test_joined_pieces_equal_the_combined_partial(assignment):
    """Pieces joined on the client are the reduction's last combination, bit for bit: stations in one
    piece or several (their time blocks in different pieces), in any dataset, pieces in any order."""
    o = Options(thresholds=[0.3, 0.5, 0.7])
    items: list[list] = [[] for _ in range(4)]
    for key, (piece_a, piece_b, dataset) in enumerate(assignment):
        first, second = _blocks(key, o)
        items[piece_a].append((int(dataset), key, first))
        items[piece_b].append((int(dataset), key, second))  # the same piece: merged there, as Partial.of does
    def fine_of(rows):
        fine = {}
        for d, _, r in rows:
            fine[d] = (fine[d][0] + r.fine_emitted, fine[d][1] + r.fine_matched) if d in fine \
                else (r.fine_emitted, r.fine_matched)
        return fine
    pieces = [Partial.of(rows, fine=fine_of(rows)) for rows in items]
    want = combine_partials(*copy.deepcopy(pieces))  # join may hand on a piece's own arrays
    got = join(pieces, lambda i, d, rows: pieces[i].stacks[d].take(rows))
    _equal_partials(got, want)
