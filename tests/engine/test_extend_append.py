"""An extension appends its residual pairs as a segment (SPEC §11): the stored pairs are read and checked, never
sorted or written again; a local store links their whole chunks; one run's tables, and one run's pairs."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.engine.extension import extended
from pickscale.errors import StoreError
from pickscale.report.tables import to_csv_bytes
from pickscale.store import open_results, save, segments
from pickscale.store.consistency import PairCheck, stored_options
from tests.helpers.extend import DAY, START, differing, stretches
from tests.helpers.stores import edit_attrs

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]

PAIRS = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf")


def _tables(ds) -> dict[str, bytes]:
    return {name: to_csv_bytes(frame) for name, frame in pickscale.tables(ds).items()}


def _halves():
    ref, picks = stretches(2)
    cut = START + DAY
    return (ref[ref.time < cut], picks[picks.time < cut]), (ref[ref.time >= cut], picks[picks.time >= cut])


def test_an_extension_appends_its_pairs_as_a_segment(tmp_path):
    (r1, p1), (r2, p2) = _halves()
    target = save(pickscale.score(r1, p1), tmp_path / "results.zarr")
    stored = open_results(target, lazy=False)
    # Before it is saved, an extension's pairs read the stored rows from the store (lazily) and the new ones.
    ahead = extended(open_results(target), r2, p2, store=target)
    ahead_pairs = {name: ahead[name].values for name in PAIRS}
    pickscale.extend(target, r2, p2)
    with pytest.raises(StoreError, match="replaced or removed after it was opened"):
        np.asarray(ahead["residual"].values)  # (the store it read lazily from is gone: never other numbers)
    back = open_results(target, lazy=False)  # a whole opening: every check of SPEC §15, segments too
    for name in PAIRS:
        assert np.array_equal(ahead_pairs[name], back[name].values), name
    n0, n = stored.sizes["pair"], back.sizes["pair"]
    assert 0 < n0 < n and back.attrs["pair_segments"] == [n0, n - n0]
    for name in PAIRS:  # the stored segment, as it was
        assert np.array_equal(back[name].values[:n0], stored[name].values), name
    whole = pickscale.score(pd.concat([r1, r2]), pd.concat([p1, p2]))
    assert _tables(back) == _tables(whole)
    assert differing(back, whole) == []  # the same pairs as one run, each segment in canonical order
    # By hand: 2 stations x 2 stretches x 4 arrivals; m1 matches all 16 within residual_tol (+0.1 s), m2 the
    # 8 P (+0.2 s) and 4 S (-0.3 s): 28 pairs, 14 a stretch.
    assert (n0, n) == (14, 28)


def test_a_second_extension_adds_a_third_segment_and_new_names_sort_first(tmp_path):
    # Stretch 3 brings a station "0" and stretch 4 a dataset "a": both sort before the stored names, so the
    # stored pairs' station and dataset indices change (written again); the residuals are appended.
    ref, picks = stretches(3)
    cut1, cut2 = START + DAY, START + 3 * DAY
    s = pd.Timedelta(1, "s")
    extra_ref = pd.DataFrame({"dataset": "d", "station": "0", "phase": "P", "time": [START + 4 * DAY + 10 * s]})
    extra = pd.DataFrame({"dataset": "d", "model": ["m1", "m2"], "station": "0", "phase": "P",
                          "time": START + 4 * DAY + 10.05 * s, "conf": [0.7, 0.9]})
    ref, picks = pd.concat([ref, extra_ref], ignore_index=True), pd.concat([picks, extra], ignore_index=True)
    other = (ref.assign(dataset="a"), picks.assign(dataset="a"))
    first = (ref.time < cut1, picks.time < cut1)
    third = (ref.time >= cut2, picks.time >= cut2)
    target = save(pickscale.score(ref[first[0]], picks[first[1]]), tmp_path / "results.zarr")
    pickscale.extend(target, ref[third[0]], picks[third[1]])
    pickscale.extend(target, other[0][first[0]], other[1][first[1]])
    back = open_results(target, lazy=False)
    assert len(back.attrs["pair_segments"]) == 3 and sum(back.attrs["pair_segments"]) == back.sizes["pair"]
    assert back.station.values.tolist()[0] == "0" and back.dataset.values.tolist() == ["a", "d"]
    whole = pickscale.score(pd.concat([ref[first[0]], ref[third[0]], other[0][first[0]]]),
                            pd.concat([picks[first[1]], picks[third[1]], other[1][first[1]]]))
    assert _tables(back) == _tables(whole)
    assert differing(back, whole) == []


def test_whole_stored_chunks_are_linked_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "PAIR_CHUNK_ROWS", 4)  # 14 stored pairs: 3 whole chunks and 2 rows
    (r1, p1), (r2, p2) = _halves()
    target = save(pickscale.score(r1, p1), tmp_path / "results.zarr")
    meta = json.loads((target / "residual" / "zarr.json").read_text())
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [4]
    before = {rel: os.stat(target / rel).st_ino for rel in (f"{v}/c/{i}" for v in PAIRS for i in range(4))
              if (target / rel).exists()}
    listed = json.loads((target / "pickscale-manifest.json").read_text())["files"]
    pickscale.extend(target, r2, p2)
    after = json.loads((target / "pickscale-manifest.json").read_text())["files"]
    for rel, inode in before.items():
        whole_chunk = int(rel.rsplit("/", 1)[1]) < 3
        # (pair_station's stored indices keep their values: A and B on both sides)
        assert (os.stat(target / rel).st_ino == inode) == whole_chunk, rel
        assert (after[rel] == listed[rel]) == whole_chunk or not whole_chunk, rel
    back = open_results(target, lazy=False)  # every file checked against the new manifest
    whole = pickscale.score(pd.concat([r1, r2]), pd.concat([p1, p2]))
    assert _tables(back) == _tables(whole) and differing(back, whole) == []


def test_replacing_a_model_merges_the_pairs_into_one_segment(tmp_path):
    (r1, p1), (r2, p2) = _halves()
    ref, picks = pd.concat([r1, r2]), pd.concat([p1, p2])
    target = save(pickscale.score(r1, p1), tmp_path / "results.zarr")
    pickscale.extend(target, r2, p2)
    assert "pair_segments" in open_results(target).attrs
    pickscale.extend(target, ref, picks[picks.model == "m2"], replace=True)
    back = open_results(target, lazy=False)  # canonical order over every pair: one segment
    assert "pair_segments" not in back.attrs
    whole = pickscale.score(ref, picks)
    assert _tables(back) == _tables(whole) and differing(back, whole) == []


def _check(ds) -> None:
    check = PairCheck(segments.pathlib.Path("s.zarr"), ds, stored_options(segments.pathlib.Path("s.zarr"), ds.attrs))
    for lo in range(ds.sizes["pair"]):  # one pair a batch: every boundary is a batch boundary too
        check.add(lo, {name: ds[name].values[lo:lo + 1] for name in check.names})
    check.finish()


def test_the_order_is_checked_within_each_segment():
    (r1, p1), (r2, p2) = _halves()
    whole = pickscale.score(pd.concat([r1, r2]), pd.concat([p1, p2]))
    n = whole.sizes["pair"]
    # The pairs of the second stretch first: two segments, each in canonical order, the second "before" the first.
    t = np.asarray(whole.residual.values)
    second = np.flatnonzero(np.r_[np.diff(whole.pair_model.values) != 0, False])
    assert second.size  # (m1's pairs, then m2's: the two runs of the canonical order)
    k = int(second[0]) + 1
    order = np.r_[k:n, 0:k]
    turned = whole.isel(pair=order).assign_attrs(pair_segments=[n - k, k])
    _check(turned)
    with pytest.raises(StoreError, match="canonical order"):
        _check(turned.assign_attrs(pair_segments=[n - k - 1, k + 1]))
    with pytest.raises(StoreError, match="canonical order"):
        _check(whole.isel(pair=order))  # one segment
    assert t.size == n


def test_a_segment_list_that_does_not_add_up_is_refused(tmp_path):
    (r1, p1), (r2, p2) = _halves()
    target = save(pickscale.score(r1, p1), tmp_path / "results.zarr")
    pickscale.extend(target, r2, p2)
    edit_attrs(target, lambda attrs: attrs.update(pair_segments=[14, 13]))
    with pytest.raises(StoreError, match=r"pair_segments.*lists 27 pairs in its segments, but the store holds 28"):
        open_results(target)
