"""The command line: subcommands, options and their help."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from .. import __version__
from .state import EXIT_USAGE

__all__ = ["build_parser"]

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors: exit 2 with the message, as argparse does
        self.print_usage(sys.stderr)
        print(f"pickscale: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None


def _budgets(text: str) -> int | list[int]:
    """``--budget N`` or ``--budget 50,100,200`` (several: one row per budget in budgets.csv)."""
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of picks, or several separated by commas, "
                                         f"got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected a whole number of picks")
    return values[0] if len(values) == 1 else values


def _threshold(text: str) -> float | dict[str, float]:
    """``--threshold 0.3`` (both phases) or ``--threshold P=0.5,S=0.3`` (one per phase, SPEC §2).

    The phases and the range are checked by :class:`pickscale.options.Options` (a usage error naming the flag).

    Examples
    --------
    >>> _threshold("0.25"), _threshold("P=0.5, S=0.3")
    (0.25, {'P': 0.5, 'S': 0.3})
    """
    if "=" not in text:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in [0, 1], or one per phase as P=0.5,S=0.3; "
                                             f"got {text!r}") from None
    out: dict[str, float] = {}
    for part in text.split(","):
        phase, _, value = (s.strip() for s in part.partition("="))
        if not phase or "=" not in part:
            raise argparse.ArgumentTypeError(f"expected PHASE=VALUE pairs separated by commas, as P=0.5,S=0.3; "
                                             f"got {text!r}")
        if phase in out:
            raise argparse.ArgumentTypeError(f"{phase} is given twice in {text!r}")
        try:
            out[phase] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number after {phase}=, got {value!r}") from None
    return out


def _add_ci(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ci", type=float, nargs="?", const=0.95, default=None, metavar="LEVEL",
                   help="bootstrap intervals over stations (1,000 draws, seed 0) at LEVEL (default 0.95): "
                        "<metric>_lo/_hi columns, error bars, and model_differences.csv")


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=_threshold, default=None, metavar="θ|P=θ,S=θ",
                   help="shared threshold the tables are read at (default 0.3); one per phase as P=0.5,S=0.3")
    p.add_argument("--tol", type=float, default=None, help="detection tolerance in seconds (default 0.5)")
    p.add_argument("--residual-tol", type=float, default=None,
                   help="residual matching tolerance in seconds (default 2.0)")
    p.add_argument("--thresholds", type=_floats, default=None,
                   help="sweep grid, comma-separated, ascending (default 0.02, 0.04, …, 0.94)")
    p.add_argument("--budget", type=_budgets, default=None,
                   help="matched pick budget (default: min(n_reference, least emitted)); several, e.g. "
                        "50,100,200: recall at each in budgets.csv (the first in detection.csv)")
    _add_ci(p)
    p.add_argument("--exhaustive", action="store_true", default=None,
                   help="the reference marks every arrival: precision and f1 are exact (no _lb)")
    p.add_argument("--time-bin", default=None, metavar="FREQ",
                   help="also count per time bin at the shared threshold (pandas offset alias: 1h, 1D, 7D, MS for "
                        "calendar months …): over_time.csv and figures/recall_over_time")
    p.add_argument("--tols", type=_floats, default=None, metavar="S,S,…",
                   help="also score detection at each of these tolerances in seconds, ascending, each <= "
                        "--residual-tol (e.g. 0.1,0.25,0.5,1.0): tolerance.csv and figures/recall_vs_tolerance")
    p.add_argument("--group-by", default=None, metavar="COLUMN[:E,E,…]",
                   help="also count per group of arrivals at the shared threshold: a numeric column cut at these "
                        "edges (magnitude:0,1,2,3; open end bins) or a text column (network); a missing value is "
                        "its own group: by_group.csv and figures/recall_by_group")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: one per core)")
    p.add_argument("--scheduler", default=None,
                   help="address of an existing Dask scheduler, e.g. tcp://host:8786 (or set DASK_SCHEDULER_ADDRESS)")
    p.add_argument("--scheduler-file", default=None, metavar="FILE",
                   help="the file an existing Dask scheduler wrote its address to (dask scheduler --scheduler-file "
                        "FILE, dask-mpi), waited for up to 30 s (or set DASK_SCHEDULER_FILE)")
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
    p.add_argument("--quiet", action="store_true", help="print no verdict and no tables")
    p.add_argument("--verbose", action="store_true",
                   help="print the summary tables before the verdict (they are always in the CSV files)")
    p.add_argument("--storage-option", action="append", default=None, metavar="KEY=VALUE",
                   help="an fsspec storage option for inputs and outputs on object storage (repeat it): "
                        "endpoint_url=http://host:9000, key=…, secret=…, anon=true, "
                        "client_kwargs.region_name=…; over the study file's storage_options and the environment")


def build_parser() -> argparse.ArgumentParser:
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
    s.add_argument("--coverage", default=None, metavar="FILE",
                   help="the windows of data the models were run on (CSV/Parquet: station, start, end; optional "
                        "dataset, model): arrivals and picks outside the windows every model of their dataset "
                        "was run on are excluded and counted")
    s.add_argument("--stations", default=None, metavar="FILE",
                   help="station attributes (CSV/Parquet: station, optional dataset, then columns such as "
                        "instrument or site_class) that --group-by may name")
    s.add_argument("--select-on", default=None, metavar="before:DATE|stations:FRACTION[:SEED]",
                   help="out-of-sample choice (SPEC §16): choose the best threshold and the matched budget on the "
                        "arrivals and picks before DATE (or on a seeded FRACTION of each dataset's stations) and "
                        "report recall, precision and f1 there on the rest: *_oos columns in detection.csv")
    _add_options(s)

    d = sub.add_parser("demo", help="score a synthetic catalogue with known properties")
    d.add_argument("--out", required=True, help="output folder (inputs/, results.zarr, tables)")
    _add_options(d)

    e = sub.add_parser(
        "extend", help="add new models, datasets or a later stretch of time to a results store",
        description="Add new models, datasets or a later stretch of time to the results store in DIR, scored with "
                    "the store's options (given ones must agree), and rewrite its tables and figures. A store "
                    "scored with --coverage or --group-by is not extended, and an extension takes no --coverage or "
                    "--stations: score all the inputs again with `pickscale score` (SPEC §11).")
    e.add_argument("dir", help="the folder of a results store (its results.zarr, tables and figures)")
    e.add_argument("--reference", required=True, help="reference arrivals of the new inputs")
    e.add_argument("--picks", required=True, help="picks of the new inputs (new models, datasets or time)")
    e.add_argument("--replace", action="store_true",
                   help="score again a (dataset, model) already stored over an overlapping span, in place of it")
    e.add_argument("--drop-invalid", action="store_true", default=None, help="drop invalid rows with a warning")
    e.add_argument("--manual-only", action="store_true", default=None,
                   help="from a bulletin (QuakeML …), keep only picks whose evaluation mode is manual")
    e.add_argument("--station-key", choices=("as-is", "net.sta"), default=None,
                   help="compare stations as written (default) or reduced to NET.STA on both sides")
    e.add_argument("--columns", default=None, help="column names no alias covers, e.g. model=rid,station=tid")
    _add_options(e)  # scoring options come from the store: given ones must agree with it

    r = sub.add_parser("report", help="write the tables of a results store and print them")
    r.add_argument("store", help="a results.zarr written by pickscale score")
    r.add_argument("--out", help="folder for the tables and figures (default: the store's folder)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace pickscale's own tables, figures and pickscale-outputs.json in --out; without "
                        "it, pickscale refuses to replace them unless they are out of date (written from "
                        "another results store). No other file is ever replaced or deleted")
    _add_ci(r)
    _add_output(r)
    return parser
