"""The ``pickscale`` command: ``score``, ``demo`` and ``report``.

Exit status: 0 on success, 2 on bad input or usage (a message, no
traceback), 1 on an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .errors import OptionsError, PickscaleError, StoreError

__all__ = ["main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: clean up, then exit 143."""


class _Run:
    """What a run has written so far, for the message when it is interrupted."""

    store: Path | None = None  # the results store once it is complete at its target
    target: Path | None = None  # the store the run is writing

    @classmethod
    def reset(cls) -> None:
        cls.store = cls.target = None

    @classmethod
    def interrupted_note(cls) -> str:
        if cls.store is not None:
            return (f"the results store {cls.store} is complete, but its tables and figures may not be: "
                    f"write them again with `pickscale report {cls.store} --overwrite`.")
        if cls.target is not None:
            return f"no results store was written ({cls.target} is as it was before this run)."
        return "no results store was written."


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: exit 2 with the message, as argparse does
        self.print_usage(sys.stderr)
        print(f"pickscale: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=float, default=None, help="shared threshold the tables are read at (default 0.3)")
    p.add_argument("--tol", type=float, default=None, help="detection tolerance in seconds (default 0.5)")
    p.add_argument("--residual-tol", type=float, default=None, help="residual matching tolerance in seconds (default 2.0)")
    p.add_argument("--thresholds", type=_floats, default=None,
                   help="sweep grid, comma-separated, ascending (default 0.02, 0.04, …, 0.94)")
    p.add_argument("--budget", type=int, default=None, help="matched pick budget (default: min(n_reference, least emitted))")
    p.add_argument("--exhaustive", action="store_true", default=None,
                   help="the reference marks every arrival: precision and f1 are exact (no _lb)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: one per core)")
    p.add_argument("--scheduler", default=None,
                   help="address of an existing Dask scheduler, e.g. tcp://host:8786 (or set DASK_SCHEDULER_ADDRESS)")
    p.add_argument("--block-picks", type=int, default=None,
                   help="picks per work unit: busier stations are cut into time blocks at quiet gaps, which "
                        "bounds a worker's memory and changes no number (default 2000000)")
    p.add_argument("--overwrite", action="store_true", default=None, help=_OVERWRITE_HELP)
    _add_output(p)


_OVERWRITE_HELP = ("replace an existing results store and pickscale's own files in --out (the tables, "
                   "figures/<figure>.png|svg|pdf, pickscale-outputs.json); without it, pickscale refuses to "
                   "replace any of them. No other file is ever replaced or deleted")


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png", help="figure format (default png)")
    p.add_argument("--no-figures", action="store_true", help="write the tables only")
    p.add_argument("--quiet", action="store_true", help="print no tables")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pickscale", description="Score seismic phase pickers against bulletin arrivals.")
    parser.add_argument("--version", action="version", version=f"pickscale {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("score", help="score picks against reference arrivals")
    s.add_argument("--reference", help="reference arrivals: CSV/Parquet file, folder, glob or URL")
    s.add_argument("--picks", help="model picks: CSV/Parquet file, folder, glob or URL")
    s.add_argument("--out", help="output folder (results.zarr, the tables, figures/, pickscale-outputs.json)")
    s.add_argument("--config", help="a TOML study file; command-line options override it")
    s.add_argument("--drop-invalid", action="store_true", default=None, help="drop invalid rows with a warning")
    s.add_argument("--manual-only", action="store_true", default=None,
                   help="from a bulletin (QuakeML …), keep only picks whose evaluation mode is manual")
    s.add_argument("--station-key", choices=("as-is", "net.sta"), default=None,
                   help="compare stations as written (default) or reduced to NET.STA on both sides")
    s.add_argument("--columns", default=None,
                   help="column names no alias covers, e.g. model=rid,station=tid")
    _add_options(s)

    d = sub.add_parser("demo", help="score a synthetic catalogue with known properties")
    d.add_argument("--out", required=True, help="output folder (inputs/, results.zarr, tables)")
    _add_options(d)

    r = sub.add_parser("report", help="write the tables of a results store and print them")
    r.add_argument("store", help="a results.zarr written by pickscale score")
    r.add_argument("--out", help="folder for the tables and figures (default: the store's folder)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace pickscale's own tables, figures and pickscale-outputs.json in --out; without "
                        "it, pickscale refuses to replace them unless they are out of date (written from "
                        "another results store). No other file is ever replaced or deleted")
    _add_output(r)
    return parser


def _options(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, Any]:
    """Scoring options: command line over config file over defaults."""
    out: dict[str, Any] = {}
    for key in ("threshold", "tol", "residual_tol", "thresholds", "budget", "exhaustive"):
        value = getattr(args, key, None)
        out[key] = value if value is not None else config.get(key)
    return {k: v for k, v in out.items() if v is not None}


def _print_tables(frames, options_exhaustive: bool) -> None:
    from .tables import PRINTED, format_table

    titles = {
        "detection": "DETECTION at the shared threshold; recall_at_budget, best_threshold and ap over all thresholds",
        "timing": "ONSET TIME at the shared threshold (residuals matched at residual_tol; gross_error_rate beyond tol)",
        "calibration": "CALIBRATION (all picks at or above the floor)",
        "phase_quality": "PHASE QUALITY at the shared threshold (a swap: an arrival found only by a pick of the other phase)",
    }
    for name in PRINTED:
        print(f"\n{titles[name]}")
        print(format_table(frames[name]))
    if not options_exhaustive:
        print("\n_lb = lower bound: an unmatched pick may be a real arrival the analyst never marked "
              "(use --exhaustive if the reference marks every arrival).")


# --------------------------------------------------------------------------- outputs next to the store
#
# What pickscale writes in an output folder besides results.zarr: the SPEC §8 tables, the figures (in any of
# the three formats) and, last, OUTPUTS_MARKER, which names the results store the tables and figures come
# from (a fingerprint of its metadata) and whether they were all put in place.  Tables and figures are first
# written to a hidden folder inside --out and then moved into place file by file; before the first move the
# marker is rewritten as "not complete", listing every file the run may leave.  So after a kill at any point
# the outputs are either complete and name the store they come from, or recognisably out of date (marker
# not complete, or naming another store, or a store that is gone); `pickscale report` and the next
# `pickscale score` replace or remove such out-of-date files without --overwrite.  Any other existing file
# with one of these names is replaced only with --overwrite; no other file is ever touched.

OUTPUTS_MARKER = "pickscale-outputs.json"
FIGURE_FORMATS = ("png", "svg", "pdf")
_OUTPUTS_TMP = ".pickscale-outputs.tmp-"


def output_names() -> list[str]:
    """Every file ``score``/``report`` may write or remove in an output folder, besides ``results.zarr``."""
    from .plot import FIGURES
    from .tables import TABLE_NAMES

    return ([f"{name}.csv" for name in TABLE_NAMES]
            + [f"figures/{name}.{fmt}" for name in FIGURES for fmt in FIGURE_FORMATS] + [OUTPUTS_MARKER])


def store_fingerprint(store: Path) -> str:
    """Identity of a results store: a hash of its root metadata (attributes with ``created``, options,
    inputs) and of its manifest; it survives copying the store, and differs for every new store."""
    import hashlib

    from .store import MANIFEST

    h = hashlib.sha256()
    for name in ("zarr.json", MANIFEST):
        try:
            h.update((Path(store) / name).read_bytes())
        except OSError:
            h.update(b"-")
    return h.hexdigest()


def _read_marker(out_dir: Path) -> dict | None:
    import json

    try:
        marker = json.loads((out_dir / OUTPUTS_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("pickscale_outputs") == 1 else None


def _marker_store(out_dir: Path, marker: dict) -> Path:
    return Path(os.path.abspath(out_dir / str(marker.get("store", ""))))


def stale_outputs(out_dir: Path) -> list[str]:
    """The files of ``out_dir`` that pickscale wrote and that are out of date.

    Those its marker lists when the marker says they were not all put in place, or names a results store
    that is gone or has since been replaced.  Names outside :func:`output_names` are never returned.
    """
    marker = _read_marker(out_dir)
    if marker is None:
        return []
    store = _marker_store(out_dir, marker)
    current = (marker.get("complete") is True and store.is_dir()
               and marker.get("store_fingerprint") == store_fingerprint(store))
    if current:
        return []
    owned = set(output_names())
    listed = [f for f in marker.get("files", []) if isinstance(f, str) and f in owned]
    return sorted(f for f in {*listed, OUTPUTS_MARKER} if os.path.lexists(out_dir / f))


def check_outputs(out_dir: Path, overwrite: bool, *, also: Sequence[str] = ()) -> None:
    """Refuse, before any work, to replace a file pickscale would write or remove, unless ``overwrite``.

    ``also``: further names the command writes (``demo``'s inputs).  Out-of-date outputs of an earlier run
    (:func:`stale_outputs`) are not in the way.  A folder where a file is expected is never replaced.
    """
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return
    if os.path.lexists(out_dir / "figures") and not (out_dir / "figures").is_dir():
        raise StoreError(f"{out_dir / 'figures'} is a file, not a folder: pickscale writes its figures there; "
                         "move it away, or choose another --out.")
    names = [*output_names(), *also]
    folders = [n for n in names if (out_dir / n).is_dir() and not (out_dir / n).is_symlink()]
    if folders:
        raise StoreError(f"--out {out_dir} holds folders where pickscale writes files: {_listing(folders)}; "
                         "pickscale never replaces them (not even with --overwrite): move them away, or "
                         "choose another --out.")
    if overwrite:
        return
    stale = set(stale_outputs(out_dir))
    existing = [n for n in names if os.path.lexists(out_dir / n) and n not in stale]
    if existing:
        raise StoreError(f"--out {out_dir} already holds files that pickscale writes: {_listing(existing)}; "
                         "pass --overwrite to replace them (pickscale replaces only its own files and never "
                         "deletes any other), or choose another --out.")


def _listing(names: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" … ({len(names)} in all)" if len(names) > most else "")


def _write_marker(out_dir: Path, record: dict) -> None:
    import json

    path = out_dir / OUTPUTS_MARKER
    tmp = out_dir / f".{OUTPUTS_MARKER}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(record, indent=1) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def cleanup_output_temporaries(out_dir: Path) -> list[Path]:
    """Remove the hidden folders in which runs that died were writing tables and figures."""
    import re
    import shutil

    removed = []
    try:
        entries = list(Path(out_dir).iterdir())
    except OSError:
        return removed
    for path in entries:
        m = re.fullmatch(re.escape(_OUTPUTS_TMP) + r"(\d+)-[0-9a-f]+", path.name)
        if m and path.is_dir() and not path.is_symlink() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _commit_outputs(tmp: Path, out_dir: Path, new: list[str], store: Path | None) -> list[str]:
    """Move the files written in ``tmp`` into ``out_dir``; remove pickscale's files this run did not write.

    Returns the names removed.
    """
    owned = output_names()
    previous = [n for n in owned if n != OUTPUTS_MARKER and os.path.lexists(out_dir / n)]
    record = {
        "pickscale_outputs": 1,
        "complete": False,
        "pickscale_version": __version__,
        "store": os.path.relpath(store, out_dir) if store is not None else None,
        "store_fingerprint": store_fingerprint(store) if store is not None else None,
        "store_created": _store_created(store),
        "files": sorted(set(new) | set(previous)),
    }
    _write_marker(out_dir, record)  # from here until the end, the outputs are recognisably out of date
    for name in new:
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / name, out_dir / name)
    removed = [n for n in previous if n not in new]
    for name in removed:
        with contextlib.suppress(FileNotFoundError):
            (out_dir / name).unlink()
    if not any(n.startswith("figures/") for n in new):
        with contextlib.suppress(OSError):
            (out_dir / "figures").rmdir()  # only when empty
    _fsync_folder(out_dir)
    _fsync_folder(out_dir / "figures")
    _write_marker(out_dir, {**record, "complete": True, "files": sorted(new)})
    _fsync_folder(out_dir)
    return removed


def _store_created(store: Path | None) -> str | None:
    if store is None:
        return None
    try:
        from .store import _read_root_attrs

        return _read_root_attrs(Path(store)).get("created")
    except Exception:
        return None


def write_report(ds, out_dir: Path, *, fmt: str = "png", figures: bool = True, quiet: bool = False,
                 store: Path | None = None) -> None:
    """Tables (and figures) of a results Dataset into ``out_dir``; print the summary tables.

    ``pickscale score`` and ``pickscale report`` both end here, so the files
    they write are byte-identical for the same store.  They are written to a
    hidden folder inside ``out_dir`` first and then moved into place; figures
    of earlier runs (any format) are removed, and ``pickscale-outputs.json``
    names ``store``, the results store they come from (see above).
    """
    import secrets
    import shutil

    from .tables import tables, write_tables

    out_dir = Path(out_dir)
    frames = tables(ds)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f"{_OUTPUTS_TMP}{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        paths = write_tables(frames, tmp)
        new = [p.name for p in paths]
        written = list(new)
        if figures:
            import matplotlib

            matplotlib.use("Agg")
            from .plot import save_figures

            figs = save_figures(ds, tmp / "figures", format=fmt)
            new += [f"figures/{p.name}" for p in figs]
            written.append(f"figures/ ({len(figs)} {fmt})")
        removed = _commit_outputs(tmp, out_dir, new, store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not quiet:
        _print_tables(frames, bool(ds.attrs["options"]["exhaustive"]))
        print(f"\nwrote {', '.join(written)} to {out_dir}")
        if removed:
            print(f"removed {_listing(removed)}: pickscale's files of an earlier run that this run did not "
                  "write again")


def _write_outputs(ds, out_dir: Path, *, overwrite: bool, args: argparse.Namespace) -> None:
    from .store import save

    check_outputs(out_dir, overwrite)  # again, in case a file appeared during the run: still nothing written
    store = save(ds, out_dir / "results.zarr", overwrite=overwrite)
    _Run.store = store
    for line in ds.attrs.get("warnings", []):
        print(f"warning: {line}", file=sys.stderr)
    _write_report_or_fail(ds, out_dir, store, args)
    if not args.quiet:
        print(f"results store: {out_dir / 'results.zarr'}")


def _write_report_or_fail(ds, out_dir: Path, store: Path | None, args: argparse.Namespace) -> None:
    """:func:`write_report`, with a full disk or a read-only folder reported as such (exit 2)."""
    try:
        write_report(ds, out_dir, fmt=args.format, figures=not args.no_figures, quiet=args.quiet, store=store)
    except OSError as exc:
        what = exc.strerror or str(exc)
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        done = (f" The results store {store} is complete; write the tables again with "
                f"`pickscale report {store} --out FOLDER`." if _Run.store is not None else "")
        raise StoreError(f"cannot write the tables and figures to {out_dir}: {what}{where}.{done}") from None


def _existing_ancestor(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    return next(p for p in (folder, *folder.parents) if os.path.lexists(p))


def _check_target(out_dir: Path, overwrite: bool) -> None:
    """Refuse early, before any work: --out must be (or become) a writable folder whose store may be written.

    (Its tables and figures are checked once the store's lock is held and a store that a dead run moved
    aside is back: :func:`check_outputs`, still before any work.)
    """
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder: give a folder for results.zarr and the tables.")
    probe = _existing_ancestor(out_dir)
    if not probe.is_dir():
        raise StoreError(f"cannot create the folder {out_dir}: {probe} is a file, not a folder.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write to {out_dir}: {probe} is not writable.")
    _check_store(out_dir / "results.zarr", overwrite)


def _check_store(store: Path, overwrite: bool) -> None:
    from .store import _is_pickscale_store

    if not os.path.lexists(store):
        return
    if not _is_pickscale_store(Path(os.path.abspath(store))):
        raise StoreError(f"{store} exists and is not a pickscale results store; pickscale never replaces "
                         "it (not even with --overwrite): choose another --out, or remove it yourself.")
    if not overwrite:
        raise StoreError(f"{store} already exists; pass --overwrite to replace it, or choose another --out.")


def _make_folder(folder: Path) -> list[Path]:
    """``mkdir -p``; return the folders created (deepest last), to remove them if the run fails."""
    folder = Path(os.path.abspath(folder))
    missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder {folder}: {exc.strerror or exc}.") from None
    return missing


def _remove_if_empty(created: list[Path]) -> None:
    for folder in reversed(created):
        try:
            folder.rmdir()  # only ever removes an empty folder
        except OSError:
            return


def _cleanup_stale(target: Path) -> None:
    """Remove what runs that died left next to the store, and say so."""
    from .store import cleanup_stale

    had_store = target.exists()
    removed = cleanup_stale(target)
    if removed:
        names = ", ".join(p.name for p in removed[:3]) + (" …" if len(removed) > 3 else "")
        print(f"pickscale: removed {len(removed)} temporary file(s) left next to {target} by a run that did "
              f"not finish ({names}).", file=sys.stderr)
    if not had_store and target.exists():
        print(f"pickscale: put back the previous results store at {target}: a run that replaced it did not "
              "finish.", file=sys.stderr)


class _QuietUserErrors(logging.Filter):
    """Drop a worker's "Compute Failed" log of a pickscale input error.

    The error reaches the command, which prints it once, as a message; the
    worker's own log of it (with a remote traceback, once per retry) is noise
    that looks like a crash.
    """

    _NAMES = ("InputError(", "OptionsError(", "StoreError(", "PickscaleError(")

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is not ours to judge
            return True
        if not text.startswith("Compute Failed"):
            return True
        return not any(f"Exception: {quote}{name}" in text for name in self._NAMES for quote in ("'", '"'))


def _quiet_worker(dask_worker=None) -> None:
    """Set up a worker process the command started: quiet user errors, leave Ctrl-C to the command."""
    logging.getLogger("distributed.worker").addFilter(_QuietUserErrors())
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C in a terminal reaches every process of the group; the command
        # closes its workers itself, so they must not die with a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class _QuietInterruptedGather(logging.Filter):
    """Drop asyncio's "Task exception was never retrieved" for a gather that Ctrl-C abandoned."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "AllExit")


@contextlib.contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Start worker processes that Ctrl-C does not reach; this command still gets it.

    Ctrl-C in a terminal reaches every process of the group.  The command
    closes its workers itself; a worker that got the SIGINT too would die
    with a traceback of its own.  While the cluster starts, SIGINT is blocked
    in this thread, so the Dask threads started meanwhile, and every worker
    process they spawn, inherit the block; a Ctrl-C pressed meanwhile is kept
    and raised here as soon as the cluster is up.  (The multiprocessing
    resource tracker is started first: starting it later would unblock
    SIGINT in the thread that starts it.)
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    except Exception:  # no tracker on this platform: nothing to start early
        pass
    pending: list[int] = []
    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)  # delivers a pending Ctrl-C ...
        signal.signal(signal.SIGINT, previous_handler)
    if pending:  # ... which is raised now, with the cluster up (and closed by the caller)
        raise KeyboardInterrupt


@contextlib.contextmanager
def _client(workers: int | None, scheduler: str | None, closing: list | None = None, *,
            in_process: bool = False) -> Iterator[Any]:
    """The Dask client of a command: an existing scheduler, or a LocalCluster the command owns.

    ``in_process``: a small job with no scheduler named runs in this process on Dask's local
    scheduler (``None`` is yielded): starting worker processes would cost more than the job.
    """
    from .engine import cluster_client

    owned = not (scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS"))
    if owned and in_process:
        yield None
        return
    aio = logging.getLogger("asyncio")
    if not any(isinstance(f, _QuietInterruptedGather) for f in aio.filters):
        aio.addFilter(_QuietInterruptedGather())
    stack = contextlib.ExitStack()
    with stack:
        if owned:
            with _workers_ignore_sigint():
                client = stack.enter_context(cluster_client(workers=workers, scheduler=scheduler, closing=closing))
        else:
            address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
            try:
                client = stack.enter_context(cluster_client(workers=workers, scheduler=scheduler))
            except (OSError, TimeoutError, TypeError, ValueError) as exc:
                tls = ("; a tls:// scheduler needs the client's certificate and CA "
                       "(DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT, "
                       "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY; see Security in the README)"
                       if str(address).startswith("tls://") or "TLS" in str(exc) else "")
                raise OptionsError(f"cannot connect to the Dask scheduler at {address}: "
                                   f"{type(exc).__name__}: {exc}{tls}.") from None
            # Its workers are checked by `score` (pickscale.workers.check_workers).
        if owned:
            try:
                from distributed.diagnostics.plugin import WorkerPlugin

                class _Setup(WorkerPlugin):
                    name = "pickscale-cli-setup"

                    def setup(self, worker) -> None:  # noqa: D401 - runs in each worker, also after a restart
                        _quiet_worker()

                client.register_plugin(_Setup())
            except Exception:  # cosmetic only: never fail a run for it
                pass
        yield client


def _workers(value: Any, flag: str = "--workers") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionsError(f"{flag} must be a whole number >= 1; got {value!r}.")
    return value


def _run_score(args: argparse.Namespace) -> int:
    from .config import load_config
    from .engine import score, small_local_input

    config, base = ({}, None)
    if args.config:
        config, base = load_config(args.config)
    reference = args.reference or config.get("reference")
    picks = args.picks or config.get("picks")
    out = args.out or config.get("out")
    missing = [flag for flag, v in (("--reference", reference), ("--picks", picks), ("--out", out)) if not v]
    if missing:
        raise OptionsError(f"pickscale score needs {', '.join(missing)} (on the command line or in --config).")
    if base is not None:
        reference, picks, out = (_relative(v, base, given) for v, given in
                                 ((reference, args.reference), (picks, args.picks), (out, args.out)))
    overwrite = bool(args.overwrite if args.overwrite is not None else config.get("overwrite", False))
    drop_invalid = bool(args.drop_invalid if args.drop_invalid is not None else config.get("drop_invalid", False))
    reading = {"drop_invalid": drop_invalid,
               "manual_only": bool(args.manual_only if args.manual_only is not None
                                   else config.get("manual_only", False)),
               "station_key": args.station_key or config.get("station_key", "as-is"),
               "columns": args.columns or config.get("columns")}
    options = _options(args, config)
    out_dir = Path(out)
    # Fail on a bad option, a missing input or an output that cannot be written
    # before anything is created or a cluster is started.
    from .options import Options
    from .readers import resolve_sources
    from .store import reserved

    Options(**options)
    from .readers import check_columns

    check_columns(reading["columns"])
    scheduler = args.scheduler or config.get("scheduler")
    workers = _workers(args.workers if args.workers is not None else config.get("workers"))
    block_picks = _workers(args.block_picks if args.block_picks is not None else config.get("block_picks"),
                           "--block-picks")
    for flag, source in (("--reference", reference), ("--picks", picks)):
        try:
            resolve_sources(source)
        except PickscaleError as exc:
            raise type(exc)(f"{flag} {exc}") from None
    _check_target(out_dir, overwrite)
    created = _make_folder(out_dir)
    finished = False
    closing: list = []  # the local cluster stops while the results are written
    try:
        # The store's lock is held for the whole run: a second run aimed at the
        # same folder stops here, not after computing, and never mixes its
        # tables with this run's.
        with reserved(out_dir / "results.zarr") as target:
            _Run.target = target
            _cleanup_stale(target)
            cleanup_output_temporaries(out_dir)
            _check_store(target, overwrite)  # again, now that no other run can change it
            check_outputs(out_dir, overwrite)  # the tables and figures, before any work is done
            in_process = workers is None and small_local_input(reference, picks)
            with _client(workers, scheduler, closing, in_process=in_process) as client:
                ds = score(reference, picks, client=client, block_picks=block_picks, **reading, **options)
            _write_outputs(ds, out_dir, overwrite=overwrite, args=args)
        finished = True
    finally:
        for thread in closing:
            thread.join()
        if not finished:
            _remove_if_empty(created)
    return EXIT_OK


def _relative(value: Any, base: Path, from_command_line: Any) -> Any:
    # Paths in a config file are relative to the file; those typed on the command line to the shell.
    if from_command_line or not isinstance(value, str) or "://" in value or os.path.isabs(value):
        return value
    return str(base / value)


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import facts, write_inputs
    from .engine import score
    from .options import Options
    from .store import reserved
    from .tables import tables

    out_dir = Path(args.out)
    overwrite = bool(args.overwrite)
    Options(**_options(args, {}))
    workers = _workers(args.workers)
    block_picks = _workers(args.block_picks, "--block-picks")
    demo_inputs = ("inputs/reference.csv", "inputs/picks.csv")
    _check_target(out_dir, overwrite)
    _make_folder(out_dir)
    with reserved(out_dir / "results.zarr") as target:
        _Run.target = target
        _cleanup_stale(target)
        cleanup_output_temporaries(out_dir)
        _check_store(target, overwrite)
        check_outputs(out_dir, overwrite, also=demo_inputs)
        ref_path, picks_path = write_inputs(out_dir)
        print("demo: a synthetic catalogue with known answers — sharp is accurate; late finds the same "
              "arrivals 0.15 s late; liberal finds more but emits about twice the picks.")
        print(f"inputs: {ref_path} and {picks_path}")
        with _client(workers, args.scheduler) as client:
            ds = score(str(ref_path), str(picks_path), client=client, block_picks=block_picks,
                       **_options(args, {}))
            _write_outputs(ds, out_dir, overwrite=overwrite, args=args)
    print("\nWhat to see:")
    for line in facts(tables(ds)):
        print(f"  - {line}")
    return EXIT_OK


def _run_report(args: argparse.Namespace) -> int:
    from .store import open_results

    lazy = open_results(args.store)
    out_dir = Path(args.out) if args.out else Path(args.store).resolve().parent
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder.")
    try:
        ds = lazy.load()
    except Exception as exc:  # the checks passed but a chunk is damaged or missing
        raise StoreError(f"results store {args.store} is damaged: {type(exc).__name__}: {exc}; "
                         "re-run `pickscale score` to write it again.") from None
    cleanup_output_temporaries(out_dir)
    check_outputs(out_dir, args.overwrite)  # before writing anything: nothing is written on a refusal
    _write_report_or_fail(ds, out_dir, Path(os.path.abspath(args.store)), args)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pickscale`` command; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    run = {"score": _run_score, "demo": _run_demo, "report": _run_report}[args.command]
    warnings.filterwarnings("ignore", category=FutureWarning)
    # The command prints the run's warnings itself, from the Dataset's attributes.
    from .errors import PickscaleWarning

    warnings.filterwarnings("ignore", category=PickscaleWarning)
    _Run.reset()
    with _sigterm_as_interrupt():
        try:
            return run(args)
        except PickscaleError as exc:
            print(f"pickscale: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
            print(f"pickscale: {what}; {_Run.interrupted_note()}", file=sys.stderr)
            return EXIT_TERMINATED if isinstance(exc, _Terminated) else EXIT_INTERRUPTED
        except Exception:  # an internal error: say so, with the traceback a bug report needs
            print("pickscale: internal error (please report it with the traceback below):", file=sys.stderr)
            traceback.print_exc()
            return EXIT_INTERNAL


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM unwinds like Ctrl-C (temporary stores removed, cluster closed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
