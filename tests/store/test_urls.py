"""Issue 20, item 9: a URL pickscale cannot write is refused before any work, never made a local folder.

Every test runs in an empty working directory and checks it stays empty: before the fix, ``--out
s3://bucket/run`` wrote ``./s3:/bucket/run/`` and exited 0.  pickscale writes s3:// stores with the extra
``pickscale[cloud]`` (``tests/store/test_remote.py``); here it is made missing (``icechunk`` cannot be
imported), so that every URL is one pickscale cannot write.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import xarray as xr

import pickscale
from pickscale.cli import main
from pickscale.errors import StoreError
from pickscale.store import cleanup_stale, open_results, reserved, save

URL = "s3://bucket/run"


@pytest.fixture(autouse=True)
def no_cloud(monkeypatch):
    """As if the extra pickscale[cloud] were not installed."""
    monkeypatch.setitem(sys.modules, "icechunk", None)


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """An empty working directory (the inputs live elsewhere)."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from pickscale.demo import write_inputs

    return write_inputs(tmp_path_factory.mktemp("inputs"))


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    ref = {"station": ["A", "A"], "phase": ["P", "S"], "time": [10.0, 20.0]}
    picks = {"station": ["A", "A"], "phase": ["P", "S"], "time": [10.1, 20.1], "conf": [0.9, 0.8],
             "model": ["m", "m"]}
    import pandas as pd

    return save(pickscale.score(pd.DataFrame(ref), pd.DataFrame(picks)),
                tmp_path_factory.mktemp("store") / "results.zarr")


def refused(argv: list[str], capsys, url: str = URL) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err and url in err, err
    return err


def assert_empty(folder: pathlib.Path) -> None:
    assert sorted(os.listdir(folder)) == [], sorted(os.listdir(folder))


@pytest.mark.parametrize("url", [URL, "gs://bucket/run", "az://container/run", "https://example.org/run"])
def test_score_out_url_is_refused_before_any_work(url, inputs, cwd, capsys):
    err = refused(["score", "--reference", inputs[0], "--picks", inputs[1], "--out", url, "--no-figures"],
                  capsys, url)
    assert "--out" in err
    assert_empty(cwd)


def test_score_out_url_from_the_study_file_is_refused(inputs, cwd, tmp_path, capsys):
    study = tmp_path / "study.toml"
    study.write_text(f'reference = "{inputs[0]}"\npicks = "{inputs[1]}"\nout = "{URL}"\n')
    refused(["score", "--config", study, "--no-figures"], capsys)
    assert_empty(cwd)


def test_demo_out_url_is_refused(cwd, capsys):
    refused(["demo", "--out", URL, "--no-figures"], capsys)
    assert_empty(cwd)


def test_report_of_a_url_store_is_refused(cwd, capsys):
    refused(["report", f"{URL}/results.zarr", "--no-figures"], capsys, f"{URL}/results.zarr")
    assert_empty(cwd)


@pytest.mark.slow
def test_report_out_url_is_refused(local_store, cwd, capsys):
    before = sorted(os.listdir(local_store.parent))
    refused(["report", local_store, "--out", URL, "--no-figures"], capsys)
    assert_empty(cwd)
    assert sorted(os.listdir(local_store.parent)) == before


def test_extend_of_a_url_is_refused(inputs, cwd, capsys):
    refused(["extend", URL, "--reference", inputs[0], "--picks", inputs[1], "--no-figures"], capsys)
    assert_empty(cwd)


@pytest.mark.slow
def test_python_api_refuses_urls(local_store, cwd):
    ds = xr.Dataset({"n": ("x", [1])})
    calls = {
        "save": lambda: save(ds, URL),
        "pickscale.save": lambda: pickscale.save(ds, f"{URL}/results.zarr"),
        "open_results": lambda: open_results(f"{URL}/results.zarr"),
        "pickscale.open_results": lambda: pickscale.open_results(URL),
        "cleanup_stale": lambda: cleanup_stale(URL),
        "reserved": lambda: reserved(URL).__enter__(),
        "extend": lambda: pickscale.extend(URL, None, None),
    }
    for name, call in calls.items():
        with pytest.raises(StoreError, match="s3://bucket/run") as info:
            call()
        assert "s3:/bucket" not in str(info.value).replace("s3://bucket", ""), (name, info.value)
    assert_empty(cwd)


def test_a_url_collapsed_by_pathlib_is_refused(cwd):
    with pytest.raises(StoreError, match="URL whose // was lost"):
        save(xr.Dataset({"n": ("x", [1])}), pathlib.Path(URL))
    assert_empty(cwd)


def test_file_urls_are_local_paths(tmp_path, cwd):
    from pickscale.store.paths import local_store_path

    target = tmp_path / "elsewhere" / "results.zarr"
    target.parent.mkdir()
    assert local_store_path(target.as_uri()) == target
    save(xr.Dataset({"n": ("x", [1, 2])}), target.as_uri())
    assert open_results(target.as_uri())["n"].values.tolist() == [1, 2]
    assert xr.open_zarr(target)["n"].values.tolist() == [1, 2]
    with pytest.raises(StoreError, match="another host"):
        local_store_path("file://fileserver/data/results.zarr")
    assert_empty(cwd)


@pytest.mark.slow
def test_file_url_out_writes_the_local_folder(inputs, tmp_path, cwd, capsys):
    out = tmp_path / "out"
    code = main(["score", "--reference", str(inputs[0]), "--picks", str(inputs[1]), "--out", out.as_uri(),
                 "--no-figures", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert (out / "results.zarr").is_dir() and (out / "detection.csv").is_file()
    assert_empty(cwd)
