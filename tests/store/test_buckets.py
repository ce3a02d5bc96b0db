"""Issue 21: where a remote results store lives — its URL and fsspec's ``storage_options`` as Icechunk's storage.

Only S3 has a server in the tests (``tests/store/test_remote.py``); for Google Cloud Storage and Azure the
translation is checked here, and Icechunk is shown to accept what it gives (constructing a storage opens no
connection).
"""

from __future__ import annotations

import json

import pytest

from pickscale.errors import OptionsError, StoreError
from pickscale.io.storage import parse_storage_options
from pickscale.store.buckets import storage_arguments

AWS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION")


@pytest.fixture
def clean_env(monkeypatch):
    for name in (*AWS, "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_s3_options_are_taken_over_the_environment(clean_env):
    clean_env.setenv("AWS_ENDPOINT_URL", "http://elsewhere:1")
    clean_env.setenv("AWS_REGION", "eu-north-1")
    kind, kw = storage_arguments("s3://b/runs/a/results.zarr/", {
        "endpoint_url": "http://127.0.0.1:9000", "key": "K", "secret": "S", "token": "T",
        "client_kwargs": {"region_name": "us-east-1"}})
    assert kind == "s3"
    assert kw == {"bucket": "b", "prefix": "runs/a/results.zarr", "region": "us-east-1",
                  "endpoint_url": "http://127.0.0.1:9000", "allow_http": True, "force_path_style": True,
                  "access_key_id": "K", "secret_access_key": "S", "session_token": "T"}


def test_s3_without_options_is_the_environment(clean_env):
    _, kw = storage_arguments("s3://b/p", None)
    assert kw == {"bucket": "b", "prefix": "p", "region": None, "endpoint_url": None, "allow_http": False,
                  "force_path_style": False, "from_env": True}  # AWS itself, credentials from the environment
    clean_env.setenv("AWS_ENDPOINT_URL", "https://minio.example:9000")
    clean_env.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    _, kw = storage_arguments("s3://b/p", {"client_kwargs": {"endpoint_url": None}})
    assert (kw["endpoint_url"], kw["region"], kw["allow_http"], kw["force_path_style"]) == (
        "https://minio.example:9000", "ap-south-1", False, True)
    assert storage_arguments("s3://b/p", {"anon": True})[1]["anonymous"] is True


def test_credentials_icechunk_cannot_take_are_refused_not_dropped(clean_env):
    with pytest.raises(StoreError, match="AWS_PROFILE"):
        storage_arguments("s3://b/p", {"profile": "lab"})
    with pytest.raises(StoreError, match="both key and secret"):
        storage_arguments("s3://b/p", {"key": "K"})
    with pytest.raises(StoreError, match="no results store on https://"):
        storage_arguments("https://example.org/p", {})


def test_gcs_token_forms(clean_env, tmp_path):
    assert storage_arguments("gs://b/p/results.zarr", {"token": "/keys/sa.json"}) == (
        "gcs", {"bucket": "b", "prefix": "p/results.zarr", "service_account_file": "/keys/sa.json"})
    key = {"type": "service_account", "project_id": "x"}
    assert storage_arguments("gcs://b/p", {"token": key})[1]["service_account_key"] == json.dumps(key)
    assert storage_arguments("gs://b/p", {"token": "anon"})[1] == {"bucket": "b", "prefix": "p", "anonymous": True}
    assert storage_arguments("gs://b/p", {"token": "google_default"})[1]["from_env"] is True
    assert storage_arguments("gs://b/p", {})[1]["from_env"] is True


def test_azure_account_from_options_url_or_environment(clean_env):
    assert storage_arguments("az://box/run", {"account_name": "acct", "account_key": "k"}) == (
        "azure", {"account": "acct", "container": "box", "prefix": "run", "access_key": "k"})
    # abfs://container@account.dfs.core.windows.net/path names the account in the URL
    _, kw = storage_arguments("abfs://box@lab.dfs.core.windows.net/run/results.zarr", {})
    assert (kw["account"], kw["container"], kw["prefix"], kw["from_env"]) == ("lab", "box", "run/results.zarr",
                                                                              True)
    with pytest.raises(StoreError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        storage_arguments("az://box/run", {})
    clean_env.setenv("AZURE_STORAGE_ACCOUNT_NAME", "envacct")
    assert storage_arguments("az://box/run", {"sas_token": "sv=1"})[1] == {
        "account": "envacct", "container": "box", "prefix": "run", "sas_token": "sv=1"}


@pytest.mark.parametrize("url, options", [
    ("s3://b/p", {"endpoint_url": "http://127.0.0.1:1", "key": "K", "secret": "S"}),
    ("s3://b/p", {"anon": True}),
    ("gs://b/p", {"token": {"type": "service_account"}}),
    ("gs://b/p", {"token": "anon"}),
    ("az://c/p", {"account_name": "a", "account_key": "k"}),
    ("az://c/p", {"account_name": "a", "sas_token": "sv=1"}),
])
def test_icechunk_accepts_what_is_given(url, options, clean_env):
    icechunk = pytest.importorskip("icechunk")
    from pickscale.store.buckets import icechunk_storage

    assert isinstance(icechunk_storage(url, options), icechunk.Storage)


def test_storage_option_flags():
    assert parse_storage_options(["endpoint_url=http://h:9000", "anon=false", "client_kwargs.region_name=x"],
                                 given={"key": "K", "client_kwargs": {"verify": "no"}}) == {
        "key": "K", "client_kwargs": {"verify": "no", "region_name": "x"}, "endpoint_url": "http://h:9000",
        "anon": False}
    assert parse_storage_options(None) == {}
    for bad in ("endpoint_url", "=x", "a..b=1"):
        with pytest.raises(OptionsError, match="KEY=VALUE"):
            parse_storage_options([bad])
