"""The ``pickscale`` command: ``score``, ``extend``, ``demo`` and ``report``.

The command only parses (:mod:`~pickscale.cli.parser`, :mod:`~pickscale.cli.study`), runs the one flow of
:mod:`~pickscale.cli.flow` (:mod:`~pickscale.cli.commands`) and reports: a library error becomes a message
in the command's own terms (its flags) and exit status 2, never a traceback; anything else is a bug in
pickscale and exits with status 1.  Ctrl-C exits 130, SIGTERM 143, each after cleaning up
(:mod:`~pickscale.cli.runtime`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from ..errors import InputError, OptionsError, PickscaleError, PickscaleWarning  # noqa: F401 (OptionsError: the doctest)
from ..report.figures.helper import helper_started
from .allocator import limit_arenas
from .parser import build_parser
from .runtime import sigterm_as_interrupt
from .state import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, Run, Terminated

__all__ = ["main", "build_parser", "in_cli_terms"]

# The name the tests and older scripts use for the parser.
_parser = build_parser


#: Option names that cannot be mistaken for anything else in a message: said as flags wherever they stand
#: (an error raised on a worker reaches the command as text, without its ``options``).
_UNMISTAKABLE = ("drop_invalid", "residual_tol", "station_key", "manual_only", "block_picks")


def in_cli_terms(exc: BaseException) -> str:
    """The message of a library error with the options it names said as this command's flags.

    Examples
    --------
    >>> in_cli_terms(OptionsError("residual_tol (0.2 s) must be >= tol (0.5 s).", options=("residual_tol", "tol")))
    '--residual-tol (0.2 s) must be >= --tol (0.5 s).'
    >>> in_cli_terms(InputError("Fix these rows in /data/drop_invalid.csv, or rerun with drop_invalid."))
    'Fix these rows in /data/drop_invalid.csv, or rerun with --drop-invalid.'
    """
    text = str(exc)
    # Input errors may come from a worker as text: their options are named by the unmistakable words.
    # (An OptionsError about a study file names its TOML keys, which are not flags.)
    unmistakable = _UNMISTAKABLE if isinstance(exc, InputError) else ()
    for name in dict.fromkeys((*getattr(exc, "options", ()), *unmistakable)):
        # A whole word, not part of a path or a file name.
        text = re.sub(rf"(?<![\w/.-]){re.escape(name)}(?!\w|\.\w)", "--" + name.replace("_", "-"), text)
    return text


def _closed_pipe() -> int:
    """stdout's reader went away (`pickscale score … | head`): end quietly, as command-line tools do.

    Everything was written before the tables were printed.  stdout is pointed at /dev/null so that
    Python's own flush at exit does not complain; the status is 141 (128 + SIGPIPE), as a shell reports
    a tool that the closed pipe stopped.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured): nothing to quiet
        pass
    return EXIT_CLOSED_PIPE


#: Exit status when stdout was closed by its reader.
EXIT_CLOSED_PIPE = 141


@contextlib.contextmanager
def _collection_paused(*, own_process: bool) -> Iterator[None]:
    """The cyclic garbage collector off while the command's libraries load.

    Importing pandas, Dask, zarr and xarray makes a few hundred thousand objects that live as long as the
    process, and the collector, started every 700 allocations, walks the ever larger older generations again
    and again while they load: ~0.1 s of a small study's 1.3 s (``benchmarks/small_study.py``).
    In a process of its own (the console script) what was loaded is then frozen (:func:`gc.freeze`): the
    module objects are never garbage, and later full collections (the figures' forked children too) skip
    them.  Not when ``main`` is called from Python: freezing would keep the caller's garbage of the moment
    for good.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if own_process:
            gc.freeze()
        if enabled:
            gc.enable()


#: The commands that draw figures (unless ``--no-figures``).
_FIGURE_COMMANDS = ("score", "extend", "demo", "report")


def _draws_figures(args: object) -> bool:
    """Whether the parsed command draws figures: then a process loading matplotlib is started with it, in the
    console script (:mod:`pickscale.report.figures.helper`; not when ``main`` is called from Python, where a
    fork would copy the caller's process).

    Examples
    --------
    >>> import argparse
    >>> _draws_figures(argparse.Namespace(command="score", no_figures=False)), _draws_figures(
    ...     argparse.Namespace(command="compare", no_figures=False))
    (True, False)
    """
    return getattr(args, "command", None) in _FIGURE_COMMANDS and not getattr(args, "no_figures", True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pickscale`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    limit_arenas()  # (before the command starts its threads: the client's memory, issue 22)
    warnings.filterwarnings("ignore", category=FutureWarning)
    # The command prints the run's warnings itself, from the Dataset's attributes.
    warnings.filterwarnings("ignore", category=PickscaleWarning)
    Run.reset()
    with sigterm_as_interrupt(), helper_started(enabled=argv is None and _draws_figures(args)):
        try:
            with _collection_paused(own_process=argv is None):
                # lazy: the commands import pandas and xarray (about a second; Dask and zarr as they need them):
                # not for `pickscale --help`, and a Ctrl-C while they load ends as any other interruption does
                # (exit 130, no traceback).
                from .commands import COMMANDS

            return COMMANDS[args.command](args)
        except BrokenPipeError:
            return _closed_pipe()
        except PickscaleError as exc:
            print(f"pickscale: error: {in_cli_terms(exc)}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            print(f"pickscale: {what}; {Run.interrupted_note()}", file=sys.stderr)
            return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
        except Exception:  # an internal error: say so, with the traceback a bug report needs
            print("pickscale: internal error (please report it with the traceback below):", file=sys.stderr)
            traceback.print_exc()
            return EXIT_INTERNAL
