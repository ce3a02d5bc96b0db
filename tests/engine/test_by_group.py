"""SPEC §14 on the engine: the group code travels with each arrival through both exchanges and time blocks."""

from __future__ import annotations

import numpy as np
import pytest

import pickscale
from tests.helpers.catalogues import plain_catalogue, with_magnitudes

_GROUPED = ("n_reference_by_group", "matched_by_group", "pair_group")


@pytest.fixture(scope="module")
def inputs():
    return with_magnitudes(plain_catalogue(7, n_stations=4, n_events=10), seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("how", [{"exchange_method": "direct"}, {"exchange_method": "shuffle"},
                                 {"exchange_method": "direct", "block_picks": 5}])
def test_sums_over_groups_equal_the_default_run_and_every_other_number_is_unchanged(inputs, how):
    ref, picks = inputs
    plain = pickscale.score(ref, picks, progress=False, **how)
    grouped = pickscale.score(ref, picks, progress=False, group_by="magnitude:0,1,2,3", **how)
    k = float(grouped.attrs["options"]["threshold"])
    assert grouped.group.values.tolist() == ["<0", "[0,1)", "[1,2)", "[2,3)", ">=3", "missing"]
    assert int(grouped.n_reference_by_group.sel(group="missing").sum()) > 0
    assert (grouped.n_reference_by_group.sum("group") == plain.n_reference).all()
    assert (grouped.matched_by_group.sum("group") == plain.matched.sel(threshold=k)).all()
    assert np.array_equal(grouped.n_pairs_by_group.sum("group").values, plain.n_pairs.sel(threshold=k).values)
    for name in plain.data_vars:  # every variable of the default run, bit for bit
        assert plain[name].equals(grouped[name]), name
    assert not any(name in plain for name in _GROUPED)


@pytest.mark.slow
def test_exchanges_and_blocks_give_the_same_groups(inputs):
    ref, picks = inputs
    runs = [pickscale.score(ref, picks, progress=False, group_by="magnitude:1,2", **how)
            for how in ({"exchange_method": "direct"}, {"exchange_method": "shuffle"}, {"block_picks": 5})]
    for other in runs[1:]:
        for name in ("n_reference_by_group", "matched_by_group", "pair_group", "recall_by_group", "mae_by_group"):
            assert runs[0][name].equals(other[name]), name
