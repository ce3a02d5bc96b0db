"""Inputs on object storage read like local files, against a real S3 server on 127.0.0.1 (moto; tests/helpers/s3.py).

Sizes come from one listing (small objects batched, large Parquet objects split by row groups, provenance
bytes), ``storage_options`` work from Python and from a study file, and an unreachable endpoint, missing or
refused credentials or a missing bucket stop the run with an :class:`InputError` (exit 2) naming the URL and
the setting to check — also when a read task on a worker meets it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pickscale
from pickscale.cli import main
from pickscale.engine import inputs
from pickscale.errors import InputError
from pickscale.io import csv_to_parquet
from pickscale.report.tables import to_csv_bytes
from tests.helpers.s3 import S3Server, closed_port, fresh_filesystems, put, rejecting_credentials

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "paired_windows"
_DATASETS = ("ncedc_deepdenoiser_ponly", "stead_ta109c")  # two of the three: ~10,000 picks, quick to score


@dataclass(frozen=True)
class Inputs:
    ref: Path
    picks: Path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Inputs:
    """A reference and picks CSV file (two datasets of tests/data/paired_windows)."""
    folder = tmp_path_factory.mktemp("inputs")
    out = Inputs(folder / "reference.csv", folder / "picks.csv")
    for name, path in (("reference.csv", out.ref), ("picks.csv", out.picks)):
        frame = pd.read_csv(DATA / name)
        frame[frame["dataset"].isin(_DATASETS)].to_csv(path, index=False)
    return out


@pytest.fixture(scope="module")
def local_tables(data) -> dict[str, bytes]:
    """The tables of a local run over the same inputs, as CSV bytes."""
    return _tables(pickscale.score(str(data.ref), str(data.picks)))


def _tables(ds) -> dict[str, bytes]:
    return {k: to_csv_bytes(v) for k, v in pickscale.tables(ds).items()}


def _upload(folder: Path, url: str, server: S3Server | None = None) -> dict[str, int]:
    """Every file below ``folder`` put below ``url``; {object URL: size}."""
    sizes = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        target = f"{url}/{f.relative_to(folder).as_posix()}"
        put(target, f.read_bytes(), server)
        sizes[target] = f.stat().st_size
    return sizes


def _small_objects(data: Inputs, tmp_path: Path, bucket: str, n: int = 8) -> dict[str, int]:
    """The picks cut into ``n`` small CSV objects (by station), and the reference; {picks object: size}."""
    picks = pd.read_csv(data.picks)
    stations = sorted(picks["station"].unique())
    folder = tmp_path / "small"
    folder.mkdir()
    for i in range(n):
        part = picks[picks["station"].isin(stations[i::n])]
        part.to_csv(folder / f"picks-{i}.csv", index=False)
    put(f"s3://{bucket}/reference.csv", data.ref.read_bytes())
    return _upload(folder, f"s3://{bucket}/small")


def _six_row_groups(data: Inputs, tmp_path: Path) -> tuple[Path, int]:
    picks = pd.read_csv(data.picks)
    path = tmp_path / "picks.parquet"
    rows = -(-len(picks) // 6)
    pq.write_table(pa.Table.from_pandas(picks, preserve_index=False), path, row_group_size=rows)
    assert pq.ParquetFile(path).metadata.num_row_groups == 6
    return path, len(picks)


@pytest.mark.slow
def test_csv_and_hive_parquet_in_a_bucket_score_as_local_files(data, s3_bucket, s3_server, tmp_path, local_tables):
    put(f"s3://{s3_bucket}/csv/reference.csv", data.ref.read_bytes())
    put(f"s3://{s3_bucket}/csv/picks.csv", data.picks.read_bytes())
    ds = pickscale.score(f"s3://{s3_bucket}/csv/reference.csv", f"s3://{s3_bucket}/csv/picks.csv")
    assert _tables(ds) == local_tables
    assert ds.attrs["inputs"]["picks"]["bytes"] == data.picks.stat().st_size
    assert ds.attrs["inputs"]["reference"]["bytes"] == data.ref.stat().st_size

    hive = csv_to_parquet(data.picks, tmp_path / "hive", partition_by=("dataset",))  # dataset=…/ folders
    sizes = _upload(hive, f"s3://{s3_bucket}/hive")
    assert len(sizes) == len(_DATASETS)
    ds = pickscale.score(f"s3://{s3_bucket}/csv/reference.csv", f"s3://{s3_bucket}/hive")
    assert _tables(ds) == local_tables
    assert ds.attrs["inputs"]["picks"]["bytes"] == sum(sizes.values())
    assert ds.attrs["inputs"]["picks"]["files"] == len(sizes)
    # A glob over the dataset folders: the same objects, from one listing too (not one per folder).
    s3_server.reset_requests()
    src = inputs.load(f"s3://{s3_bucket}/hive/dataset=*/*.parquet", role="picks")
    assert src.files == sorted(sizes) and src.bytes == sum(sizes.values())
    assert len(s3_server.requests) == 1, s3_server.requests


@pytest.mark.slow
def test_small_objects_are_batched_from_one_listing(data, s3_bucket, s3_server, tmp_path, local_tables):
    sizes = _small_objects(data, tmp_path, s3_bucket)
    assert len(sizes) == 8 and sum(sizes.values()) < inputs._BATCH_BYTES
    s3_server.reset_requests()
    src = inputs.load(f"s3://{s3_bucket}/small", role="picks")
    # One request: the listing (a ListObjectsV2), not one HEAD per object; nothing is read on the client.
    assert s3_server.requests and len(s3_server.requests) == 1, s3_server.requests
    method, path, query = s3_server.requests[0]
    assert method == "GET" and "list-type=2" in query
    assert len(src.parts) == 1  # 8 small objects, one read task (as 8 local files would be)
    assert src.bytes == sum(sizes.values()) and src.files == sorted(sizes)
    local = tmp_path / "small"
    assert len(inputs.load(str(local), role="picks").parts) == 1
    ds = pickscale.score(f"s3://{s3_bucket}/reference.csv", f"s3://{s3_bucket}/small")
    assert _tables(ds) == local_tables
    assert ds.attrs["inputs"]["picks"]["bytes"] == sum(sizes.values())


@pytest.mark.slow
def test_a_large_parquet_object_is_split_by_row_groups(data, s3_bucket, s3_server, tmp_path, monkeypatch, local_tables):
    path, n = _six_row_groups(data, tmp_path)
    url = f"s3://{s3_bucket}/big/picks.parquet"
    put(url, path.read_bytes())
    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes())
    size = path.stat().st_size
    # The local rule, scaled to this file: at least _SPLIT_BYTES is split into runs of about READ_ROWS rows.
    monkeypatch.setattr(inputs, "_SPLIT_BYTES", size)
    monkeypatch.setattr(inputs, "READ_ROWS", -(-n // 3))
    assert len(inputs.load(str(path), role="picks").parts) == 3  # the local file
    s3_server.reset_requests()
    src = inputs.load(url, role="picks")
    assert len(src.parts) == 3 and src.bytes == size
    monkeypatch.setattr(inputs, "_SPLIT_BYTES", size + 1)  # one byte over: one task, as locally
    assert len(inputs.load(url, role="picks").parts) == 1
    monkeypatch.setattr(inputs, "_SPLIT_BYTES", size)
    ds = pickscale.score(f"s3://{s3_bucket}/reference.csv", url)
    assert _tables(ds) == local_tables
    assert ds.attrs["inputs"]["picks"]["bytes"] == size and ds.attrs["inputs"]["picks"]["rows_read"] == n


@pytest.mark.slow
def test_storage_options_from_python_without_the_environment(data, s3_bucket, s3_server, monkeypatch, local_tables):
    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes(), s3_server)
    put(f"s3://{s3_bucket}/picks.csv", data.picks.read_bytes(), s3_server)
    _no_environment(monkeypatch)
    with pytest.raises(InputError):  # the environment no longer points at the server
        pickscale.score(f"s3://{s3_bucket}/reference.csv", f"s3://{s3_bucket}/picks.csv")
    ds = pickscale.score(f"s3://{s3_bucket}/reference.csv", f"s3://{s3_bucket}/picks.csv",
                         storage_options=s3_server.options())
    assert _tables(ds) == local_tables
    assert "storage_options" not in json.dumps(ds.attrs["inputs"]) and "testing" not in json.dumps(ds.attrs["inputs"])


@pytest.mark.cluster
def test_storage_options_from_a_study_file(data, s3_bucket, s3_server, tmp_path, monkeypatch, local_tables):
    """``pickscale score --config``: the study file's storage_options reach the listing and the workers' reads."""
    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes(), s3_server)
    put(f"s3://{s3_bucket}/picks.csv", data.picks.read_bytes(), s3_server)
    _no_environment(monkeypatch)
    options = s3_server.options()
    study = tmp_path / "study.toml"
    study.write_text(
        f'reference = "s3://{s3_bucket}/reference.csv"\npicks = "s3://{s3_bucket}/picks.csv"\nout = "run"\n'
        f"[cluster]\nworkers = 1\n"
        f'[storage_options]\nendpoint_url = "{options["endpoint_url"]}"\nkey = "{options["key"]}"\n'
        f'secret = "{options["secret"]}"\nclient_kwargs = {{region_name = "us-east-1"}}\n')
    assert main(["score", "--config", str(study), "--quiet", "--no-figures"]) == 0
    ds = pickscale.open_results(tmp_path / "run" / "results.zarr")
    assert _tables(ds) == local_tables


def _no_environment(monkeypatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    fresh_filesystems()


def _cli_fails(capsys, tmp_path, reference: str, picks: str) -> str:
    """``pickscale score`` exits 2 with a message and no traceback; the message."""
    code = main(["score", "--reference", reference, "--picks", picks, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 5, err
    return err


@pytest.mark.slow
def test_an_unreachable_endpoint_is_an_input_error(data, s3_bucket, s3_server, tmp_path, monkeypatch, capsys):
    url = f"s3://{s3_bucket}/picks.csv"
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own retries (s3fs still tries 5 times, ~2 s)
    fresh_filesystems()
    err = _cli_fails(capsys, tmp_path, f"s3://{s3_bucket}/reference.csv", url)
    assert f"s3://{s3_bucket}/reference.csv" in err and endpoint in err and "AWS_ENDPOINT_URL" in err
    assert "endpoint_url" in err
    with pytest.raises(InputError, match="cannot reach") as exc:
        pickscale.score(str(data.ref), url, storage_options={"endpoint_url": endpoint})
    assert url in str(exc.value) and endpoint in str(exc.value)


@pytest.mark.slow
def test_refused_or_missing_credentials_are_input_errors(data, s3_bucket, s3_server, tmp_path, monkeypatch, capsys):
    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes())
    put(f"s3://{s3_bucket}/picks.csv", data.picks.read_bytes())
    ref, picks = f"s3://{s3_bucket}/reference.csv", f"s3://{s3_bucket}/picks.csv"
    with rejecting_credentials(s3_server):
        err = _cli_fails(capsys, tmp_path, ref, picks)
        assert ref in err and "AWS_ACCESS_KEY_ID" in err and '"key"' in err and "anon" in err
        with pytest.raises(InputError, match="access refused") as exc:
            pickscale.score(str(data.ref), picks)
        assert picks in str(exc.value)
    _no_environment(monkeypatch)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    fresh_filesystems()
    err = _cli_fails(capsys, tmp_path, ref, picks)
    assert ref in err and "no credentials" in err and "AWS_ACCESS_KEY_ID" in err


@pytest.mark.slow
def test_a_missing_bucket_or_object_is_an_input_error(data, s3_bucket, s3_env, tmp_path, capsys):
    url = "s3://no-such-bucket-pickscale/picks/"
    err = _cli_fails(capsys, tmp_path, str(data.ref), url)
    assert url in err and "no such bucket" in err and "AWS_ENDPOINT_URL" in err and s3_env.endpoint in err
    with pytest.raises(InputError, match="no such bucket"):
        pickscale.score(str(data.ref), url)
    missing = f"s3://{s3_bucket}/nothing-here.csv"  # a bucket that exists, an object that does not
    assert missing in _cli_fails(capsys, tmp_path, str(data.ref), missing)
    with pytest.raises(InputError, match="no such file or folder"):
        pickscale.score(str(data.ref), missing)


def _list_only_keys(server: S3Server, bucket: str) -> tuple[str, str]:
    """Keys of a user who may list ``bucket`` but not read its objects (checked once authentication is on)."""
    import boto3

    iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    name = f"lister-{bucket}"
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="list", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        # AWS checks s3:ListBucket for a listing; moto >= 5.2.6 checks the operation's own name instead
        "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket", "s3:ListObjects", "s3:ListObjectsV2"],
                       "Resource": [f"arn:aws:s3:::{bucket}"]}]}))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


@pytest.mark.slow
def test_a_read_task_refused_access_is_an_input_error(data, s3_bucket, s3_server, tmp_path, monkeypatch, capsys):
    """The listing is allowed, reading the objects is not: the read tasks meet the error, the client says it."""
    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes())
    sizes = _small_objects(data, tmp_path, s3_bucket, n=3)
    key, secret = _list_only_keys(s3_server, s3_bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    fresh_filesystems()
    with rejecting_credentials(s3_server):
        src = inputs.load(f"s3://{s3_bucket}/small", role="picks")  # listed: allowed
        assert src.files == sorted(sizes)
        with pytest.raises(InputError, match="access refused") as exc:
            pickscale.score(str(data.ref), f"s3://{s3_bucket}/small")
        message = str(exc.value)
        assert any(url in message for url in sizes) and "AWS_ACCESS_KEY_ID" in message
        assert len(message.splitlines()) <= 3, message  # said once, not once per object


@pytest.mark.cluster
def test_a_worker_process_refused_access_is_an_input_error(data, s3_bucket, s3_server, tmp_path, monkeypatch):
    """The same in worker processes: they start with this environment (the list-only keys) and say it as a value."""
    from tests.helpers.checks import start_cluster

    put(f"s3://{s3_bucket}/reference.csv", data.ref.read_bytes())
    sizes = _small_objects(data, tmp_path, s3_bucket, n=3)
    key, secret = _list_only_keys(s3_server, s3_bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)  # before the cluster starts: its workers inherit it
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    fresh_filesystems()
    with rejecting_credentials(s3_server):
        cluster, client = start_cluster(n_workers=1)
        try:
            with pytest.raises(InputError, match="access refused") as exc:
                pickscale.score(str(data.ref), f"s3://{s3_bucket}/small", client=client, progress=False)
        finally:
            client.close()
            cluster.close()
    assert any(url in str(exc.value) for url in sizes) and "AWS_ACCESS_KEY_ID" in str(exc.value)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_read_task_fetches_its_objects_at_once_one_request_each(kind, data, s3_bucket, s3_server, tmp_path):
    """The objects of one read task come in one concurrent fetch, a GET each: no HEAD, no second GET per object
    (which, one after another at a bucket's 20-75 ms a request, set a task's time)."""
    from pickscale.engine.parts import PickPart, read_files

    sizes = _small_objects(data, tmp_path, s3_bucket)
    urls = sorted(sizes)
    if kind == "parquet":
        for url in urls:
            frame = pd.read_csv(tmp_path / "small" / url.rsplit("/", 1)[-1])
            target = tmp_path / "pq" / url.rsplit("/", 1)[-1].replace(".csv", ".parquet")
            target.parent.mkdir(exist_ok=True)
            frame.to_parquet(target, index=False)
        urls = sorted(_upload(tmp_path / "pq", f"s3://{s3_bucket}/pq"))
    s3_server.reset_requests()
    part = read_files(urls, drop_invalid=False, floor=0.0)
    asked = list(s3_server.requests)
    assert [m for m, _, _ in asked] == ["GET"] * len(urls), asked
    assert sorted(p for _, p, _ in asked) == sorted("/" + u.removeprefix("s3://") for u in urls)
    # The same picks as the files read locally.
    local = read_files(sorted(str(p) for p in (tmp_path / ("pq" if kind == "parquet" else "small")).iterdir()),
                       drop_invalid=False, floor=0.0)
    assert isinstance(part, PickPart) and isinstance(local, PickPart)
    assert part.time.size == local.time.size == int(part.combos["n_picks"].sum()) > 0
    assert sorted(part.time.tolist()) == sorted(local.time.tolist())
    assert part.combos.sort_values(["dataset", "station", "model"]).reset_index(drop=True).equals(
        local.combos.sort_values(["dataset", "station", "model"]).reset_index(drop=True))
