"""Derive benchmark (issue 24 item 3): ``results.derived.derive`` on a one-arrival score, before and after.

The Dataset of counts ``derive`` is given (and the pairs' statistics) is captured once from
``pickscale.score`` on one arrival and one pick; then ``derive`` of this tree and ``derive`` of an earlier
``pickscale/results/derived.py`` (``git show REF:…``, default ``HEAD``: what the tree was before it was
changed; loaded as a module of this package, so that everything else is this tree's) run interleaved, run by
run, on the same input.  Their results must be identical (``xarray.Dataset.identical``).  A one-arrival
score is where xarray's per-variable overhead, not the arithmetic, is the time.

With ``--score N``, the whole ``pickscale.score`` of that arrival too, with each ``derive``.

Run: ``python benchmarks/derive.py [--repeat 200] [--ref HEAD] [--score 20] [--options tols,time_bin,…]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def _inputs(extra: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    ref = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2024-01-01T00:00:10Z"],
                        "magnitude": [1.5]})
    if "event_min_arrivals" in extra:  # an event column turns event detection on (SPEC §19)
        ref["event"] = "e1"
    picks = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2024-01-01T00:00:10.1Z"], "conf": [0.8]})
    return ref, picks


def _score(extra: dict[str, Any], derive: Any = None) -> Any:
    """``pickscale.score`` on one arrival and one pick, with ``derive`` in place of the tree's if given."""
    import pickscale
    from pickscale.results import assembly

    real = assembly.derive
    assembly.derive = derive or real
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pickscale.score(*_inputs(extra), progress=False, **extra)
    finally:
        assembly.derive = real


def _captured(extra: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The arguments ``assemble`` passes to ``derive`` when one arrival and one pick are scored."""
    from pickscale.results import assembly

    seen: dict[str, Any] = {}
    real = assembly.derive

    def spy(ds, *, options, statistics=None):
        seen.update(ds=ds.copy(deep=True), options=options, statistics=statistics)
        return real(ds, options=options, statistics=statistics)

    _score(extra, spy)
    return seen["ds"], seen["options"], seen["statistics"]


def _before(ref: str) -> ModuleType:
    """``pickscale/results/derived.py`` as of ``ref``, as the module ``pickscale.results._derived_before``."""
    source = subprocess.run(["git", "show", f"{ref}:pickscale/results/derived.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    name = "pickscale.results._derived_before"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "pickscale.results"
    sys.modules[name] = module
    exec(compile(source, f"{ref}:pickscale/results/derived.py", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--score", type=int, default=0, metavar="N", help="also time the whole score() N times")
    parser.add_argument("--options", default="", help="comma-separated: tols, time_bin, group_by, budgets, per_phase, exhaustive, events")
    args = parser.parse_args()
    extra: dict[str, Any] = {}
    chosen = {o for o in args.options.split(",") if o}
    if "tols" in chosen:
        extra["tols"] = [0.1, 0.25, 0.5, 1.0]
    if "time_bin" in chosen:
        extra["time_bin"] = "1h"
    if "group_by" in chosen:
        extra["group_by"] = "magnitude:1,2"
    if "budgets" in chosen:
        extra["budget"] = [1, 2]
    if "per_phase" in chosen:
        extra["threshold"] = {"P": 0.5, "S": 0.3}
    if "exhaustive" in chosen:
        extra["exhaustive"] = True
    if "events" in chosen:
        extra["event_min_arrivals"] = 1
    ds, options, stats = _captured(extra)
    from pickscale.results import derived

    codes = {"before": _before(args.ref).derive, "after": derived.derive}
    warnings.simplefilter("ignore")  # the run's warnings (an edge, here) are said once per derive
    results = {name: f(ds.copy(), options=options, statistics=stats) for name, f in codes.items()}
    # Identical, and in the same order (the store's metadata lists the variables in it).
    same = (results["before"].identical(results["after"])
            and list(results["before"].variables) == list(results["after"].variables))
    times: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(args.repeat):
        for name, f in codes.items():
            start = time.perf_counter()
            f(ds, options=options, statistics=stats)
            times[name].append(time.perf_counter() - start)
    print(f"derive on a one-arrival score ({', '.join(sorted(chosen)) or 'default options'}), "
          f"{args.repeat} runs each, interleaved; results identical: {same}")
    for name, values in times.items():
        print(f"  {name:6s} median {statistics.median(values) * 1e3:7.2f} ms   min {min(values) * 1e3:7.2f} ms")
    if args.score:
        # The whole score() (in-process, Dask's local scheduler) with each derive: its share of a small run.
        whole: dict[str, list[float]] = {name: [] for name in codes}
        for _ in range(args.score):
            for name, f in codes.items():
                start = time.perf_counter()
                _score(extra, f)
                whole[name].append(time.perf_counter() - start)
        print(f"pickscale.score on one arrival, {args.score} runs each, interleaved")
        for name, values in whole.items():
            print(f"  {name:6s} median {statistics.median(values) * 1e3:7.2f} ms   min {min(values) * 1e3:7.2f} ms")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
