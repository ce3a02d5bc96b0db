"""Results stores on object storage (``s3://``, ``gs://``): transactional and versioned, on Icechunk.

A remote store is an `Icechunk <https://icechunk.io>`_ repository at the URL: every save is one commit
on its branch ``main``, made of immutable snapshots, so

* a reader opens one snapshot and never sees a mixture of two versions;
* a run killed mid-write leaves nothing but unreferenced objects: the branch still names the previous
  version, which stays readable;
* a writer's session starts from the version it checked (:func:`reserve`, at the start of a run), and
  its commit fails if another writer committed meanwhile: of two concurrent writers one wins, the other
  gets a :class:`~pickscale.errors.StoreError` (exit 2) and its results are not saved;
* each save (``score``, ``extend``) is a version, reopened with ``open_results(url, version=...)``
  (:func:`versions` lists them, newest first).

Icechunk and s3fs are the optional extra ``pickscale[cloud]`` (Icechunk 1.x: 2.x needs Python >= 3.12;
``gs://`` needs gcsfs and ``az://`` adlfs besides, for the tables written beside the store).  Without them,
or for a scheme Icechunk does not serve, a URL is refused before any work
(:func:`pickscale.store.paths.local_store_path`).  Where the store is and which credentials open it: the
URL and fsspec's ``storage_options`` (:mod:`.buckets`), given to each function here or, when not given,
the run's (:func:`pickscale.io.storage.using`); what they leave out comes from the environment as for each
cloud's own tools (``AWS_ENDPOINT_URL`` for an S3-compatible server, ``http://`` allowed;
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``; ``GOOGLE_APPLICATION_CREDENTIALS``;
``AZURE_STORAGE_ACCOUNT_NAME`` …).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

from pickscale import __version__
from pickscale.errors import StoreError
from pickscale.io.storage import current

from .buckets import SCHEMES, cloud_installed, extra_of, icechunk_storage, probe_options
from .codec import _decoded_text, sanitise
from .consistency import check_results
from .paths import describe, url_scheme
from .schema import COMPLETE, MARKERS, SCHEMA, SCHEMA_VERSION, VERSION, check_pickscale_attrs
from .segments import PAIR_PARTS
from .writing import write_dataset

__all__ = ["SCHEMES", "is_remote", "cloud_installed", "check_remote", "RemoteStore", "reserve", "save_remote",
           "open_remote", "open_remote_version", "versions", "probe", "RESERVED"]

#: Writers reserved by this process (:func:`reserve`): store URL -> its writer.
RESERVED: dict[str, RemoteStore] = {}


def is_remote(location: Any) -> bool:
    """Whether ``location`` is a URL of object storage (not a path, nor a ``file://`` URL)."""
    scheme = url_scheme(location)
    return scheme is not None and scheme != "file"


def check_remote(location: str, *, what: str = "results store") -> str:
    """``location`` (a URL) if pickscale can write a store there, else a StoreError saying why; no slash at the end."""
    scheme = url_scheme(location) or ""
    if scheme not in SCHEMES:
        raise StoreError(f"{what} {location}: pickscale writes results to {', '.join(s + '://' for s in SCHEMES)} "
                         f"URLs (Icechunk stores), not to {scheme}:// ones; give one of those, or a local folder; "
                         "nothing was written.")
    if not cloud_installed(scheme):
        raise StoreError(f"{what} {location}: writing results to object storage needs the extra "
                         f"{extra_of(scheme)}; nothing was written.")
    parts = urllib.parse.urlsplit(location)
    if not parts.netloc:
        raise StoreError(f"{what} {location}: no bucket in the URL ({scheme}://BUCKET/PATH).")
    return location.rstrip("/")


def _options(storage_options: dict[str, Any] | None) -> dict[str, Any]:
    """The storage options given, else the run's (:func:`pickscale.io.storage.using`)."""
    return dict(storage_options) if storage_options is not None else current()


def _bucket_prefix(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.netloc, parts.path.strip("/")


def _config() -> Any:
    import icechunk

    # A few quick retries: an unreachable endpoint is said at once, not after minutes.
    return icechunk.RepositoryConfig(storage=icechunk.StorageSettings(
        retries=icechunk.StorageRetriesSettings(max_tries=3, initial_backoff_ms=100, max_backoff_ms=1000)))


def _settings_hint(url: str, options: dict[str, Any]) -> str:
    scheme = url_scheme(url)
    if scheme == "s3":
        client: dict[str, Any] = c if isinstance(c := options.get("client_kwargs"), dict) else {}
        given = options.get("endpoint_url") or client.get("endpoint_url")
        endpoint = given or os.environ.get("AWS_ENDPOINT_URL")
        where = ("storage_options endpoint_url" if given else "AWS_ENDPOINT_URL") + (
            f"={endpoint}" if endpoint else " unset: AWS itself")
        keys = "storage_options key, secret" if options.get("key") else "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"
        return f"check the endpoint ({where}), the credentials ({keys}) and that the bucket exists"
    if scheme in ("gs", "gcs"):
        return ("check the credentials (storage_options token, or GOOGLE_APPLICATION_CREDENTIALS) and that the "
                "bucket exists")
    return ("check the account and credentials (storage_options account_name, account_key or sas_token, or "
            "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_KEY) and that the container exists")


def probe(url: str, *, what: str = "results store", storage_options: dict[str, Any] | None = None) -> None:
    """Reach the bucket of ``url`` once, quickly: an unreachable endpoint, refused credentials or a missing
    bucket are a StoreError naming the URL and the setting to check."""
    import fsspec

    bucket, _ = _bucket_prefix(url)
    scheme = url_scheme(url) or "s3"
    options = _options(storage_options)
    try:
        fs = fsspec.filesystem(scheme, skip_instance_cache=True, **probe_options(url, options))
        fs.ls(bucket, refresh=True)
    except Exception as exc:  # noqa: BLE001 (botocore, aiohttp, google-auth: any failure to reach the bucket)
        raise StoreError(f"{what} {url}: cannot reach the bucket {bucket} ({describe(exc)[:300]}); "
                         f"{_settings_hint(url, options)}; nothing was written.") from None


@dataclass
class RemoteStore:
    """A writer of a remote store: the repository, and the version (snapshot) its session started from."""

    url: str
    repo: Any
    session: Any
    base: str | None  # the snapshot of `main` the run checked, None for a repository it created
    exists: bool  # whether `main` holds a pickscale store
    attrs: dict[str, Any] = field(default_factory=dict)
    storage_options: dict[str, Any] = field(default_factory=dict)


def _open_repo(url: str, *, create: bool, options: dict[str, Any]) -> Any:
    import icechunk

    try:
        storage = icechunk_storage(url, options)
        if icechunk.Repository.exists(storage):
            return icechunk.Repository.open(storage, config=_config())
        if not create:
            return None
        try:
            return icechunk.Repository.create(storage, config=_config())
        except icechunk.IcechunkError:  # another writer created it meanwhile
            return icechunk.Repository.open(storage, config=_config())
    except icechunk.IcechunkError as exc:
        raise StoreError(f"results store {url}: cannot open it ({_short(exc)}); "
                         f"{_settings_hint(url, options)}.") from None


def _is_pickscale_attrs(attrs: dict[str, Any]) -> bool:
    return any(key in attrs for key in (VERSION, *MARKERS))


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _main_attrs(repo: Any, url: str) -> tuple[str, dict[str, Any] | None]:
    """The snapshot at the tip of ``main`` and the root attributes of the store there (None: no store)."""
    import zarr

    session = repo.readonly_session(branch="main")
    try:
        group = zarr.open_group(session.store, mode="r", zarr_format=3)
    except Exception:  # noqa: BLE001 (an empty repository: no root group yet)
        return session.snapshot_id, None
    return session.snapshot_id, dict(group.attrs)


def reserve(url: str, *, overwrite: bool, extend: bool = False,
            storage_options: dict[str, Any] | None = None) -> RemoteStore:
    """Start a writer of the store at ``url`` (created if missing), refusing early what save would refuse.

    The writer's session starts at today's version: its commit (:func:`save_remote`) fails if another
    writer commits first.
    """
    options = _options(storage_options)
    probe(url, storage_options=options)
    repo = _open_repo(url, create=not extend, options=options)
    if repo is None:
        raise StoreError(f"no results store at {url}: `pickscale extend URL` extends a store that "
                         "`pickscale score --out URL` wrote.")
    base, attrs = _main_attrs(repo, url)
    exists = attrs is not None and bool(attrs)
    if exists and not _is_pickscale_attrs(attrs or {}):
        raise StoreError(f"{url} holds an Icechunk repository that is not a pickscale results store; pickscale "
                         "never replaces it: choose another --out.")
    if extend and not exists:
        raise StoreError(f"no results store at {url}: its repository holds no pickscale store yet.")
    if exists and not (overwrite or extend):
        raise StoreError(f"{url} already exists; pass --overwrite to replace it (its earlier versions stay "
                         "readable), or choose another --out.")
    session = repo.writable_session("main")
    return RemoteStore(url=url, repo=repo, session=session, base=base, exists=exists, attrs=attrs or {},
                       storage_options=options)


@contextlib.contextmanager
def reserved(url: str, *, overwrite: bool, extend: bool = False,
             storage_options: dict[str, Any] | None = None) -> Iterator[RemoteStore]:
    """:func:`reserve` for a whole run: :func:`save_remote` of this process commits from that session."""
    writer = reserve(url, overwrite=overwrite, extend=extend, storage_options=storage_options)
    RESERVED[writer.url] = writer
    try:
        yield writer
    finally:
        RESERVED.pop(writer.url, None)


def save_remote(ds: xr.Dataset, url: str, *, overwrite: bool = False, message: str | None = None,
                storage_options: dict[str, Any] | None = None) -> str:
    """Write ``ds`` as the next version of the remote store at ``url``; return the version (snapshot id).

    Refused as :func:`~pickscale.store.save` refuses (an existing store without ``overwrite``); a commit
    made by another writer since this writer started is a StoreError, and nothing of this one is saved.
    """
    import icechunk
    import zarr

    url = check_remote(url)
    clean = sanitise(ds)
    writer = RESERVED.get(url) or reserve(url, overwrite=overwrite, storage_options=storage_options)
    if writer.exists and not overwrite:
        raise StoreError(f"results store {url} already exists; pass overwrite=True to save a new version of it")
    if VERSION not in clean.attrs:
        clean.attrs[VERSION] = __version__
    session = writer.session
    try:
        # (Dask-backed variables a chunk range at a time; an extension's stored pairs read here, the new fetched)
        write_dataset(clean, session.store, parts=ds.encoding.get(PAIR_PARTS))
        zarr.open_group(session.store, mode="r+", zarr_format=3).attrs.update({COMPLETE: True, SCHEMA: SCHEMA_VERSION})
        version = session.commit(message or f"pickscale {clean.attrs.get(VERSION)}: results saved")
    except icechunk.ConflictError:
        raise StoreError(f"could not save results to {url}: another pickscale run saved a new version of it while "
                         "this one was running; this run's results were not saved (the other run's are there: "
                         "run again with --overwrite to replace them).") from None
    except icechunk.IcechunkError as exc:
        raise StoreError(f"could not save results to {url}: {_short(exc)}; the previous version is unchanged; "
                         f"{_settings_hint(url, writer.storage_options)}.") from None
    # The next save of this writer starts from this version.
    writer.session = writer.repo.writable_session("main")
    writer.base, writer.exists = version, True
    return str(version)


def open_remote(url: str, *, version: str | None = None, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """The results of the remote store at ``url`` (its latest version, or ``version``), loaded and checked."""
    return open_remote_version(url, version=version, storage_options=storage_options)[0]


def open_lazily(url: str, *, version: str, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """Version ``version`` of the remote store at ``url``, opened lazily (chunks read when used), unchecked.

    For the writer of that version (:func:`pickscale.store.read.read_lazily`); readers use :func:`open_remote`.
    """
    repo = _open_repo(check_remote(url), create=False, options=_options(storage_options))
    if repo is None:
        raise StoreError(f"no results store at {url}: no Icechunk repository there.")
    session = repo.readonly_session(snapshot_id=version)
    return xr.open_zarr(session.store, consolidated=False, zarr_format=3, chunks={})


def open_remote_version(url: str, *, version: str | None = None,
                        storage_options: dict[str, Any] | None = None) -> tuple[xr.Dataset, str]:
    """:func:`open_remote`, and the version read (its snapshot id)."""
    import icechunk

    url = check_remote(url)
    options = _options(storage_options)
    probe(url, storage_options=options)
    repo = _open_repo(url, create=False, options=options)
    if repo is None:
        raise StoreError(f"no results store at {url}: no Icechunk repository there.")
    try:
        session = (repo.readonly_session(snapshot_id=version) if version
                   else repo.readonly_session(branch="main"))
    except icechunk.IcechunkError as exc:
        known = ", ".join(v["version"] for v in versions(url, storage_options=options)[:5])
        raise StoreError(f"results store {url} has no version {version!r} ({_short(exc)}); its versions, newest "
                         f"first: {known}") from None
    try:
        ds = xr.open_zarr(session.store, consolidated=False, zarr_format=3, chunks=None).load()
    except Exception as exc:  # noqa: BLE001 (an empty repository, metadata Zarr refuses)
        raise StoreError(f"results store {url}: no pickscale results in it ({describe(exc)[:200]})") from None
    check_pickscale_attrs(url, ds.attrs)  # type: ignore[arg-type]  # (the URL names the store in messages)
    check_results(url, ds)  # type: ignore[arg-type]  # a store that contradicts itself is refused (SPEC §15)
    return _decoded_text(ds), str(session.snapshot_id)


def versions(url: str, *, storage_options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The versions of the remote store at ``url``, newest first: ``version`` (the id), ``message``, ``written_at``."""
    url = check_remote(url)
    repo = _open_repo(url, create=False, options=_options(storage_options))
    if repo is None:
        return []
    return [{"version": str(s.id), "message": s.message, "written_at": s.written_at.isoformat()}
            for s in repo.ancestry(branch="main") if not (s.metadata or {}).get("__root")]
