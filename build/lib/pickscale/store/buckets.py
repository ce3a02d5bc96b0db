"""Where a remote results store lives: its URL and ``storage_options`` as Icechunk's storage and fsspec's filesystem.

One set of ``storage_options`` serves a whole run — the inputs (read with fsspec), the store (an Icechunk
repository) and the tables beside it (written with fsspec) — so they are given in fsspec's words (s3fs, gcsfs,
adlfs) and translated here for Icechunk.  What is not given comes from the environment, as for each
cloud's own tools.

=========  ===========================  ==============================================================
scheme     fsspec options used          Icechunk storage
=========  ===========================  ==============================================================
``s3``     ``endpoint_url`` (or in      ``s3_storage``: endpoint (``AWS_ENDPOINT_URL``), region
           ``client_kwargs``), ``key``,  (``client_kwargs.region_name``, ``AWS_REGION``), static keys or
           ``secret``, ``token``,        the environment's (``AWS_ACCESS_KEY_ID`` …), ``anon`` → anonymous
           ``anon``
``gs``     ``token`` (a key file, a      ``gcs_storage``: ``service_account_file`` / ``_key``,
           key as a dict, ``"anon"``)    anonymous, else ``GOOGLE_APPLICATION_CREDENTIALS``
``az``     ``account_name``,             ``azure_storage``: the account (or ``AZURE_STORAGE_ACCOUNT_NAME``),
           ``account_key``,              ``access_key`` / ``sas_token``, else the environment's
           ``sas_token``
=========  ===========================  ==============================================================

Options that only tune fsspec (block sizes, caching) are left to fsspec; an option that would choose the
credentials and that Icechunk cannot take (an AWS ``profile``) is refused, never silently dropped.

Examples
--------
>>> kind, kwargs = storage_arguments("s3://bucket/runs/a/results.zarr",
...                                  {"endpoint_url": "http://127.0.0.1:9000", "key": "K", "secret": "S"})
>>> kind, kwargs["bucket"], kwargs["prefix"], kwargs["allow_http"], kwargs["access_key_id"]
('s3', 'bucket', 'runs/a/results.zarr', True, 'K')
>>> storage_arguments("az://box/run/results.zarr", {"account_name": "acct", "sas_token": "?sv=1"})
('azure', {'account': 'acct', 'container': 'box', 'prefix': 'run/results.zarr', 'sas_token': '?sv=1'})
"""

from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any

from pickscale.errors import StoreError

__all__ = ["SCHEMES", "FILESYSTEMS", "cloud_installed", "extra_of", "storage_arguments", "icechunk_storage",
           "probe_options"]

#: The schemes of a remote store, and the fsspec package that writes the tables beside it.
FILESYSTEMS = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}
SCHEMES = tuple(FILESYSTEMS)
_EXTRAS = {"s3fs": "cloud", "gcsfs": "gcs", "adlfs": "azure"}


def cloud_installed(scheme: str = "s3") -> bool:
    """Whether what results on ``scheme://`` need is installed: icechunk, and fsspec's filesystem of the scheme
    (s3fs, gcsfs, adlfs: the tables beside the store are written with it)."""
    try:
        import fsspec
        import icechunk  # noqa: F401

        fsspec.get_filesystem_class(scheme)
    except (ImportError, ValueError):
        return False
    return True


def extra_of(scheme: str) -> str:
    """What to install for results on ``scheme://``: ``pip install 'pickscale[cloud]': icechunk, s3fs`` …"""
    package = FILESYSTEMS.get(scheme, "s3fs")
    return f"pickscale[{_EXTRAS[package]}] (pip install 'pickscale[{_EXTRAS[package]}]': icechunk, {package})"


def _scheme(url: str) -> str:
    return urllib.parse.urlsplit(url).scheme.lower()


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def _s3(bucket: str, prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    client: dict[str, Any] = c if isinstance(c := options.get("client_kwargs"), dict) else {}
    config: dict[str, Any] = k if isinstance(k := options.get("config_kwargs"), dict) else {}
    endpoint = _first(options.get("endpoint_url"), client.get("endpoint_url"), os.environ.get("AWS_ENDPOINT_URL_S3"),
                      os.environ.get("AWS_ENDPOINT_URL"))
    region = _first(client.get("region_name"), config.get("region_name"), os.environ.get("AWS_REGION"),
                    os.environ.get("AWS_DEFAULT_REGION"))
    out: dict[str, Any] = {"bucket": bucket, "prefix": prefix, "region": region, "endpoint_url": endpoint,
                           # An S3-compatible server of one's own (MinIO, Ceph): plain http and path-style URLs.
                           "allow_http": bool(endpoint and str(endpoint).startswith("http://")),
                           "force_path_style": endpoint is not None}
    if options.get("anon"):
        out["anonymous"] = True
    elif options.get("key") or options.get("secret"):
        if not (options.get("key") and options.get("secret")):
            raise StoreError("storage_options: give both key and secret (or neither, to use the environment's "
                             "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
        out.update(access_key_id=str(options["key"]), secret_access_key=str(options["secret"]))
        if options.get("token"):
            out["session_token"] = str(options["token"])
    else:
        out["from_env"] = True
    return out


def _gcs(bucket: str, prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"bucket": bucket, "prefix": prefix}
    token = options.get("token")
    if token == "anon" or options.get("anon"):
        out["anonymous"] = True
    elif isinstance(token, dict):
        out["service_account_key"] = json.dumps(token)
    elif isinstance(token, str) and token not in ("google_default", "cloud", "cache", "browser"):
        out["service_account_file"] = token
    else:
        out["from_env"] = True
    return out


def _azure(netloc: str, prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    # az://container/path, or abfs://container@account.dfs.core.windows.net/path
    container, _, host = netloc.partition("@")
    account = _first(options.get("account_name"), host.split(".")[0] if host else None,
                     os.environ.get("AZURE_STORAGE_ACCOUNT_NAME"), os.environ.get("AZURE_STORAGE_ACCOUNT"))
    if not account:
        raise StoreError("an az:// results store needs the storage account: storage_options={'account_name': "
                         "...} or AZURE_STORAGE_ACCOUNT_NAME")
    out: dict[str, Any] = {"account": str(account), "container": container, "prefix": prefix}
    if options.get("account_key"):
        out["access_key"] = str(options["account_key"])
    elif options.get("sas_token"):
        out["sas_token"] = str(options["sas_token"])
    else:
        out["from_env"] = True
    return out


def storage_arguments(url: str, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The Icechunk storage (``"s3"``, ``"gcs"``, ``"azure"``) and its keyword arguments for ``url``.

    ``options`` are fsspec's ``storage_options`` (see the module's table); missing settings come from the
    environment.  A credentials option Icechunk cannot take is a StoreError.
    """
    options = dict(options or {})
    if "profile" in options:
        raise StoreError("storage_options: a named AWS profile is not taken for a results store; set "
                         "AWS_PROFILE in the environment instead (read by both the inputs and the store)")
    parts = urllib.parse.urlsplit(url)
    prefix = parts.path.strip("/")
    scheme = _scheme(url)
    if scheme == "s3":
        return "s3", _s3(parts.netloc, prefix, options)
    if scheme in ("gs", "gcs"):
        return "gcs", _gcs(parts.netloc, prefix, options)
    if scheme in ("az", "abfs", "abfss"):
        return "azure", _azure(parts.netloc, prefix, options)
    raise StoreError(f"{url}: no results store on {scheme}:// (only {', '.join(s + '://' for s in SCHEMES)})")


def icechunk_storage(url: str, options: dict[str, Any] | None = None) -> Any:
    """The Icechunk storage of the store at ``url`` (:func:`storage_arguments`)."""
    import icechunk

    kind, kwargs = storage_arguments(url, options)
    return getattr(icechunk, f"{kind}_storage")(**kwargs)


def probe_options(url: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """fsspec's options to reach the bucket of ``url`` once (:func:`pickscale.store.remote.probe`): the run's,
    plus quick timeouts on S3.

    A failing endpoint is said in seconds (two attempts), not after botocore's minutes of retries.
    """
    out = dict(options or {})
    if _scheme(url) == "s3":
        config = dict(out.get("config_kwargs") or {})
        config.setdefault("connect_timeout", 5)
        config.setdefault("read_timeout", 20)
        config.setdefault("retries", {"max_attempts": 2})
        out["config_kwargs"] = config
    return out
