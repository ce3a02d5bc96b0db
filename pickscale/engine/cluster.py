"""Where the job runs: a LocalCluster pickscale starts, an existing scheduler, or this process.

The clusters pickscale starts listen on 127.0.0.1 and keep glibc's adaptive
allocator (see :func:`_worker_environ`); small jobs of local files run
in-process (:func:`small_local_input`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import dask

from ..io import resolve_sources
from .inputs import _size

__all__ = ["local_cluster", "cluster_client", "small_local_input", "SMALL_INPUT_BYTES"]

#: Inputs of local files up to this many bytes (~2 M picks of CSV, more of Parquet) are scored in
#: the command's own process: starting worker processes would cost more than the job.
SMALL_INPUT_BYTES = 64 * 2**20


def small_local_input(*sources: Any, limit: int = SMALL_INPUT_BYTES) -> bool:
    """True when every source is local files whose sizes add up to at most ``limit`` bytes.

    Examples
    --------
    >>> small_local_input("s3://bucket/picks.parquet")
    False
    """
    total = 0
    for source in sources:
        if not isinstance(source, (str, os.PathLike, list, tuple)):
            return False
        try:
            files = resolve_sources(source)
        except Exception:  # reported by the run itself, with its own message
            return False
        for f in files:
            size = _size(f)
            if size is None or "://" in str(f):
                return False
            total += size
            if total > limit:
                return False
    return True


def local_cluster(
    n_workers: int | None = None,
    *,
    threads_per_worker: int = 1,
    dashboard_address: str = "127.0.0.1:0",
    **kwargs,
):
    """Start a ``distributed.LocalCluster`` with worker processes and return a Client.

    For notebooks: ``client = pickscale.local_cluster()``; ``pickscale.score``
    then uses it.  Workers default to the number of cores.  The scheduler and
    its dashboard listen on 127.0.0.1 only (the dashboard on a free port; see
    ``client.dashboard_link``) unless ``dashboard_address`` says otherwise.

    Examples
    --------
    >>> client = local_cluster(1)  # doctest: +SKIP
    >>> client.close()  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}):
        cluster = LocalCluster(
            n_workers=n_workers or os.cpu_count() or 1,
            threads_per_worker=threads_per_worker,
            processes=True,
            host="127.0.0.1",
            # Never 0.0.0.0, and never the fixed 8787 another cluster may hold.
            dashboard_address=dashboard_address,
            **kwargs,
        )
    return Client(cluster)


def _worker_environ() -> dict[str, Any]:
    """Dask's environment for new worker processes, without its fixed ``MALLOC_TRIM_THRESHOLD_``.

    A fixed trim threshold turns off glibc's adaptive mmap threshold, so every
    numpy temporary above 128 kB is a fresh mapping whose pages fault in one by
    one: on 10 M picks, ~1.8 M page faults and ~5 s of system time, a third of
    the run.  pickscale's tasks bound their memory by design (time blocks), so
    its own workers keep glibc's defaults; a user's setting in the environment
    is inherited as usual.
    """
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


@contextlib.contextmanager
def cluster_client(*, workers: int | None = None, scheduler: str | None = None,
                   closing: list[threading.Thread] | None = None) -> Iterator[Any]:
    """The client the CLI runs on: an existing scheduler, or a LocalCluster it owns.

    With a list as ``closing``, an owned cluster is shut down in a thread
    appended to it (the caller joins it), so that writing the results
    overlaps the ~0.4 s the worker processes take to stop.
    """
    from distributed import Client

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        client = Client(address, timeout="30s")
        try:
            yield client
        finally:
            client.close()
        return
    client = local_cluster(workers, silence_logs=40)

    def close() -> None:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()

    try:
        yield client
    finally:
        if closing is None:
            close()
        else:
            thread = threading.Thread(target=close, name="pickscale-cluster-close")
            thread.start()
            closing.append(thread)
