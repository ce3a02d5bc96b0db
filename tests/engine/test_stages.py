"""The run as three stages around one record (engine/stages.py): prepare -> Run, execute, finalize."""

from __future__ import annotations

import dataclasses
import inspect

import pandas as pd
import pytest

import pickscale
from pickscale.engine.run import run_keywords, score
from pickscale.engine.stages import Keywords, execute, finalize, prepare
from pickscale.errors import OptionsError
from pickscale.settings import scoring_names


def _inputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    t0 = pd.Timestamp("2024-03-01", tz="UTC")
    ref = pd.DataFrame({"station": ["A", "A", "B"], "phase": ["P", "S", "P"],
                        "time": [t0, t0 + pd.Timedelta("5s"), t0 + pd.Timedelta("60s")]})
    picks = pd.DataFrame({"station": ["A", "A", "B", "C"], "phase": ["P", "S", "P", "P"],
                          "time": [t0 + pd.Timedelta("0.1s"), t0 + pd.Timedelta("5.3s"), t0 + pd.Timedelta("90s"),
                                   t0 + pd.Timedelta("10s")],
                          "conf": [0.9, 0.6, 0.8, 0.7]})
    return ref, picks


def test_keywords_are_the_keywords_of_score_that_are_not_options():
    keyword_only = {n for n, p in inspect.signature(score).parameters.items()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY}
    fields = {f.name for f in dataclasses.fields(Keywords)}
    assert fields - {"options"} == keyword_only - set(scoring_names()) - {"options", "select_on"}


@pytest.mark.slow
def test_the_three_stages_are_score():
    ref, picks = _inputs()
    run = prepare(ref, picks, run_keywords({"tol": 0.25, "progress": False}))
    assert run.reference is None  # nothing per arrival kept unless asked for
    assert run.pick_parts
    executed = execute(run)
    assert run.pick_parts == [] and run.ref_codes is None  # handed over: the scheduler alone keeps them
    staged = pickscale.tables(finalize(run, executed))
    direct = pickscale.tables(pickscale.score(ref, picks, tol=0.25, progress=False))
    assert list(staged) == list(direct)
    for name in direct:
        assert staged[name].to_csv(index=False) == direct[name].to_csv(index=False), name


@pytest.mark.slow
def test_prepare_keeps_the_normalised_reference_when_asked():
    ref, picks = _inputs()
    run = prepare(ref, picks, Keywords(progress=False), keep_reference=True)
    assert run.reference is not None
    assert sorted(run.reference.frame()["station"]) == ["A", "A", "B"]  # as buckets, where they are
    assert run.scope.reference.empty  # the scope lets it go once encoded


def test_run_keywords_take_options_or_keywords_not_both():
    assert run_keywords({"options": pickscale.Options(tol=0.2)}).options.tol == 0.2
    with pytest.raises(OptionsError, match="options= and tol"):
        run_keywords({"options": pickscale.Options(tol=0.2), "tol": 0.3})
    with pytest.raises(TypeError, match="nope"):
        run_keywords({"nope": 1})
