"""Every setting declared once (``pickscale.settings``): the declaration covers ``score``'s keywords, the fields of
``Options``, the study file's keys and the ``score`` command's flags — a setting added in one place and not
declared fails here."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import pickscale
from pickscale.cli.parser import build_parser
from pickscale.config import KEYS, load_config
from pickscale.errors import OptionsError
from pickscale.options import Options
from pickscale.settings import SETTINGS, extension_treatment, scoring_names, study_tables

# Flags of `pickscale score` that are not settings of a study: how the command prints and draws.
_PRESENTATION = {"command", "config", "format", "no_figures", "quiet", "verbose"}
# A flag spelled otherwise than its setting: repeated, one KEY=VALUE each.
_FLAG_OF = {"storage_option": "storage_options"}


def test_every_keyword_of_score_is_declared():
    keywords = [p for p in inspect.signature(pickscale.score).parameters if p not in ("reference", "picks")]
    assert set(keywords) == set(extension_treatment())
    assert set(extension_treatment().values()) <= {"store", "refused", "reading", "engine"}


def test_the_scoring_settings_are_the_options_fields():
    fields = [f.name for f in dataclasses.fields(Options) if f.init]
    assert list(scoring_names()) == fields
    assert all(SETTINGS[name].extend == "store" for name in fields)  # an extension takes them from the store


def test_every_flag_of_score_is_a_setting_a_study_file_takes():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    score = sub.choices["score"]  # type: ignore[attr-defined]
    flags = {_FLAG_OF.get(a.dest, a.dest) for a in score._actions if a.dest != "help"}
    assert flags - _PRESENTATION == {name for name, s in SETTINGS.items() if s.table is not None}
    assert set(KEYS) == {name for name, s in SETTINGS.items() if s.table is not None}


@pytest.mark.parametrize("name", sorted(n for n, s in SETTINGS.items() if s.table is not None))
def test_each_study_key_is_taken_in_its_table_and_refused_in_another(name, tmp_path):
    setting = SETTINGS[name]
    value = {str: '"x"', bool: "true", float: "0.5", int: "3", list: "[0.1, 0.2]", dict: '{anon = true}'}[
        setting.types[0]]
    path = tmp_path / "s.toml"
    path.write_text(f"[{setting.table}]\n{name} = {value}\n")
    assert list(load_config(path)[0]) == [name]
    other = next(t for t in study_tables() if t != setting.table)
    path.write_text(f"[{other}]\n{name} = {value}\n")
    with pytest.raises(OptionsError, match=f"unknown key \\[{other}\\]"):
        load_config(path)


def test_every_flag_of_score_is_in_the_usage_table():
    """docs/usage.md's table of options names every flag of `pickscale score` a study takes."""
    from pathlib import Path

    from pickscale.settings import flags_of

    text = (Path(__file__).resolve().parents[1] / "docs" / "usage.md").read_text(encoding="utf-8")
    table = text[text.index("## Options"):text.index("## Files in")]
    missing = [s.name for s in flags_of("score") if s.table is not None and s.name not in
               ("reference", "picks", "out", "storage_options")
               and f"`{s.cli.flag or '--' + s.name.replace('_', '-')}" not in table]  # type: ignore[union-attr]
    assert not missing, f"flags not in docs/usage.md's table of options: {missing}"
