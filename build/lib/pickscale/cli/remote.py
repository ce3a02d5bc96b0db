"""The run flow for ``--out URL``: the store an Icechunk repository on object storage, the tables and figures
written beside it (:func:`run_into_remote`, chosen by :func:`pickscale.cli.commands.run_into_out`), and ``pickscale
report`` of such a store (:func:`report_remote`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import StoreError
from ..io.storage import current
from ..report.outputs import (
    OUTPUTS_MARKER,
    check_outputs,
    cleanup_output_temporaries,
    output_names,
    print_tables,
    write_report,
)
from ..report.tables import tables
from ..report.verdict import print_verdict
from .flow import Closing, RemoteFolder, _writing, print_warnings, write_outputs

__all__ = ["run_into_remote", "check_remote_outputs", "write_remote_outputs", "report_remote"]


def run_into_remote(out: RemoteFolder, *, overwrite: bool, produce: Callable[[Closing], Any], fmt: str,
                     figures: bool, quiet: bool, also: Sequence[str] = (), extend: bool = False, verbose: bool = False
                    ) -> Any:
    """:func:`run_into` for ``--out URL``: the store is an Icechunk repository at ``URL/results.zarr``.

    The writer starts (and the store is checked) before any work; the store is saved as one commit, which
    fails -- a StoreError, exit 2, nothing of this run written -- if another run committed meanwhile; the
    tables, figures and ``pickscale-outputs.json`` (naming the store's version) are written beside it.
    """
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store import read_lazily
    from ..store.remote import reserved, save_remote

    if also:
        raise StoreError(f"--out {out}: this command also writes files ({', '.join(also)}) that pickscale "
                         "writes to a local folder only; give a local --out.")
    url = out / "results.zarr"
    closing = Closing()
    try:
        with reserved(url, overwrite=overwrite, extend=extend), closing.held:
            check_remote_outputs(out, overwrite or extend)  # before any work
            ds = produce(closing)
            with _writing(quiet, total=3) as stage:  # the store, the tables, the upload; then each figure
                command = "extend" if extend else "score"
                version = save_remote(ds, url, overwrite=True, message=f"pickscale {command}")
                closing.release()  # the store holds what the cluster kept: let it go while the rest is written
                ds = read_lazily(ds, url, version=version)
                stage.update()
                print_warnings(ds, extend=extend)
                write_remote_outputs(ds, out, version, fmt=fmt, figures=figures, quiet=quiet, stage=stage,
                                     verbose=verbose)
                stage.update()  # uploaded
            if not quiet:
                print(f"results store: {url} (version {version})")
    finally:
        for thread in closing:
            thread.join()
    return ds


def _remote_fs(url: str) -> tuple[Any, str]:
    """The filesystem of a bucket folder, with the run's storage options (those of its inputs and store)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True, **current())
    return fs, root.rstrip("/")


def check_remote_outputs(out: str, overwrite: bool) -> None:
    """Refuse, before any work, to replace files in the bucket that pickscale writes but did not write there."""
    if overwrite:
        return
    fs, root = _remote_fs(out)
    try:
        present = {p[len(root) + 1:] for p in fs.find(root, maxdepth=2)}
    except FileNotFoundError:
        return
    if OUTPUTS_MARKER in present:  # pickscale's own outputs: replaced with the store they come from
        return
    clash = sorted(n for n in output_names() if n in present)
    if clash:
        raise StoreError(f"--out {out} already holds files that pickscale writes: {', '.join(clash[:8])}; pass "
                         "--overwrite to replace them, or choose another --out.")


def write_remote_outputs(ds: Any, out: str, version: str, *, fmt: str, figures: bool, quiet: bool,
                         stage: Any = None, verbose: bool = False) -> None:
    """The tables and figures of ``ds`` in the bucket folder ``out``, beside its store, and the outputs record.

    Written in a local temporary folder first (as for a local --out), then uploaded: the record
    ``pickscale-outputs.json`` is written "not complete" first, listing every file the run may leave, and
    "complete", naming the store's version (``store_version``), last.
    """
    import json
    import tempfile

    fs, root = _remote_fs(out)
    try:
        with tempfile.TemporaryDirectory(prefix="pickscale-outputs-") as tmp:
            write_report(ds, Path(tmp), fmt=fmt, figures=figures, quiet=True, store=None, stage=stage)
            new = sorted(p.relative_to(tmp).as_posix() for p in Path(tmp).rglob("*")
                         if p.is_file() and not p.name.startswith(".") and p.name != OUTPUTS_MARKER)
            try:
                previous = json.loads(fs.cat_file(f"{root}/{OUTPUTS_MARKER}")).get("files", [])
            except (FileNotFoundError, ValueError, AttributeError):
                previous = []
            owned = set(output_names())
            old = sorted(f for f in previous if isinstance(f, str) and f in owned and f not in new)
            record = {"pickscale_outputs": 1, "complete": False, "pickscale_version": __version__,
                      "store": "results.zarr", "store_url": f"{out}/results.zarr", "store_version": version,
                      "store_created": ds.attrs.get("created"), "files": sorted({*new, *old})}
            fs.pipe_file(f"{root}/{OUTPUTS_MARKER}", (json.dumps(record, indent=1) + "\n").encode())
            for name in new:
                fs.put_file(str(Path(tmp) / name), f"{root}/{name}")
            for name in old:
                with contextlib.suppress(FileNotFoundError):
                    fs.rm_file(f"{root}/{name}")
            record = {**record, "complete": True, "files": new}
            fs.pipe_file(f"{root}/{OUTPUTS_MARKER}", (json.dumps(record, indent=1) + "\n").encode())
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 (any failure of the object store)
        raise StoreError(f"cannot write the tables and figures to {out}: {type(exc).__name__}: {exc}. The results "
                         f"store {out}/results.zarr (version {version}) is complete; write them again with "
                         f"`pickscale report {out}/results.zarr`.") from None
    if not quiet:
        if verbose:
            print_tables(tables(ds), bool(ds.attrs["options"]["exhaustive"]),
                         threshold=ds.attrs["options"]["threshold"])
        print(f"\nwrote {len(new)} table(s) and figure(s) to {out}")
        print_verdict(ds)


def report_remote(store: Any, out: Any, *, ci: Callable[[Any], Any], overwrite: bool, fmt: str, figures: bool,
                  quiet: bool, verbose: bool = False) -> None:
    """``pickscale report`` when the store or ``--out`` is on object storage (:class:`RemoteFolder`)."""
    # lazy: store/ brings zarr (~0.4 s): loaded once the command reaches its store
    from ..store import open_results
    from ..store.remote import open_remote_version

    if isinstance(store, RemoteFolder):
        ds, version = open_remote_version(store)
    else:
        ds, version = open_results(store), None
    ds = ci(ds)
    if out is None:
        out = store.parent if isinstance(store, RemoteFolder) else Path(store).resolve().parent
    if isinstance(out, RemoteFolder):
        check_remote_outputs(out, overwrite)
        write_remote_outputs(ds, out, version or os.fspath(store), fmt=fmt, figures=figures, quiet=quiet,
                             verbose=verbose)
        return
    if os.path.lexists(out) and not Path(out).is_dir():
        raise StoreError(f"--out {out} is a file, not a folder.")
    cleanup_output_temporaries(Path(out))
    check_outputs(Path(out), overwrite)
    write_outputs(ds, Path(out), None, fmt=fmt, figures=figures, quiet=quiet, verbose=verbose)
