"""``extend`` checks the store while it scores the new inputs (SPEC §15): the same refusals, the store's first.

The store is read and every file checked against its manifest before anything else; its numbers are checked
against each other (:func:`pickscale.store.consistency.check_results`) on a thread of its own while the new
inputs are scored (:func:`pickscale.store.read.open_checking`), and nothing stored is merged before that check
is done.  A store that fails it refuses the extension with the error a checked opening gives, whatever else
is wrong, and nothing is written.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import pickscale
from pickscale.cli import main
from pickscale.errors import StoreError
from pickscale.report.tables import to_csv_bytes
from tests.helpers.extend import DAY, START, stretches
from tests.helpers.stores import edit_array

pytestmark = [pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")]


def _stored_half(tmp_path: Path):
    ref, picks = stretches(2)
    cut = START + DAY
    target = pickscale.save(pickscale.score(ref[ref.time < cut], picks[picks.time < cut], progress=False),
                            tmp_path / "results.zarr")
    return target, (ref[ref.time >= cut], picks[picks.time >= cut]), (ref, picks)


def _files(store: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}


def _edited_recall(store: Path) -> None:
    """A reading its counts do not give (the manifest written again: only the store's own check can tell)."""
    edit_array(store, "recall", lambda v: v.__setitem__((0,) * v.ndim, 7.0))


def test_the_store_is_checked_while_the_new_inputs_are_scored(tmp_path, monkeypatch):
    import pickscale.engine.extension as extension
    import pickscale.store.read as read

    target, (r2, p2), (ref, picks) = _stored_half(tmp_path)
    scoring, checked = threading.Event(), threading.Event()
    real_check, real_prepare = read.check_results, extension.prepare

    def check_results(*args, **kwargs):
        # Checked once the new inputs are being scored: an extension that checked the store first would wait
        # here forever (a minute, then fail).
        assert scoring.wait(60), "the store was not checked while the new inputs were scored"
        real_check(*args, **kwargs)
        checked.set()

    def prepare(*args, **kwargs):
        scoring.set()
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(read, "check_results", check_results)
    monkeypatch.setattr(extension, "prepare", prepare)
    got = pickscale.extend(target, r2, p2, progress=False)
    assert checked.is_set()
    whole = pickscale.score(ref, picks, progress=False)
    assert {k: to_csv_bytes(v) for k, v in pickscale.tables(got).items()} == {
        k: to_csv_bytes(v) for k, v in pickscale.tables(whole).items()}


def test_a_store_that_fails_its_check_refuses_the_extension_and_its_error_comes_first(tmp_path):
    target, (r2, p2), _ = _stored_half(tmp_path)
    _edited_recall(target)
    before = _files(target)
    with pytest.raises(StoreError, match="recall"):
        pickscale.extend(target, r2, p2, progress=False)
    # New inputs that would be refused too (no confidence column): the store's error still.
    with pytest.raises(StoreError, match="recall"):
        pickscale.extend(target, r2, p2.drop(columns="conf"), progress=False)
    assert _files(target) == before  # nothing written


def test_the_command_refuses_such_a_store_with_exit_2(tmp_path, capsys):
    target, (r2, p2), _ = _stored_half(tmp_path)
    r2.to_csv(tmp_path / "ref.csv", index=False)
    p2.to_csv(tmp_path / "picks.csv", index=False)
    _edited_recall(target)
    before = _files(target)
    code = main(["extend", str(target.parent), "--reference", str(tmp_path / "ref.csv"), "--picks",
                 str(tmp_path / "picks.csv"), "--no-figures", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "recall" in err and "Traceback" not in err
    assert _files(target) == before
