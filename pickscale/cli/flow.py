"""The one run flow of every command that writes results: checks, lock, scoring, store, tables and figures.

``score`` and ``demo`` go through :func:`run_into`; ``report`` (which scores nothing) through the last
step alone, :func:`write_outputs`.  The order is what makes a run safe to interrupt or to run twice:

1. refuse early, before any work: ``--out`` must be (or become) a writable folder whose store may be
   written (:func:`check_target`);
2. take the store's lock for the whole run: a second run aimed at the same folder stops here, and never
   mixes its tables with this one's; clean what dead runs left; check again, now that no other run can
   change anything, that no file of the user's would be replaced (:func:`pickscale.report.outputs.check_outputs`);
3. score (the command's ``produce``), then save the store atomically and write the tables and figures
   from it (:func:`write_outputs`);
4. on failure, remove the folders this run created if they are still empty.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..engine import progress  # (a module: its Stage is looked up when a stage starts)
from ..errors import StoreError
from ..report.outputs import check_outputs, cleanup_output_temporaries, hand_over_figures, write_report
from .state import Run

__all__ = ["run_into", "write_outputs", "check_target", "check_store", "check_extendable", "out_folder",
           "RemoteFolder", "is_remote_folder"]


def print_warnings(ds: Any, *, extend: bool) -> None:
    """Say on stderr the warnings of this run (of its extension, with ``extend``), one line each."""
    said = ds.attrs["extensions"][-1].get("warnings", []) if extend else ds.attrs.get("warnings", [])
    for line in said:
        print(f"warning: {line}", file=sys.stderr)


def out_folder(location: Any, *, what: str = "--out") -> Path:
    """A folder given on the command line (``--out``, a store, ``extend DIR``), as the user wrote it.

    A URL pickscale cannot write (``s3://bucket/run``) is refused here, before any work, as a StoreError
    naming it (:func:`pickscale.store.paths.local_store_path`); a ``file://`` URL becomes its path.
    """
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store.paths import local_store_path, url_scheme
    from ..store.remote import SCHEMES, check_remote, cloud_installed, is_remote

    text = os.fspath(location)
    if is_remote(text) and url_scheme(text) in SCHEMES and cloud_installed(url_scheme(text) or ""):
        return RemoteFolder(check_remote(text, what=what))  # type: ignore[return-value]  # (a str, not a Path)
    local = local_store_path(text, what=what)
    return local if url_scheme(text) == "file" else Path(text)


class RemoteFolder(str):
    """A folder on object storage (``s3://bucket/run``): ``folder / "results.zarr"`` is the store's URL.

    A str, never a Path (``pathlib`` would turn ``s3://`` into a local ``s3:/``): the flow checks for it
    before anything local is done.
    """

    def __truediv__(self, name: str) -> RemoteFolder:
        return RemoteFolder(f"{self.rstrip('/')}/{name}")

    @property
    def parent(self) -> RemoteFolder:
        return RemoteFolder(self.rstrip("/").rpartition("/")[0])


def is_remote_folder(location: Any) -> bool:
    """Whether ``location`` is a :class:`RemoteFolder` (:func:`out_folder` of a URL)."""
    return isinstance(location, RemoteFolder)


class Closing(list):
    """What a command lets go of once its store is saved: the contexts it holds (its cluster), and the threads
    of a cluster shutting down (joined before the command returns).

    A command's ``produce(closing)`` takes its client with ``closing.hold(command_client(..., closing))``:
    the cluster keeps what the results left on it (the residual pairs, :mod:`pickscale.engine.pairs`) until
    the store has them, and is let go then, while the tables and figures are written.
    """

    def __init__(self) -> None:
        super().__init__()
        self.held = contextlib.ExitStack()

    def hold(self, context: Any) -> Any:
        """Enter ``context`` until :meth:`release` (or the end of the run); return what it gives."""
        return self.held.enter_context(context)

    def release(self) -> None:
        """Exit every held context, last first."""
        self.held.close()


def run_into(out_dir: Path, *, overwrite: bool, produce: Callable[[Closing], Any], fmt: str, figures: bool,
             quiet: bool, also: Sequence[str] = (), extend: bool = False, verbose: bool = False) -> Any:
    """Run ``produce(closing)`` under the store's lock in ``out_dir`` and write what it returns; return it.

    ``produce`` scores and returns the Dataset; it may append threads to ``closing`` (a cluster shutting
    down while the results are written), joined before this returns.  ``also``: further files the command
    writes in ``out_dir`` (the demo's inputs), refused like the outputs unless ``overwrite``.  With
    ``extend`` (``pickscale extend``) the store must exist and be a pickscale store: it is replaced
    atomically, and the tables and figures written from it are rewritten (as ``report`` does).
    A :class:`RemoteFolder` (``--out URL``) has its own flow (:func:`pickscale.cli.remote.run_into_remote`;
    :func:`pickscale.cli.commands.run_into_out` chooses).
    """
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store import fetched_together, read_lazily, removed_later, reserved, save
    from ..store.codec import is_dask

    if extend:
        check_extendable(out_dir / "results.zarr")
        created: list[Path] = []
    else:
        check_target(out_dir, overwrite)
        created = _make_folder(out_dir)
    finished = False
    closing = Closing()
    try:
        # (a store replaced by --overwrite or extend is removed while the tables and figures are written)
        with reserved(out_dir / "results.zarr") as target, closing.held, removed_later():
            Run.target = target
            _cleanup_stale(target)
            cleanup_output_temporaries(out_dir)
            # Again, now that no other run can change it.
            check_extendable(target) if extend else check_store(target, overwrite)
            own = target if extend else None  # extend rewrites the outputs written from the store it replaces
            check_outputs(out_dir, overwrite, also=also, own_store=own)  # before any work is done
            ds = produce(closing)
            check_outputs(out_dir, overwrite, own_store=own)  # a file appeared during the run: nothing written
            # Pairs the store would fetch together (~10^7 picks' or fewer) fetched once, here: the store, the
            # tables and the figures take them from memory (the figure helper from now), the cluster let go.
            ds = fetched_together(ds)
            if figures:  # (the figure helper draws while the store and the tables are written: figures/helper.py)
                hand_over_figures(ds, fmt, early=True)
            # The last stage of the progress display: the store, then the tables and figures.
            with _writing(quiet) as stage:
                if not any(is_dask(var.data) for var in ds.variables.values()):
                    closing.release()  # (the cluster holds nothing the results read: let it go as they are saved)
                store = Path(save(ds, out_dir / "results.zarr", overwrite=overwrite or extend))  # (a local folder)
                Run.store = store
                closing.release()  # the store holds what the cluster kept: let it go while the rest is written
                ds = read_lazily(ds, store)
                stage.update()
                print_warnings(ds, extend=extend)
                write_outputs(ds, out_dir, store, fmt=fmt, figures=figures, quiet=quiet, stage=stage,
                              verbose=verbose)
            if not quiet:
                print(f"results store: {out_dir / 'results.zarr'}")
        finished = True
    finally:
        for thread in closing:
            thread.join()
        if not finished:
            _remove_if_empty(created)
    return ds


@contextlib.contextmanager
def _writing(quiet: bool, label: str = "writing (store, tables and figures)", total: int = 2) -> Iterator[Any]:
    """The "writing" stage of the progress display: the results store, the tables, then each figure (counted
    as they are written: figures are most of a small study's time); silent with quiet."""
    if quiet:
        yield _Silent()
        return
    with progress.Stage(label, total) as stage:
        yield stage


class _Silent:
    def update(self, n: int = 1) -> None:
        """Nothing to show."""

    def grow(self, n: int) -> None:
        """Nothing to count."""


def write_outputs(ds: Any, out_dir: Path, store: Path | None, *, fmt: str, figures: bool, quiet: bool,
                  stage: Any = None, verbose: bool = False) -> None:
    """The tables and figures of ``ds`` in ``out_dir``; a full disk or a read-only folder is a StoreError.

    ``stage``: the progress display's stage that counts the tables and each figure; without one (``pickscale
    report``), a stage of its own.
    """
    if stage is None:
        with _writing(quiet, "writing (tables and figures)", total=1) as own:
            return write_outputs(ds, out_dir, store, fmt=fmt, figures=figures, quiet=quiet, stage=own,
                                 verbose=verbose)
    try:
        write_report(ds, out_dir, fmt=fmt, figures=figures, quiet=quiet, store=store, stage=stage, verbose=verbose)
    except BrokenPipeError:  # stdout closed by its reader (`| head`): not the folder's fault
        raise
    except OSError as exc:
        what = exc.strerror or str(exc)
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        done = (f" The results store {store} is complete; write the tables again with "
                f"`pickscale report {store} --out FOLDER`." if Run.store is not None else "")
        raise StoreError(f"cannot write the tables and figures to {out_dir}: {what}{where}.{done}") from None


def check_target(out_dir: Path, overwrite: bool) -> None:
    """Refuse early, before any work: --out must be (or become) a writable folder whose store may be written."""
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise StoreError(f"--out {out_dir} is a file, not a folder: give a folder for results.zarr and the tables.")
    folder = Path(os.path.abspath(out_dir))
    probe = next(p for p in (folder, *folder.parents) if os.path.lexists(p))
    if not probe.is_dir():
        raise StoreError(f"cannot create the folder {out_dir}: {probe} is a file, not a folder.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write to {out_dir}: {probe} is not writable.")
    check_store(out_dir / "results.zarr", overwrite)


def check_store(store: Path, overwrite: bool) -> None:
    """A store at ``store`` may be replaced only if it is pickscale's and ``overwrite`` is given."""
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store import is_pickscale_store

    if not os.path.lexists(store):
        return
    if not is_pickscale_store(Path(os.path.abspath(store))):
        raise StoreError(f"{store} exists and is not a pickscale results store; pickscale never replaces "
                         "it (not even with --overwrite): choose another --out, or remove it yourself.")
    if not overwrite:
        raise StoreError(f"{store} already exists; pass --overwrite to replace it, or choose another --out.")


def check_extendable(store: Path) -> None:
    """``pickscale extend``: a complete pickscale store must be at ``store``."""
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store import is_pickscale_store

    if not os.path.lexists(store):
        raise StoreError(f"no results store at {store}: `pickscale extend DIR` extends the results.zarr that "
                         "`pickscale score --out DIR` wrote.")
    if not is_pickscale_store(Path(os.path.abspath(store))):
        raise StoreError(f"{store} is not a pickscale results store; pickscale extend replaces only its own stores.")


def _make_folder(folder: Path) -> list[Path]:
    """``mkdir -p``; return the folders created (deepest last), to remove them if the run fails."""
    folder = Path(os.path.abspath(folder))
    missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder {folder}: {exc.strerror or exc}.") from None
    return missing


def _remove_if_empty(created: list[Path]) -> None:
    for folder in reversed(created):
        try:
            folder.rmdir()  # only ever removes an empty folder
        except OSError:
            return


def _cleanup_stale(target: Path) -> None:
    """Remove what runs that died left next to the store, and say so."""
    from ..store import cleanup_stale  # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store

    had_store = target.exists()
    removed = cleanup_stale(target)
    if removed:
        names = ", ".join(p.name for p in removed[:3]) + (" …" if len(removed) > 3 else "")
        print(f"pickscale: removed {len(removed)} temporary file(s) left next to {target} by a run that did "
              f"not finish ({names}).", file=sys.stderr)
    if not had_store and target.exists():
        print(f"pickscale: put back the previous results store at {target}: a run that replaced it did not "
              "finish.", file=sys.stderr)
