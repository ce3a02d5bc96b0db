"""How an extension treats the options it is given (SPEC §11): each keyword of :func:`pickscale.score` declared
once (:data:`KEYWORDS`), the store's options taken and given ones checked against them, the bootstrap level.

Examples
--------
>>> KEYWORDS["tol"], KEYWORDS["client"]
('store', 'engine')
"""

from __future__ import annotations

from typing import Any

from ..errors import OptionsError
from ..kernel.bins import _offset, _step_ns
from ..options import Options
from ..settings import extension_treatment, scoring_names

__all__ = ["KEYWORDS", "OPTION_NAMES", "check_options", "check_keywords", "bootstrap_settings"]

#: How an extension treats each keyword of :func:`pickscale.score` ("store", "refused", "reading", "engine"):
#: declared with every setting in :mod:`pickscale.settings` (a test checks that every keyword is there).
KEYWORDS: dict[str, str] = extension_treatment()

#: The options of :class:`pickscale.options.Options` an extension takes from the store (given ones must agree).
OPTION_NAMES = scoring_names()


def check_options(stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The store's options; refuse any given (not None) that differs.

    Examples
    --------
    >>> check_options({"threshold": 0.3, "tol": 0.5, "residual_tol": 2.0, "thresholds": [0.02, 0.3]},
    ...               {"tol": 0.25})
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: tol 0.25 differs from the store's (0.5): ...
    >>> check_options({"threshold": 0.3, "tol": 0.5, "residual_tol": 2.0, "thresholds": [0.02, 0.3]},
    ...               {"group_by": "magnitude:1,2"})
    Traceback (most recent call last):
    ...
    pickscale.errors.OptionsError: group_by 'magnitude:1,2' differs from the store's (none): ...
    """
    mine = Options.from_attrs(stored)
    if mine.group_by is not None:  # SPEC §14: the groups are decided from the whole reference of one run
        raise OptionsError(f"the store was scored with group_by {mine.group_by!r}: a store with groups of arrivals "
                           "is not extended; score all the inputs again.", options=("group_by",))
    keywords = {name: [float(x) for x in mine.grid] if name == "thresholds" else getattr(mine, name)
                for name in OPTION_NAMES}
    differ = []
    for name in OPTION_NAMES:
        value = given.get(name)
        if value is None or (name == "time_bin" and _same_bins(value, mine.time_bin)):
            continue
        trial = dict(keywords, **{name: value})
        if name == "threshold" and given.get("thresholds") is None:
            trial["thresholds"] = None if stored.get("thresholds") is None else keywords["thresholds"]
        try:
            if Options(**trial) != mine:
                differ.append(name)
        except OptionsError:  # not even a valid option: it cannot be the store's
            differ.append(name)
    if differ:
        said = "; ".join(f"{n} {given[n]!r} differs from the store's "
                         f"({'none' if keywords[n] is None else repr(keywords[n])})" for n in differ)
        raise OptionsError(f"{said}: an extension is scored with the options of the store it extends (grid, "
                           "tolerances, threshold, budget, exhaustive, time bin, groups); leave them out, or score "
                           "all the inputs again with `pickscale score`.", options=tuple(differ))
    if not mine.events:  # SPEC §19: a store without events has no event rows to merge: the extension detects none
        keywords["event_min_arrivals"] = 0
    return {k: v for k, v in keywords.items() if k != "group_by"}


def _same_bins(a: Any, b: str | None) -> bool:
    """Whether two ``time_bin`` aliases cut time alike: ``"60min"`` and ``"1h"``, ``"1D"`` and ``"24h"`` (fixed
    lengths anchored at the epoch: equal lengths are equal bins), ``"MS"`` and ``"1MS"``."""
    if b is None or not isinstance(a, str):
        return False
    try:
        x, y = _offset(a), _offset(b)
    except OptionsError:
        return False
    step_x, step_y = _step_ns(x), _step_ns(y)
    return step_x == step_y if step_x is not None or step_y is not None else bool(x == y)


def check_keywords(stored_attrs: dict[str, Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """The keywords :func:`pickscale.score` gets for an extension of a store with ``stored_attrs``.

    Every keyword is treated as :data:`KEYWORDS` declares: scoring options come from the store (given ones must
    agree), what an extension cannot take is refused, reading and engine keywords pass through.  Raises
    :class:`OptionsError` (nothing is read) for a refusal.
    """
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise TypeError(f"extend() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    if keywords.get("options") is not None:  # one Options: its fields, checked against the store's as keywords
        given = keywords["options"]
        keywords = {k: v for k, v in keywords.items() if k != "options"}
        keywords.update({n: [float(x) for x in given.grid] if n == "thresholds" else getattr(given, n)
                         for n in OPTION_NAMES})
    options = check_options(stored_attrs.get("options", {}), {k: keywords.get(k) for k in OPTION_NAMES})
    out = {k: v for k, v in keywords.items() if KEYWORDS[k] in ("reading", "engine")}
    if keywords.get("coverage") is not None or stored_attrs.get("coverage"):
        raise OptionsError("a store scored with a coverage cannot be extended, and an extension cannot bring one "
                           "(the common coverage is decided over all the models of one run, SPEC §2): score all "
                           "the inputs together with `pickscale score --coverage`.", options=("coverage",))
    if keywords.get("select_on") is not None or stored_attrs.get("select_on"):
        raise OptionsError("a store scored with select_on cannot be extended, and an extension cannot bring it "
                           "(its parts are cut from all the inputs of one run, SPEC §16): score all the inputs "
                           "together with `pickscale score --select-on`.", options=("select_on",))
    if keywords.get("stations") is not None:
        raise OptionsError("stations serves group_by alone (SPEC §14), and a store with groups of arrivals is not "
                           "extended: leave stations out, or score all the inputs again.", options=("stations",))
    extent = stored_attrs.get("extent")
    stored_key = extent.get("station_key") if isinstance(extent, dict) else None
    given_key = keywords.get("station_key")
    if given_key is not None and stored_key is not None and given_key != stored_key:
        raise OptionsError(f"station_key {given_key!r} differs from the store's ({stored_key!r}): the same station "
                           "must keep the same name in the store and in the extension; leave it out.",
                           options=("station_key",))
    key = given_key if given_key is not None else stored_key
    if key is not None:
        out["station_key"] = key
    return {**options, **out}


def bootstrap_settings(stored: Any, ci: float | None) -> tuple[float | None, int, int]:
    """The level, draws and seed of an extension's intervals: ``ci`` if given, else the store's (if any)."""
    draws, seed = 1000, 0
    level = None
    if isinstance(stored, dict):
        level = stored.get("level")
        draws, seed = int(stored.get("draws", draws)), int(stored.get("seed", seed))
    if ci is not None:
        if isinstance(ci, bool) or not 0.0 < float(ci) < 1.0:
            raise OptionsError(f"ci must lie strictly between 0 and 1 (e.g. 0.95); got {ci!r}.", options=("ci",))
        level = float(ci)
    return (None if level is None else float(level)), draws, seed
