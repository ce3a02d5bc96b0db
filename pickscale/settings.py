"""Every setting of a study, declared once: where a study file takes it, and how ``extend`` treats it.

A setting is a keyword of :func:`pickscale.score`, a key of a study file, or both.  What is derived from
this declaration instead of being listed again: the study file's keys, tables and types
(:mod:`pickscale.config`), the scoring options the command line and a study file give
(:func:`pickscale.cli.study.scoring_options`), and how an extension treats each keyword of ``score``
(:data:`pickscale.engine.extension_options.KEYWORDS`, SPEC §11).  Tests check that the declaration
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

from dataclasses import dataclass

__all__ = ["Setting", "SETTINGS", "scoring_names", "study_keys", "study_tables", "extension_treatment"]


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
    """

    name: str
    table: str | None
    types: tuple[type, ...]
    extend: str | None
    scoring: bool = False


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


SETTINGS: dict[str, Setting] = _declare(
    # The inputs and how they are read.
    Setting("reference", "inputs", (str,), None),
    Setting("picks", "inputs", (str,), None),
    Setting("manual_only", "inputs", (bool,), "reading"),
    Setting("station_key", "inputs", (str,), "store"),  # the same station must have the same name on both sides
    Setting("columns", "inputs", (str,), "reading"),
    Setting("coverage", "inputs", (str,), "refused"),
    Setting("stations", "inputs", (str,), "refused"),  # stations serve group_by alone (SPEC §14)
    Setting("storage_options", "inputs", (dict,), "reading"),  # fsspec's, for the inputs, the store and the tables
    Setting("drop_invalid", "options", (bool,), "reading"),
    # Where the results go.
    Setting("out", "output", (str,), None),
    Setting("overwrite", "output", (bool,), None),
    # The scoring options (SPEC §2–§14).
    Setting("threshold", "options", (float, dict), "store", scoring=True),  # a table {P = 0.5, S = 0.3}: per phase
    Setting("tol", "options", (float,), "store", scoring=True),
    Setting("residual_tol", "options", (float,), "store", scoring=True),
    Setting("thresholds", "options", (list,), "store", scoring=True),
    Setting("budget", "options", (int, list), "store", scoring=True),
    Setting("exhaustive", "options", (bool,), "store", scoring=True),
    Setting("time_bin", "options", (str,), "store", scoring=True),
    Setting("tols", "options", (list,), "store", scoring=True),
    Setting("group_by", "options", (str,), "store", scoring=True),
    Setting("ci", "options", (float,), None),  # intervals are drawn after scoring (pickscale.bootstrap)
    # SPEC §16: two more runs on parts of the inputs; a store scored with it is not extended.
    Setting("select_on", "options", (str,), "refused"),
    # Where and how the work runs: never a number.
    Setting("workers", "cluster", (int,), None),
    Setting("scheduler", "cluster", (str,), None),
    Setting("scheduler_file", "cluster", (str,), None),
    Setting("block_picks", "cluster", (int,), "engine"),
    Setting("client", None, (), "engine"),
    Setting("progress", None, (), "engine"),
    Setting("exchange_method", None, (), "engine"),
)


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
