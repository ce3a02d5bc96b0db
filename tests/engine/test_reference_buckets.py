"""The reference kept on the workers in buckets of stations (issue 22): results bit-identical to a local run.

On a cluster the reference is read, cut into buckets and decided on (SPEC §2, the extent, groups, events, the
plan's cuts, the exchange's codes) in tasks; the client receives summaries.  However many buckets — here one
every ~40 rows, many per station range — and whichever exchange moves the arrivals, the results are those of
the in-process run, variable for variable and attribute for attribute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pickscale
import pickscale.engine.arrivals as arrivals
from pickscale.demo import catalogue
from tests.helpers.checks import assert_same_results, start_cluster


@pytest.fixture(scope="module")
def inputs():
    ref, picks = catalogue()
    ref = ref.copy()
    times = pd.to_datetime(ref["time"]).astype("datetime64[ns, UTC]").astype("int64")
    ref["event"] = [f"ev{t // (600 * 10**9)}" if i % 11 else "" for i, t in enumerate(times.tolist())]
    dup = ref.iloc[::17].assign(event="zz", magnitude=9.0)  # duplicates, later in the input
    return pd.concat([ref, dup], ignore_index=True), picks


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("method", ["direct", "shuffle"])
def test_many_buckets_on_a_cluster_give_the_local_results(inputs, method, monkeypatch):
    ref, picks = inputs
    keywords = dict(group_by="magnitude:1,2,3", event_min_arrivals=3, time_bin="1D", block_picks=40,
                    exchange_method=method, progress=False)
    local = pickscale.score(ref, picks, **keywords)
    monkeypatch.setattr(arrivals, "BUCKET_ROWS", 40)
    cluster, client = start_cluster(n_workers=2)
    try:
        remote = pickscale.score(ref, picks, client=client, **keywords)
        remote = remote.compute() if hasattr(remote, "compute") else remote
        held = client.run(lambda dask_worker: len(dask_worker.data))
    finally:
        client.close()
        cluster.close()
    assert_same_results(local, remote)
    assert float(np.nansum(local["recall"].values)) > 0
    assert all(n == 0 for n in held.values()), held  # the buckets are let go with the run
