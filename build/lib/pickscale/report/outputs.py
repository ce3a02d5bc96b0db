"""The output folder of ``pickscale score`` and ``pickscale report``: tables, figures and their marker.

What pickscale writes in an output folder besides results.zarr: the SPEC §8 tables, the figures (in any of
the three formats) and, last, OUTPUTS_MARKER, which names the results store the tables and figures come
from (a fingerprint of its metadata) and whether they were all put in place.  Tables and figures are first
written to a hidden folder inside --out and then moved into place file by file; before the first move the
marker is rewritten as "not complete", listing every file the run may leave.  So after a kill at any point
the outputs are either complete and name the store they come from, or recognisably out of date (marker
not complete, or naming another store, or a store that is gone); `pickscale report` and the next
`pickscale score` replace or remove such out-of-date files without --overwrite.  Any other existing file
with one of these names is replaced only with --overwrite; no other file is ever touched.

Examples
--------
>>> import pathlib, tempfile
>>> output_names()[:2], OUTPUTS_MARKER in output_names()
(['detection.csv', 'timing.csv'], True)
>>> stale_outputs(pathlib.Path(tempfile.mkdtemp()))
[]
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import StoreError
from .names import (  # the names only: no matplotlib
    EVENT_FIGURES,
    FIGURES,
    GROUP_FIGURES,
    RATE_FIGURES,
    TIME_BIN_FIGURES,
    TOLERANCE_FIGURES,
)
from .tables import OPTIONAL_TABLES, PRINTED, PRINTED_COLUMNS, TABLE_NAMES, format_table, tables, write_tables
from .verdict import print_verdict

if TYPE_CHECKING:  # imported on use: `import pickscale` stays light
    import pandas as pd
    import xarray as xr

__all__ = [
    "OUTPUTS_MARKER",
    "FIGURE_FORMATS",
    "hand_over_figures",
    "output_names",
    "store_fingerprint",
    "stale_outputs",
    "check_outputs",
    "cleanup_output_temporaries",
    "write_report",
    "print_tables",
]

OUTPUTS_MARKER = "pickscale-outputs.json"
FIGURE_FORMATS = ("png", "svg", "pdf")
_OUTPUTS_TMP = ".pickscale-outputs.tmp-"


def output_names() -> list[str]:
    """Every file ``score``/``report`` may write or remove in an output folder, besides ``results.zarr``."""
    return ([f"{name}.csv" for name in (*TABLE_NAMES, *OPTIONAL_TABLES)]
            + [f"figures/{name}.{fmt}" for name in (*FIGURES, *TIME_BIN_FIGURES, *TOLERANCE_FIGURES, *GROUP_FIGURES,
                                                    *EVENT_FIGURES, *RATE_FIGURES)
               for fmt in FIGURE_FORMATS]
            + [OUTPUTS_MARKER])


def store_fingerprint(store: Path) -> str:
    """Identity of a results store: a hash of its root metadata (attributes with ``created``, options,
    inputs) and of its manifest; it survives copying the store, and differs for every new store."""
    # lazy: store/ brings zarr; report/ is imported by every command and by pickscale.tables
    from ..store import MANIFEST

    h = hashlib.sha256()
    for name in ("zarr.json", MANIFEST):
        try:
            h.update((Path(store) / name).read_bytes())
        except OSError:
            h.update(b"-")
    return h.hexdigest()


def _read_marker(out_dir: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((out_dir / OUTPUTS_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("pickscale_outputs") == 1 else None


def _marker_store(out_dir: Path, marker: dict[str, Any]) -> Path:
    return Path(os.path.abspath(out_dir / str(marker.get("store", ""))))


def stale_outputs(out_dir: Path) -> list[str]:
    """The files of ``out_dir`` that pickscale wrote and that are out of date.

    Those its marker lists when the marker says they were not all put in place, or names a results store
    that is gone or has since been replaced.  Names outside :func:`output_names` are never returned.
    """
    marker = _read_marker(out_dir)
    if marker is None:
        return []
    store = _marker_store(out_dir, marker)
    current = (marker.get("complete") is True and store.is_dir()
               and marker.get("store_fingerprint") == store_fingerprint(store))
    if current:
        return []
    owned = set(output_names())
    listed = [f for f in marker.get("files", []) if isinstance(f, str) and f in owned]
    return sorted(f for f in {*listed, OUTPUTS_MARKER} if os.path.lexists(out_dir / f))


def check_outputs(out_dir: Path, overwrite: bool, *, also: Sequence[str] = (), own_store: Path | None = None) -> None:
    """Refuse, before any work, to replace a file pickscale would write or remove, unless ``overwrite``.

    ``also``: further names the command writes (``demo``'s inputs).  Out-of-date outputs of an earlier run
    (:func:`stale_outputs`) are not in the way, nor, with ``own_store`` (``pickscale extend``, which
    replaces that store), the outputs whose marker names it.  A folder where a file is expected is never
    replaced.
    """
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return
    if os.path.lexists(out_dir / "figures") and not (out_dir / "figures").is_dir():
        raise StoreError(f"{out_dir / 'figures'} is a file, not a folder: pickscale writes its figures there; "
                         "move it away, or choose another --out.")
    names = [*output_names(), *also]
    folders = [n for n in names if (out_dir / n).is_dir() and not (out_dir / n).is_symlink()]
    if folders:
        raise StoreError(f"--out {out_dir} holds folders where pickscale writes files: {_listing(folders)}; "
                         "pickscale never replaces them (not even with --overwrite): move them away, or "
                         "choose another --out.")
    if overwrite:
        return
    stale = set(stale_outputs(out_dir)) | set(_outputs_of(out_dir, own_store))
    existing = [n for n in names if os.path.lexists(out_dir / n) and n not in stale]
    if existing:
        raise StoreError(f"--out {out_dir} already holds files that pickscale writes: {_listing(existing)}; "
                         "pass --overwrite to replace them (pickscale replaces only its own files and never "
                         "deletes any other), or choose another --out.")


def _outputs_of(out_dir: Path, store: Path | None) -> list[str]:
    """The files the marker of ``out_dir`` lists when it names ``store`` (none without a store)."""
    marker = _read_marker(out_dir) if store is not None else None
    if marker is None or store is None or _marker_store(out_dir, marker) != Path(os.path.abspath(store)):
        return []
    owned = set(output_names())
    return [f for f in marker.get("files", []) if isinstance(f, str) and f in owned] + [OUTPUTS_MARKER]


def _listing(names: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" … ({len(names)} in all)" if len(names) > most else "")


def _write_marker(out_dir: Path, record: dict[str, Any]) -> None:
    path = out_dir / OUTPUTS_MARKER
    tmp = out_dir / f".{OUTPUTS_MARKER}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(record, indent=1) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def cleanup_output_temporaries(out_dir: Path) -> list[Path]:
    """Remove the hidden folders in which runs that died were writing tables and figures.

    Each has its lease beside it (``<folder>.lease``, :mod:`pickscale.store.temporaries`): a folder of a run on
    another host sharing ``out_dir`` is removed only once that lease has expired, one of this host once
    its pid no longer runs.
    """
    # lazy: store/ brings zarr; report/ is imported by every command and by pickscale.tables
    from ..store import temporaries

    removed: list[Path] = []
    try:
        entries = list(Path(out_dir).iterdir())
    except OSError:
        return removed
    pattern = re.escape(_OUTPUTS_TMP) + r"(\d+)-[0-9a-f]+"
    for path in entries:
        m = re.fullmatch(pattern, path.name)
        if m and path.is_dir() and not path.is_symlink() and temporaries.sibling_stale(path, int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.lexists(path):
                removed.append(path)
                with contextlib.suppress(OSError):
                    temporaries.sidecar(path).unlink()
        m = re.fullmatch(pattern + re.escape(temporaries.SIDECAR_SUFFIX), path.name)
        base = path.with_name(path.name.removesuffix(temporaries.SIDECAR_SUFFIX))
        if m and not os.path.lexists(base) and temporaries.sibling_stale(base, int(m.group(1))):
            with contextlib.suppress(OSError):
                path.unlink()  # a lease whose folder is gone
    return removed


def _commit_outputs(tmp: Path, out_dir: Path, new: list[str], store: Path | None) -> list[str]:
    """Move the files written in ``tmp`` into ``out_dir``; remove pickscale's files this run did not write.

    Returns the names removed.
    """
    # lazy: store/ brings zarr; report/ is imported by every command and by pickscale.tables
    from ..store.paths import fsync_dir

    owned = output_names()
    previous = [n for n in owned if n != OUTPUTS_MARKER and os.path.lexists(out_dir / n)]
    record = {
        "pickscale_outputs": 1,
        "complete": False,
        "pickscale_version": __version__,
        "store": os.path.relpath(store, out_dir) if store is not None else None,
        "store_fingerprint": store_fingerprint(store) if store is not None else None,
        "store_created": _store_created(store),
        "files": sorted(set(new) | set(previous)),
    }
    _write_marker(out_dir, record)  # from here until the end, the outputs are recognisably out of date
    for name in new:
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / name, out_dir / name)
    removed = [n for n in previous if n not in new]
    for name in removed:
        with contextlib.suppress(FileNotFoundError):
            (out_dir / name).unlink()
    if not any(n.startswith("figures/") for n in new):
        with contextlib.suppress(OSError):
            (out_dir / "figures").rmdir()  # only when empty
    fsync_dir(out_dir)
    fsync_dir(out_dir / "figures")
    _write_marker(out_dir, {**record, "complete": True, "files": sorted(new)})
    fsync_dir(out_dir)
    return removed


def _store_created(store: Path | None) -> str | None:
    if store is None:
        return None
    try:
        # lazy: store/ brings zarr; report/ is imported by every command and by pickscale.tables
        from ..store import read_root_attrs

        return read_root_attrs(Path(store)).get("created")
    except Exception:
        return None


def write_report(ds: xr.Dataset, out_dir: Path, *, fmt: str = "png", figures: bool = True, quiet: bool = False,
                 store: Path | None = None, stage: Any = None, verbose: bool = False) -> None:
    """Tables (and figures) of a results Dataset into ``out_dir``; print the verdict (and, ``verbose``, the
    summary tables first: :func:`print_tables`; the verdict: :mod:`pickscale.report.verdict`).

    ``pickscale score`` and ``pickscale report`` both end here, so the files
    they write are byte-identical for the same store.  They are written to a
    hidden folder inside ``out_dir`` first and then moved into place; figures
    of earlier runs (any format) are removed, and ``pickscale-outputs.json``
    names ``store``, the results store they come from (see the module's docstring).  ``stage``: the
    progress display's stage (``grow(n)``, ``update()``), counting the tables and then each figure.
    """
    out_dir = Path(out_dir)
    # With figures, the tables are computed while other processes draw (figures/processes.py; issue 27).
    frames: dict[str, pd.DataFrame] = {} if figures else tables(ds)
    out_dir.mkdir(parents=True, exist_ok=True)
    # lazy: store/ brings zarr; report/ is imported by every command and by pickscale.tables
    from ..store import temporaries

    tmp = out_dir / f"{_OUTPUTS_TMP}{os.getpid()}-{secrets.token_hex(4)}"
    temporaries.claim(tmp)  # before the folder: a run on another host sees whose it is, and until when
    try:
        tmp.mkdir()
    except BaseException:
        temporaries.drop(tmp)
        raise
    try:
        new: list[str] = []
        written: list[str] = []

        def write_the_tables(count_figures: int = 0) -> None:
            if figures:
                frames.update(tables(ds))
            new.extend(p.name for p in write_tables(frames, tmp))
            written.extend(new)
            if stage is not None:
                stage.update()
                if count_figures:  # figures are most of a small study's time: each counts as it is written
                    stage.grow(count_figures)

        if not figures:
            write_the_tables()
        else:
            # A helper the command started with matplotlib loading (figures/helper.py) is handed the figures
            # first: it draws while this process writes the tables and loads matplotlib itself.
            drawn = hand_over_figures(ds, fmt)
            import matplotlib

            matplotlib.use("Agg")
            # lazy: matplotlib and the figures only when figures are drawn
            from .figures import save_figures
            from .figures.build import figure_names

            n_figures = len(figure_names(drawn))
            figs = save_figures(drawn, tmp / "figures", format=fmt, dpi=FIGURE_DPI,
                                on_written=None if stage is None else (lambda _: stage.update()),
                                meanwhile=lambda: write_the_tables(n_figures))
            new += [f"figures/{p.name}" for p in figs]
            written.append(f"figures/ ({len(figs)} {fmt})")
        removed = _commit_outputs(tmp, out_dir, new, store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        temporaries.drop(tmp)
    if not quiet:
        if verbose:
            print_tables(frames, bool(ds.attrs["options"]["exhaustive"]), threshold=ds.attrs["options"]["threshold"])
        print(f"\nwrote {', '.join(written)} to {out_dir}")
        if removed:
            print(f"removed {_listing(removed)}: pickscale's files of an earlier run that this run did not "
                  "write again")
        print_verdict(ds)


def hand_over_figures(ds: xr.Dataset, fmt: str, *, early: bool = False) -> xr.Dataset:
    """``ds`` as its figures are drawn (:func:`~pickscale.report.figures.processes.as_drawn`), handed to the
    command's figure helper (:mod:`~pickscale.report.figures.helper`) where it may draw it: drawn by several
    processes, and no larger than :data:`~pickscale.report.figures.helper.HANDOVER_BYTES`; the helper is let go
    otherwise.  ``early``: the results as scored, before they are saved (``pickscale score``): handed over only
    when wholly in memory (nothing is left to read from the store), and nothing is let go otherwise -- the saved
    results may qualify.  Without a helper, ``ds`` as drawn; nothing is sent or loaded.  (A helper not yet
    ready -- kept from the CPUs a cluster's workers used -- draws what is left once it is: the processes
    forked to draw are forked as without it, :func:`~pickscale.report.figures.processes.draw_all`.)"""
    # lazy: figures/ is imported by the commands that draw figures only
    from .figures import helper
    from .figures.processes import as_drawn, figure_processes, in_memory

    if early and (helper.current() is None or not all(in_memory(var) for var in ds.variables.values())):
        return ds
    drawn = as_drawn(ds, FIGURES)  # (the default figures: those of FIGURES are the only ones that read pairs)
    if helper.current() is None:
        return drawn
    if figure_processes(drawn, FIGURES) > 1 and drawn.nbytes <= helper.HANDOVER_BYTES:
        helper.hand_over("pickscale.report.figures.build:helper_job", drawn, fmt, FIGURE_DPI)
    else:
        helper.let_go()
    return drawn


#: The resolution of the command's PNG figures.
FIGURE_DPI = 150


def _shared(threshold: Any) -> str:
    """The shared threshold as a title says it: ``0.3``, or ``P 0.5, S 0.3`` (one per phase, SPEC §2).

    Examples
    --------
    >>> _shared(0.3), _shared({"P": 0.5, "S": 0.3}), _shared(None)
    ('the shared threshold 0.3', 'the shared thresholds P 0.5, S 0.3', 'the shared threshold')
    """
    if isinstance(threshold, Mapping):
        return "the shared thresholds " + ", ".join(f"{p} {float(v):g}" for p, v in threshold.items())
    return "the shared threshold" + (f" {float(threshold):g}" if threshold is not None else "")


def print_tables(frames: Mapping[str, pd.DataFrame], options_exhaustive: bool, *, threshold: Any = None) -> None:
    """Print the summary tables (:data:`~pickscale.report.tables.PRINTED`) as ``score`` and ``report`` do.

    The rows of a (dataset, phase) without reference arrivals are left out (their metrics are NaN, SPEC §4:
    printed, they would read as results), with one line per such dataset and phase under the detection
    table; the CSV files keep them.  ``threshold``: the stored option (one value, or one per phase), named in
    the titles.
    """
    at = _shared(threshold)
    titles = {
        "detection": f"DETECTION at {at}; recall_at_budget, best_threshold and ap over all thresholds",
        "timing": f"ONSET TIME at {at} (residuals matched at residual_tol; gross_error_rate beyond tol)",
        "calibration": "CALIBRATION (all picks at or above the floor)",
        "phase_quality": f"PHASE QUALITY at {at} (a swap: an arrival found only by a pick of the other phase)",
    }
    unscored = _phases_without_reference(frames["detection"])
    for name in PRINTED:
        print(f"\n{titles[name]}")
        print(format_table(_scored_rows(frames[name], unscored), columns=PRINTED_COLUMNS.get(name), by="dataset"))
        if name == "detection" and unscored:
            # Said once, under the first table: the rows are left out of every printed table (kept in the CSVs).
            print()
            for dataset, phase in unscored:
                print(f"dataset {dataset} has no reference {phase} arrivals: {phase} rows not printed "
                      "(emitted counts in detection.csv)")
    rests = []
    for name in PRINTED:
        if name in PRINTED_COLUMNS and name in frames:
            shown = {c if c in frames[name].columns else c.removesuffix("_lb") for c in PRINTED_COLUMNS[name]}
            rest = [str(c) for c in frames[name].columns if c not in shown]
            if rest:
                rests.append(f"{name}.csv also {', '.join(rest)}")
    if rests:
        # Wrapped: the terminal keeps 120 columns, and the list grows with the table (best_on_edge, SPEC §7).
        print("\n" + textwrap.fill(f"The CSV files hold every column ({'; '.join(rests)}).", width=120))
    if not options_exhaustive:
        print("\n_lb = lower bound: an unmatched pick may be a real arrival the analyst never marked\n"
              "(use --exhaustive if the reference marks every arrival).")


def _phases_without_reference(detection: pd.DataFrame) -> list[tuple[str, str]]:
    """The (dataset, phase) with no reference arrival (n_reference is one number per dataset and phase), sorted.

    Their metrics are NaN (SPEC §4: nothing to score against): printed, such rows would read as results.
    """
    if detection.empty:
        return []
    none = detection[detection["n_reference"] == 0]
    return sorted({(str(d), str(p)) for d, p in zip(none["dataset"], none["phase"])})


def _scored_rows(frame: pd.DataFrame, unscored: list[tuple[str, str]]) -> pd.DataFrame:
    """``frame`` without the rows of ``unscored`` (dataset, phase); tables without a phase column as they are."""
    if not unscored or "phase" not in frame.columns or frame.empty:
        return frame
    keys = set(unscored)
    keep = [(str(d), str(p)) not in keys for d, p in zip(frame["dataset"], frame["phase"])]
    return frame[keep]
