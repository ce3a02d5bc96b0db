"""``pickscale predict``: a reference predicted from travel times, written as a CSV ``score`` reads (SPEC §17)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ..errors import InputError
from .state import EXIT_OK

__all__ = ["predict_command", "write_reference"]


def write_reference(frame: pd.DataFrame, out: Path, *, overwrite: bool = False) -> None:
    """Write a predicted reference as CSV: times as ISO-8601 UTC with nine decimals, numbers at full precision.

    Written to a temporary file beside ``out`` and renamed: an interrupted run leaves no half file.

    Examples
    --------
    >>> frame = pd.DataFrame({"station": ["XX.A"], "phase": ["P"], "time": pd.to_datetime([1_500], unit="ns", utc=True),
    ...                       "travel_time_s": [19.233675]})
    >>> write_reference(frame, tmp / "predicted.csv")
    >>> print((tmp / "predicted.csv").read_text(), end="")
    station,phase,time,travel_time_s
    XX.A,P,1970-01-01T00:00:00.000001500Z,19.233675
    """
    from ..prediction import iso_times  # lazy: prediction/ (and scope/, which it reads stations with): predict only

    if out.is_dir():
        raise InputError(f"--out {out} is a folder; give the CSV file to write.")
    if out.exists() and not overwrite:
        raise InputError(f"--out {out} exists; pickscale replaces no file unless asked: add --overwrite.")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = frame.copy()
    text["time"] = iso_times(frame["time"].to_numpy("datetime64[ns]").view("int64"))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            text.to_csv(f, index=False, lineterminator="\n")
        os.replace(tmp_name, out)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def predict_command(args: argparse.Namespace) -> int:
    """``pickscale predict``: first P and S per event and station from TauP, written to ``--out``."""
    # lazy: prediction/ (and scope/, which it reads stations with) for `pickscale predict` only; store/ brings zarr
    from ..prediction import predict
    from ..store.paths import local_store_path

    out = local_store_path(args.out, what="--out")  # a URL is refused here: never made a local folder
    if out.exists() and not args.overwrite:  # before the model is built and every travel time computed
        raise InputError(f"--out {out} exists; pickscale replaces no file unless asked: add --overwrite.")
    frame = predict(args.events, args.stations, model=args.model, phases=args.phases, dataset=args.dataset,
                    max_distance_deg=args.max_distance_deg)
    try:
        write_reference(frame, out, overwrite=bool(args.overwrite))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot be written ({exc}).") from None
    counts = frame.attrs.get("pickscale_counts", {})
    per_phase = ", ".join(f"{phase} {n:,}" for phase, n in frame["phase"].value_counts().sort_index().items())
    for note in frame.attrs.get("pickscale_notes", []):
        print(f"pickscale: warning: {note}", file=sys.stderr)
    print(f"predict: {len(frame):,} reference row(s) ({per_phase or 'none'}) for {counts.get('events', 0):,} "
          f"event(s) and {counts.get('stations', 0):,} station(s), TauP model {args.model}, written to {out}")
    print(f"  score against it with a wide tolerance (model and origin errors are in every residual), e.g.: "
          f"pickscale score --reference {out} --picks PICKS --tol 2 --residual-tol 5 --out DIR")
    return EXIT_OK
