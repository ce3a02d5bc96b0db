"""The ``pickscale`` command: ``score``, ``report``, ``demo``, and every fatal case of SPEC §1–§2.

Runs ``pickscale.cli.main([...])`` in-process (``--workers 1`` where the command starts its own
LocalCluster; the fatal cases share one cluster through ``--scheduler`` to keep start-up cheap),
and the installed ``pickscale`` console script in a subprocess for the real entry point.
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from tests.helpers.catalogues import S, iso, plain_catalogue
from tests.helpers.checks import TABLE_NAMES, assert_same_csv, cli_flags, csv_bytes, no_default_client, start_cluster

TITLES = ("DETECTION at the shared threshold", "ONSET TIME at the shared threshold", "CALIBRATION",
          "PHASE QUALITY at the shared threshold")
LB_NOTE = "_lb = lower bound"
VERDICT = "VERDICT per dataset and phase"
# SPEC §1 aliases (canonical first), as a user would need them listed.
ALIASES = {
    "time": ("time", "pick_time", "arrival_time", "peak_time", "phase_time", "peak", "onset", "timestamp"),
    "conf": ("conf", "confidence", "probability", "peak_value", "phase_score", "prob", "score"),
}


@pytest.fixture(scope="module")
def cat():
    return plain_catalogue(seed=8, n_datasets=2, n_stations=4, n_events=8)


def write_inputs(cat, folder: Path, *, reference=None, picks=None) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    ref_path, picks_path = folder / "reference.csv", folder / "picks.csv"
    (cat.reference if reference is None else reference).to_csv(ref_path, index=False, lineterminator="\n")
    (cat.picks if picks is None else picks).to_csv(picks_path, index=False, lineterminator="\n")
    return ref_path, picks_path


def run(argv, capsys) -> tuple[int, str, str]:
    argv = [str(a) for a in argv]
    if argv and argv[0] in ("score", "report", "demo"):
        argv += cli_flags(argv[0], "--no-figures")  # figures are not what these tests are about
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_nothing_written(out: Path) -> None:
    assert not (out / "results.zarr").exists()
    if out.exists():
        assert not list(out.glob("*.csv")), list(out.iterdir())
        assert not [p for p in out.iterdir() if p.name.startswith(".results.zarr")], list(out.iterdir())


# --------------------------------------------------------------------------- score and report

@pytest.mark.cluster
def test_score_then_report(cat, tmp_path, capsys):
    inputs = tmp_path / "inputs"
    ref_path, picks_path = write_inputs(cat, inputs)
    out = tmp_path / "run"
    code, stdout, stderr = run(["score", "--reference", ref_path, "--picks", picks_path, "--out", out,
                                "--workers", "1", "--verbose"], capsys)
    assert code == 0, stderr
    assert no_default_client()
    assert (out / "results.zarr").is_dir()
    written = {name: (out / f"{name}.csv").read_bytes() for name in TABLE_NAMES}
    # With --verbose the four tables and the _lb note are printed, in this order, and the verdict last.
    positions = [stdout.index(title) for title in TITLES]
    assert positions == sorted(positions)
    assert LB_NOTE in stdout
    assert stdout.index(VERDICT) > positions[-1]
    for model in ("alpha", "beta", "gamma"):
        assert model in stdout
    # The files hold what the library computes on the local scheduler, and what the store holds.
    assert no_default_client()
    ds = pickscale.score(str(ref_path), str(picks_path))
    assert_same_csv(written, csv_bytes(pickscale.tables(ds)))
    stored = pickscale.open_results(out / "results.zarr").load()
    assert_same_csv(csv_bytes(pickscale.tables(stored)), written)

    # An existing store is not replaced without --overwrite; nothing is touched.
    before = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*"))
    code, _, stderr = run(["score", "--reference", ref_path, "--picks", picks_path, "--out", out,
                           "--workers", "1"], capsys)
    assert code == 2
    assert "already exists" in stderr and "--overwrite" in stderr and "results.zarr" in stderr
    assert sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*")) == before

    # report works from the store alone: move the inputs away first.
    shutil.move(str(inputs), str(tmp_path / "moved"))
    assert not ref_path.exists()
    out2 = tmp_path / "report"
    code, stdout, stderr = run(["report", out / "results.zarr", "--out", out2], capsys)
    assert code == 0, stderr
    assert_same_csv({name: (out2 / f"{name}.csv").read_bytes() for name in TABLE_NAMES}, written)
    # Without --verbose: the verdict (naming the models) and no table.
    assert not any(title in stdout for title in TITLES) and VERDICT in stdout and LB_NOTE in stdout
    assert "best at matched budget" in stdout and all(model in stdout for model in ("alpha", "beta", "gamma"))
    code, stdout, stderr = run(["report", out / "results.zarr", "--out", out2, "--verbose", "--overwrite"], capsys)
    assert code == 0, stderr
    assert all(title in stdout for title in TITLES) and LB_NOTE in stdout and VERDICT in stdout
    # Without --out, next to the store.
    copy = tmp_path / "copy"
    shutil.copytree(out / "results.zarr", copy / "results.zarr")
    code, stdout, _ = run(["report", copy / "results.zarr", "--quiet"], capsys)
    assert code == 0 and stdout == ""
    assert_same_csv({name: (copy / f"{name}.csv").read_bytes() for name in TABLE_NAMES}, written)


def _console_script() -> list[str]:
    exe = Path(sys.executable).with_name("pickscale")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pickscale.cli"]


@pytest.mark.slow
def test_console_script_entry_point(cat, tmp_path):
    """The installed ``pickscale`` command: exit status 0 for report, 2 for a usage error, no traceback."""
    ds = pickscale.score(*map(str, write_inputs(cat, tmp_path / "in")))
    pickscale.save(ds, tmp_path / "results.zarr")
    proc = subprocess.run(_console_script() + ["report", str(tmp_path / "results.zarr"), "--out",
                                               str(tmp_path / "tables"), "--verbose",
                                               *cli_flags("report", "--no-figures")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all(title in proc.stdout for title in TITLES)
    assert_same_csv({"detection": (tmp_path / "tables" / "detection.csv").read_bytes()},
                    {"detection": csv_bytes(pickscale.tables(ds))["detection"]})
    proc = subprocess.run(_console_script() + ["score", "--reference", str(tmp_path / "in" / "reference.csv"),
                                               "--out", str(tmp_path / "x")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "--picks" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists()


def test_the_collector_is_paused_only_while_the_command_loads(tmp_path, capsys):
    """main() called from Python leaves the garbage collector as it found it and freezes nothing (the caller's
    garbage stays collectable); the console script's own process freezes what the command loaded."""
    argv = ["report", str(tmp_path / "missing.zarr"), "--out", str(tmp_path / "tables")]
    frozen = gc.get_freeze_count()
    assert main(argv) == 2 and gc.isenabled() and gc.get_freeze_count() == frozen
    gc.disable()
    try:
        assert main(argv) == 2 and not gc.isenabled()
    finally:
        gc.enable()
    capsys.readouterr()
    script = ("import gc, sys; from pickscale.cli import main; before = gc.get_freeze_count(); "
              f"sys.argv = ['pickscale', *{argv!r}]; code = main(); "
              "print(code, gc.isenabled(), before, gc.get_freeze_count())")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    code, enabled, before, after = proc.stdout.split()
    assert (code, enabled, before) == ("2", "True", "0"), proc.stderr
    assert int(after) > 100_000  # (pandas, Dask, zarr and xarray: a few hundred thousand objects)


# --------------------------------------------------------------------------- fatal cases

@pytest.fixture(scope="module")
def scheduler():
    cluster, client = start_cluster(n_workers=1)
    try:
        yield cluster.scheduler_address
    finally:
        client.close()
        cluster.close()


def score_argv(ref_path, picks_path, out, scheduler, *extra):
    return ["score", "--reference", ref_path, "--picks", picks_path, "--out", out, "--scheduler", scheduler, *extra]


@pytest.mark.cluster
def test_missing_column(cat, tmp_path, capsys, scheduler):
    ref = cat.reference.rename(columns={"time": "when"})
    picks = cat.picks.rename(columns={"conf": "certainty"})
    ref_path, picks_path = write_inputs(cat, tmp_path / "in", reference=ref)
    out = tmp_path / "out"
    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler), capsys)
    assert code == 2
    assert str(ref_path) in err and "'time'" in err
    assert "'dataset', 'station', 'phase', 'when'" in err  # the columns found
    assert ", ".join(ALIASES["time"]) in err  # the names accepted
    assert "Traceback" not in err
    assert_nothing_written(out)
    # The same for the picks' conf column.
    _, picks_path = write_inputs(cat, tmp_path / "in2", picks=picks)
    code, _, err = run(score_argv(tmp_path / "in2" / "reference.csv", picks_path, out, scheduler), capsys)
    assert code == 2
    assert str(picks_path) in err and "'conf'" in err and "'certainty'" in err
    assert ", ".join(ALIASES["conf"]) in err
    assert_nothing_written(out)


@pytest.mark.cluster
def test_invalid_rows_then_drop_invalid(cat, tmp_path, capsys, scheduler):
    picks = cat.picks.copy()
    bad_conf, bad_time = [3, 10], [6]  # 0-based data rows; spreadsheet rows are +2 (header = row 1)
    picks.loc[bad_conf[0], "conf"] = "1.5"
    picks.loc[bad_conf[1], "conf"] = ""
    picks.loc[bad_time[0], "time"] = "yesterday"
    ref_path, picks_path = write_inputs(cat, tmp_path / "in", picks=picks)
    out = tmp_path / "out"
    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler), capsys)
    assert code == 2
    assert str(picks_path) in err and "3 invalid row(s)" in err
    for i in bad_conf + bad_time:
        assert f"row {i + 2}" in err, i
    assert "--drop-invalid" in err
    assert_nothing_written(out)

    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler, "--drop-invalid", "--quiet"), capsys)
    assert code == 0, err
    assert "warning:" in err and "dropped 3 invalid row(s)" in err
    # The tables are those of the catalogue without the three rows.
    clean = cat.picks.drop(index=bad_conf + bad_time)
    _, clean_path = write_inputs(cat, tmp_path / "clean", picks=clean)
    expected = csv_bytes(pickscale.tables(pickscale.score(str(ref_path), str(clean_path))))
    assert_same_csv({name: (out / f"{name}.csv").read_bytes() for name in TABLE_NAMES}, expected)


@pytest.mark.cluster
def test_no_shared_station(cat, tmp_path, capsys, scheduler):
    # Every (station, model) its own spelling: more than five per side in a dataset.
    picks = cat.picks.assign(station="ZZ." + cat.picks["station"].str.split(".").str[1] + cat.picks["model"])
    ref_path, picks_path = write_inputs(cat, tmp_path / "in", picks=picks)
    out = tmp_path / "out"
    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler), capsys)
    assert code == 2
    assert "share no station" in err
    lines = err.splitlines()
    for d in sorted(set(cat.reference["dataset"])):
        i = next(k for k, line in enumerate(lines) if repr(d) in line and "share no station" in line)
        ref_line = next(line for line in lines[i + 1:] if str(ref_path) in line and "stations:" in line)
        pick_line = next(line for line in lines[i + 1:] if str(picks_path) in line and "stations:" in line)
        ref_st = sorted(set(cat.reference.loc[cat.reference["dataset"] == d, "station"]))
        pick_st = sorted(set(picks.loc[picks["dataset"] == d, "station"]))
        assert len(pick_st) > 5
        shown_ref = [s for s in ref_st if repr(s) in ref_line]
        shown_pick = [s for s in pick_st if repr(s) in pick_line]
        assert shown_ref == ref_st[:5]  # up to five spellings from each side
        assert 1 <= len(shown_pick) <= 5
        assert f"({len(pick_st)} in all)" in pick_line
    assert_nothing_written(out)


@pytest.mark.cluster
def test_disjoint_time_spans(cat, tmp_path, capsys, scheduler):
    # Picks written in local time as if it were UTC: three hours late.
    shift = 3 * 3600 * S
    pick_ns = cat.picks_canonical["time"].to_numpy(np.int64) + shift
    picks = cat.picks.assign(time=[iso(t, "Z") for t in pick_ns])
    ref_path, picks_path = write_inputs(cat, tmp_path / "in", picks=picks)
    out = tmp_path / "out"
    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler), capsys)
    assert code == 2
    assert "do not overlap" in err
    # Both spans, per dataset, to the second.
    ref = cat.ref_canonical
    for d in sorted(set(ref["dataset"])):
        r = ref.loc[ref["dataset"] == d, "time"]
        p = pick_ns[cat.picks_canonical["dataset"].to_numpy() == d]
        for t in (r.min(), r.max(), p.min(), p.max()):
            assert iso(int(t) // S * S, "Z")[:19] in err, (d, iso(int(t), "Z"))
    assert_nothing_written(out)


@pytest.mark.cluster
@pytest.mark.parametrize("option, value, flag", [
    ("--tol", "-1", "--tol"),
    ("--residual-tol", "0.1", "--residual-tol"),
    ("--thresholds", "0.5,0.3", "--thresholds"),
])
def test_bad_options(cat, tmp_path, capsys, scheduler, option, value, flag):
    ref_path, picks_path = write_inputs(cat, tmp_path / "in")
    out = tmp_path / "out"
    code, _, err = run(score_argv(ref_path, picks_path, out, scheduler, option, value), capsys)
    assert code == 2
    assert flag in err and "Traceback" not in err
    assert_nothing_written(out)


@pytest.mark.parametrize("argv, needle", [
    (["score", "--reference", "r.csv", "--out", "o"], "--picks"),  # missing --picks
    (["score", "--picks", "p.csv", "--out", "o"], "--reference"),
    (["score", "--reference", "r.csv", "--picks", "p.csv", "--out", "o", "--tol"], "--tol"),  # no value
    (["score", "--bogus"], "--bogus"),
    ([], "command"),
])
def test_usage_errors(tmp_path, capsys, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(argv, capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- demo

@pytest.mark.cluster
def test_demo_facts(tmp_path, capsys):
    out = tmp_path / "demo"
    code, stdout, stderr = run(["demo", "--out", out, "--workers", "1", "--verbose"], capsys)
    assert code == 0, stderr
    assert (out / "results.zarr").is_dir() and (out / "inputs" / "picks.csv").is_file()
    det = pd.read_csv(out / "detection.csv")
    tim = pd.read_csv(out / "timing.csv")
    assert sorted(det["model"].unique()) == ["late", "liberal", "sharp"]
    groups = list(det.groupby(["dataset", "phase"]))
    assert len(groups) == 4  # two datasets, two phases
    for (d, ph), g in groups:
        g = g.set_index("model")
        t = tim[(tim["dataset"] == d) & (tim["phase"] == ph)].set_index("model")
        where = f"{d} {ph}"
        assert abs(t.loc["late", "bias"] - 0.15) <= 0.02, where
        assert abs(g.loc["late", "recall"] - g.loc["sharp", "recall"]) <= 0.05, where
        assert g["recall"].idxmax() == "liberal" and g["recall"].nlargest(2).iloc[1] < g.loc["liberal", "recall"], where
        assert g["precision_lb"].idxmin() == "liberal", where
        rab = g["recall_at_budget"]
        assert rab.notna().all() and rab.max() - rab.min() <= 0.05, (where, rab.to_dict())
    # The printed "What to see" lines.
    assert "What to see:" in stdout
    tail = stdout[stdout.index("What to see:"):]
    for ph in ("P", "S"):
        assert f"  - {ph}: late is as good at detection as sharp" in tail
        assert f"  - {ph}: liberal has the highest recall at the shared threshold" in tail
    assert "built in: 0.150 s" in tail and "at the matched budget the three recalls agree" in tail
    assert all(title in stdout for title in TITLES) and LB_NOTE in stdout


@pytest.mark.cluster
@pytest.mark.slow
def test_block_picks_changes_no_number(cat, tmp_path, capsys, scheduler):
    ref_path, picks_path = write_inputs(cat, tmp_path / "in")
    code, _, err = run(score_argv(ref_path, picks_path, tmp_path / "whole", scheduler, "--quiet"), capsys)
    assert code == 0, err
    # Tiny blocks: every busy station is cut wherever a quiet gap allows.
    code, _, err = run(score_argv(ref_path, picks_path, tmp_path / "blocks", scheduler, "--quiet",
                                  "--block-picks", "5"), capsys)
    assert code == 0, err
    read = lambda d: {n: (tmp_path / d / f"{n}.csv").read_bytes() for n in TABLE_NAMES}  # noqa: E731
    assert_same_csv(read("blocks"), read("whole"))
    # The same from a study file; a bad value is a usage error before anything is written.
    study = tmp_path / "study.toml"
    study.write_text(f'reference = "{ref_path}"\npicks = "{picks_path}"\n[cluster]\nblock_picks = 7\n')
    code, _, err = run(["score", "--config", study, "--out", tmp_path / "toml", "--scheduler", scheduler,
                        "--quiet"], capsys)
    assert code == 0, err
    assert_same_csv(read("toml"), read("whole"))
    code, _, err = run(score_argv(ref_path, picks_path, tmp_path / "bad", scheduler, "--block-picks", "0"), capsys)
    assert code == 2 and "--block-picks must be a whole number >= 1" in err and "Traceback" not in err
    assert_nothing_written(tmp_path / "bad")


@pytest.mark.slow
def test_small_job_runs_in_process_with_the_same_tables(cat, tmp_path, monkeypatch):
    """Issue 10: a small study of local files starts no cluster (it would cost more than the job);
    the tables are those of a run on worker processes, byte for byte."""
    ref, picks = write_inputs(cat, tmp_path / "in")
    assert main(["score", "--reference", str(ref), "--picks", str(picks), "--out", str(tmp_path / "cluster"),
                 "--workers", "1", "--quiet", *cli_flags("score", "--no-figures")]) == 0
    import pickscale.engine.cluster

    def no_cluster(*args, **kwargs):
        raise AssertionError("a small job started a cluster")

    monkeypatch.setattr(pickscale.engine.cluster, "local_cluster", no_cluster)
    assert main(["score", "--reference", str(ref), "--picks", str(picks), "--out", str(tmp_path / "inproc"),
                 "--quiet", *cli_flags("score", "--no-figures")]) == 0
    for name in TABLE_NAMES:
        assert (tmp_path / "inproc" / f"{name}.csv").read_bytes() == (tmp_path / "cluster" / f"{name}.csv").read_bytes()
    # Above the size limit the command starts its cluster; a URL is never "small".
    assert not pickscale.engine.cluster.small_local_input(str(ref), str(picks), limit=1)
    assert pickscale.engine.cluster.small_local_input(str(ref), str(picks))
    assert not pickscale.engine.cluster.small_local_input("memory://picks.csv", str(picks))


def test_option_errors_speak_the_api_in_python_and_flags_on_the_command_line(cat, tmp_path, capsys):
    """Issue 11: the library names `residual_tol`; the command says `--residual-tol`."""
    from pickscale.errors import OptionsError

    with pytest.raises(OptionsError, match=r"^residual_tol \(0.2 s\) must be >= tol \(0.5 s\)") as info:
        pickscale.Options(tol=0.5, residual_tol=0.2)
    assert info.value.options == ("residual_tol", "tol")
    ref, picks = write_inputs(cat, tmp_path / "in")
    code = main(["score", "--reference", str(ref), "--picks", str(picks), "--out", str(tmp_path / "o"),
                 "--tol", "0.5", "--residual-tol", "0.2"])
    err = capsys.readouterr().err
    assert code == 2 and "--residual-tol (0.2 s) must be >= --tol (0.5 s)" in err, err


@pytest.mark.slow
def test_demo_exhaustive_prints_pooled_facts(tmp_path, capsys):
    """Issue 11: `demo --exhaustive` works (its tables say `precision`, not `precision_lb`); issue 15: the
    "What to see" recalls are pooled over the datasets (matched / n_reference summed), and say so."""
    out = tmp_path / "demo"
    code, stdout, stderr = run(["demo", "--out", out, "--exhaustive", *cli_flags("demo", "--no-figures")], capsys)
    assert code == 0, stderr
    det = pd.read_csv(out / "detection.csv")
    assert "precision" in det.columns and "precision_lb" not in det.columns
    liberal = det[(det["model"] == "liberal") & (det["phase"] == "P")]
    pooled = liberal["matched"].sum() / liberal["n_reference"].sum()
    mean = liberal["recall"].mean()
    assert f"highest recall at the shared threshold ({pooled:.3f})" in stdout
    assert f"{pooled:.3f}" != f"{mean:.3f}" or len(liberal) == 1  # the pooled value, not the mean
    assert "and the lowest precision (" in stdout and "pooled over the datasets" in stdout
