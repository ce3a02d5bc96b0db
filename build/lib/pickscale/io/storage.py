"""Object storage: the ``storage_options`` of a run, and its failures said as input errors.

Every reader opens its file with :func:`open_input` (``fsspec.open`` with the run's ``storage_options``
for a URL).  The options are set for the duration of a read task by :func:`using` — a context variable,
so the threads of a worker each see their own task's options — and travel to the workers as an
argument of the task.  Without options, fsspec's environment and configuration apply as they are
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``~/.config/fsspec/``).

:func:`storage_error` turns what the storage libraries raise (botocore, aiohttp, s3fs's ``OSError``
translations, and their equivalents elsewhere) into an :class:`InputError` that names the URL and the
setting to check, on the client and on the workers alike: an unreachable endpoint, missing or refused
credentials, a missing bucket.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
from collections.abc import Iterator
from typing import Any

import fsspec

from ..errors import InputError, OptionsError

__all__ = ["ObjectStorageError", "open_input", "using", "prefetched", "storage_error", "is_url",
           "parse_storage_options"]


class ObjectStorageError(InputError):
    """An input on object storage that cannot be reached or read: the endpoint, credentials, access, bucket."""

_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("pickscale_storage_options",
                                                                                 default=None)
_FETCHED: contextvars.ContextVar[dict[str, bytes] | None] = contextvars.ContextVar("pickscale_prefetched",
                                                                                   default=None)


def is_url(path: Any) -> bool:
    """True for a path with a protocol other than the local filesystem's (``s3://``, ``memory://`` …).

    Examples
    --------
    >>> is_url("s3://bucket/picks.parquet"), is_url("/data/picks.csv"), is_url("file:///data/picks.csv")
    (True, False, False)
    """
    text = str(path)
    return "://" in text and not text.startswith(("file://", "local://"))


@contextlib.contextmanager
def using(storage_options: dict[str, Any] | None) -> Iterator[None]:
    """Within the block, :func:`open_input` passes ``storage_options`` to fsspec for every URL."""
    token = _OPTIONS.set(dict(storage_options) if storage_options else None)
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def parse_storage_options(items: Any, *, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """``--storage-option KEY=VALUE`` flags as fsspec's ``storage_options``, over those ``given`` (a study file's).

    A dotted key is nested (``client_kwargs.region_name=eu-west-1``); ``true``/``false`` are booleans, the
    rest text (what endpoints, keys and names are).

    Examples
    --------
    >>> parse_storage_options(["endpoint_url=http://127.0.0.1:9000", "anon=true",
    ...                        "client_kwargs.region_name=eu-west-1"], given={"anon": False, "key": "K"})
    {'anon': True, 'key': 'K', 'endpoint_url': 'http://127.0.0.1:9000', 'client_kwargs': {'region_name': 'eu-west-1'}}
    """
    out: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (given or {}).items()}
    for item in items or ():
        key, sep, text = str(item).partition("=")
        path = key.strip().split(".")
        if not sep or not all(path):
            raise OptionsError(f"--storage-option {item}: expected KEY=VALUE (e.g. endpoint_url=http://host:9000, "
                               "anon=true, client_kwargs.region_name=eu-west-1).")
        value: Any = {"true": True, "false": False}.get(text.strip().lower(), text.strip())
        at = out
        for part in path[:-1]:
            if not isinstance(at.get(part), dict):
                at[part] = {}
            at = at[part]
        at[path[-1]] = value
    return out


def current() -> dict[str, Any]:
    """The storage options in effect (``{}``: fsspec's environment and configuration alone)."""
    return dict(_OPTIONS.get() or {})


@contextlib.contextmanager
def prefetched(paths: list[str]) -> Iterator[None]:
    """Within the block, :func:`open_input` serves the objects at ``paths`` (URLs) from memory.

    A read task of many small objects would otherwise fetch them one after another, several requests each
    (the sniff, the footer, the body): at 20-75 ms a request, the bucket's latency, not its bandwidth, sets
    the task's time.  Here they are fetched at once with the filesystem's ``cat_ranges``, which an async
    filesystem (s3fs, gcsfs, adlfs) runs concurrently, one GET an object.  The task's batch is bounded in bytes
    (:mod:`pickscale.engine.inputs`), so is what is held.  Should the fetch fail, nothing is prefetched: each
    object is then read on its own, and its failure said as for that object.
    """
    urls = [p for p in dict.fromkeys(paths) if is_url(p)]
    if len(urls) < 2:
        yield
        return
    fetched: dict[str, bytes] | None = None
    try:
        fs, _ = fsspec.core.url_to_fs(urls[0], **current())
        # cat_ranges, not cat: cat first asks whether each path exists (a HEAD each); whole objects here.
        # s3fs asks an object's size first (a HEAD) to split a large one into ranges: these are small, one GET.
        one = {"max_concurrency": 1} if "s3" in fs.protocol else {}
        got = fs.cat_ranges(urls, [None] * len(urls), [None] * len(urls), on_error="return", **one)
        if not any(isinstance(body, BaseException) for body in got):
            fetched = dict(zip(urls, got))
    except Exception:  # noqa: BLE001 (each object's own read says what is wrong with it)
        fetched = None
    token = _FETCHED.set(fetched)
    try:
        yield
    finally:
        _FETCHED.reset(token)


def open_input(path: str, mode: str = "rb", compression: str | None = None) -> Any:
    """``fsspec.open`` with the storage options in effect (for URLs; a local path takes none)."""
    fetched = _FETCHED.get()
    if fetched is not None and path in fetched and mode == "rb":
        body: Any = io.BytesIO(fetched[path])
        kind = fsspec.utils.infer_compression(path) if compression == "infer" else compression
        if kind:
            body = fsspec.compression.compr[kind](body, mode="rb")
        return contextlib.nullcontext(body)
    options = _OPTIONS.get()
    if options and is_url(path):
        return fsspec.open(path, mode, compression=compression, **options)
    return fsspec.open(path, mode, compression=compression)


# What the storage libraries raise, by class name (none of them is imported here: each is optional).
_NO_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                   "NoAuthTokenError", "DefaultCredentialsError", "ClientAuthenticationError",
                   "CredentialUnavailableError"}
_UNREACHABLE = {"EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError", "ReadTimeoutError",
                "ProxyConnectionError", "ClientConnectorError", "ClientConnectionError", "ServerDisconnectedError",
                "ServerTimeoutError", "gaierror", "InvalidEndpointError"}
_REFUSED_CODES = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                  "InvalidToken", "AllAccessDisabled", "AuthorizationHeaderMalformed", "403", "Forbidden")


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        e = stack.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        stack.extend([e.__cause__, e.__context__])
        stack.extend(x for x in getattr(e, "exceptions", ()) if isinstance(x, BaseException))  # ExceptionGroup
    return out


def _protocol(url: str) -> str:
    return url.split("://", 1)[0].split("::")[-1].lower() if "://" in url else "file"


def _endpoint(options: dict[str, Any]) -> str | None:
    """The S3 endpoint in effect, as the user set it (options, then the environment, then fsspec's config)."""
    given = options.get("client_kwargs")
    client: dict[str, Any] = given if isinstance(given, dict) else {}
    config = fsspec.config.conf.get("s3", {})
    for value in (options.get("endpoint_url"), client.get("endpoint_url"), os.environ.get("AWS_ENDPOINT_URL_S3"),
                  os.environ.get("AWS_ENDPOINT_URL"), config.get("endpoint_url"),
                  (config.get("client_kwargs") or {}).get("endpoint_url")):
        if value:
            return str(value)
    return None


def _settings(protocol: str, options: dict[str, Any]) -> dict[str, str]:
    """What to check, per kind of failure, in the words of the filesystem at hand."""
    if protocol in ("s3", "s3a"):
        endpoint = _endpoint(options)
        at = f"the endpoint {endpoint}" if endpoint else "AWS's own endpoint (no endpoint is set)"
        return {
            "endpoint": at,
            "check_endpoint": 'check the endpoint: AWS_ENDPOINT_URL, or storage_options={"endpoint_url": ...} '
                              "(and that the server runs and this machine reaches it)",
            "check_credentials": "check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
                                 'AWS_PROFILE), or storage_options={"key": ..., "secret": ...}; a public bucket: '
                                 'storage_options={"anon": True}',
            "check_bucket": 'check the bucket name, and the endpoint: AWS_ENDPOINT_URL or storage_options='
                            '{"endpoint_url": ...}',
        }
    name = f"the {protocol} filesystem"
    return {
        "endpoint": name,
        "check_endpoint": f"check the address and network settings of {name} (storage_options=...)",
        "check_credentials": f"check the credentials of {name}: its environment, or storage_options=...",
        "check_bucket": "check the bucket or container name (and storage_options=...)",
    }


def _codes(e: BaseException) -> str:
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        return f"{error.get('Code', '')} {(response.get('ResponseMetadata') or {}).get('HTTPStatusCode', '')}"
    return ""


def storage_error(exc: BaseException, url: str,
                  storage_options: dict[str, Any] | None = None) -> ObjectStorageError | None:
    """The :class:`ObjectStorageError` for a storage failure behind ``exc`` while reading ``url``; else None.

    Examples
    --------
    >>> print(storage_error(ConnectionRefusedError(111, "Connection refused"), "s3://b/picks/",
    ...                     {"endpoint_url": "http://127.0.0.1:9000"}))
    s3://b/picks/: cannot reach the object storage at the endpoint http://127.0.0.1:9000 ([Errno 111] Connection
    refused); check the endpoint: AWS_ENDPOINT_URL, or storage_options={"endpoint_url": ...} (and that the server
    runs and this machine reaches it).
    >>> storage_error(ValueError("no"), "s3://b/picks/") is None
    True
    """
    if not is_url(url):
        return None
    options = dict(storage_options) if storage_options is not None else current()
    say = _settings(_protocol(url), options)
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    reason = next((str(e) for e in reversed(chain) if str(e)), type(exc).__name__)
    top = next((str(e) for e in chain if str(e) and not isinstance(e, InputError)), reason)
    if names & _NO_CREDENTIALS:
        return ObjectStorageError(f"{url}: no credentials for the object storage at {say['endpoint']} ({top}); "
                          f"{say['check_credentials']}.")
    if (names & _UNREACHABLE) or any(isinstance(e, (ConnectionError, TimeoutError)) for e in chain):
        return ObjectStorageError(f"{url}: cannot reach the object storage at {say['endpoint']} ({reason}); "
                          f"{say['check_endpoint']}.")
    codes = " ".join(_codes(e) for e in chain)
    if any(isinstance(e, PermissionError) for e in chain) or any(c in codes for c in _REFUSED_CODES):
        return ObjectStorageError(f"{url}: access refused by the object storage at {say['endpoint']} ({top}); "
                          f"{say['check_credentials']}, and that they may read this object.")
    if "NoSuchBucket" in names or "NoSuchBucket" in codes or any(
            isinstance(e, FileNotFoundError) and "bucket does not exist" in str(e).lower() for e in chain):
        return ObjectStorageError(f"{url}: no such bucket at {say['endpoint']} ({top}); {say['check_bucket']}.")
    return None
