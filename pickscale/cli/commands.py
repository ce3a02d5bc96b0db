"""The three commands: each turns its arguments into a run of :mod:`pickscale.cli.flow` and reports it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .flow import run_into, write_outputs
from .runtime import command_client
from .state import EXIT_OK
from .study import scoring_options, study_of, whole_number

__all__ = ["score_command", "demo_command", "report_command", "COMMANDS"]


def score_command(args: argparse.Namespace) -> int:
    """``pickscale score``: score the study's inputs into ``--out``."""
    from ..engine import score, small_local_input

    study = study_of(args)

    def produce(closing: list) -> Any:
        in_process = study.workers is None and small_local_input(study.reference, study.picks)
        with command_client(study.workers, study.scheduler, closing, in_process=in_process) as client:
            return score(study.reference, study.picks, client=client, **study.score_keywords())

    run_into(study.out_dir, overwrite=study.overwrite, produce=produce, fmt=args.format,
             figures=not args.no_figures, quiet=args.quiet)
    return EXIT_OK


def demo_command(args: argparse.Namespace) -> int:
    """``pickscale demo``: the synthetic catalogue with known answers, scored, and what to see in it."""
    from ..demo import facts, write_inputs
    from ..engine import score
    from ..options import Options
    from ..report.tables import tables

    out_dir = Path(args.out)
    options = scoring_options(args, {})
    Options(**options)
    workers = whole_number(args.workers, "--workers")
    block_picks = whole_number(args.block_picks, "--block-picks")

    def produce(closing: list) -> Any:
        ref_path, picks_path = write_inputs(out_dir)
        print("demo: a synthetic catalogue with known answers — sharp is accurate; late finds the same "
              "arrivals 0.15 s late; liberal finds more but emits about twice the picks.")
        print(f"inputs: {ref_path} and {picks_path}")
        # The demo is small: it runs in this process unless workers or a scheduler are asked for.
        with command_client(workers, args.scheduler, closing, in_process=workers is None) as client:
            return score(str(ref_path), str(picks_path), client=client, block_picks=block_picks, **options)

    ds = run_into(out_dir, overwrite=bool(args.overwrite), produce=produce, fmt=args.format,
                  figures=not args.no_figures, quiet=args.quiet,
                  also=("inputs/reference.csv", "inputs/picks.csv"))
    print("\nWhat to see:")
    for line in facts(tables(ds)):
        print(f"  - {line}")
    return EXIT_OK


def report_command(args: argparse.Namespace) -> int:
    """``pickscale report``: the tables and figures of a results store, from the store alone."""
    from ..report.outputs import check_outputs, cleanup_output_temporaries
    from ..store import open_results

    ds = open_results(args.store)  # checked against its manifest and loaded: one consistent snapshot
    out_dir = Path(args.out) if args.out else Path(args.store).resolve().parent
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder.")
    cleanup_output_temporaries(out_dir)
    check_outputs(out_dir, args.overwrite)  # before writing anything: nothing is written on a refusal
    write_outputs(ds, out_dir, Path(os.path.abspath(args.store)), fmt=args.format, figures=not args.no_figures,
                  quiet=args.quiet)
    return EXIT_OK


COMMANDS = {"score": score_command, "demo": demo_command, "report": report_command}
