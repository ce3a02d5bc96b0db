"""The command line: subcommands, options and their help."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from ..settings import flags_of
from .state import EXIT_USAGE

__all__ = ["build_parser", "add_settings"]

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


#: The value parsers a :class:`pickscale.settings.Flag` names.
_PARSERS: dict[str, Callable[[str], Any]] = {"float": float, "int": int, "floats": _floats, "budgets": _budgets,
                                             "threshold": _threshold}


def _defaults() -> dict[str, Any]:
    from ..options import Options  # lazy: options brings numpy, which `import pickscale.cli` does not load

    return {f.name: f.default for f in dataclasses.fields(Options) if f.init}


def add_settings(p: argparse.ArgumentParser, command: str) -> None:
    """The flags of ``command``, generated from the declaration of every setting (:mod:`pickscale.settings`).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_settings(p, "report")
    >>> p.parse_args(["--ci", "--format", "svg"]).ci, p.parse_args([]).overwrite
    (0.95, None)
    """
    defaults = _defaults()
    for setting in flags_of(command):
        flag = setting.cli
        assert flag is not None
        kwargs: dict[str, Any] = {"help": flag.help_in.get(command, flag.help).format(
            default=defaults.get(setting.name))}
        if flag.switch:
            kwargs["action"] = "store_true"
        elif flag.repeat:
            kwargs["action"] = "append"
        if flag.parse is not None:
            kwargs["type"] = _PARSERS[flag.parse]
        for name in ("metavar", "choices", "nargs", "const", "dest"):
            if getattr(flag, name) is not None:
                kwargs[name] = getattr(flag, name)
        if flag.none_default or flag.default is not None:
            kwargs["default"] = flag.default
        if command in flag.required_in:
            kwargs["required"] = True
        p.add_argument(flag.flag or "--" + setting.name.replace("_", "-"), **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pickscale", description="Score seismic phase pickers against bulletin arrivals.")
    parser.add_argument("--version", action="version", version=f"pickscale {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("score", help="score picks against reference arrivals")
    add_settings(s, "score")

    d = sub.add_parser("demo", help="score a synthetic catalogue with known properties")
    add_settings(d, "demo")

    e = sub.add_parser(
        "extend", help="add new models, datasets or a later stretch of time to a results store",
        description="Add new models, datasets or a later stretch of time to the results store in DIR, scored with "
                    "the store's options (given ones must agree), and rewrite its tables and figures. A store "
                    "scored with --coverage or --group-by is not extended, and an extension takes no --coverage or "
                    "--stations: score all the inputs again with `pickscale score` (SPEC §11).")
    e.add_argument("dir", help="the folder of a results store (its results.zarr, tables and figures)")
    e.add_argument("--replace", action="store_true",
                   help="score again a (dataset, model) already stored over an overlapping span, in place of it")
    add_settings(e, "extend")  # scoring options come from the store: given ones must agree with it

    r = sub.add_parser("report", help="write the tables of a results store and print them")
    r.add_argument("store", help="a results.zarr written by pickscale score")
    add_settings(r, "report")

    pr = sub.add_parser(
        "predict", help="write a reference predicted from travel times (TauP), for data no analyst picked",
        description="Write the first P and first S of each event at each station, predicted with ObsPy's TauP, as "
                    "a reference CSV that pickscale score reads (SPEC §17). Score against it with a wide --tol "
                    "(2 s or more): the model's and the origins' errors are in every residual.")
    pr.add_argument("--events", required=True,
                    help="events: CSV/Parquet (time, latitude, longitude, depth_km; optional event, magnitude) or "
                         "QuakeML (each event's preferred origin)")
    pr.add_argument("--stations", required=True,
                    help="stations: the --stations table of score with latitude and longitude columns, or "
                         "StationXML (station = NET.STA)")
    pr.add_argument("--model", default="iasp91", help="TauP model: iasp91 (default), ak135, prem … or a .npz path")
    pr.add_argument("--phases", default="P,S", help="first arrivals to predict: P, S or P,S (default)")
    pr.add_argument("--dataset", default=None, help="a dataset name written on every row (default: none, 'all')")
    pr.add_argument("--max-distance-deg", type=float, default=None, metavar="DEG",
                    help="leave out event-station pairs farther apart than DEG degrees")
    pr.add_argument("--out", required=True, help="the reference CSV file to write")
    pr.add_argument("--overwrite", action="store_true", help="replace --out if it exists")

    c = sub.add_parser(
        "compare", help="compare two pick sets of one model (production against a rerun) per station-day",
        description="Match two pick sets of the same model one to one within --tol, closest pairs first (SPEC §18), "
                    "and write per (dataset, model, station, phase, UTC day) n_a, n_b, matched, only_a, only_b, "
                    "max_dconf and max_dt to compare.csv; print where they differ.")
    c.add_argument("a", help="pick set A (e.g. production): CSV/Parquet file, folder, glob or URL")
    c.add_argument("b", help="pick set B (e.g. the rerun), in any picks format pickscale reads")
    c.add_argument("--tol", type=float, default=0.1, help="seconds within which two picks are the same pick "
                                                          "(default 0.1, at most 10)")
    c.add_argument("--out", default=None, metavar="DIR|FILE.csv",
                   help="a folder for compare.csv, or the CSV file to write (default ./compare.csv)")
    c.add_argument("--overwrite", action="store_true", help="replace the table if it exists")
    c.add_argument("--columns", default=None, help="column names no alias covers, e.g. model=rid,station=tid")
    c.add_argument("--station-key", choices=("as-is", "net.sta"), default="as-is",
                   help="compare stations as written (default) or reduced to NET.STA")
    c.add_argument("--drop-invalid", action="store_true", help="drop invalid rows with a warning")
    return parser
