"""Issue 21, item 1: results stores on object storage (Icechunk), against a real S3 server on 127.0.0.1.

The server is moto's (``tests/helpers/s3.py``: ``s3_bucket`` gives a fresh bucket, with the AWS_* environment
pointing at the server).  Every test waits on what the processes say or write, never on time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("icechunk")
s3fs = pytest.importorskip("s3fs")

from pickscale.cli import main  # noqa: E402
from pickscale.errors import StoreError  # noqa: E402
from pickscale.report.tables import TABLE_NAMES  # noqa: E402
from pickscale.store import open_results, save  # noqa: E402
from pickscale.store.remote import versions  # noqa: E402


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The demo's catalogue, and its picks split by model (for extend)."""
    import pandas as pd

    from pickscale.demo import write_inputs

    folder = tmp_path_factory.mktemp("inputs")
    ref, picks = write_inputs(folder)
    frame = pd.read_csv(picks)
    models = sorted(frame["model"].unique())
    first, rest = folder / "first.csv", folder / "rest.csv"
    frame[frame["model"] == models[0]].to_csv(first, index=False)
    frame[frame["model"] != models[0]].to_csv(rest, index=False)
    return {"reference": ref, "picks": picks, "first": first, "rest": rest}


@pytest.fixture(scope="module")
def local_run(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    assert main(["score", "--reference", str(inputs["reference"]), "--picks", str(inputs["picks"]), "--out",
                 str(out), "--no-figures", "--quiet"]) == 0
    return out


def fs():
    s3fs.S3FileSystem.clear_instance_cache()
    return s3fs.S3FileSystem()


def bucket_tables(url: str) -> dict[str, bytes]:
    f = fs()
    root = url.removeprefix("s3://")
    return {name: f.cat_file(f"{root}/{name}.csv") for name in TABLE_NAMES}


def local_tables(out) -> dict[str, bytes]:
    return {name: (out / f"{name}.csv").read_bytes() for name in TABLE_NAMES}


def run(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    return code, err


def small(n: int):
    import xarray as xr

    return xr.Dataset({"n": ("x", np.arange(n))}, coords={"x": [f"s{i}" for i in range(n)]})


# --------------------------------------------------------------------------- Python


@pytest.mark.slow
def test_save_and_open_results_take_urls_and_keep_versions(s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}/run/results.zarr"
    assert save(small(2), url) == url
    with pytest.raises(StoreError, match="already exists"):
        save(small(3), url)
    save(small(3), url, overwrite=True)
    assert open_results(url)["n"].values.tolist() == [0, 1, 2]
    assert open_results(url)["x"].dtype == open_results(tmp_path_save(tmp_path))["x"].dtype  # text as locally
    listed = versions(url)
    assert len(listed) == 2
    assert open_results(url, version=listed[1]["version"])["n"].values.tolist() == [0, 1]
    with pytest.raises(StoreError, match="no version"):
        open_results(url, version="0000000000000000000X")
    with pytest.raises(StoreError, match="no results store|no pickscale results"):
        open_results(f"s3://{s3_bucket}/elsewhere/results.zarr")


def tmp_path_save(tmp_path):
    return save(small(1), tmp_path / "r.zarr")


@pytest.mark.slow
def test_a_writer_that_another_overtook_does_not_save(s3_bucket, tmp_path):
    """Two writers of one store: the one that commits second gets a StoreError, the store is the first's."""
    from pickscale.store.locks import reserved

    url = f"s3://{s3_bucket}/run/results.zarr"
    save(small(1), url)
    other = textwrap.dedent(f"""
        import numpy as np, xarray as xr
        from pickscale.store import save
        save(xr.Dataset({{"n": ("x", np.arange(5))}}), {url!r}, overwrite=True)
        print("saved")
    """)
    with reserved(url):  # this run's writer starts here ...
        proc = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=300)
        assert proc.stdout.strip() == "saved", proc.stderr[-2000:]  # ... another run commits meanwhile ...
        with pytest.raises(StoreError, match="another pickscale run saved a new version"):
            save(small(3), url, overwrite=True)  # ... and this one's commit is refused
    assert open_results(url)["n"].values.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.slow
def test_a_write_killed_before_its_commit_leaves_the_previous_version(s3_bucket):
    url = f"s3://{s3_bucket}/run/results.zarr"
    save(small(2), url)
    writer = textwrap.dedent(f"""
        import sys, time, numpy as np, xarray as xr
        from pickscale.store.remote import reserve
        w = reserve({url!r}, overwrite=True)
        xr.Dataset({{"n": ("x", np.arange(7))}}).to_zarr(w.session.store, mode="w", zarr_format=3,
                                                           consolidated=False)
        print("written", flush=True)
        time.sleep(600)  # killed here, before its commit
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
        assert open_results(url)["n"].values.tolist() == [0, 1]  # a reader meanwhile: the previous version
    finally:
        proc.kill()
        proc.wait()
    assert open_results(url)["n"].values.tolist() == [0, 1]
    save(small(4), url, overwrite=True)  # and the next writer is not in the way of anything
    assert open_results(url)["n"].values.tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------- the command


@pytest.mark.slow
def test_score_to_a_bucket_gives_the_tables_of_a_local_run(inputs, local_run, s3_bucket, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = f"s3://{s3_bucket}/run"
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out", out,
                     "--no-figures", "--quiet"], capsys)
    assert code == 0, err
    assert bucket_tables(out) == local_tables(local_run)
    marker = json.loads(fs().cat_file(f"{s3_bucket}/run/pickscale-outputs.json"))
    assert marker["complete"] is True and marker["store_version"] == versions(f"{out}/results.zarr")[0]["version"]
    assert sorted(tmp_path.iterdir()) == []  # nothing local

    # The same store again: refused without --overwrite (exit 2), a new version with it.
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out", out,
                     "--no-figures", "--quiet"], capsys)
    assert code == 2 and out in err and "--overwrite" in err, err

    # report from the bucket, to the bucket and to a local folder: the same tables.
    code, err = run(["report", f"{out}/results.zarr", "--out", f"s3://{s3_bucket}/again", "--no-figures",
                     "--quiet"], capsys)
    assert code == 0, err
    assert bucket_tables(f"s3://{s3_bucket}/again") == local_tables(local_run)
    code, err = run(["report", f"{out}/results.zarr", "--out", tmp_path / "here", "--no-figures", "--quiet"],
                    capsys)
    assert code == 0, err
    assert local_tables(tmp_path / "here") == local_tables(local_run)


@pytest.mark.slow
def test_extend_a_bucket_store_and_reopen_the_version_before(inputs, s3_bucket, tmp_path, capsys):
    out = f"s3://{s3_bucket}/run"
    local = tmp_path / "local"
    for where in (out, str(local)):
        code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["first"], "--out", where,
                         "--no-figures", "--quiet"], capsys)
        assert code == 0, err
        code, err = run(["extend", where, "--reference", inputs["reference"], "--picks", inputs["rest"],
                         "--no-figures", "--quiet"], capsys)
        assert code == 0, err
    assert bucket_tables(out) == local_tables(local)
    listed = versions(f"{out}/results.zarr")
    assert [v["message"] for v in listed] == ["pickscale extend", "pickscale score"]
    before = open_results(f"{out}/results.zarr", version=listed[1]["version"])
    after = open_results(f"{out}/results.zarr")
    assert before.sizes["model"] == 1 and after.sizes["model"] == 3
    assert "extensions" not in before.attrs or not before.attrs["extensions"]


@pytest.mark.slow
def test_two_concurrent_runs_one_wins_one_exits_2(inputs, s3_bucket, tmp_path):
    out = f"s3://{s3_bucket}/run"
    command = [sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main(sys.argv[1:]))"]
    argv = [*command, "score", "--reference", str(inputs["reference"]), "--picks",
            str(inputs["picks"]), "--out", out, "--no-figures", "--quiet"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
             for _ in range(2)]
    results = [(p.wait(timeout=600), p.communicate()[1]) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert out in loser and "Traceback" not in loser, loser
    assert len(versions(f"{out}/results.zarr")) == 1
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_unreachable_endpoint_is_exit_2_naming_the_url(inputs, s3_env, tmp_path, capsys, monkeypatch):
    from tests.helpers.s3 import closed_port, fresh_filesystems

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    fresh_filesystems()
    monkeypatch.chdir(tmp_path)
    out = "s3://nowhere-bucket/run"
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out", out,
                     "--no-figures", "--quiet"], capsys)
    assert code == 2, err
    assert out in err and "AWS_ENDPOINT_URL" in err and "Traceback" not in err, err
    assert sorted(tmp_path.iterdir()) == []


def test_without_the_cloud_extra_a_url_is_refused_saying_what_to_install(inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "icechunk", None)  # as if not installed
    monkeypatch.chdir(tmp_path)
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out",
                     "s3://bucket/run", "--no-figures"], capsys)
    assert code == 2 and "s3://bucket/run" in err and "pickscale[cloud]" in err, err
    with pytest.raises(StoreError, match=r"pickscale\[cloud\]"):
        open_results("s3://bucket/run/results.zarr")
    assert sorted(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- storage_options, not the environment


@pytest.fixture
def options_only(s3_bucket, s3_env, monkeypatch):
    """The bucket reachable with storage_options alone: the environment points at a closed port, no keys."""
    from tests.helpers.s3 import closed_port, fresh_filesystems

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    fresh_filesystems()
    return s3_bucket, s3_env.options()


@pytest.mark.slow
def test_storage_options_reach_a_bucket_the_environment_does_not(options_only):
    bucket, options = options_only
    url = f"s3://{bucket}/run/results.zarr"
    assert save(small(2), url, storage_options=options) == url
    save(small(3), url, overwrite=True, storage_options=options)
    assert open_results(url, storage_options=options)["n"].values.tolist() == [0, 1, 2]
    listed = versions(url, storage_options=options)
    assert open_results(url, version=listed[1]["version"], storage_options=options)["n"].values.tolist() == [0, 1]
    with pytest.raises(StoreError, match="AWS_ENDPOINT_URL"):  # the environment's endpoint: said, not hung
        open_results(url)


@pytest.mark.slow
def test_storage_option_flags_serve_the_store_and_the_tables(inputs, local_run, options_only, tmp_path, capsys,
                                                              monkeypatch):
    bucket, options = options_only
    monkeypatch.chdir(tmp_path)
    flags = [f"--storage-option=endpoint_url={options['endpoint_url']}", "--storage-option=key=testing",
             "--storage-option=secret=testing", "--storage-option=client_kwargs.region_name=us-east-1"]
    out = f"s3://{bucket}/run"
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out", out,
                     "--no-figures", "--quiet", *flags], capsys)
    assert code == 0, err
    s3fs.S3FileSystem.clear_instance_cache()
    tables = {name: s3fs.S3FileSystem(**options).cat_file(f"{bucket}/run/{name}.csv") for name in TABLE_NAMES}
    assert tables == local_tables(local_run)
    code, err = run(["report", f"{out}/results.zarr", "--out", tmp_path / "here", "--no-figures", "--quiet",
                     *flags], capsys)
    assert code == 0, err
    assert local_tables(tmp_path / "here") == local_tables(local_run)
    code, err = run(["report", f"{out}/results.zarr", "--out", tmp_path / "again", "--no-figures", "--quiet"],
                    capsys)  # without the flags: the environment's closed endpoint, exit 2 naming it
    assert code == 2 and "AWS_ENDPOINT_URL" in err and "Traceback" not in err, err


# --------------------------------------------------------------------------- the command killed mid-publish


#: Loaded by the command (PYTHONPATH): when it commits its store, it says so in a file and waits there, so the
#: test kills it with everything written to the session but not committed, whatever the machine's speed.
_HOLD_COMMIT = """
import os, pathlib, time
if os.environ.get("PICKSCALE_TEST_COMMITTING"):
    import icechunk.session

    def commit(self, *args, **kwargs):
        pathlib.Path(os.environ["PICKSCALE_TEST_COMMITTING"]).touch()
        time.sleep(600)  # killed here

    icechunk.session.Session.commit = commit
"""


@pytest.mark.slow
def test_the_command_killed_while_it_commits_leaves_the_previous_version(inputs, local_run, s3_bucket, tmp_path,
                                                                          capsys):
    import os
    import signal
    import time

    out = f"s3://{s3_bucket}/run"
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["first"], "--out", out,
                     "--no-figures", "--quiet"], capsys)
    assert code == 0, err
    before = bucket_tables(out)
    (tmp_path / "hold").mkdir()
    (tmp_path / "hold" / "sitecustomize.py").write_text(_HOLD_COMMIT)
    marker = tmp_path / "committing"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "hold"),
                                                                      os.environ.get("PYTHONPATH")])),
           "PICKSCALE_TEST_COMMITTING": str(marker)}
    command = [sys.executable, "-c", "import sys; from pickscale.cli import main; sys.exit(main(sys.argv[1:]))"]
    proc = subprocess.Popen([*command, "score", "--reference", str(inputs["reference"]), "--picks",
                             str(inputs["picks"]), "--out", out, "--overwrite", "--no-figures", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():  # the run has written its store and is committing it
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the run never committed"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    # The previous version is there, whole: the store, its tables and its outputs record.
    assert len(versions(f"{out}/results.zarr")) == 1
    assert open_results(f"{out}/results.zarr").sizes["model"] == 1
    assert bucket_tables(out) == before
    assert json.loads(fs().cat_file(f"{s3_bucket}/run/pickscale-outputs.json"))["complete"] is True
    # The next run is in the way of nothing.
    code, err = run(["score", "--reference", inputs["reference"], "--picks", inputs["picks"], "--out", out,
                     "--overwrite", "--no-figures", "--quiet"], capsys)
    assert code == 0, err
    assert bucket_tables(out) == local_tables(local_run)
