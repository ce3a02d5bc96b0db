"""SPEC §9's ranked runs, as a store keeps them, and SPEC §15's checks of them.

* the worked example of §9: one run, its rows ranked (ties by level), its block table;
* a store opened whole refuses ranked rows that are not its pairs ranked; every opening refuses block tables
  that do not count the runs' pairs, or count per level other pairs than the exact sums (§5);
* an extension reads the blocks it needs, checked against their table: a ranked row edited (the manifest written
  again) is refused, exit 2, nothing written.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.errors import StoreError
from pickscale.store import open_results, save
from tests.helpers.stores import edit_array, edit_attrs

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]

GRID = [0.3, 0.5]


def _worked_example() -> tuple[pd.DataFrame, pd.DataFrame]:
    # P pairs at station A (+0.3 s, conf 0.9) and station B (−0.1 s, conf 0.4; +0.3 s, conf 0.35; +0.2 s, conf 0.9).
    ref = pd.DataFrame({"station": ["A", "B", "B", "B"], "phase": "P", "time": [10.0, 20.0, 30.0, 40.0]})
    picks = ref.assign(model="m", time=ref["time"] + [0.3, -0.1, 0.3, 0.2], conf=[0.9, 0.4, 0.35, 0.9])
    return ref, picks


def test_the_worked_example_of_spec_9():
    ref, picks = _worked_example()
    ds = pickscale.score(ref, picks, thresholds=GRID, threshold=0.3)
    assert ds.attrs["pair_runs"] == [["all", "m", "P", 4]]
    assert (ds["residual"].values * 1e9).round().astype(int).tolist() == [3 * 10**8, -10**8, 2 * 10**8, 3 * 10**8]
    assert ds["ranked_residual"].values.tolist() == [-10**8, 2 * 10**8, 3 * 10**8, 3 * 10**8]
    assert ds["ranked_level"].values.tolist() == [1, 2, 1, 2]
    assert ds["ranked_first"].values.tolist() == [-10**8]
    assert ds["ranked_counts"].values.tolist() == [[0, 2, 2]]
    # §5: the exact sums per level -- level 1: −0.1 and +0.3 s; level 2: +0.2 and +0.3 s.
    sums = ds["residual_sums"].sel(dataset="all", model="m", phase="P")
    assert sums.sel(residual_term="count").values.tolist() == [0, 2, 2]
    assert sums.sel(residual_term="negative_0").values.tolist() == [0, 10**8, 0]
    assert sums.sel(residual_term="abs_0").values.tolist() == [0, 4 * 10**8, 5 * 10**8]


@pytest.fixture
def store(tmp_path):
    ref, picks = _worked_example()
    (tmp_path / "run").mkdir()
    return save(pickscale.score(ref, picks, thresholds=GRID, threshold=0.3), tmp_path / "run" / "results.zarr")


def test_a_whole_opening_refuses_ranked_rows_that_are_not_the_pairs_ranked(store):
    edit_array(store, "ranked_level", lambda v: v.__setitem__(slice(None), [2, 1, 1, 2]))
    open_results(store)  # (a lazy opening takes the ranked rows as stored)
    with pytest.raises(StoreError, match="'ranked_residual' must be the pairs' residuals and levels ranked"):
        open_results(store, lazy=False)


@pytest.mark.parametrize("edit, match", [
    (lambda s: edit_array(s, "ranked_counts", lambda v: v.__setitem__((0, 1), 3)), "'ranked_counts' must count"),
    (lambda s: edit_array(s, "ranked_counts", lambda v: v.__setitem__((0, slice(None)), [1, 1, 2])),
     "residual_sums counts"),
    (lambda s: edit_attrs(s, lambda a: a.__setitem__("pair_runs", [["all", "m", "P", 3]])), "covering the 4 pairs"),
    # (a run named for another stream: its pairs per level are not that stream's sums)
    (lambda s: edit_attrs(s, lambda a: a.__setitem__("pair_runs", [["all", "m", "S", 4]])), "residual_sums counts"),
])
def test_every_opening_refuses_block_tables_that_miscount(store, edit, match):
    edit(store)
    with pytest.raises(StoreError, match=match):
        open_results(store)


def test_an_extension_refuses_a_ranked_row_its_block_table_does_not_hold(store, tmp_path, capsys):
    # Ranked rows whose levels still rank and count as the table says, but a residual moved within its block:
    # no opening but a whole one reads them; the extension reads that block, checks it against its table, refuses.
    edit_array(store, "ranked_residual", lambda v: v.__setitem__(0, -2 * 10**8))
    ref, picks = _worked_example()
    (tmp_path / "later").mkdir()
    ref.assign(time=ref["time"] + 1000.0).to_csv(tmp_path / "later" / "ref.csv", index=False)
    picks.assign(time=picks["time"] + 1000.0).to_csv(tmp_path / "later" / "picks.csv", index=False)
    before = {p: p.read_bytes() for p in sorted(store.parent.rglob("*")) if p.is_file()}
    code = main(["extend", str(store.parent), "--reference", str(tmp_path / "later" / "ref.csv"),
                 "--picks", str(tmp_path / "later" / "picks.csv"), "--quiet", "--no-figures"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "'ranked_residual'" in err and str(store) in err, err
    assert {p: p.read_bytes() for p in sorted(store.parent.rglob("*")) if p.is_file()} == before
    assert np.asarray(open_results(store)["ranked_residual"].values)[0] == -2 * 10**8


def test_a_whole_opening_refuses_a_run_named_for_another_stream(tmp_path):
    # Two models with the same pairs: runs named the other way round count what each stream's sums count, and
    # only their rows (read by a whole opening) tell.
    ref, picks = _worked_example()
    both = pd.concat([picks, picks.assign(model="n")])
    target = save(pickscale.score(ref, both, thresholds=GRID, threshold=0.3), tmp_path / "results.zarr")
    edit_attrs(target, lambda a: a.__setitem__("pair_runs", [["all", "n", "P", 4], ["all", "m", "P", 4]]))
    open_results(target)
    with pytest.raises(StoreError, match="names a stream in the run of rows 0–3 .* whose pairs are of another one"):
        open_results(target, lazy=False)
