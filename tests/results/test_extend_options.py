"""Every option of an extension either takes effect as in one run or is refused (SPEC §11), and extending a
store with intervals gives the intervals of one run (SPEC §12)."""

from __future__ import annotations

import importlib
import inspect

import pandas as pd
import pytest

import pickscale
from pickscale.engine.extension import KEYWORDS, extended
from pickscale.errors import OptionsError
from pickscale.report.tables import to_csv_bytes
from tests.helpers.extend import stretches

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")


def csv(ds) -> dict[str, bytes]:
    return {name: to_csv_bytes(frame) for name, frame in pickscale.tables(ds).items()}


def test_every_keyword_of_score_is_declared_for_extensions():
    # A keyword added to pickscale.score must say how an extension treats it, or it would be ignored silently.
    keywords = {name for name, p in inspect.signature(pickscale.score).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords == set(KEYWORDS)
    assert set(KEYWORDS.values()) <= {"store", "refused", "reading", "engine"}


@pytest.fixture(scope="module")
def stored():
    ref, picks = stretches(1)
    return ref, picks, pickscale.score(ref, picks[picks.model == "m1"])


@pytest.mark.parametrize("keyword, value, message", [
    ("group_by", "magnitude:1,2", "group_by 'magnitude:1,2' differs from the store's (none)"),
    ("tols", [0.1, 0.5], "tols [0.1, 0.5] differs from the store's (none)"),
    ("time_bin", "1h", "time_bin '1h' differs from the store's (none)"),
    ("stations", pd.DataFrame({"station": ["A"], "site": ["rock"]}), "stations serves group_by alone"),
    ("coverage", pd.DataFrame({"station": ["A"], "start": [0.0], "end": [1e10]}), "coverage"),
    ("station_key", "net.sta", "station_key 'net.sta' differs from the store's ('as-is')"),
])
def test_options_the_store_lacks_are_refused(stored, keyword, value, message):
    ref, picks, ds = stored
    with pytest.raises(OptionsError) as info:
        extended(ds, ref, picks[picks.model == "m2"], **{keyword: value})
    assert message in str(info.value), str(info.value)
    assert keyword in info.value.options


@pytest.mark.slow
def test_options_equal_to_the_store_s_are_accepted(stored):
    ref, picks, ds = stored
    whole = pickscale.score(ref, picks)
    got = extended(ds, ref, picks[picks.model == "m2"], station_key="as-is", tol=0.5, drop_invalid=True,
                   exchange_method="direct", progress=False)
    assert csv(got) == csv(whole)


def test_an_unknown_keyword_is_a_type_error(stored):
    ref, picks, ds = stored
    with pytest.raises(TypeError, match="'tolerance'"):
        extended(ds, ref, picks[picks.model == "m2"], tolerance=0.5)


@pytest.mark.slow
def test_a_store_with_intervals_keeps_them_as_one_run_draws_them(stored):
    ref, picks, _ = stored
    whole = pickscale.bootstrap(pickscale.score(ref, picks), level=0.9, draws=200, seed=3)
    part = pickscale.bootstrap(pickscale.score(ref, picks[picks.model == "m1"]), level=0.9, draws=200, seed=3)
    got = extended(part, ref, picks[picks.model == "m2"])
    assert got.attrs["bootstrap"] == whole.attrs["bootstrap"]
    tables, expected = csv(got), csv(whole)
    assert "model_differences" in tables and sorted(tables) == sorted(expected)
    for name in expected:
        assert tables[name] == expected[name], name
    assert "recall_lo" in pickscale.tables(got)["detection"].columns


@pytest.mark.slow
def test_ci_given_to_an_extension_takes_effect(stored):
    ref, picks, ds = stored
    whole = pickscale.bootstrap(pickscale.score(ref, picks), level=0.8)
    got = extended(ds, ref, picks[picks.model == "m2"], ci=0.8)
    assert csv(got) == csv(whole)
    with pytest.raises(OptionsError, match="ci must lie strictly between 0 and 1"):
        extended(ds, ref, picks[picks.model == "m2"], ci=1.5)


@pytest.mark.slow
def test_an_extension_draws_its_intervals_from_the_pairs_a_batch_at_a_time(stored, monkeypatch):
    # The draws weigh each station's sums of the pairs (SPEC §12): the extension reads its pairs a batch at a
    # time -- the stored rows from the store, the new ones from where the run left them -- never all at once.
    import pickscale.engine.extension as extension

    boot = importlib.import_module("pickscale.results.bootstrap")  # (the package's name is the function)
    ref, picks, ds = stored
    whole = pickscale.bootstrap(pickscale.score(ref, picks), level=0.8)
    read, real = [], extension.rows_of_parts

    def rows(parts, names, lo, hi):
        read.append((lo, hi))
        return real(parts, names, lo, hi)

    monkeypatch.setattr(boot, "PAIR_BATCH", 5)
    monkeypatch.setattr(extension, "rows_of_parts", rows)
    got = extended(ds, ref, picks[picks.model == "m2"], ci=0.8)
    assert csv(got) == csv(whole)
    assert read == [(lo, min(lo + 5, got.sizes["pair"])) for lo in range(0, got.sizes["pair"], 5)]
    assert len(read) > 2


@pytest.mark.slow
@pytest.mark.parametrize("stored_bin, given_bin", [("1h", "60min"), ("1D", "24h"), ("MS", "1MS")])
def test_equal_bins_spelled_otherwise_are_the_store_s(stored_bin, given_bin):
    ref, picks = stretches(1)
    whole = pickscale.score(ref, picks, time_bin=stored_bin)
    part = pickscale.score(ref, picks[picks.model == "m1"], time_bin=stored_bin)
    got = extended(part, ref, picks[picks.model == "m2"], time_bin=given_bin)
    assert csv(got) == csv(whole) and got.attrs["options"]["time_bin"] == stored_bin


def test_time_bin_in_a_study_file(tmp_path):
    from pickscale.config import load_config

    study = tmp_path / "study.toml"
    study.write_text('reference = "r.csv"\npicks = "p.csv"\n[options]\ntime_bin = "1D"\n')
    assert load_config(study)[0]["time_bin"] == "1D"
    study.write_text('reference = "r.csv"\npicks = "p.csv"\ntime_bin = "6h"\n')
    assert load_config(study)[0]["time_bin"] == "6h"
