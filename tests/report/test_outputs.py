"""Files in ``--out``: never replaced without ``--overwrite``; figures always from the run that wrote the store
(issue 16 items 4 and 5).

pickscale's own names in an output folder are ``results.zarr``, the six tables, ``figures/<figure>.<png|svg|pdf>``
and ``pickscale-outputs.json`` (written last: the store the tables and figures come from). Any other file is
never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import pickscale
from pickscale.cli import main
from pickscale.report import outputs
from pickscale.report.figures import FIGURES
from pickscale.report.outputs import OUTPUTS_MARKER, stale_outputs, store_fingerprint
from tests.helpers.catalogues import plain_catalogue
from tests.helpers.checks import TABLE_NAMES, start_cluster

#: What every run also writes: the pick rates (SPEC §20), a table and a figure.
WRITTEN_TABLES = (*TABLE_NAMES, "pick_rates")
WRITTEN_FIGURES = (*FIGURES, "pick_rates")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    cat = plain_catalogue(seed=8, n_datasets=1, n_stations=3, n_events=4)
    folder = tmp_path_factory.mktemp("inputs")
    ref, picks = folder / "reference.csv", folder / "picks.csv"
    cat.reference.to_csv(ref, index=False, lineterminator="\n")
    cat.picks.to_csv(picks, index=False, lineterminator="\n")
    return ref, picks


@pytest.fixture(scope="module")
def store(inputs, tmp_path_factory):
    """A results store (local scheduler), for the report cases."""
    path = tmp_path_factory.mktemp("store") / "results.zarr"
    pickscale.save(pickscale.score(str(inputs[0]), str(inputs[1])), path)
    return path


@pytest.fixture(scope="module")
def scheduler():
    cluster, client = start_cluster(n_workers=1)
    try:
        yield cluster.scheduler_address
    finally:
        client.close()
        cluster.close()


def listing(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` with a hash of its bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("pickscale: error: ") and "Traceback" not in err, err
    missing = [n for n in needles if n not in err]
    assert not missing, f"missing {missing} in:\n{err}"


def user_folder(tmp_path: Path) -> Path:
    """An output folder holding a user's own files, two of them with names pickscale writes."""
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    (out / "sweep.csv").write_text("my own sweep\n")
    (out / "figures" / "timing.png").write_bytes(b"my own figure")
    (out / "figures" / "map.png").write_bytes(b"my map")
    (out / "notes.txt").write_text("notes\n")
    return out


def no_work(monkeypatch) -> None:
    """Fail the test if the command starts a cluster or scores: refusals come first."""
    import pickscale.engine as engine

    def boom(*args, **kwargs):
        raise AssertionError("the command did work before refusing")

    monkeypatch.setattr(engine, "score", boom)
    monkeypatch.setattr(engine, "cluster_client", boom)


# --------------------------------------------------------------------------- item 4: refuse, before any work

@pytest.mark.parametrize("command", ["score", "demo"])
def test_existing_outputs_are_not_replaced_without_overwrite(command, inputs, tmp_path, capsys, monkeypatch):
    out = user_folder(tmp_path)
    before = listing(out)
    no_work(monkeypatch)
    argv = [command, "--out", out, "--workers", "1"]
    if command == "score":
        argv += ["--reference", inputs[0], "--picks", inputs[1]]
    code, _, err = run(argv, capsys)
    assert_refused(code, err, f"--out {out} already holds files that pickscale writes", "sweep.csv",
                   "figures/timing.png", "pass --overwrite", "never deletes any other")
    assert "map.png" not in err and "notes.txt" not in err
    assert listing(out) == before


def test_demo_inputs_are_not_replaced_without_overwrite(tmp_path, capsys, monkeypatch):
    out = tmp_path / "demo"
    (out / "inputs").mkdir(parents=True)
    (out / "inputs" / "picks.csv").write_text("my picks\n")
    before = listing(out)
    no_work(monkeypatch)
    code, _, err = run(["demo", "--out", out, "--workers", "1"], capsys)
    assert_refused(code, err, "inputs/picks.csv", "--overwrite")
    assert listing(out) == before


@pytest.mark.parametrize("what", ["folder-named-like-a-table", "figures-is-a-file"])
def test_never_replaced_even_with_overwrite(what, inputs, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    if what == "figures-is-a-file":
        (out / "figures").write_text("not a folder")
        needle = "is a file, not a folder"
    else:
        (out / "detection.csv").mkdir()
        (out / "detection.csv" / "inside.txt").write_text("x")
        needle = "holds folders where pickscale writes files: detection.csv"
    before = listing(out)
    no_work(monkeypatch)
    code, _, err = run(["score", "--reference", inputs[0], "--picks", inputs[1], "--out", out, "--overwrite"],
                       capsys)
    assert_refused(code, err, needle)
    assert listing(out) == before


@pytest.mark.slow
def test_report_refuses_existing_files_then_replaces_only_its_own(store, tmp_path, capsys):
    out = user_folder(tmp_path)
    before = listing(out)
    code, _, err = run(["report", store, "--out", out, "--quiet"], capsys)
    assert_refused(code, err, "sweep.csv", "figures/timing.png", "--overwrite")
    assert listing(out) == before
    # With --overwrite: pickscale's names replaced, the user's other files untouched.
    code, _, err = run(["report", store, "--out", out, "--quiet", "--overwrite"], capsys)
    assert code == 0, err
    after = listing(out)
    for name in ("notes.txt", "figures/map.png"):
        assert after[name] == before[name]
    assert after["sweep.csv"] != before["sweep.csv"] and after["figures/timing.png"] != before["figures/timing.png"]
    assert {f"{t}.csv" for t in TABLE_NAMES} <= set(after)
    assert {f"figures/{f}.png" for f in FIGURES} <= set(after)
    assert not [n for n in after if n.startswith(".")]  # no temporary folder left
    marker = json.loads((out / OUTPUTS_MARKER).read_text())
    assert marker["complete"] is True and marker["store_fingerprint"] == store_fingerprint(store)
    assert os.path.abspath(out / marker["store"]) == os.path.abspath(store)
    # The same store again: its outputs are current, so they are not replaced without --overwrite either.
    before = listing(out)
    code, _, err = run(["report", store, "--out", out, "--quiet"], capsys)
    assert_refused(code, err, "already holds files that pickscale writes", "detection.csv")
    assert listing(out) == before


# --------------------------------------------------------------------------- item 5: no stale figures

@pytest.mark.cluster
@pytest.mark.slow
def test_overwrite_without_figures_removes_the_previous_runs_figures(inputs, tmp_path, capsys, scheduler):
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "map.png").write_bytes(b"my map")
    argv = ["score", "--reference", inputs[0], "--picks", inputs[1], "--out", out, "--scheduler", scheduler,
            "--quiet"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert all((out / "figures" / f"{f}.png").is_file() for f in FIGURES)
    code, _, err = run(argv + ["--overwrite", "--no-figures"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["map.png"]  # the user's file only
    marker = json.loads((out / OUTPUTS_MARKER).read_text())
    assert marker["complete"] is True
    assert marker["files"] == sorted(f"{t}.csv" for t in WRITTEN_TABLES)
    assert marker["store_fingerprint"] == store_fingerprint(out / "results.zarr")
    assert stale_outputs(out) == []


@pytest.mark.slow
def test_another_format_replaces_the_figures_of_the_first(store, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run(["report", store, "--out", out, "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run(["report", store, "--out", out, "--quiet", "--overwrite", "--format", "svg"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in (out / "figures").iterdir()) == sorted(f"{f}.svg" for f in WRITTEN_FIGURES)


def _outputs_then_new_store(store: Path, tmp_path: Path, capsys) -> Path:
    """A run folder whose tables and figures come from the store it held before this one."""
    out = tmp_path / "run"
    out.mkdir()
    ds = pickscale.open_results(store).load()
    pickscale.save(ds, out / "results.zarr")
    code, _, err = run(["report", out / "results.zarr", "--quiet"], capsys)
    assert code == 0, err
    assert stale_outputs(out) == []
    pickscale.save(ds.assign_attrs(created="2031-01-01T00:00:00Z"), out / "results.zarr", overwrite=True)
    return out


@pytest.mark.slow
def test_outputs_of_a_replaced_store_are_out_of_date_and_report_replaces_them(store, tmp_path, capsys):
    # As after a kill between the store's rename and the outputs': the marker names the previous store.
    out = _outputs_then_new_store(store, tmp_path, capsys)
    assert set(stale_outputs(out)) >= {OUTPUTS_MARKER, "detection.csv", "figures/timing.png"}
    (out / "notes.txt").write_text("notes\n")
    code, _, err = run(["report", out / "results.zarr", "--quiet", "--format", "pdf"], capsys)  # no --overwrite
    assert code == 0, err
    assert stale_outputs(out) == []
    marker = json.loads((out / OUTPUTS_MARKER).read_text())
    assert marker["store_fingerprint"] == store_fingerprint(out / "results.zarr")
    assert marker["store_created"] == "2031-01-01T00:00:00Z"
    assert sorted(p.name for p in (out / "figures").iterdir()) == sorted(f"{f}.pdf" for f in WRITTEN_FIGURES)
    assert (out / "notes.txt").read_text() == "notes\n"


@pytest.mark.slow
def test_a_kill_while_moving_outputs_leaves_them_recognisably_out_of_date(store, tmp_path, capsys, monkeypatch):
    out = _outputs_then_new_store(store, tmp_path, capsys)
    real_replace = os.replace

    def killed(src, dst, *args, **kwargs):
        if (Path(src).parent.name.startswith(".pickscale-outputs.tmp-") and Path(dst).parent == out
                and Path(dst).name == "reliability.csv"):  # the 4th table moved into place
            raise KeyboardInterrupt
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(outputs.os, "replace", killed)
    code, _, err = run(["report", out / "results.zarr", "--quiet", "--overwrite"], capsys)
    monkeypatch.setattr(outputs.os, "replace", real_replace)
    assert code == 130, err
    marker = json.loads((out / OUTPUTS_MARKER).read_text())
    assert marker["complete"] is False
    assert "reliability.csv" in stale_outputs(out) and "figures/timing.png" in stale_outputs(out)
    # The next report (no --overwrite) cleans up and writes them all again.
    code, _, err = run(["report", out / "results.zarr", "--quiet", "--no-figures"], capsys)
    assert code == 0, err
    assert stale_outputs(out) == [] and not (out / "figures").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".pickscale-outputs")]


@pytest.mark.slow
def test_a_dead_runs_temporary_folder_is_removed(store, tmp_path, capsys):
    out = tmp_path / "out"
    dead = out / ".pickscale-outputs.tmp-999999999-abcd1234"
    (dead / "figures").mkdir(parents=True)
    (dead / "detection.csv").write_text("half\n")
    mine = out / ".pickscale-outputs.tmp-notapid-1"
    mine.mkdir()
    code, _, err = run(["report", store, "--out", out, "--quiet", "--no-figures"], capsys)
    assert code == 0, err
    assert not dead.exists() and mine.exists()


def test_help_says_what_overwrite_replaces(capsys):
    for command in ("score", "report"):
        code, stdout, _ = run([command, "--help"], capsys)
        assert code == 0
        text = "".join(stdout.split())  # argparse wraps lines (also after a hyphen)
        assert "pickscale-outputs.json" in text and "Nootherfileiseverreplacedordeleted" in text
