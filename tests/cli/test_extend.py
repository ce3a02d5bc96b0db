"""``pickscale extend DIR``: byte-identical to one run; every refusal exits 2 and leaves DIR byte-identical;
a killed extend leaves the old store intact."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pickscale.cli import main
from pickscale.report.tables import TABLE_NAMES
from pickscale.store import open_results
from tests.helpers.extend import DAY, START, stretches

TABLES = [f"{name}.csv" for name in (*TABLE_NAMES, "over_time")]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extend-inputs")
    ref, picks = stretches(2)
    cut = START + DAY
    files = {
        "ref": ref, "picks": picks,
        "ref_early": ref[ref.time < cut], "ref_late": ref[ref.time >= cut],
        "m1": picks[picks.model == "m1"], "m2": picks[picks.model == "m2"],
        "early": picks[picks.time < cut], "late": picks[picks.time >= cut],
    }
    ref_moved = ref.copy()
    ref_moved.loc[0, "time"] += __import__("pandas").Timedelta(1, "s")
    files["ref_moved"] = ref_moved
    out = {}
    for name, frame in files.items():
        out[name] = folder / f"{name}.csv"
        frame.to_csv(out[name], index=False)
    return out


def run(*argv) -> int:
    return main([str(a) for a in argv])


def score(out: Path, ref: Path, picks: Path, *extra) -> None:
    assert run("score", "--reference", ref, "--picks", picks, "--out", out, "--quiet", "--no-figures",
               "--time-bin", "1D", *extra) == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["models", "time"])
def test_extend_equals_one_run(how, inputs, tmp_path):
    whole, out = tmp_path / "whole", tmp_path / "out"
    score(whole, inputs["ref"], inputs["picks"])
    if how == "models":
        score(out, inputs["ref"], inputs["m1"])
        assert run("extend", out, "--reference", inputs["ref"], "--picks", inputs["m2"], "--quiet",
                   "--no-figures") == 0
    else:
        score(out, inputs["ref_early"], inputs["early"])
        assert run("extend", out, "--reference", inputs["ref_late"], "--picks", inputs["late"], "--quiet",
                   "--no-figures") == 0
    for name in TABLES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    ds = open_results(out / "results.zarr")
    assert len(ds.attrs["extensions"]) == 1
    assert ds.attrs["extensions"][0]["inputs"]["picks"]["source"].endswith((inputs["m2"].name, inputs["late"].name))


REFUSALS = {
    "grid": (["--thresholds", "0.1,0.3,0.5"], "thresholds"),
    "tol": (["--tol", "0.25"], "--tol 0.25 differs"),
    "residual_tol": (["--residual-tol", "3"], "--residual-tol 3.0 differs"),
    "threshold": (["--threshold", "0.5"], "--threshold 0.5 differs"),
    "exhaustive": (["--exhaustive"], "--exhaustive True differs"),
    "time_bin": (["--time-bin", "1h"], "--time-bin '1h' differs"),
    "budget": (["--budget", "3"], "--budget 3 differs"),
    "group_by": (["--group-by", "magnitude:1,2"], "--group-by 'magnitude:1,2' differs from the store's (none)"),
    "tols": (["--tols", "0.1,0.5"], "--tols [0.1, 0.5] differs from the store's (none)"),
    "station_key": (["--station-key", "net.sta"], "--station-key 'net.sta' differs from the store's ('as-is')"),
    "ci": (["--ci", "1.5"], "--ci LEVEL must lie strictly between 0 and 1"),
    "overlap": (["--picks-of", "m1"], "already stored over an overlapping span: m1"),
    "reference": (["--reference-of", "ref_moved"], "the reference disagrees"),
    "no-store": (["--dir", "missing"], "no results store"),
}


@pytest.fixture(scope="module")
def m1_run(inputs, tmp_path_factory) -> Path:
    """What ``score`` of m1 alone writes: scored once, copied into each refusal's own folder."""
    out = tmp_path_factory.mktemp("m1-run") / "out"
    score(out, inputs["ref"], inputs["m1"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_exit_2_and_leave_the_store_untouched(case, inputs, m1_run, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(m1_run, out)  # the run's own files, as `score` left them
    before = snapshot(tmp_path)
    extra, message = REFUSALS[case]
    ref, picks, target, flags = inputs["ref"], inputs["m2"], out, list(extra)
    if extra[0] == "--picks-of":
        picks, flags = inputs[extra[1]], []
    elif extra[0] == "--reference-of":
        ref, flags = inputs[extra[1]], []
    elif extra[0] == "--dir":
        target, flags = tmp_path / extra[1], []
    capsys.readouterr()
    code = run("extend", target, "--reference", ref, "--picks", picks, "--quiet", "--no-figures", *flags)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "pickscale: error:" in err and message in err, err
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_replace_scores_a_model_again(inputs, tmp_path):
    out, whole = tmp_path / "out", tmp_path / "whole"
    score(out, inputs["ref"], inputs["picks"])
    score(whole, inputs["ref"], inputs["picks"])
    assert run("extend", out, "--reference", inputs["ref"], "--picks", inputs["m1"], "--replace", "--quiet",
               "--no-figures") == 0
    for name in TABLES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


@pytest.mark.slow
def test_extend_rewrites_figures_written_from_the_store(inputs, tmp_path):
    out = tmp_path / "out"
    assert run("score", "--reference", inputs["ref"], "--picks", inputs["m1"], "--out", out, "--quiet") == 0
    before = (out / "detection.csv").read_bytes()
    assert run("extend", out, "--reference", inputs["ref"], "--picks", inputs["m2"], "--quiet") == 0
    assert (out / "detection.csv").read_bytes() != before and b"m2" in (out / "detection.csv").read_bytes()
    # A file of the user's with an output's name is not replaced without --overwrite.
    (out / "pickscale-outputs.json").unlink()
    snap = snapshot(out)
    assert run("extend", out, "--reference", inputs["ref_late"], "--picks", inputs["late"], "--quiet") == 2
    assert snapshot(out) == snap


def _command() -> list[str]:
    return [sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main())"]


@pytest.mark.parametrize("delay", [None, 0.5, 1.5])
@pytest.mark.slow
def test_killed_extend_leaves_the_old_store_intact(delay, inputs, tmp_path):
    out, whole = tmp_path / "out", tmp_path / "whole"
    score(out, inputs["ref"], inputs["m1"])
    score(whole, inputs["ref"], inputs["picks"])
    old = snapshot(out / "results.zarr")
    proc = subprocess.Popen([*_command(), "extend", str(out), "--reference", str(inputs["ref"]), "--picks",
                             str(inputs["m2"]), "--quiet", "--no-figures"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        # The lock with its owner's record in it (a kill between the file's creation and its record leaves an
        # empty lock, which the next run leaves alone for its grace period: another host may be writing it).
        lock = out / ".results.zarr.lock"
        while not (lock.exists() and lock.stat().st_size > 0) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if delay:
            time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    target = out / "results.zarr"
    if delay is None:  # killed while it scored: the store was never touched
        assert snapshot(target) == old
    if target.exists():
        now = snapshot(target)
        extended = now != old
        if extended:  # killed after the new store was put in place: it is complete
            open_results(target)
    else:  # killed between the two renames: the old store waits aside, and the next run puts it back
        assert any(p.name.startswith(".results.zarr.old-") for p in out.iterdir())
        extended = False
    # The next extend (or, once extended, a report) works, and the result is the one run's.
    if not extended:
        assert run("extend", out, "--reference", inputs["ref"], "--picks", inputs["m2"], "--quiet",
                   "--no-figures") == 0
    assert run("report", out / "results.zarr", "--quiet", "--no-figures", "--overwrite") == 0
    for name in TABLE_NAMES:
        assert (out / f"{name}.csv").read_bytes() == (whole / f"{name}.csv").read_bytes(), name


@pytest.mark.parametrize("level", [None, "0.9"])
@pytest.mark.slow
def test_extending_a_ci_store_gives_the_ci_outputs_of_one_run(level, inputs, tmp_path):
    # The store was scored with --ci 0.9; extending it (with --ci 0.9 again, or without: the store's level) draws
    # the intervals again on the merged counts: every table, model_differences.csv included, as one run gives.
    whole, out = tmp_path / "whole", tmp_path / "out"
    score(whole, inputs["ref"], inputs["picks"], "--ci", "0.9")
    score(out, inputs["ref"], inputs["m1"], "--ci", "0.9")
    flags = [] if level is None else ["--ci", level]
    assert run("extend", out, "--reference", inputs["ref"], "--picks", inputs["m2"], "--quiet", "--no-figures",
               *flags) == 0
    written = sorted(p.name for p in out.glob("*.csv"))
    assert "model_differences.csv" in written and written == sorted(p.name for p in whole.glob("*.csv"))
    for name in written:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    assert "recall_lo" in (out / "detection.csv").read_text().splitlines()[0]
    assert open_results(out / "results.zarr").attrs["bootstrap"]["level"] == 0.9
