"""What a command is asked to do: its arguments and study file resolved into one checked :class:`Study`.

Command-line options override the study file, which overrides the defaults; paths in a study file are
relative to it.  Everything that can be checked without reading the inputs is checked here, before any
folder is created or a cluster started.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.selection import parse_select_on
from ..errors import OptionsError, PickscaleError
from ..io import check_columns, resolve_sources
from ..io.sources import has_magic, listed_suffixes
from ..io.storage import parse_storage_options
from ..options import Options
from ..settings import scoring_names
from .flow import out_folder

__all__ = ["Study", "study_of", "scoring_options", "whole_number", "ci_level", "where_to_run", "storage_of"]

_SCORING = scoring_names()  # the options of pickscale.options.Options (pickscale.settings)


@dataclass
class Study:
    """A checked scoring run: inputs, reading and scoring options, where it runs and where it writes."""

    reference: Any
    picks: Any
    out_dir: Path
    overwrite: bool = False
    reading: dict[str, Any] = field(default_factory=dict)  # drop_invalid, manual_only, station_key, columns, coverage
    options: dict[str, Any] = field(default_factory=dict)  # the keywords of pickscale.Options
    scheduler: str | None = None
    scheduler_file: str | None = None  # --scheduler-file: the address a scheduler wrote (dask scheduler, dask-mpi)
    workers: int | None = None
    block_picks: int | None = None
    ci: float | None = None  # --ci LEVEL: bootstrap intervals (SPEC §12)
    select_on: str | None = None  # --select-on: out-of-sample choice (SPEC §16)

    def score_keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pickscale.score` besides the inputs and the client."""
        chosen = {"select_on": self.select_on} if self.select_on is not None else {}
        return {"block_picks": self.block_picks, **self.reading, **self.options, **chosen}


def scoring_options(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, Any]:
    """Scoring options: command line over study file over defaults (defaults left to ``Options``)."""
    out = {key: getattr(args, key, None) for key in _SCORING}
    out = {key: value if value is not None else config.get(key) for key, value in out.items()}
    return {k: v for k, v in out.items() if v is not None}


def whole_number(value: Any, flag: str) -> int | None:
    """``value`` as a whole number >= 1 (None stays None), else a usage error naming ``flag``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionsError(f"{flag} must be a whole number >= 1; got {value!r}.")
    return value


def ci_level(value: Any) -> float | None:
    """``--ci LEVEL`` checked before any work: a number in (0, 1), or None without ``--ci``.

    Examples
    --------
    >>> ci_level(None), ci_level(0.9)
    (None, 0.9)
    """
    if value is None:
        return None
    if not 0.0 < float(value) < 1.0:
        raise OptionsError(f"--ci LEVEL must lie strictly between 0 and 1 (e.g. 0.95); got {value!r}.")
    return float(value)


def _relative(value: Any, base: Path, from_command_line: Any) -> Any:
    # Paths in a study file are relative to the file; those typed on the command line to the shell.
    if from_command_line or not isinstance(value, str) or "://" in value or os.path.isabs(value):
        return value
    return str(base / value)


_WHERE = {"scheduler": "--scheduler", "scheduler_file": "--scheduler-file", "workers": "--workers"}


def where_to_run(args: argparse.Namespace, config: dict[str, Any] | None = None,
                 base: Path | None = None) -> dict[str, Any]:
    """Where a command runs: ``scheduler``, ``scheduler_file`` and ``workers``, checked.

    One setting, taken whole from the command line if it gives any of ``--scheduler``, ``--scheduler-file``
    and ``--workers``, else from the study file (its ``scheduler_file`` relative to it); Dask's own
    configuration comes after both (``pickscale.cli.runtime.command_client``).  Naming two of them at
    the same level is a usage error: a scheduler and a scheduler file are two schedulers, and
    ``--workers`` sizes the local cluster pickscale starts, which a scheduler's own workers replace.

    Examples
    --------
    >>> where_to_run(argparse.Namespace(workers=None, scheduler=None, scheduler_file=None), {"workers": 2})
    {'scheduler': None, 'scheduler_file': None, 'workers': 2}
    """
    config = config or {}
    given = {key: getattr(args, key, None) for key in _WHERE}
    from_file = not any(value is not None for value in given.values())
    where = {key: config.get(key) for key in _WHERE} if from_file else given
    if from_file and where["scheduler_file"] is not None and base is not None:
        where["scheduler_file"] = _relative(where["scheduler_file"], base, None)
    names = {key: (f"{key} in the study file" if from_file else flag) for key, flag in _WHERE.items()}
    if where["scheduler"] is not None and where["scheduler_file"] is not None:
        raise OptionsError(f"{names['scheduler']} and {names['scheduler_file']} both name a scheduler; "
                           "give one of them.")
    if where["workers"] is not None and (where["scheduler"] is not None or where["scheduler_file"] is not None):
        named = names["scheduler"] if where["scheduler"] is not None else names["scheduler_file"]
        raise OptionsError(f"{names['workers']} sizes the local cluster pickscale starts, and {named} names an "
                           "existing scheduler whose own workers run the job; give one of them.")
    where["workers"] = whole_number(where["workers"], names["workers"] if from_file else "--workers")
    for key in ("scheduler", "scheduler_file"):
        if where[key] is not None and not str(where[key]).strip():
            raise OptionsError(f"{names[key]} is empty.")
    return where


def _out_folder(location: Any) -> Path:
    return out_folder(str(location))  # (a URL is refused here, before any work)


def _flag(args: argparse.Namespace, config: dict[str, Any], key: str, default: Any = None) -> Any:
    value = getattr(args, key, None)
    return value if value is not None else config.get(key, default)


def _names_a_file(source: Any) -> bool:
    """True when a local file, folder or glob certainly names a file to read, found without listing it all.

    The early check then leaves the listing to the run (a glob of 100,000 files is listed once, not twice);
    anything else — a URL, or nothing found here — is listed by the check, whose message names the problem.
    """
    import glob

    if not isinstance(source, str) or "://" in source:
        return False
    if has_magic(source):
        return any(os.path.isfile(p) for p in glob.iglob(source))
    if os.path.isfile(source):
        return True
    for _, folders, files in os.walk(source):  # a folder: its first CSV or Parquet file (hidden ones skipped)
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        if any(f.lower().endswith(listed_suffixes()) and not f.startswith(".") for f in files):
            return True
    return False


def _select_on(value: Any) -> str | None:
    """``--select-on`` (or the study file's ``select_on``) checked before any work (SPEC §16); None without it."""
    if value is None:
        return None
    return parse_select_on(value).text


def storage_of(args: Any, config: dict[str, Any]) -> dict[str, Any]:
    """``storage_options`` of the reading: the study file's, under the ``--storage-option`` flags."""
    options = parse_storage_options(getattr(args, "storage_option", None), given=config.get("storage_options"))
    return {"storage_options": options} if options else {}


def study_of(args: argparse.Namespace) -> Study:
    """The :class:`Study` of ``pickscale score``'s arguments (and ``--config``), checked."""
    from ..config import load_config  # lazy: config brings tomllib, for `pickscale score` alone

    config: dict[str, Any] = {}
    base = None
    if args.config:
        config, base = load_config(args.config)
    given = {"reference": args.reference, "picks": args.picks, "out": args.out}
    coverage = _flag(args, config, "coverage")
    if coverage is not None and base is not None:
        coverage = _relative(coverage, base, getattr(args, "coverage", None))
    stations = _flag(args, config, "stations")  # SPEC §14: station attributes for group_by
    if stations is not None and base is not None:
        stations = _relative(stations, base, getattr(args, "stations", None))
    paths = {key: value or config.get(key) for key, value in given.items()}
    missing = [f"--{key}" for key, value in paths.items() if not value]
    if missing:
        raise OptionsError(f"pickscale score needs {', '.join(missing)} (on the command line or in --config).")
    if base is not None:
        paths = {key: _relative(value, base, given[key]) for key, value in paths.items()}
    study = Study(
        reference=paths["reference"], picks=paths["picks"], out_dir=_out_folder(paths["out"]),
        overwrite=bool(_flag(args, config, "overwrite", False)),
        reading={"drop_invalid": bool(_flag(args, config, "drop_invalid", False)),
                 "manual_only": bool(_flag(args, config, "manual_only", False)),
                 "station_key": _flag(args, config, "station_key", "as-is"),
                 "columns": _flag(args, config, "columns"), "coverage": coverage,
                 **({"stations": stations} if stations is not None else {}),
                 **storage_of(args, config)},
        options=scoring_options(args, config),
        **where_to_run(args, config, base),
        block_picks=whole_number(_flag(args, config, "block_picks"), "--block-picks"),
        ci=ci_level(_flag(args, config, "ci")),
        select_on=_select_on(_flag(args, config, "select_on")),
    )
    # Fail on a bad option or a missing input before anything is created or a cluster is started.
    Options(**study.options)
    check_columns(study.reading["columns"])
    if coverage is not None and "://" not in str(coverage) and not os.path.isfile(str(coverage)):
        raise OptionsError(f"--coverage {coverage}: no such file (a CSV or Parquet file of windows: station, "
                           "start, end; optional dataset, model).")
    if stations is not None and "://" not in str(stations) and not os.path.isfile(str(stations)):
        raise OptionsError(f"--stations {stations}: no such file (a CSV or Parquet file: station, optional "
                           "dataset, and attribute columns).")
    if stations is not None and study.options.get("group_by") is None:
        raise OptionsError("--stations is used with --group-by (it gives the station attributes to group "
                           "arrivals by); give --group-by too.")
    for flag, source in (("--reference", study.reference), ("--picks", study.picks)):
        if _names_a_file(source):
            continue  # certainly something to read: the run lists it (once)
        try:
            resolve_sources(source, storage_options=study.reading.get("storage_options"))
        except PickscaleError as exc:
            raise type(exc)(f"{flag} {exc}") from None
    return study
