"""Small-study benchmark (issue 27): the real 140-pick study ``tests/data/stead50_phasenet`` end to end.

What is measured, each in a fresh process, the codes interleaved run by run (this tree, and with ``--code
PATH`` an earlier ``pickscale`` package put on PYTHONPATH — ``--snapshot PATH`` copies this tree's package
there first, to be measured after it is changed):

- **CLI**: wall time of ``pickscale score --reference … --picks … --out DIR --quiet``, with ``--no-figures`` and
  with the six figures (what a user runs: interpreter start included); the CPU seconds of the process too
  (``getrusage``, children included: less noisy than wall time on a shared machine);
- **floor**: ``python -c "import pandas; pandas.read_csv(reference); pandas.read_csv(picks)"`` (the pandas read
  floor, interpreter start included), and ``python -c pass`` (the interpreter alone);
- **stages**: the same command run in-process by a child that times its stages (``--stages-child``, functions
  of pickscale wrapped with timers): imports of the command, the study and the lock, the scheduler (a cluster
  or none), reading, outlining, scope, plan, scoring, pairs, collecting, assembling and deriving the Dataset,
  the store, the tables (computed, then written as CSV), the figures, and the time spent importing modules
  inside each stage; and each figure built and written alone (after the run: matplotlib and its fonts loaded).

Every PNG and CSV of the runs is hashed; the codes' outputs must agree byte for byte.  Both codes are compiled
to bytecode first (``compileall``, as an install does).

Run: ``python benchmarks/small_study.py [--repeat 5] [--code /tmp/before] [--write]``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STUDY = ROOT / "tests" / "data" / "stead50_phasenet"
MARK = "<!-- small_study -->"
TARGETS = {"no figures": 1.0, "figures": 2.0}

#: Put on PYTHONPATH beside an earlier package: the editable install's finder (on ``sys.meta_path``) would win
#: over PYTHONPATH; ``sitecustomize`` runs first and takes it out (as ``client_memory.py`` does).
_SITECUSTOMIZE = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                    and "editable" not in getattr(f, "__name__", "").lower()]
"""


# --------------------------------------------------------------------------------------------- the child


def _stages_child(argv: list[str]) -> None:
    """Run ``pickscale ARGV`` in this process with stage timers; print one JSON line of seconds per stage."""
    t0 = time.perf_counter()
    import importlib._bootstrap as bootstrap

    spent: dict[str, float] = {}
    current = ["imports of the command"]
    depth = [0]
    real_find_and_load = bootstrap._find_and_load

    def find_and_load(name, import_):  # the outermost import of a stage counts once
        depth[0] += 1
        start = time.perf_counter()
        try:
            return real_find_and_load(name, import_)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                key = f"{current[0]} [imports]"
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - start

    bootstrap._find_and_load = find_and_load
    wall: dict[str, float] = {}
    order: list[str] = []

    def timed(label: str, func):
        def wrapper(*args, **kwargs):
            outer = current[0]
            current[0] = label
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                if label not in wall:
                    order.append(label)
                wall[label] = wall.get(label, 0.0) + time.perf_counter() - start
                current[0] = outer
        wrapper.__wrapped__ = func
        return wrapper

    def patch(module: str, name: str, label: str) -> None:
        import importlib

        try:
            mod = importlib.import_module(module)
            setattr(mod, name, timed(label, getattr(mod, name)))
        except (ImportError, AttributeError):
            pass

    def patch_cm(module: str, name: str, label: str) -> None:
        import contextlib
        import importlib

        mod = importlib.import_module(module)
        real = getattr(mod, name)

        @contextlib.contextmanager
        def wrapped(*args, **kwargs):
            cm = real(*args, **kwargs)
            value = timed(label, cm.__enter__)()
            try:
                yield value
            finally:
                timed(label + " (closing)", cm.__exit__)(None, None, None)
        setattr(mod, name, wrapped)

    import pickscale.cli as cli
    import pickscale.cli.commands  # noqa: F401  (what main() imports first)

    patch_cm("pickscale.cli.commands", "command_client", "scheduler (cluster or none)")
    for name, label in (("persist_stage", "read picks"), ("compute", "read reference, outline"),
                        ("scope_from_summary", "scope (SPEC §2)"), ("plan_units", "plan units"),
                        ("reduce_stage", "score partitions"), ("pair_columns", "pairs (SPEC §5)"),
                        ("bring_back", "collect")):
        patch("pickscale.engine.run", name, label)
    patch("pickscale.results", "assemble", "assemble and derive the Dataset")
    patch("pickscale.store", "save", "write the store")
    patch("pickscale.store", "read_lazily", "reopen the store")
    patch("pickscale.report.outputs", "tables", "tables: compute")
    patch("pickscale.report.outputs", "write_tables", "tables: write CSV")
    patch("pickscale.report.outputs", "_commit_outputs", "commit outputs")
    patch("pickscale.cli.flow", "write_report", "tables and figures (all)")
    # The modules the stages are in are imported by now (main() would import them later): imports too.
    wall["imports of the command"] = time.perf_counter() - t0
    order.append("imports of the command")
    current[0] = "rest (parsing, study, lock, checks)"
    start = time.perf_counter()
    cli.main(argv)
    total = time.perf_counter() - start + wall["imports of the command"]
    out: dict[str, float] = {label: wall[label] for label in order}
    nested = {"tables: compute", "tables: write CSV", "commit outputs"}
    if "tables and figures (all)" in out:
        out["figures (all)"] = out.pop("tables and figures (all)") - sum(out.get(k, 0.0) for k in nested)
    out["total in-process"] = total
    out["rest (parsing, study, lock, checks)"] = total - sum(v for k, v in out.items() if k != "total in-process")
    for key, value in spent.items():
        out[key.replace("tables and figures (all)", "figures (all)")] = value
    if "--no-figures" not in argv:
        out.update(_figures_alone(Path(argv[argv.index("--out") + 1]) / "results.zarr"))
    print("STAGES " + json.dumps(out))


def _figures_alone(store: Path) -> dict[str, float]:
    """Each figure built and written (to memory, PNG) alone, from the store, after the run (warm)."""
    import matplotlib as mpl

    import pickscale
    from pickscale.report.figures import build

    ds = pickscale.open_results(store)
    out = {}
    for name in build.figure_names(ds):
        start = time.perf_counter()
        fig = build._BUILDERS[name](ds)
        mid = time.perf_counter()
        with mpl.rc_context(build.STYLE):
            if hasattr(build, "lay_out"):  # (what the command does, where the code measured has it)
                build.lay_out(fig, dpi=150)
            fig.savefig(io.BytesIO(), format="png", dpi=150, metadata=build._metadata("png", name))
        out[f"figure {name}: build (warm)"] = mid - start
        out[f"figure {name}: draw and write PNG (warm)"] = time.perf_counter() - mid
    return out


# --------------------------------------------------------------------------------------------- the parent


def _env(code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH", "")]))
    return env


def _run(cmd: list[str], code: Path | None, cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and its children) of ``cmd``; its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(code), cwd=str(cwd))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _score_args(out: Path, figures: bool) -> list[str]:
    return ["score", "--reference", str(STUDY / "reference.csv"), "--picks", str(STUDY / "picks.csv"),
            "--out", str(out), "--quiet", *([] if figures else ["--no-figures"])]


def _hashes(out: Path) -> dict[str, str]:
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".csv", ".png"))
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _compile(package: Path) -> None:
    """Every module of ``package`` compiled to bytecode now, as ``pip install`` does: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on some machines), a snapshot or an edited module would otherwise be
    compiled from its source in every measured run, and the code compared would not be the only difference."""
    import compileall

    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"could not compile {package}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--code", type=Path, default=None, help="an earlier pickscale package's parent folder")
    ap.add_argument("--snapshot", type=Path, default=None, help="copy this tree's package to PATH and stop")
    ap.add_argument("--skip-stages", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--stages-child", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.stages_child is not None:
        _stages_child(args.stages_child)
        return
    if args.snapshot is not None:
        target = args.snapshot / "pickscale"
        shutil.copytree(ROOT / "pickscale", target, ignore=shutil.ignore_patterns("__pycache__"))
        (args.snapshot / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        print(f"copied to {target}")
        return
    if args.code is not None and not (args.code / "sitecustomize.py").exists():
        (args.code / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    codes: dict[str, Path | None] = {"this tree": None}
    if args.code is not None:
        codes = {"before": args.code, "after (this tree)": None}
    for code in codes.values():
        _compile((code or ROOT) / "pickscale")
    exe = sys.executable
    py_cli = [exe, "-c", "import sys; from pickscale.cli import main; sys.exit(main())"]
    floor = [exe, "-c", f"import pandas as pd; pd.read_csv({str(STUDY / 'reference.csv')!r}); "
                        f"pd.read_csv({str(STUDY / 'picks.csv')!r})"]
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    stages: dict[str, list[dict[str, float]]] = {c: [] for c in codes}
    hashes: dict[str, dict[str, str]] = {}
    loads = [_load()]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for i in range(args.repeat):
            for what, cmd, code in (("python -c pass", [exe, "-c", "pass"], None),
                                    ("pandas read floor", floor, None)):
                runs.setdefault((what, ""), []).append(_run(cmd, code, tmp)[:2])
            for label, code in codes.items():
                for figures in (False, True):
                    out = tmp / f"{label[:5]}-{i}-{figures}"
                    got = _run(py_cli + _score_args(out, figures), code, tmp)
                    runs.setdefault(("CLI " + ("figures" if figures else "no figures"), label), []).append(got[:2])
                    if i == 0:
                        hashes[f"{label} {'figures' if figures else 'no figures'}"] = _hashes(out)
                    shutil.rmtree(out)
                if not args.skip_stages:
                    out = tmp / f"stages-{label[:5]}-{i}"
                    _, _, stdout = _run([exe, __file__, "--stages-child", *_score_args(out, True)], code, tmp)
                    line = next(s for s in stdout.splitlines() if s.startswith("STAGES "))
                    stages[label].append(json.loads(line[len("STAGES "):]))
                    shutil.rmtree(out)
            loads.append(_load())
    report = _report(runs, stages, hashes, codes, args.repeat, loads)
    print(report)
    if args.write:
        sys.path.insert(0, str(HERE))
        from record import write_block

        write_block(MARK, report, heading="A small study end to end (issue 27)")


def _report(runs, stages, hashes, codes, repeat, loads) -> str:
    med = statistics.median
    labels = list(codes)
    lines = [f"`tests/data/stead50_phasenet` (99 reference arrivals, 140 picks), median of {repeat} runs, the codes "
             f"interleaved run by run; wall s (CPU s of the process and its children). Load average (1/5/15 min) "
             f"before and after: {loads[0]} → {loads[-1]} on {os.cpu_count()} cores.", ""]
    lines.append("| command | " + " | ".join(labels) + " | target |")
    lines.append("|---|" + "---|" * len(labels) + "---|")
    for what in ("CLI no figures", "CLI figures"):
        cells = []
        for label in labels:
            got = runs[(what, label)]
            cells.append(f"{med(w for w, _ in got):.2f} ({med(c for _, c in got):.2f})")
        target = TARGETS[what.removeprefix("CLI ")]
        lines.append(f"| `pickscale score` ({what.removeprefix('CLI ')}) | " + " | ".join(cells) + f" | ≤ {target:.1f} |")
    for what in ("pandas read floor", "python -c pass"):
        got = runs[(what, "")]
        lines.append(f"| {what} | {med(w for w, _ in got):.2f} ({med(c for _, c in got):.2f})"
                     + " |" * (len(labels) - 1) + " | |")
    if any(stages.values()):
        lines += ["", "In-process stages of the command with figures (wall s, median; `[imports]`: of which "
                  "importing modules):", ""]
        keys: list[str] = []
        for label in labels:
            for run in stages[label]:
                keys += [k for k in run if k not in keys]
        lines.append("| stage | " + " | ".join(labels) + " |")
        lines.append("|---|" + "---|" * len(labels))
        for key in keys:
            cells = []
            for label in labels:
                values = [run.get(key, 0.0) for run in stages[label]]
                cells.append(f"{med(values):.3f}" if values else "–")
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
    names = sorted(hashes)
    if len(labels) > 1:
        same = all(hashes[f"{labels[0]} {k}"] == hashes[f"{labels[1]} {k}"] for k in ("figures", "no figures"))
        files = len(hashes[f"{labels[0]} figures"])
        lines += ["", f"Outputs byte for byte ({files} CSV and PNG files hashed, SHA-256): "
                  + ("identical" if same else "DIFFERENT") + "."]
    else:
        lines += ["", f"{len(hashes[names[0]])} CSV and PNG files hashed."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
