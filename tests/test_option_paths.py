"""Issue 24 item 1: every option works the same from the command line, a study file and Python -- one
declaration (``pickscale.settings``) behind the three."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import pickscale
from pickscale.cli.parser import build_parser
from pickscale.cli.study import study_of
from pickscale.options import Options
from pickscale.settings import SETTINGS, scoring_names

# Per setting: (the flag's text, the study file's TOML value, the Python value).  A scoring option added to
# the declaration without a row here fails test_every_scoring_option_has_a_case.
CASES: dict[str, tuple[list[str], str, object]] = {
    "threshold": (["P=0.5,S=0.3"], "{P = 0.5, S = 0.3}", {"P": 0.5, "S": 0.3}),
    "tol": (["0.25"], "0.25", 0.25),
    "residual_tol": (["1.5"], "1.5", 1.5),
    "thresholds": (["0.1,0.3,0.5"], "[0.1, 0.3, 0.5]", [0.1, 0.3, 0.5]),
    "budget": (["2,3"], "[2, 3]", [2, 3]),
    "exhaustive": ([], "true", True),
    "time_bin": (["1D"], '"1D"', "1D"),
    "tols": (["0.1,0.25"], "[0.1, 0.25]", [0.1, 0.25]),
    "group_by": (["station"], '"station"', "station"),
    "event_min_arrivals": (["3"], "3", 3),
    "rate_thresholds": (["0.5,0.75"], "[0.5, 0.75]", [0.5, 0.75]),
    # Reading and running: what score gets besides the scoring options.
    "drop_invalid": ([], "true", True),
    "manual_only": ([], "true", True),
    "station_key": (["net.sta"], '"net.sta"', "net.sta"),
    "columns": (["model=rid"], '"model=rid"', "model=rid"),
    "block_picks": (["5000"], "5000", 5000),
    "select_on": (["stations:0.5:7"], '"stations:0.5:7"', "stations:0.5:7"),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    t0 = pd.Timestamp("2024-01-01T00:00:00Z")
    times = [t0 + pd.Timedelta(minutes=i) for i in range(8)]
    ref = pd.DataFrame({"station": [f"XX.S{i % 4}" for i in range(8)], "phase": ["P", "S"] * 4, "time": times})
    picks = ref.assign(model="m", conf=[0.9, 0.6, 0.4, 0.8] * 2,
                       time=[t + pd.Timedelta(milliseconds=40 * i) for i, t in enumerate(times)])
    ref.to_csv(folder / "ref.csv", index=False)
    picks.to_csv(folder / "picks.csv", index=False)
    return folder


def _study(inputs, tmp_path, flags: list[str], toml: str = ""):
    args = ["score", "--out", str(tmp_path / "out")]
    if toml:
        path = tmp_path / "study.toml"
        path.write_text(f'reference = "{inputs / "ref.csv"}"\npicks = "{inputs / "picks.csv"}"\n{toml}')
        args += ["--config", str(path)]
    else:
        args += ["--reference", str(inputs / "ref.csv"), "--picks", str(inputs / "picks.csv")]
    return study_of(build_parser().parse_args(args + flags))


def test_every_scoring_option_has_a_case():
    assert set(scoring_names()) <= set(CASES)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n in SETTINGS))
def test_the_command_line_the_study_file_and_python_agree(name, inputs, tmp_path):
    flag_text, toml, python = CASES[name]
    setting = SETTINGS[name]
    assert setting.cli is not None and setting.table is not None  # all three ways take it
    flag = setting.cli.flag or "--" + name.replace("_", "-")
    from_cli = _study(inputs, tmp_path, [flag, *flag_text])
    from_file = _study(inputs, tmp_path, [], f"[{setting.table}]\n{name} = {toml}\n")
    if setting.scoring:
        expected = Options(**{name: python}).to_attrs()
        assert Options(**from_cli.options).to_attrs() == expected
        assert Options(**from_file.options).to_attrs() == expected
        assert expected != Options().to_attrs()  # the case changes something
    else:
        assert from_cli.score_keywords()[name] == python
        assert from_file.score_keywords()[name] == python


@pytest.mark.slow
def test_one_run_each_way_gives_the_same_store(inputs, tmp_path):
    """End to end, with several options at once: the stored options and the tables are the same."""
    chosen = ("tol", "threshold", "thresholds", "budget", "tols")
    flags = [part for n in chosen for part in ["--" + n.replace("_", "-"), *CASES[n][0]]]
    toml = "[options]\n" + "".join(f"{n} = {CASES[n][1]}\n" for n in chosen)
    cli_out, file_out = tmp_path / "cli", tmp_path / "file"
    common = ["--no-figures", "--quiet", "--workers", "1"]
    assert pickscale.cli.main(["score", "--reference", str(inputs / "ref.csv"), "--picks",
                               str(inputs / "picks.csv"), "--out", str(cli_out), *common, *flags]) == 0
    study = tmp_path / "study.toml"
    study.write_text(f'reference = "{inputs / "ref.csv"}"\npicks = "{inputs / "picks.csv"}"\n{toml}')
    assert pickscale.cli.main(["score", "--config", str(study), "--out", str(file_out), *common]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python = pickscale.score(str(inputs / "ref.csv"), str(inputs / "picks.csv"), progress=False,
                                 **{n: CASES[n][2] for n in chosen})
        via_options = pickscale.score(str(inputs / "ref.csv"), str(inputs / "picks.csv"), progress=False,
                                      options=Options(**{n: CASES[n][2] for n in chosen}))
        stores = [pickscale.open_results(p / "results.zarr") for p in (cli_out, file_out)]
    for ds in (*stores, via_options):
        assert ds.attrs["options"] == python.attrs["options"]
    assert (cli_out / "detection.csv").read_bytes() == (file_out / "detection.csv").read_bytes()
    for name in ("recall", "matched", "recall_at_budgets"):
        for ds in (*stores, via_options):
            assert ds[name].equals(python[name]), name
