"""A store that contradicts itself is refused on opening (issue 20, item 3; SPEC §15).

The manifest catches accidents, not edits: here an adversary edits a value or an attribute of a saved store
and writes the manifest again (:func:`pickscale.store.manifest.write_manifest`), so every hash matches.
``open_results`` must still refuse it with a StoreError naming the store, the variable and the cells, and
``pickscale report`` / ``pickscale extend`` must exit 2 with that message (no traceback) and write nothing.
An untouched store, in every layout (time bins, tols, groups, exhaustive, several budgets, intervals),
opens as before.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.errors import PickscaleWarning, StoreError
from pickscale.store import open_results, save
from tests.helpers.stores import edit_array, edit_attrs, unranked

REFERENCE = pd.DataFrame({
    "station": ["A", "A", "A", "B", "B", "B"],
    "phase": ["P", "S", "P", "P", "S", "P"],
    "time": [10.0, 12.0, 40.0, 15.0, 18.0, 50.0],
    "magnitude": [0.5, 1.5, 2.5, 1.0, 3.0, 0.2],
})
PICKS = pd.DataFrame({
    "model": ["m", "m", "m", "m", "m", "n", "n", "n", "n", "n"],
    "station": ["A", "A", "A", "B", "B", "A", "A", "B", "B", "B"],
    "phase": ["P", "S", "P", "P", "S", "P", "P", "P", "S", "S"],
    "time": [10.1, 12.2, 40.3, 15.1, 25.0, 10.3, 10.45, 15.2, 18.1, 18.3],
    "conf": [0.9, 0.8, 0.35, 0.7, 0.6, 0.5, 0.4, 0.95, 0.55, 0.25],
})


def scored(**options: Any):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PickscaleWarning)
        return pickscale.score(REFERENCE, PICKS, progress=False, **options)


@pytest.fixture(scope="module")
def results():
    return scored()


@pytest.fixture(scope="module")
def pristine(results, tmp_path_factory) -> Path:
    """The results saved once; every case edits a copy of its own."""
    return save(results, tmp_path_factory.mktemp("pristine") / "results.zarr")


@pytest.fixture
def store(pristine, tmp_path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "run" / "results.zarr"))


# --------------------------------------------------------------------------
# the adversary: edit, then write the manifest again
# --------------------------------------------------------------------------




def index_of(results, **where: Any) -> tuple[int, ...]:
    """Positions of labelled coordinates, for writing one cell of a raw array."""
    out = []
    for dim, label in where.items():
        values = [v.item() if hasattr(v, "item") else v for v in results[dim].values]
        out.append(values.index(label))
    return tuple(out)


def set_recall(store: Path, results) -> None:
    cell = index_of(results, dataset="all", model="m", phase="P", threshold=0.3)
    edit_array(store, "recall", lambda v: v.__setitem__(cell, 7.0))


def matched_above_emitted(store: Path, results) -> None:
    assert results.emitted.dims[-1] == "station"
    cell = (*index_of(results, dataset="all", model="n", phase="S", threshold=0.3), 1)  # station B
    emitted = int(results.emitted.values[cell])
    edit_array(store, "matched", lambda v: v.__setitem__(cell, emitted + 1))


def negative_count(store: Path, results) -> None:
    cell = (*index_of(results, dataset="all", model="m", phase="P", threshold=0.94), 0)
    edit_array(store, "emitted", lambda v: v.__setitem__(cell, -1))


def threshold_off_grid(store: Path, results) -> None:
    edit_attrs(store, lambda a: a["options"].__setitem__("threshold", 0.33))


def options_missing(store: Path, results) -> None:
    edit_attrs(store, lambda a: a.pop("options"))


def options_malformed(store: Path, results) -> None:
    edit_attrs(store, lambda a: a["options"].pop("tol"))


def malformed_extent(store: Path, results) -> None:
    edit_attrs(store, lambda a: a["extent"]["datasets"]["all"][0].__setitem__("picks", ["yesterday"]))


def pair_index_out_of_range(store: Path, results) -> None:
    edit_array(store, "pair_model", lambda v: v.__setitem__(0, 99))


#: case -> (edit, what the message must say)
CASES: dict[str, tuple[Callable[[Path, Any], None], tuple[str, ...]]] = {
    "recall 7.0": (set_recall, ("'recall'", "must equal what the stored counts give", "1 cell(s)",
                                "dataset='all', model='m', phase='P', threshold=0.3")),
    "matched > emitted": (matched_above_emitted, ("'matched'", "must be <= emitted",
                                                  "model='n', phase='S', threshold=0.3, station='B'")),
    "negative count": (negative_count, ("'emitted'", "must be >= 0", "threshold=0.94, station='A'")),
    "threshold off grid": (threshold_off_grid, ("'threshold'", "shared threshold 0.33", "off the store's grid")),
    "options missing": (options_missing, ("'options'", "is missing")),
    "options malformed": (options_malformed, ("'options'", "lacks 'tol'")),
    "malformed extent": (malformed_extent, ("'extent'", "['datasets']['all'][0]['picks']", "int64 nanoseconds")),
    "pair index out of range": (pair_index_out_of_range, ("'pair_model'", "[0, 2)", "pair 0")),
}


@pytest.mark.slow
def test_untouched_store_opens(store, results):
    got = open_results(store)
    cell = {"dataset": "all", "model": "m", "phase": "P", "threshold": 0.3}
    assert got.recall.sel(cell).item() == results.recall.sel(cell).item()


@pytest.mark.slow
@pytest.mark.parametrize("options", [
    {"time_bin": "1min", "tols": [0.1, 0.5, 1.0]},
    {"exhaustive": True, "budget": [2, 1]},
    {"group_by": "magnitude:1,2", "threshold": 0.25},
    {"ci": True},
], ids=["time-bins-tols", "exhaustive-budgets", "groups", "intervals"])
def test_untouched_store_opens_in_every_layout(options, tmp_path):
    ds = scored(**{k: v for k, v in options.items() if k != "ci"})
    if options.get("ci"):
        ds = pickscale.bootstrap(ds, draws=50)
    got = open_results(save(ds, tmp_path / "results.zarr"))
    assert sorted(got.data_vars) == sorted(ds.data_vars)


def test_a_dataset_that_is_not_results_is_not_checked(tmp_path):
    import xarray as xr

    plain = xr.Dataset({"emitted": ("x", [-1, 2]), "matched": ("x", [5, 0])}, attrs={"options": "anything"})
    assert open_results(save(plain, tmp_path / "plain.zarr"))["matched"].values.tolist() == [5, 0]


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_edited_store_is_refused_on_opening(case, store, results):
    edit, needles = CASES[case]
    edit(store, results)
    with pytest.raises(StoreError) as info:
        open_results(store, lazy=False)
    message = str(info.value)
    assert str(store) in message
    for needle in needles:
        assert needle in message, (needle, message)
    assert "re-run `pickscale score`" in message


#: The edits that only the pairs show: found when every pair is read (a whole opening).
PAIR_CASES = ("pair index out of range", "one ulp on mae", "residual moved", "pairs out of order")


#: The case run as the real command, in a process of its own (its exit status, its stderr); the others call
#: the command's ``main`` in this process: the same code from the parsed arguments on, without ~2 s of imports.
REAL_PROCESS_CASE = "recall 7.0"


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_report_refuses_an_edited_store(case, store, results, tmp_path, capsys):
    CASES[case][0](store, results)
    out = tmp_path / "tables"
    # The pairs are read on opening only where the report reads them (its figures; SPEC §15).
    figures = [] if case in PAIR_CASES else ["--no-figures"]
    argv = ["report", str(store), "--out", str(out), *figures]
    if case == REAL_PROCESS_CASE:
        done = subprocess.run([sys.executable, "-m", "pickscale.cli", *argv], capture_output=True, text=True,
                              timeout=300)
        code, err = done.returncode, done.stderr
    else:
        code = main(argv)
        err = capsys.readouterr().err
    assert code == 2, (code, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert err.startswith("pickscale: error: ") and str(store) in err, err
    assert not out.exists() or not any(out.iterdir())  # nothing written


@pytest.mark.slow
@pytest.mark.parametrize("case", ["recall 7.0", "options missing", "options malformed", "threshold off grid",
                                  "malformed extent", "pair index out of range", "pairs out of order"])
def test_extend_refuses_an_edited_store(case, store, results, tmp_path, capsys):
    # The pairs are checked a batch at a time as extend reads them (store.consistency.PairCheck): a later
    # stretch of the stored models adds pairs to the stored streams, and a store written before stores kept
    # their pairs ranked has every stored pair read (one that keeps them is read by rank, and an extension by
    # new models reads none: SPEC §11; a whole opening checks them, below).
    if case in ("pair index out of range", "pairs out of order"):
        shutil.rmtree(store)
        save(unranked(results), store)
        results = unranked(results)
    {**CASES, **MORE}[case][0](store, results)
    ref, picks = tmp_path / "ref.csv", tmp_path / "picks.csv"
    REFERENCE.assign(time=REFERENCE["time"] + 1000.0).to_csv(ref, index=False)
    PICKS.assign(time=PICKS["time"] + 1000.0).to_csv(picks, index=False)
    before = {p: p.read_bytes() for p in sorted(store.parent.rglob("*")) if p.is_file()}
    code = main(["extend", str(store.parent), "--reference", str(ref), "--picks", str(picks), "--quiet",
                 "--no-figures"])
    err = capsys.readouterr().err
    assert code == 2, (code, err[-3000:])
    assert "Traceback" not in err and err.startswith("pickscale: error: ") and str(store) in err, err
    assert {p: p.read_bytes() for p in sorted(store.parent.rglob("*")) if p.is_file()} == before


# --------------------------------------------------------------------------
# more edits, refused on opening (the command turns every StoreError into exit 2, as above)
# --------------------------------------------------------------------------


def next_float(value: float) -> float:
    return float(np.nextafter(value, np.inf))


def one_ulp_on_mae(store: Path, results) -> None:
    cell = index_of(results, dataset="all", model="m", phase="P", threshold=0.3)
    edit_array(store, "mae", lambda v: v.__setitem__(cell, next_float(v[cell])))


def cal_conf_off_its_limbs(store: Path, results) -> None:
    values = results.cal_conf.values
    cell = tuple(int(i) for i in np.argwhere(values > 0)[0])
    edit_array(store, "cal_conf", lambda v: v.__setitem__(cell, next_float(v[cell])))


def residual_moved(store: Path, results) -> None:
    # The last pair, a little later: still in canonical order and within residual_tol, but not the timing stored.
    edit_array(store, "residual", lambda v: v.__setitem__(-1, v[-1] + 0.01))


def fine_curve_edited(store: Path, results) -> None:
    cell = (*index_of(results, dataset="all", model="m", phase="P"), 100)
    edit_array(store, "fine_emitted", lambda v: v.__setitem__(cell, v[cell] + 1))


def bootstrap_level_two(store: Path, results) -> None:
    edit_attrs(store, lambda a: a.__setitem__("bootstrap", {"level": 2, "draws": 10, "seed": 0}))


def pairs_out_of_order(store: Path, results) -> None:
    edit_array(store, "pair_phase", lambda v: v.__setitem__(slice(None), v[::-1].copy()))


def concentration_claimed(store: Path, results) -> None:
    # (nothing is concentrated here: a store that says model m's P residuals are, on 5 of them, contradicts its
    # pairs -- and its n_pairs: 5 of fewer than 20 pairs is no concentration, SPEC §5)
    cell = index_of(results, dataset="all", model="m", phase="P")
    edit_array(store, "concentrated_count", lambda v: v.__setitem__(cell, 5))


MORE: dict[str, tuple[Callable[[Path, Any], None], tuple[str, ...]]] = {
    "concentration claimed": (concentration_claimed, ("'concentrated_count'", "must equal what the stored counts give",
                                                      "dataset='all', model='m', phase='P'")),
    "one ulp on mae": (one_ulp_on_mae, ("'mae'", "must equal what the stored counts give")),
    "cal_conf off its limbs": (cal_conf_off_its_limbs, ("'cal_conf'", "exact limbs")),
    "residual moved": (residual_moved, ("must equal what the stored counts give",)),
    "fine curve edited": (fine_curve_edited, ("'fine_emitted'",)),
    "bootstrap level 2": (bootstrap_level_two, ("'bootstrap'", "['level']")),
    "pairs out of order": (pairs_out_of_order, ("pair",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MORE))
def test_more_edits_are_refused_on_opening(case, store, results):
    edit, needles = MORE[case]
    edit(store, results)
    with pytest.raises(StoreError) as info:
        open_results(store, lazy=False)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["pair index out of range", "recall 7.0", "one ulp on mae", "residual moved",
                                  "pairs out of order"])
def test_what_a_lazy_opening_checks(case, store, results):
    # SPEC §15: opened lazily, the pairs are read when used; what needs every pair (their indices and order,
    # the timing readings they give) is checked only by a whole opening.  Every other reading still is.
    edit, needles = {**CASES, **MORE}[case]
    edit(store, results)
    if case in PAIR_CASES:
        ds = open_results(store)  # opens: the edit is one only the pairs show
        assert not ds.residual.variable._in_memory
    else:
        with pytest.raises(StoreError) as info:
            open_results(store)
        for needle in needles:
            assert needle in str(info.value), (needle, str(info.value))


@pytest.mark.slow
def test_an_interval_upside_down_is_refused(tmp_path):
    ds = pickscale.bootstrap(scored(), draws=50)
    store = save(ds, tmp_path / "results.zarr")
    lo, hi = ds.recall_lo.values, ds.recall_hi.values
    cell = tuple(int(i) for i in np.argwhere(np.isfinite(lo) & (hi > 0))[0])
    edit_array(store, "recall_lo", lambda v: v.__setitem__(cell, hi[cell] + 0.5))
    with pytest.raises(StoreError, match=r"'recall_lo'.*(must be <= recall_hi|must lie in \[0, 1\])"):
        open_results(store)


@pytest.mark.slow
def test_a_store_read_by_rank_keeps_an_edited_pair_for_a_whole_opening_to_refuse(store, results, tmp_path, capsys):
    # An extension of a store that keeps its pairs ranked reads no stored pair (SPEC §11, §15): an edited pair is
    # not read, its chunk is kept as it is, and a whole opening of the extended store refuses it, naming it.
    CASES["pair index out of range"][0](store, results)
    ref, picks = tmp_path / "ref.csv", tmp_path / "picks.csv"
    REFERENCE.assign(time=REFERENCE["time"] + 1000.0).to_csv(ref, index=False)
    PICKS.assign(time=PICKS["time"] + 1000.0).to_csv(picks, index=False)
    assert main(["extend", str(store.parent), "--reference", str(ref), "--picks", str(picks), "--quiet",
                 "--no-figures"]) == 0
    with pytest.raises(StoreError, match="'pair_model'"):
        open_results(store, lazy=False)
