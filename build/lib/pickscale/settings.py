"""Every setting of a study, declared once: its flag, where a study file takes it, and how ``extend`` treats it.

A setting is a keyword of :func:`pickscale.score`, a key of a study file, or both.  What is derived from
this declaration instead of being listed again: the study file's keys, tables and types
(:mod:`pickscale.config`), the scoring options the command line and a study file give
(:func:`pickscale.cli.study.scoring_options`), and how an extension treats each keyword of ``score``
(:data:`pickscale.engine.extension_options.KEYWORDS`, SPEC §11), the command line's flags and their help
(:func:`pickscale.cli.parser.build_parser`, from :func:`flags_of`) and the store's copy of the options
(:meth:`pickscale.options.Options.to_attrs`, :attr:`Setting.stored`).  Tests check that the declaration
covers ``score``'s signature, :class:`pickscale.options.Options`'s fields and the ``score`` command's
flags.

How ``extend`` treats a keyword of ``score`` (``extend``):

``"store"``
    a scoring option: taken from the store; a value given must agree with the store's (SPEC §11);
``"refused"``
    what an extension cannot take (SPEC §11): given at all, it is an :class:`OptionsError`;
``"reading"``
    how the new inputs are read (their rows, columns, files): applies to them alone;
``"engine"``
    where and how the work runs: never changes a number.

Examples
--------
>>> SETTINGS["tol"].table, SETTINGS["tol"].extend, SETTINGS["tol"].scoring
('options', 'store', True)
>>> SETTINGS["client"].table is None  # Python only: a study file does not name a client
True
>>> study_tables()["cluster"]
('workers', 'scheduler', 'scheduler_file', 'block_picks')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Flag", "Setting", "SETTINGS", "flags_of", "scoring_names", "study_keys", "study_tables",
           "extension_treatment"]


#: The subcommands that take the reading, scoring and cluster flags.
_SCORED = ("score", "demo", "extend")
#: … and those that draw and print (``report`` too).
_WRITTEN = ("score", "demo", "extend", "report")


@dataclass(frozen=True)
class Flag:
    """How the command line takes a setting: its flag and argparse's keywords, and which subcommands have it.

    Attributes
    ----------
    help
        The flag's help (``{default}`` is replaced by the :class:`pickscale.options.Options` field's default).
    commands
        The subcommands (``score``, ``demo``, ``extend``, ``report``) that take it.
    parse
        The value's parser, named (``"float"``, ``"int"``, ``"floats"``, ``"budgets"``, ``"threshold"``;
        :mod:`pickscale.cli.parser` holds them); None: the text as given.
    switch
        A flag without a value (``store_true``).
    metavar, choices, nargs, const
        As argparse takes them.
    flag
        The flag when it is not ``--`` + the name with ``-`` for ``_`` (``--storage-option``: repeated).
    dest
        argparse's destination when it is not the name.
    repeat
        Each occurrence adds one value (``append``).
    none_default
        The parsed default is None ("not given": the study file and then the defaults decide) rather than
        argparse's own (False for a switch) -- False for presentation switches and ``--format``.
    default
        A presentation flag's own default (``--format png``).
    help_in, required_in
        A subcommand's own help for it, and the subcommands where it is required.
    """

    help: str
    commands: tuple[str, ...] = _SCORED
    parse: str | None = None
    switch: bool = False
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    nargs: str | None = None
    const: Any = None
    flag: str | None = None
    dest: str | None = None
    repeat: bool = False
    none_default: bool = True
    default: Any = None
    help_in: dict[str, str] = field(default_factory=dict)
    required_in: tuple[str, ...] = ()


@dataclass(frozen=True)
class Setting:
    """One setting of a study.

    Attributes
    ----------
    name
        Its name: the keyword of :func:`pickscale.score`, the study file's key, the flag's (``--time-bin``).
    table
        The study file's table that may hold it (``inputs``, ``output``, ``options``, ``cluster``; also
        accepted at the top of the file); None: not a study file's key.
    types
        The TOML types a study file may give (an int stands for a float).
    extend
        How ``extend`` treats it as a keyword of ``score`` (see the module); None: not a keyword of ``score``.
    scoring
        An option of :class:`pickscale.options.Options`: it changes a number, and the store keeps it.
    cli
        How the command line takes it (:class:`Flag`); None: not a flag.
    stored
        A scoring option's place in the store's attributes: ``"always"``, or ``"when_set"`` (absent while
        None, so that a run without it has the attributes of one before it existed).
    """

    name: str
    table: str | None
    types: tuple[type, ...]
    extend: str | None
    scoring: bool = False
    cli: Flag | None = None
    stored: str = "always"


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


_OVERWRITE = ("replace an existing results store and pickscale's own files in --out (the tables, "
              "figures/<figure>.png|svg|pdf, pickscale-outputs.json); without it, pickscale refuses to replace any "
              "of them. No other file is ever replaced or deleted")

SETTINGS: dict[str, Setting] = _declare(
    # The inputs and how they are read.
    Setting("reference", "inputs", (str,), None, cli=Flag(
        "reference arrivals: CSV/Parquet file, folder, glob or URL", commands=("score", "extend"),
        help_in={"extend": "reference arrivals of the new inputs"}, required_in=("extend",))),
    Setting("picks", "inputs", (str,), None, cli=Flag(
        "model picks: CSV/Parquet file, folder, glob or URL", commands=("score", "extend"),
        help_in={"extend": "picks of the new inputs (new models, datasets or time)"}, required_in=("extend",))),
    # Where the results go.
    Setting("out", "output", (str,), None, cli=Flag(
        "output folder (results.zarr, the tables, figures/, pickscale-outputs.json)", commands=("score", "demo",
                                                                                              "report"),
        help_in={"demo": "output folder (inputs/, results.zarr, tables)",
                 "report": "folder for the tables and figures (default: the store's folder)"},
        required_in=("demo",), none_default=False)),
    Setting("config", None, (), None, cli=Flag("a TOML study file; command-line options override it",
                                               commands=("score",))),
    Setting("drop_invalid", "options", (bool,), "reading", cli=Flag(
        "drop invalid rows with a warning", commands=("score", "extend"), switch=True)),
    Setting("manual_only", "inputs", (bool,), "reading", cli=Flag(
        "from a bulletin (QuakeML …), keep only picks whose evaluation mode is manual", commands=("score", "extend"),
        switch=True)),
    Setting("station_key", "inputs", (str,), "store", cli=Flag(  # the same station, the same name on both sides
        "compare stations as written (default) or reduced to NET.STA on both sides", commands=("score", "extend"),
        choices=("as-is", "net.sta"))),
    Setting("columns", "inputs", (str,), "reading", cli=Flag(
        "column names no alias covers, e.g. model=rid,station=tid", commands=("score", "extend"))),
    Setting("coverage", "inputs", (str,), "refused", cli=Flag(
        "the windows of data the models were run on (CSV/Parquet: station, start, end; optional dataset, model): "
        "arrivals and picks outside the windows every model of their dataset was run on are excluded and counted",
        commands=("score",), metavar="FILE")),
    Setting("stations", "inputs", (str,), "refused", cli=Flag(  # stations serve group_by alone (SPEC §14)
        "station attributes (CSV/Parquet: station, optional dataset, then columns such as instrument or "
        "site_class; or StationXML) that --group-by may name (distance: their latitude and longitude)",
        commands=("score",), metavar="FILE")),
    Setting("select_on", "options", (str,), "refused", cli=Flag(  # SPEC §16; a store scored with it: not extended
        "out-of-sample choice (SPEC §16): choose the best threshold and the matched budget on the arrivals and "
        "picks before DATE (or on a seeded FRACTION of each dataset's stations) and report recall, precision and "
        "f1 there on the rest: *_oos columns in detection.csv", commands=("score",),
        metavar="before:DATE|stations:FRACTION[:SEED]")),
    # The scoring options (SPEC §2–§14).
    Setting("threshold", "options", (float, dict), "store", scoring=True, cli=Flag(  # {P = 0.5, S = 0.3}: per phase
        "shared threshold the tables are read at (default {default}); one per phase as P=0.5,S=0.3",
        parse="threshold", metavar="θ|P=θ,S=θ")),
    Setting("tol", "options", (float,), "store", scoring=True, cli=Flag(
        "detection tolerance in seconds (default {default})", parse="float")),
    Setting("residual_tol", "options", (float,), "store", scoring=True, cli=Flag(
        "residual matching tolerance in seconds (default {default})", parse="float")),
    Setting("thresholds", "options", (list,), "store", scoring=True, cli=Flag(
        "sweep grid, comma-separated, ascending (default 0.02, 0.04, …, 0.94)", parse="floats")),
    Setting("budget", "options", (int, list), "store", scoring=True, cli=Flag(
        "matched pick budget (default: min(n_reference, least emitted)); several, e.g. 50,100,200: recall at each "
        "in budgets.csv (the first in detection.csv)", parse="budgets")),
    Setting("ci", "options", (float,), None, cli=Flag(  # intervals are drawn after scoring (pickscale.bootstrap)
        "bootstrap intervals over stations (1,000 draws, seed 0) at LEVEL (default 0.95): <metric>_lo/_hi columns, "
        "error bars, and model_differences.csv", commands=_WRITTEN, parse="float", nargs="?", const=0.95,
        metavar="LEVEL")),
    Setting("exhaustive", "options", (bool,), "store", scoring=True, cli=Flag(
        "the reference marks every arrival: precision and f1 are exact (no _lb)", switch=True)),
    Setting("time_bin", "options", (str,), "store", scoring=True, stored="when_set", cli=Flag(
        "also count per time bin at the shared threshold (pandas offset alias: 1h, 1D, 7D, MS for calendar months "
        "…): over_time.csv and figures/recall_over_time", metavar="FREQ")),
    Setting("tols", "options", (list,), "store", scoring=True, stored="when_set", cli=Flag(
        "also score detection at each of these tolerances in seconds, ascending, each <= --residual-tol (e.g. "
        "0.1,0.25,0.5,1.0): tolerance.csv and figures/recall_vs_tolerance", parse="floats", metavar="S,S,…")),
    Setting("group_by", "options", (str,), "store", scoring=True, stored="when_set", cli=Flag(
        "also count per group of arrivals at the shared threshold: a numeric column cut at these edges "
        "(magnitude:0,1,2,3; open end bins; distance:0,20,50,100 in km from the event's and the station's "
        "coordinates) or a text column (network); a missing value is its own group: by_group.csv and "
        "figures/recall_by_group", metavar="COLUMN[:E,E,…]")),
    Setting("event_min_arrivals", "options", (int,), "store", scoring=True, cli=Flag(  # SPEC §19; stored with events
        "with an event column in the reference: an event is detected when at least K of its scored arrivals are "
        "matched (default {default}; 0: off): events.csv and figures/event_detection", parse="int", metavar="K")),
    Setting("rate_thresholds", "options", (list,), "store", scoring=True, stored="when_set", cli=Flag(  # SPEC §20
        "also read pick_rates.csv (picks per day per station, every run) at these thresholds, ascending; they join "
        "the grid", parse="floats", metavar="θ,θ,…")),
    # Where and how the work runs: never a number.
    Setting("workers", "cluster", (int,), None, cli=Flag("local worker processes (default: one per core)",
                                                          parse="int")),
    Setting("scheduler", "cluster", (str,), None, cli=Flag(
        "address of an existing Dask scheduler, e.g. tcp://host:8786 (or set DASK_SCHEDULER_ADDRESS)")),
    Setting("scheduler_file", "cluster", (str,), None, cli=Flag(
        "the file an existing Dask scheduler wrote its address to (dask scheduler --scheduler-file FILE, "
        "dask-mpi), waited for up to 30 s (or set DASK_SCHEDULER_FILE)", metavar="FILE")),
    Setting("block_picks", "cluster", (int,), "engine", cli=Flag(
        "picks per work unit: busier stations are cut into time blocks at quiet gaps, which bounds a worker's "
        "memory and changes no number (default 2000000)", parse="int")),
    Setting("overwrite", "output", (bool,), None, cli=Flag(
        _OVERWRITE, commands=("score", "demo", "extend", "report"), switch=True,
        help_in={"report": "replace pickscale's own tables, figures and pickscale-outputs.json in --out; without "
                           "it, pickscale refuses to replace them unless they are out of date (written from another "
                           "results store). No other file is ever replaced or deleted"})),
    # How the command draws and prints: the command line's alone.
    Setting("format", None, (), None, cli=Flag("figure format (default png)", commands=_WRITTEN,
                                               choices=("png", "svg", "pdf"), none_default=False, default="png")),
    Setting("no_figures", None, (), None, cli=Flag("write the tables only", commands=_WRITTEN, switch=True,
                                                   none_default=False)),
    Setting("quiet", None, (), None, cli=Flag("print no verdict and no tables", commands=_WRITTEN, switch=True,
                                              none_default=False)),
    Setting("verbose", None, (), None, cli=Flag(
        "print the summary tables before the verdict (they are always in the CSV files)", commands=_WRITTEN,
        switch=True, none_default=False)),
    Setting("storage_options", "inputs", (dict,), "reading", cli=Flag(  # fsspec's: inputs, store and tables
        "an fsspec storage option for inputs and outputs on object storage (repeat it): "
        "endpoint_url=http://host:9000, key=…, secret=…, anon=true, client_kwargs.region_name=…; over the study "
        "file's storage_options and the environment", commands=_WRITTEN, flag="--storage-option",
        dest="storage_option", repeat=True, metavar="KEY=VALUE")),
    # Python only.
    Setting("options", None, (), "store"),  # the scoring options as one pickscale.Options (for extend: its fields)
    Setting("client", None, (), "engine"),
    Setting("progress", None, (), "engine"),
    Setting("exchange_method", None, (), "engine"),
)


def flags_of(command: str) -> list[Setting]:
    """The settings the subcommand ``command`` takes as flags, in declared order.

    Examples
    --------
    >>> [s.name for s in flags_of("report")]
    ['out', 'ci', 'overwrite', 'format', 'no_figures', 'quiet', 'verbose', 'storage_options']
    """
    return [s for s in SETTINGS.values() if s.cli is not None and command in s.cli.commands]


def scoring_names() -> tuple[str, ...]:
    """The options of :class:`pickscale.options.Options`, in their declared order."""
    return tuple(s.name for s in SETTINGS.values() if s.scoring)


def study_keys() -> dict[str, tuple[type, ...]]:
    """A study file's keys and the TOML types each takes."""
    return {s.name: s.types for s in SETTINGS.values() if s.table is not None}


def study_tables() -> dict[str, tuple[str, ...]]:
    """A study file's tables and the keys each may hold."""
    out: dict[str, list[str]] = {}
    for s in SETTINGS.values():
        if s.table is not None:
            out.setdefault(s.table, []).append(s.name)
    return {table: tuple(names) for table, names in out.items()}


def extension_treatment() -> dict[str, str]:
    """How ``extend`` treats each keyword of :func:`pickscale.score` (see the module)."""
    return {s.name: s.extend for s in SETTINGS.values() if s.extend is not None}
