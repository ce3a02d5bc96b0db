"""A real S3-compatible server on 127.0.0.1 for the tests: moto's server mode, one per test session.

Fixtures (registered in ``tests/conftest.py`` through ``pytest_plugins``):

``s3_server``
    Session-scoped: a ``moto.server.ThreadedMotoServer`` listening on 127.0.0.1 on a free port, in a
    thread of the test process.  Its :class:`S3Server` gives the ``endpoint`` URL and records every HTTP
    request it answers (``requests``, ``count()``), so a test can say how many requests a listing took.
``s3_env``
    Function-scoped: the environment that points boto3/s3fs at the server (``AWS_ENDPOINT_URL``,
    ``AWS_ACCESS_KEY_ID=testing``, ``AWS_SECRET_ACCESS_KEY=testing``, ``AWS_DEFAULT_REGION=us-east-1``), set
    with ``monkeypatch`` for the test only; s3fs's instance cache is cleared before and after, so a
    filesystem made under other settings (credentials, endpoint) is never reused.  Returns the server.
``s3_bucket``
    Function-scoped: a fresh, empty bucket (a unique name) on the server, with ``s3_env`` set; returns its
    name.  Write to it with ``s3fs.S3FileSystem()`` or :func:`put`.

Worker processes: a ``distributed.LocalCluster`` started *inside* the test (after ``s3_env``) spawns its
workers with this process's ``os.environ``, so they see ``AWS_ENDPOINT_URL`` and the keys, and reach the
server over TCP on 127.0.0.1 like any client.  A cluster started before the fixture (a session-scoped
cluster) does not: give it ``storage_options=server.options()`` (the endpoint and keys as s3fs arguments)
instead, or start it with ``dask.config.set({"distributed.nanny.environ": server.environ()})``.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

__all__ = ["S3Server", "closed_port", "fresh_filesystems", "put", "rejecting_credentials", "s3_bucket", "s3_env",
           "s3_server"]

KEY = "testing"
SECRET = "testing"
REGION = "us-east-1"


@dataclass
class S3Server:
    """The running server: where it listens, and the requests it has answered (method, path, query)."""

    host: str
    port: int
    server: Any
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def environ(self) -> dict[str, str]:
        """The environment that points boto3/s3fs (and so pickscale) at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_DEFAULT_REGION": REGION}

    def options(self) -> dict[str, Any]:
        """The same as s3fs ``storage_options`` (no environment needed)."""
        return {"endpoint_url": self.endpoint, "key": KEY, "secret": SECRET,
                "client_kwargs": {"region_name": REGION}}

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def count(self, method: str | None = None, *, bucket: str | None = None) -> int:
        """Requests answered since the last :meth:`reset_requests` (of one method, to one bucket)."""
        with self._lock:
            return sum(1 for m, path, _ in self.requests
                       if (method is None or m == method)
                       and (bucket is None or path.lstrip("/").split("/")[0] == bucket))

    def _record(self, app: Any) -> Any:
        def counting(environ: dict[str, Any], start_response: Any) -> Any:
            path = environ.get("PATH_INFO", "")
            if not path.startswith("/moto-api"):
                with self._lock:
                    self.requests.append((environ.get("REQUEST_METHOD", ""), path, environ.get("QUERY_STRING", "")))
            return app(environ, start_response)

        return counting


def _clear_s3fs_cache() -> None:
    with contextlib.suppress(ImportError):
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()


def fresh_filesystems() -> None:
    """Forget s3fs's cached filesystems: call it after changing the AWS_* environment within a test.

    s3fs keeps one filesystem per set of arguments and reads the environment when it makes it: a test
    that changes credentials or the endpoint must clear the cache for the change to be seen (a new
    process — a CLI run, a worker — sees it anyway).
    """
    _clear_s3fs_cache()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (a free port), for the whole session."""
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    moto = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    out = S3Server(host=host, port=port, server=moto)
    wsgi = moto._server  # werkzeug's server: its handler calls `server.app` per request
    wsgi.app = out._record(wsgi.app)
    try:
        yield out
    finally:
        moto.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """The AWS_* environment of the server, for this test (and worker processes it starts)."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_CONFIG_FILE",
                 "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_server.environ().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no credential lookup at 169.254.169.254
    _clear_s3fs_cache()
    s3_server.reset_requests()
    yield s3_server
    _clear_s3fs_cache()


@pytest.fixture
def s3_bucket(s3_env: S3Server) -> str:
    """A fresh, empty bucket on the server; its name."""
    import boto3

    name = f"test-{uuid.uuid4().hex[:16]}"
    boto3.client("s3", endpoint_url=s3_env.endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                 region_name=REGION).create_bucket(Bucket=name)
    s3_env.reset_requests()
    return name


def put(url: str, data: bytes | str, server: S3Server | None = None) -> None:
    """Write one object (``s3://bucket/key``) with the server's options (or the environment's)."""
    import s3fs

    fs = s3fs.S3FileSystem(**(server.options() if server is not None else {}))
    fs.pipe(url, data.encode() if isinstance(data, str) else data)
    fs.invalidate_cache()


@contextlib.contextmanager
def rejecting_credentials(server: S3Server) -> Iterator[None]:
    """Within the block the server checks credentials (moto's IAM): every key is refused (403).

    moto accepts any key by default; this turns its authentication on (``/moto-api/reset-auth``, 0 free
    requests) and off again after.
    """
    import urllib.request

    def reset(value: str) -> None:
        req = urllib.request.Request(f"{server.endpoint}/moto-api/reset-auth", data=value.encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})  # not a form: moto reads the body
        urllib.request.urlopen(req, timeout=10).close()

    reset("0")
    try:
        yield
    finally:
        reset("inf")


def closed_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
