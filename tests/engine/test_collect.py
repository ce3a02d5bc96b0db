"""On a cluster the combined results come to the client one station field at a time (engine/collect.py)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pickscale.engine.collect import RemoteFields, _batches, bring_back
from pickscale.kernel import PER_STATION, Partial, combine_partials, score_station
from pickscale.options import Options
from tests.helpers.checks import start_cluster

S = 10**9


def _partial() -> Partial:
    o = Options(thresholds=[0.5])
    items = []
    for d in (0, 1):
        for key in range(5):
            t = (10 + key) * S
            r = score_station([0, 1], [t, t + 3 * S], [0, 1, 1], [0, 1, 0], [t, t + 3 * S + key, t + 9 * S],
                              [0.9, 0.6, 0.4], n_models=2, options=o)
            items.append((d, key * 7 + d, r))
    fine = {d: (np.ones((2, 2, o.fine.size), np.int64), np.zeros((2, 2, o.fine.size), np.int64)) for d in (0, 1)}
    return Partial.of(items, fine=fine)


@pytest.mark.cluster
def test_fields_are_fetched_when_taken_and_the_partial_is_then_released():
    expected = _partial()
    cluster, client = start_cluster(1)
    try:
        total = client.submit(combine_partials, _partial(), pure=False)
        key = total.key
        whole = bring_back(total, client)  # small: gathered whole, in one round trip
        assert all(isinstance(s.fields, dict) for s in whole.stacks.values())
        assert all(whole.stacks[d].fields["matched"].tobytes() == s.fields["matched"].tobytes()
                   for d, s in expected.stacks.items())
        back = bring_back(total, client, batch_bytes=300)  # as if large: fields fetched in small batches
        del total  # the client's own handle: what is left is the fields' hold
        for d, stack in expected.stacks.items():
            got = back.stacks[d]
            assert isinstance(got.fields, RemoteFields) and list(got.fields) == list(PER_STATION)
            assert np.array_equal(got.keys, stack.keys) and np.array_equal(got.pair_key, stack.pair_key)
            assert all(np.array_equal(got.pairs[n], v) for n, v in stack.pairs.items())
            assert all(np.array_equal(a, b) for a, b in zip(back.fine[d], expected.fine[d]))
        assert key in client.who_has()  # still on the cluster: nothing was fetched yet
        for d, stack in expected.stacks.items():
            for name in PER_STATION:
                values = back.stacks[d].fields.pop(name)
                ref = stack.fields[name]
                assert values.dtype == ref.dtype and values.tobytes() == ref.tobytes(), name
            with pytest.raises(KeyError):
                back.stacks[d].fields["matched"]  # taken: gone
        deadline = time.monotonic() + 10
        while key in client.who_has() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert key not in client.who_has()  # every field taken: the cluster let the partial go
    finally:
        client.close()
        cluster.close()


def test_batches_keep_field_order_and_hold_at_most_the_limit():
    sizes = {"a": 10, "b": 50, "c": 45, "d": 200, "e": 5, "f": 95}
    assert _batches(sizes, 100) == [["a", "b"], ["c"], ["d"], ["e", "f"]]
    assert _batches(sizes, 1) == [[n] for n in sizes]  # a field larger than the limit is a batch of its own
    assert _batches({}, 100) == []
