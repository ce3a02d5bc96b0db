"""The ``pickscale`` command: ``score``, ``demo`` and ``report``.

Exit status: 0 on success, 2 on bad input or usage (a message, no
traceback), 1 on an internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .errors import OptionsError, PickscaleError

__all__ = ["main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2


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

    save(ds, out_dir / "results.zarr", overwrite=overwrite)
    for line in ds.attrs.get("warnings", []):
        print(f"warning: {line}", file=sys.stderr)
    write_report(ds, out_dir, fmt=args.format, figures=not args.no_figures, quiet=args.quiet)
    if not args.quiet:
        print(f"results store: {out_dir / 'results.zarr'}")


def _check_target(out_dir: Path, overwrite: bool) -> None:
    """Refuse early, before any work, when the store exists or the folder cannot be written."""
    from .errors import StoreError

    store = out_dir / "results.zarr"
    if store.exists() and not overwrite:
        raise StoreError(f"{store} already exists; pass --overwrite to replace it, or choose another --out.")
    probe = out_dir if out_dir.exists() else next((p for p in out_dir.parents if p.exists()), Path("."))
    if not os.access(probe, os.W_OK):
        raise StoreError(f"cannot write to {out_dir}: {probe} is not writable.")


def _run_score(args: argparse.Namespace) -> int:
    from .config import load_config
    from .engine import cluster_client, score

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
    _check_target(out_dir, overwrite)
    # Fail on a missing input or a bad option before a cluster is started.
    from .options import Options
    from .readers import resolve_sources

    Options(**options)
    resolve_sources(reference)
    resolve_sources(picks)
    scheduler = args.scheduler or config.get("scheduler")
    workers = args.workers or config.get("workers")
    with cluster_client(workers=workers, scheduler=scheduler) as client:
        ds = score(reference, picks, drop_invalid=drop_invalid, client=client, **options)
        out_dir.mkdir(parents=True, exist_ok=True)
        _write_outputs(ds, out_dir, overwrite=overwrite, args=args)
    return EXIT_OK


def _relative(value: Any, base: Path, from_command_line: Any) -> Any:
    # Paths in a config file are relative to the file; those typed on the command line to the shell.
    if from_command_line or not isinstance(value, str) or "://" in value or os.path.isabs(value):
        return value
    return str(base / value)


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import facts, write_inputs
    from .engine import cluster_client, score
    from .tables import tables

    out_dir = Path(args.out)
    overwrite = bool(args.overwrite)
    _check_target(out_dir, overwrite)
    ref_path, picks_path = write_inputs(out_dir)
    print("demo: a synthetic catalogue with known answers — sharp is accurate; late finds the same "
          "arrivals 0.15 s late; liberal finds more but emits about twice the picks.")
    print(f"inputs: {ref_path} and {picks_path}")
    with cluster_client(workers=args.workers, scheduler=args.scheduler) as client:
        ds = score(str(ref_path), str(picks_path), client=client, **_options(args, {}))
        _write_outputs(ds, out_dir, overwrite=overwrite, args=args)
    print("\nWhat to see:")
    for line in facts(tables(ds)):
        print(f"  - {line}")
    return EXIT_OK


def _run_report(args: argparse.Namespace) -> int:
    from .store import open_results

    ds = open_results(args.store).load()
    out_dir = Path(args.out) if args.out else Path(args.store).resolve().parent
    write_report(ds, out_dir, fmt=args.format, figures=not args.no_figures, quiet=args.quiet)
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
    try:
        return run(args)
    except PickscaleError as exc:
        print(f"pickscale: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("pickscale: interrupted; no results store was written.", file=sys.stderr)
        return 130
    except Exception:  # an internal error: say so, with the traceback a bug report needs
        print("pickscale: internal error (please report it with the traceback below):", file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
