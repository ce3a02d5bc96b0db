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
from pathlib import Path
from typing import Any, Iterator, Sequence

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
                    f"write them again with `pickscale report {cls.store}`.")
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
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an existing results store")
    _add_output(p)


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
    s.add_argument("--out", help="output folder (results.zarr, tables)")
    s.add_argument("--config", help="a TOML study file; command-line options override it")
    s.add_argument("--drop-invalid", action="store_true", default=None, help="drop invalid rows with a warning")
    _add_options(s)

    d = sub.add_parser("demo", help="score a synthetic catalogue with known properties")
    d.add_argument("--out", required=True, help="output folder (inputs/, results.zarr, tables)")
    _add_options(d)

    r = sub.add_parser("report", help="write the tables of a results store and print them")
    r.add_argument("store", help="a results.zarr written by pickscale score")
    r.add_argument("--out", help="folder for the tables and figures (default: the store's folder)")
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


def write_report(ds, out_dir: Path, *, fmt: str = "png", figures: bool = True, quiet: bool = False) -> None:
    """Tables (and figures) of a results Dataset into ``out_dir``; print the summary tables.

    ``pickscale score`` and ``pickscale report`` both end here, so the files
    they write are byte-identical for the same store.
    """
    from .tables import tables, write_tables

    frames = tables(ds)
    paths = write_tables(frames, out_dir)
    written = [p.name for p in paths]
    if figures:
        import matplotlib

        matplotlib.use("Agg")
        from .plot import save_figures

        figs = save_figures(ds, out_dir / "figures", format=fmt)
        written.append(f"figures/ ({len(figs)} {fmt})")
    if not quiet:
        _print_tables(frames, bool(ds.attrs["options"]["exhaustive"]))
        print(f"\nwrote {', '.join(written)} to {out_dir}")


def _write_outputs(ds, out_dir: Path, *, overwrite: bool, args: argparse.Namespace) -> None:
    from .store import save

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
        write_report(ds, out_dir, fmt=args.format, figures=not args.no_figures, quiet=args.quiet)
    except OSError as exc:
        what = exc.strerror or str(exc)
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        done = (f" The results store {store} is complete; write the tables again with "
                f"`pickscale report {store} --out FOLDER`." if store is not None else "")
        raise StoreError(f"cannot write the tables and figures to {out_dir}: {what}{where}.{done}") from None


def _existing_ancestor(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    return next(p for p in (folder, *folder.parents) if os.path.lexists(p))


def _check_target(out_dir: Path, overwrite: bool) -> None:
    """Refuse early, before any work: --out must be (or become) a writable folder whose store may be written."""
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
def _client(workers: int | None, scheduler: str | None, closing: list | None = None) -> Iterator[Any]:
    """The Dask client of a command: an existing scheduler, or a LocalCluster the command owns."""
    from .engine import cluster_client

    owned = not (scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS"))
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
    from .engine import score

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
    options = _options(args, config)
    out_dir = Path(out)
    # Fail on a bad option, a missing input or an output that cannot be written
    # before anything is created or a cluster is started.
    from .options import Options
    from .readers import resolve_sources
    from .store import reserved

    Options(**options)
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
            _check_store(target, overwrite)  # again, now that no other run can change it
            with _client(workers, scheduler, closing) as client:
                ds = score(reference, picks, drop_invalid=drop_invalid, client=client, block_picks=block_picks,
                           **options)
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
    _check_target(out_dir, overwrite)
    _make_folder(out_dir)
    with reserved(out_dir / "results.zarr") as target:
        _Run.target = target
        _cleanup_stale(target)
        _check_store(target, overwrite)
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
    try:
        ds = lazy.load()
    except Exception as exc:  # the checks passed but a chunk is damaged or missing
        raise StoreError(f"results store {args.store} is damaged: {type(exc).__name__}: {exc}; "
                         "re-run `pickscale score` to write it again.") from None
    out_dir = Path(args.out) if args.out else Path(args.store).resolve().parent
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder.")
    _write_report_or_fail(ds, out_dir, None, args)
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
