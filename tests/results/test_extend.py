"""Extending results (SPEC §11): models added, and a later stretch of time, equal one run byte for byte."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.engine.extension import extended, reference_digest
from pickscale.errors import InputError, OptionsError, StoreError
from pickscale.report.tables import to_csv_bytes
from pickscale.results.extend import counts_of
from tests.helpers.extend import DAY, START, differing, generated, stretches

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")


def csv(ds) -> dict[str, bytes]:
    return {name: to_csv_bytes(frame) for name, frame in pickscale.tables(ds).items()}


def same(a, b) -> None:
    ta, tb = csv(a), csv(b)
    assert sorted(ta) == sorted(tb)
    for name in ta:
        assert ta[name] == tb[name], name
    differ = differing(a, b)  # (an extension's pairs: its segments, the one run's pairs)
    assert not differ, differ


@pytest.mark.slow
@pytest.mark.parametrize("time_bin", [None, "1D"])
def test_models_added_equal_one_run_hand_made(time_bin):
    ref, picks = stretches(1)
    kw = {"time_bin": time_bin} if time_bin else {}
    whole = pickscale.score(ref, picks, **kw)
    stored = pickscale.score(ref, picks[picks.model == "m1"], **kw)
    ext = extended(stored, ref, picks[picks.model == "m2"])
    same(whole, ext)
    # By hand, at the shared threshold 0.3: m2 finds the 4 P; of the 4 S only the two at +20 s (0.35 >= 0.3).
    recall = ext.recall.sel(dataset="d", model="m2", threshold=0.3)
    assert recall.sel(phase="P").item() == 1.0 and recall.sel(phase="S").item() == 0.5
    # The budget is read over all models again: min(n_reference P = 4, least emitted at the floor).
    assert ext.matched_budget.sel(dataset="d", phase="S").item() == 2
    assert len(ext.attrs["extensions"]) == 1
    assert ext.attrs["extensions"][0]["datasets"]["d"]["models_added"] == ["m2"]


@pytest.mark.slow
@pytest.mark.parametrize("time_bin", [None, "1D", "1h"])
def test_later_stretch_equals_one_run_hand_made(time_bin):
    ref, picks = stretches(2)
    kw = {"time_bin": time_bin} if time_bin else {}
    whole = pickscale.score(ref, picks, **kw)
    cut = START + DAY
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut], **kw)
    ext = extended(stored, ref[ref.time >= cut], picks[picks.time >= cut])
    same(whole, ext)
    assert int(ext.n_reference.sum()) == 16
    assert ext.attrs["extensions"][0]["datasets"]["d"]["kind"] == "new stretch of time"
    if time_bin == "1h":  # the bins in the gap are there, empty, as in the one run
        assert ext.sizes["time_bin"] == 49 and int(ext.n_reference_over_time.sum()) == 16


@pytest.mark.slow
def test_exact_sums_add_up_bit_for_bit():
    # Both stretches at the same (station, model): the float sums come from the added limbs, not added floats.
    ref, picks = stretches(2)
    whole = pickscale.score(ref, picks)
    cut = START + DAY
    ext = extended(pickscale.score(ref[ref.time < cut], picks[picks.time < cut]), ref[ref.time >= cut],
                   picks[picks.time >= cut])
    for name in ("cal_conf", "brier_sum", "cal_conf_limbs", "conf_sq_sums", "hit_conf_limbs"):
        assert np.array_equal(ext[name].values, whole[name].values), name
    c = counts_of(ext, "d")
    assert c.models == ["m1", "m2"] and c.stations == ["A", "B"]


@pytest.mark.parametrize("time_bin", [None, "1D"])
@pytest.mark.slow
def test_generated_catalogue_by_models_and_by_time(time_bin):
    ref, picks, cut = generated()
    kw = {"time_bin": time_bin} if time_bin else {}
    whole = pickscale.score(ref, picks, **kw)
    by_models = extended(pickscale.score(ref, picks[picks.model != "gamma"], **kw), ref,
                         picks[picks.model == "gamma"])
    same(whole, by_models)
    by_time = extended(pickscale.score(ref[ref.time < cut], picks[picks.time < cut], **kw), ref[ref.time >= cut],
                       picks[picks.time >= cut])
    same(whole, by_time)
    # And the three steps: two models, a third, then the later stretch.
    early = (ref.time < cut), (picks.time < cut)
    step = pickscale.score(ref[early[0]], picks[early[1] & (picks.model != "gamma")], **kw)
    step = extended(step, ref[early[0]], picks[early[1] & (picks.model == "gamma")])
    step = extended(step, ref[~early[0]], picks[~early[1]])
    same(whole, step)
    assert len(step.attrs["extensions"]) == 2


@pytest.mark.slow
def test_new_dataset_is_added():
    ref, picks = stretches(1)
    other_ref, other_picks = ref.assign(dataset="e"), picks.assign(dataset="e")
    whole = pickscale.score(pd.concat([ref, other_ref]), pd.concat([picks, other_picks]))
    ext = extended(pickscale.score(ref, picks), other_ref, other_picks)
    same(whole, ext)


@pytest.mark.slow
def test_refusals():
    ref, picks = stretches(1)
    stored = pickscale.score(ref, picks[picks.model == "m1"], time_bin="1D")
    with pytest.raises(OptionsError, match="differs from the store's") as info:
        extended(stored, ref, picks[picks.model == "m2"], tol=0.3)
    assert info.value.options == ("tol",)
    with pytest.raises(OptionsError, match="time_bin"):
        extended(stored, ref, picks[picks.model == "m2"], time_bin="1h")
    extended(stored, ref, picks[picks.model == "m2"], tol=0.5, time_bin="1D")  # the same options: fine
    with pytest.raises(InputError, match="already stored over an overlapping span: m1") as info:
        extended(stored, ref, picks[picks.model == "m1"])
    assert info.value.options == ("replace",)
    again = extended(stored, ref, picks[picks.model == "m1"], replace=True)
    assert csv(again) == csv(stored)
    moved = ref.copy()
    moved.loc[0, "time"] += np.timedelta64(1, "s")
    with pytest.raises(InputError, match="reference disagrees"):
        extended(stored, moved, picks[picks.model == "m2"])
    # m2 alone over a shorter stretch: it would score fewer arrivals than the store holds.
    short = picks[(picks.model == "m2") & (picks.time < START + np.timedelta64(150, "s"))]
    with pytest.raises(InputError, match="other reference arrivals"):
        extended(stored, ref, short)
    without = stored.drop_vars(["cal_conf_limbs"])
    with pytest.raises(StoreError, match="exact sums"):
        extended(without, ref, picks[picks.model == "m2"])


@pytest.mark.slow
def test_arrivals_in_both_scored_spans_are_refused():
    # The second stretch's picks start 2 s after the first one's last pick (+200 s): both scored spans (picks ±
    # residual_tol = 2 s) hold an arrival at +201.5 s, which the two runs would each count.
    ref, picks = stretches(1)
    later_picks = picks.assign(time=picks.time + np.timedelta64(201, "s"))
    stored = pickscale.score(ref, picks)
    both_ref = pd.concat([ref, ref.assign(time=ref.time + np.timedelta64(201, "s")),
                          ref.iloc[:1].assign(time=START + np.timedelta64(201_500, "ms"))])
    with pytest.raises(InputError, match="scored spans meet"):
        extended(stored, both_ref, later_picks)


def test_reference_digest_is_canonical():
    ref, _ = stretches(1)
    h, n = reference_digest(ref, "d")
    assert n == 8
    assert reference_digest(pd.concat([ref.iloc[::-1], ref.iloc[:3]]), "d") == (h, n)  # order and duplicates
    assert reference_digest(ref, "d", stations=["A"])[1] == 4
    assert reference_digest(ref, "d", span=(0, 1))[1] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert reference_digest(ref.assign(phase="S"), "d")[0] != h


@pytest.mark.slow
def test_an_extension_says_the_edges_of_the_merged_counts_not_of_its_part_alone():
    """SPEC §7 and §11: best_on_edge is a reading of all the counts. In the later stretch m1's true picks are at
    conf 0.95 and its false P at 0.92: scored alone, its P best threshold is the top of the grid (0.94, where the
    false pick drops out); merged with the first stretch (true picks at 0.9) it is 0.42, and the extension says
    what one run says."""
    ref, picks = stretches(2)
    cut = START + DAY
    m1_later = (picks.time >= cut) & (picks.model == "m1")
    picks.loc[m1_later & (picks.conf == 0.9), "conf"] = 0.95
    picks.loc[m1_later & (picks.conf == 0.4), "conf"] = 0.92
    edges = lambda said: sorted(w for w in said if w.startswith("m1: best_threshold on the edge"))  # noqa: E731
    alone = pickscale.score(ref[ref.time >= cut], picks[picks.time >= cut])
    assert alone.best_on_edge.sel(dataset="d", model="m1", phase="P").item()
    assert alone.best_threshold.sel(dataset="d", model="m1", phase="P").item() == 0.94
    whole = pickscale.score(ref, picks)
    stored = pickscale.score(ref[ref.time < cut], picks[picks.time < cut])
    ext = extended(stored, ref[ref.time >= cut], picks[picks.time >= cut])
    same(whole, ext)
    assert not ext.best_on_edge.sel(dataset="d", model="m1", phase="P").item()
    # (S is on the edge either way: m1 emits no false S, so every threshold up to its lowest conf ties.)
    said = edges(whole.attrs["warnings"])
    assert said and edges(alone.attrs["warnings"]) != said and "d P" in edges(alone.attrs["warnings"])[0]
    assert edges(ext.attrs["extensions"][-1]["warnings"]) == said
    assert edges(ext.attrs["warnings"]) == said
