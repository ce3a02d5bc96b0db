"""``pickscale compare A B``: two pick sets of one model compared per station-day (SPEC §18).

Writes ``compare.csv`` (in ``--out DIR``, or to ``--out FILE.csv``; default ``./compare.csv``) with the
floats as every table of pickscale writes them (:func:`pickscale.report.tables.to_csv_bytes`), and prints
where the two sets differ (:func:`pickscale.compare.describe`).  An existing file is replaced only with
``--overwrite``.  The exit status is 0 whether or not the sets differ (1 is pickscale's internal error).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..compare import compare, describe
from ..errors import StoreError
from ..report.tables import to_csv_bytes
from .state import EXIT_OK

__all__ = ["compare_target", "run_compare", "TABLE_NAME"]

#: The file name of the table in an ``--out`` folder.
TABLE_NAME = "compare.csv"


def compare_target(out: str | None) -> Path:
    """Where the table goes: ``--out FILE.csv`` itself, else ``compare.csv`` in the folder ``--out`` (or here).

    A name ending in ``.csv`` that is an existing folder is that folder; a URL is refused (a StoreError).

    Examples
    --------
    >>> compare_target(str(tmp / "runs")).relative_to(tmp).as_posix()
    'runs/compare.csv'
    >>> compare_target(str(tmp / "diff.csv")).name
    'diff.csv'
    """
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store.paths import local_store_path

    if out is None:
        return Path(os.path.abspath(TABLE_NAME))
    path = local_store_path(out, what="--out")
    if path.name.lower().endswith(".csv") and not path.is_dir():
        return path
    return path / TABLE_NAME


def run_compare(args: argparse.Namespace) -> int:
    """The command's body: check where to write, compare, write the table, say where the sets differ."""
    target = compare_target(args.out)
    # Refused before anything is read: a long comparison must not end on a file it may not replace.
    if os.path.lexists(target) and (target.is_dir() or not args.overwrite):
        what = "is a folder" if target.is_dir() else "exists (replace it with --overwrite)"
        raise StoreError(f"--out: {target} {what}; nothing was written.")
    if target.parent.exists() and not target.parent.is_dir():
        raise StoreError(f"--out: {target.parent} is a file, not a folder; nothing was written.")
    table = compare(args.a, args.b, tol=args.tol, station_key=args.station_key, columns=args.columns,
                    drop_invalid=bool(args.drop_invalid))
    for line in table.attrs["warnings"]:
        print(f"warning: {line}", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(to_csv_bytes(table))
    tmp.replace(target)  # a reader never sees half a table
    for line in describe(table):
        print(line)
    print(f"table: {target}")
    return EXIT_OK
