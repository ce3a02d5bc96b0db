"""Where the job runs: a LocalCluster pickscale starts, an existing scheduler, or this process.

A command connects to the scheduler it is named (``--scheduler``, ``--scheduler-file``, or the study file), else
to the one Dask's own configuration names — what ``distributed.Client()`` would connect to:
``scheduler-address`` (``DASK_SCHEDULER_ADDRESS``), then ``scheduler-file`` (``DASK_SCHEDULER_FILE``) — see
:func:`scheduler_target`; else it starts a LocalCluster sized from the CPUs and memory this process may use
(affinity and cgroup limits; :func:`local_cluster_size`).  The clusters pickscale starts listen on 127.0.0.1
and keep glibc's adaptive allocator (see :func:`_worker_environ`); small jobs of local files run in-process
(:func:`small_local_input`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dask

from ..errors import OptionsError
from ..io import resolve_sources
from .inputs import _size

__all__ = ["local_cluster", "cluster_client", "small_local_input", "SMALL_INPUT_BYTES", "SchedulerTarget",
           "scheduler_target", "configured_scheduler", "scheduler_address", "local_cluster_size",
           "process_cpus", "process_memory", "CONNECT_TIMEOUT"]

#: Inputs of local files up to this many bytes (~2 M picks of CSV, more of Parquet) are scored in
#: the command's own process: starting worker processes would cost more than the job.
SMALL_INPUT_BYTES = 64 * 2**20

#: Seconds to connect to a scheduler (and for its scheduler file to appear).
CONNECT_TIMEOUT = 30.0


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
        named = source if isinstance(source, (list, tuple)) else [source]
        if any("://" in os.fspath(s) for s in named if isinstance(s, (str, os.PathLike))):
            return False  # a URL is never small and local: no listing of it just to say so
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


def process_cpus() -> int:
    """The CPUs this process may use: Dask's count, which respects CPU affinity and cgroup quotas.

    A 4-core Slurm allocation on a 128-core node is 4, not ``os.cpu_count()``'s 128.  Computed at each
    call (``dask.system.cpu_count``, what ``dask.system.CPU_COUNT`` holds from import time), so an
    affinity set after Dask was imported counts too.

    Examples
    --------
    >>> process_cpus() >= 1
    True
    """
    from dask.system import cpu_count

    return max(1, int(cpu_count()))


def process_memory() -> int:
    """The memory this process may use, in bytes: ``distributed.system.MEMORY_LIMIT``'s rule.

    The least of the machine's memory, the cgroup limits (v1 and v2) and ``RLIMIT_RSS``; a batch job's
    memory, not the node's.  When ``distributed`` is not loaded yet (an in-process run), the same rule is
    applied here rather than importing it (~0.3 s).

    Examples
    --------
    >>> process_memory() > 0
    True
    """
    if "distributed" in sys.modules:
        from distributed.system import MEMORY_LIMIT

        return int(MEMORY_LIMIT)
    import psutil

    limit = int(psutil.virtual_memory().total)
    if sys.platform == "linux":
        for path in ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.soft_limit_in_bytes",
                     "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.high", "/sys/fs/cgroup/memory.low"):
            try:
                with open(path) as f:
                    value = int(f.read())
            except (OSError, ValueError):  # absent, or "max": no limit there
                continue
            if value > 0:
                limit = min(limit, value)
    if sys.platform != "win32":
        try:
            import resource

            hard = resource.getrlimit(resource.RLIMIT_RSS)[1]
            if 0 < hard < limit:
                limit = hard
        except (ImportError, OSError):
            pass
    return limit


def local_cluster_size(n_workers: int | None = None, *, threads_per_worker: int = 1) -> dict[str, int]:
    """The LocalCluster pickscale starts: ``n_workers``, ``threads_per_worker``, ``memory_limit`` (bytes each).

    Workers default to the CPUs this process may use (:func:`process_cpus`) divided by
    ``threads_per_worker``; the memory this process may use (:func:`process_memory`) is divided among them.

    Examples
    --------
    >>> size = local_cluster_size(2)
    >>> size["n_workers"], size["memory_limit"] == process_memory() // 2
    (2, True)
    """
    threads = max(1, int(threads_per_worker))
    workers = int(n_workers) if n_workers else max(1, process_cpus() // threads)
    return {"n_workers": workers, "threads_per_worker": threads, "memory_limit": max(1, process_memory() // workers)}


def local_cluster(
    n_workers: int | None = None,
    *,
    threads_per_worker: int = 1,
    dashboard_address: str = "127.0.0.1:0",
    **kwargs,
):
    """Start a ``distributed.LocalCluster`` with worker processes and return a Client.

    For notebooks: ``client = pickscale.local_cluster()``; ``pickscale.score``
    then uses it.  Workers default to the CPUs this process may use (CPU affinity
    and cgroup quotas respected: in a 4-core batch job, 4), each with its share of
    the memory this process may use (cgroup limits respected) unless ``memory_limit``
    is given.  The scheduler and its dashboard listen on 127.0.0.1 only (the
    dashboard on a free port; see ``client.dashboard_link``) unless
    ``dashboard_address`` says otherwise.

    Examples
    --------
    Not run as a doctest: it starts a worker process (a second or more, and a process that could outlive a
    failed example), and the quick test path (``-m "not cluster"``) starts none; the ``cluster`` tests of
    ``tests/test_security.py`` run it.

    >>> client = local_cluster(1)  # doctest: +SKIP
    >>> client.submit(sum, [1, 2]).result()  # doctest: +SKIP
    3
    >>> cluster = client.cluster  # doctest: +SKIP
    >>> client.close(); cluster.close()  # the Client does not close a cluster it was given  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    size = local_cluster_size(n_workers, threads_per_worker=threads_per_worker)
    kwargs.setdefault("memory_limit", size["memory_limit"])
    with dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}):
        cluster = LocalCluster(
            n_workers=size["n_workers"],
            threads_per_worker=size["threads_per_worker"],
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


@dataclass(frozen=True)
class SchedulerTarget:
    """A scheduler to connect to: an ``address``, or a ``scheduler_file`` holding one; ``source`` names the setting.

    ``configured`` is True when Dask's configuration or environment named it (not a pickscale flag).
    """

    address: str | None = None
    scheduler_file: str | None = None
    source: str = "--scheduler"
    configured: bool = False

    def describe(self) -> str:
        """The scheduler as a message names it: ``tcp://h:p``, or ``the scheduler file F``."""
        return self.address if self.address else f"the scheduler file {self.scheduler_file}"


def configured_scheduler() -> SchedulerTarget | None:
    """The scheduler Dask's own configuration names, as ``distributed.Client()`` would find it; else None.

    ``scheduler-address`` first (``DASK_SCHEDULER_ADDRESS``, or a ``scheduler-address`` in Dask's YAML
    configuration or ``dask.config.set``), then ``scheduler-file`` (``DASK_SCHEDULER_FILE``, or in the
    configuration).  The environment variables are read as they are now (Dask reads them once, at import),
    and win over the YAML files, as in Dask.

    Examples
    --------
    >>> import dask
    >>> from unittest import mock
    >>> unset = {"DASK_SCHEDULER_ADDRESS": "", "DASK_SCHEDULER_FILE": ""}  # whatever this shell sets
    >>> with mock.patch.dict(os.environ, unset), dask.config.set({"scheduler-address": "tcp://10.0.0.1:8786"}):
    ...     target = configured_scheduler()
    >>> target.address, target.source
    ('tcp://10.0.0.1:8786', "Dask's configuration (scheduler-address)")
    >>> with mock.patch.dict(os.environ, {"DASK_SCHEDULER_ADDRESS": "tcp://10.0.0.2:8786"}):
    ...     configured_scheduler().source  # the environment wins
    'DASK_SCHEDULER_ADDRESS'
    """
    for key, env, field in (("scheduler-address", "DASK_SCHEDULER_ADDRESS", "address"),
                            ("scheduler-file", "DASK_SCHEDULER_FILE", "scheduler_file")):
        from_env = os.environ.get(env, "").strip()
        if from_env:
            return SchedulerTarget(**{field: from_env}, source=env, configured=True)
        value = str(dask.config.get(key, None) or "").strip()
        if value:
            return SchedulerTarget(**{field: value}, source=f"Dask's configuration ({key})", configured=True)
    return None


def scheduler_target(scheduler: str | None = None, scheduler_file: str | os.PathLike | None = None) -> \
        SchedulerTarget | None:
    """The scheduler a command runs on: ``scheduler`` or ``scheduler_file`` if given, else Dask's configured one.

    None: no scheduler is named anywhere (the command starts its own cluster, or runs in-process).

    Examples
    --------
    >>> scheduler_target("tcp://10.0.0.1:8786").source
    '--scheduler'
    """
    if scheduler and scheduler_file:
        raise OptionsError("--scheduler and --scheduler-file both name a scheduler; give one of them.")
    if scheduler:
        return SchedulerTarget(address=str(scheduler), source="--scheduler")
    if scheduler_file:
        return SchedulerTarget(scheduler_file=os.fspath(scheduler_file), source="--scheduler-file")
    return configured_scheduler()


def scheduler_address(target: SchedulerTarget, *, timeout: float | None = None) -> str:
    """The address to connect to: the target's, or the one in its scheduler file.

    A scheduler file that does not exist yet is waited for up to ``timeout`` seconds (default
    :data:`CONNECT_TIMEOUT`: a batch job may start the scheduler and pickscale at once); then, or if it holds
    no address, an :class:`OptionsError` names it.
    """
    if target.address:
        return target.address
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    path = str(target.scheduler_file)
    deadline = time.monotonic() + timeout
    problem = "it does not exist"
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            address = json.loads(text).get("address") if text.strip() else None
            if isinstance(address, str) and address:
                return address
            problem = "it holds no scheduler address" if text.strip() else "it is empty"
        except FileNotFoundError:
            problem = "it does not exist"
        except IsADirectoryError:
            raise OptionsError(f"{target.source} {path} is a folder, not a scheduler file.") from None
        except (ValueError, AttributeError):  # still being written, or not a scheduler file
            problem = "it is not a scheduler file (JSON with an \"address\")"
        except OSError as exc:
            raise OptionsError(f"{target.source} {path} cannot be read: {exc.strerror or exc}.") from None
        if time.monotonic() >= deadline:
            raise OptionsError(
                f"{target.source} {path}: {problem} after {timeout:g} s; a scheduler writes it when started "
                f"with `dask scheduler --scheduler-file {path}` (or dask-mpi's `--scheduler-file`).")
        time.sleep(0.1)


@contextlib.contextmanager
def cluster_client(*, workers: int | None = None, scheduler: str | None = None,
                   scheduler_file: str | os.PathLike | None = None,
                   closing: list[threading.Thread] | None = None,
                   target: SchedulerTarget | None = None, local: bool = False) -> Iterator[Any]:
    """The client the CLI runs on: an existing scheduler, or a LocalCluster it owns.

    The scheduler is ``target`` if given, else :func:`scheduler_target` of ``scheduler`` and
    ``scheduler_file`` (which falls back on Dask's configuration); ``local=True`` starts a LocalCluster of
    ``workers`` whatever Dask's configuration names.  With a list as ``closing``, an owned cluster is shut
    down in a thread appended to it (the caller joins it), so that writing the results overlaps the ~0.4 s
    the worker processes take to stop.
    """
    from distributed import Client

    if target is None and not local:
        target = scheduler_target(scheduler, scheduler_file)
    if target is not None:
        client = Client(scheduler_address(target), timeout=f"{CONNECT_TIMEOUT:g}s")
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
