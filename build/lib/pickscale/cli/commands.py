"""The commands: each turns its arguments into a run of :mod:`pickscale.cli.flow` and reports it."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextvars
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import PickscaleError, StoreError
from ..io import check_columns, resolve_sources
from ..io.storage import using
from ..options import Options
from ..report.outputs import check_outputs, cleanup_output_temporaries
from ..report.tables import tables
from ..results.bootstrap import bootstrap
from .compare import run_compare  # the body of `pickscale compare` (cli/compare.py)
from .flow import Closing, RemoteFolder, is_remote_folder, out_folder, run_into, write_outputs
from .predict import predict_command
from .remote import report_remote, run_into_remote
from .runtime import command_client
from .state import EXIT_OK
from .study import ci_level, scoring_options, storage_of, study_of, where_to_run, whole_number

__all__ = ["score_command", "demo_command", "report_command", "extend_command", "closing_summary", "COMMANDS"]


def run_into_out(out_dir: Path, **flow: Any) -> Any:
    """:func:`pickscale.cli.flow.run_into` for a local ``--out``, its flow for a bucket
    (:func:`pickscale.cli.remote.run_into_remote`) for ``--out URL``."""
    if isinstance(out_dir, RemoteFolder):
        return run_into_remote(out_dir, **flow)
    return run_into(out_dir, **flow)


def score_command(args: argparse.Namespace) -> int:
    """``pickscale score``: score the study's inputs into ``--out``."""
    from ..engine import score, small_local_input  # lazy: engine/ brings Dask, for score, demo and extend only

    study = study_of(args)
    level = study.ci
    started = time.monotonic()

    def produce(closing: Closing) -> Any:
        in_process = study.workers is None and small_local_input(study.reference, study.picks)
        client = closing.hold(command_client(study.workers, study.scheduler, closing, in_process=in_process,
                                             scheduler_file=study.scheduler_file))
        ds = score(study.reference, study.picks, client=client, **study.score_keywords())
        return _with_ci(ds, level)

    with using(study.reading.get("storage_options")):  # the inputs', the store's and the tables' alike
        ds = run_into_out(study.out_dir, overwrite=study.overwrite, produce=produce, fmt=args.format,
                          figures=not args.no_figures, quiet=args.quiet, verbose=args.verbose)
    if not args.quiet:
        print(closing_summary(ds, study.out_dir, time.monotonic() - started, figures=not args.no_figures),
              file=sys.stderr)
    return EXIT_OK


def _with_ci(ds: Any, level: float | None) -> Any:
    """``--ci``: the bootstrap intervals of SPEC §12 (stored with the results); unchanged without it."""
    if level is None:
        return ds
    return bootstrap(ds, level=level)


def closing_summary(ds: Any, out_dir: Path, seconds: float, *, figures: bool = True) -> str:
    """What a run did, in a few lines: rows read, excluded and why, models, stations, wall time, outputs.

    After ``pickscale extend`` the rows read and excluded are the extension's own (its last entry in
    ``attrs["extensions"]``), and what was scored is the whole store.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset(coords={"dataset": ["d"], "model": ["m", "n"], "station": ["A", "B", "C"]}, attrs={
    ...     "inputs": {"reference": {"rows_read": 10}, "picks": {"rows_read": 2000}},
    ...     "exclusions": {"picks_below_floor": 5, "reference_outside_span": 0}})
    >>> print(closing_summary(ds, Path("out"), 12.34))
    summary: read 10 reference row(s) and 2,000 pick row(s); excluded: 5 picks below floor
      scored 1 dataset(s), 2 model(s), 3 station(s) in 12.3 s; outputs in out (results.zarr, tables, figures)
    >>> ds.attrs["extensions"] = [{"inputs": {"reference": {"rows_read": 4}, "picks": {"rows_read": 30}},
    ...                            "exclusions": {}}]
    >>> print(closing_summary(ds, Path("out"), 1.0, figures=False))
    summary: read 4 reference row(s) and 30 pick row(s) for the extension; nothing excluded
      the store holds 1 dataset(s), 2 model(s), 3 station(s); 1.0 s; outputs in out (results.zarr, tables)
    """
    extensions = ds.attrs.get("extensions") or []
    facts = extensions[-1] if extensions else ds.attrs
    inputs = facts.get("inputs", {})
    read = (f"read {inputs.get('reference', {}).get('rows_read', 0):,} reference row(s) and "
            f"{inputs.get('picks', {}).get('rows_read', 0):,} pick row(s)" + (" for the extension" if extensions
                                                                              else ""))
    out = {k: v for k, v in facts.get("exclusions", {}).items() if v}
    excluded = ("; excluded: " + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in out.items())
                if out else "; nothing excluded")
    sizes = {name: int(ds.sizes.get(name, 0)) for name in ("dataset", "model", "station")}
    what = "results.zarr, tables, figures" if figures else "results.zarr, tables"
    scored = (f"the store holds {sizes['dataset']} dataset(s), {sizes['model']} model(s), {sizes['station']} "
              f"station(s); {seconds:.1f} s" if extensions else
              f"scored {sizes['dataset']} dataset(s), {sizes['model']} model(s), {sizes['station']} station(s) in "
              f"{seconds:.1f} s")
    return f"summary: {read}{excluded}\n  {scored}; outputs in {out_dir} ({what})"


def demo_command(args: argparse.Namespace) -> int:
    """``pickscale demo``: the synthetic catalogue with known answers, scored, and what to see in it."""
    # lazy: the demo's catalogue (and scope/, which it groups with) and engine/ (Dask) for `pickscale demo` only
    from ..demo import facts, write_inputs
    from ..engine import score

    out_dir = out_folder(args.out)  # a URL is refused before any work
    options = scoring_options(args, {})
    Options(**options)
    level = ci_level(getattr(args, "ci", None))
    where = where_to_run(args)  # --scheduler, --scheduler-file or --workers, checked
    workers = where["workers"]
    block_picks = whole_number(args.block_picks, "--block-picks")

    def produce(closing: Closing) -> Any:
        ref_path, picks_path = write_inputs(out_dir)
        print("demo: a synthetic catalogue with known answers — sharp is accurate; late finds the same "
              "arrivals 0.15 s late; liberal finds more but emits about twice the picks.")
        print(f"inputs: {ref_path} and {picks_path}")
        # The demo is small: it runs in this process unless workers or a scheduler are asked for.
        client = closing.hold(command_client(workers, args.scheduler, closing, in_process=workers is None,
                                             scheduler_file=where["scheduler_file"]))
        ds = score(str(ref_path), str(picks_path), client=client, block_picks=block_picks, **options)
        return _with_ci(ds, level)

    ds = run_into_out(out_dir, overwrite=bool(args.overwrite), produce=produce, fmt=args.format,
                      figures=not args.no_figures, quiet=args.quiet, verbose=args.verbose,
                      also=("inputs/reference.csv", "inputs/picks.csv"))
    print("\nWhat to see:")
    for line in facts(tables(ds), group_by=options.get("group_by")):
        print(f"  - {line}")
    return EXIT_OK


def report_command(args: argparse.Namespace) -> int:
    """``pickscale report``: the tables and figures of a results store, from the store alone."""
    with using(storage_of(args, {}).get("storage_options")):
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    from ..store import open_results  # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store

    level = ci_level(getattr(args, "ci", None))
    store = out_folder(args.store, what="results store")  # a URL is refused before any work
    given_out = out_folder(args.out) if args.out else None
    if is_remote_folder(store) or is_remote_folder(given_out):  # object storage (pickscale[cloud])
        report_remote(store, given_out, ci=lambda ds: _with_ci(ds, level), overwrite=args.overwrite,
                      fmt=args.format, figures=not args.no_figures, quiet=args.quiet, verbose=args.verbose)
        return EXIT_OK
    # Checked against its manifest: one snapshot.  The pairs are read when used, unless the figures or the
    # intervals need every one: then they are read, and checked, whole on opening (SPEC §15).
    ds = _with_ci(open_results(store, lazy=bool(args.no_figures) and level is None), level)
    out_dir = given_out if given_out is not None else store.resolve().parent
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder.")
    cleanup_output_temporaries(out_dir)
    check_outputs(out_dir, args.overwrite)  # before writing anything: nothing is written on a refusal
    write_outputs(ds, out_dir, Path(os.path.abspath(store)), fmt=args.format, figures=not args.no_figures,
                  quiet=args.quiet, verbose=args.verbose)
    return EXIT_OK


def extend_command(args: argparse.Namespace) -> int:
    """``pickscale extend DIR``: the store in DIR extended by new inputs, its tables and figures rewritten."""
    # lazy: engine/ brings Dask, for score, demo and extend only; store/ brings zarr (~0.4 s)
    from ..engine.extension import OPTION_NAMES, check_options, extended
    from ..store import read_root_attrs
    from ..store.consistency import stored_options
    from ..store.read import open_checking

    out_dir = out_folder(args.dir, what="pickscale extend")  # a URL is refused before any work
    target = out_dir / "results.zarr"
    given = scoring_options(args, {})
    if os.path.isdir(target):  # options and inputs refused before any work (checked again on the store read)
        attrs = read_root_attrs(target)
        if isinstance(attrs.get("options"), dict):
            stored_options(target, attrs)  # options that do not parse: the StoreError opening the store gives
            check_options(attrs["options"], given)
    check_columns(args.columns)
    for flag, source in (("--reference", args.reference), ("--picks", args.picks)):
        try:
            resolve_sources(source)
        except PickscaleError as exc:
            raise type(exc)(f"{flag} {exc}") from None
    where = where_to_run(args)  # --scheduler, --scheduler-file or --workers, checked
    workers = where["workers"]
    block_picks = whole_number(args.block_picks, "--block-picks")
    # station_key: the store's unless given (then it must be the store's: the same station, the same name).
    reading = {"drop_invalid": bool(args.drop_invalid), "manual_only": bool(args.manual_only),
               "station_key": args.station_key, "columns": args.columns, **storage_of(args, {})}
    level = ci_level(getattr(args, "ci", None))  # --ci LEVEL: intervals at LEVEL; else the store's, if any
    started = time.monotonic()

    def produce(closing: Closing) -> Any:
        from ..engine import small_local_input  # lazy: engine/ brings Dask, for score, demo and extend only

        # Every pair is merged: read a batch at a time and checked as it is read (extended's store=); the
        # stored timing readings, which the merged pairs give again, are not compared with them (SPEC §15).
        # The store is read (every file checked against its manifest) while the cluster starts (its workers'
        # start is mostly their own processes' imports): a thread, whose error is raised here as if read first;
        # its numbers are checked against each other while the new inputs are scored (extended's checking).
        opening = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pickscale-open")
        opened = opening.submit(contextvars.copy_context().run, open_checking, target)  # (its settings too)
        opening.shutdown(wait=False)
        try:
            in_process = workers is None and small_local_input(args.reference, args.picks)
            client = closing.hold(command_client(workers, args.scheduler, closing, in_process=in_process,
                                                 scheduler_file=where["scheduler_file"]))
        finally:
            stored, checking = opened.result()
        return extended(stored, args.reference, args.picks, replace=bool(args.replace), ci=level,
                        store=target, checking=checking, client=client, block_picks=block_picks, **reading,
                        **{k: given.get(k) for k in OPTION_NAMES})

    with using(reading.get("storage_options")):
        ds = run_into_out(out_dir, overwrite=bool(args.overwrite), produce=produce, fmt=args.format,
                          figures=not args.no_figures, quiet=args.quiet, extend=True, verbose=args.verbose)
    if not args.quiet:
        print(closing_summary(ds, out_dir, time.monotonic() - started, figures=not args.no_figures),
              file=sys.stderr)
    return EXIT_OK


COMMANDS = {"score": score_command, "demo": demo_command, "report": report_command, "extend": extend_command}
COMMANDS["predict"] = predict_command  # SPEC §17; its body in cli/predict.py


def compare_command(args: argparse.Namespace) -> int:
    """``pickscale compare A B``: two pick sets of one model compared per station-day (SPEC §18)."""
    return run_compare(args)


COMMANDS["compare"] = compare_command
