"""What a run records about itself: the store's attributes (inputs, options, exclusions, warnings)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import __version__
from ..io import Normalised
from ..io.text import QUOTE_VALUES, capped_counts, cut, top_counts

__all__ = ["attributes", "rows_read"]

def _report_attrs(report: Normalised) -> dict[str, Any]:
    return {
        "rows_read": int(report.n_rows_read),
        "rows_invalid_dropped": int(report.n_invalid),
        "columns_used": {k: None if v is None else cut(v) for k, v in report.columns.items()},
        # What the attributes quote from the input is capped (io.text): the most frequent few names, each cut
        # short, and under "…" how many more names and rows there are.
        "phases_dropped": top_counts({str(k): int(v) for k, v in report.dropped_phases.items()}),
        "phases_mapped": capped_counts({str(k): str(v) for k, v in sorted(report.mapped_phases.items())}),
        "columns_ignored": _capped_list(report.ignored_columns),
    }


def _capped_list(values: list) -> list[str]:
    out = [cut(v) for v in values[:QUOTE_VALUES]]
    return out + ([f"… and {len(values) - QUOTE_VALUES:,} more"] if len(values) > QUOTE_VALUES else [])


def rows_read(report: Normalised) -> dict[str, Any]:
    """What reading did, for the message when nothing is left to score."""
    return {"rows_read": int(report.n_rows_read), "invalid_dropped": int(report.n_invalid),
            "dropped_phases": top_counts(report.dropped_phases)}


def attributes(options, scope, ref_src, pick_src, ref_report, pick_report, started) -> dict[str, Any]:
    return {
        "title": "pickscale results",
        "pickscale_version": __version__,
        "created": pd.Timestamp.now(tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": {
            "reference": {"source": ref_src.description, "files": len(ref_src.files), "bytes": ref_src.bytes,
                          **_report_attrs(ref_report)},
            "picks": {"source": pick_src.description, "files": len(pick_src.files), "bytes": pick_src.bytes,
                      **_report_attrs(pick_report)},
        },
        "exclusions": dict(scope.exclusions),
        "exclusions_by_dataset": {d: dict(c) for d, c in scope.exclusions_by_dataset.items()},
        # The windows the models were run on (SPEC §2, "Coverage"; {} without), and per model the arrivals
        # charged as misses where it has no pick (JSON: per dataset and model).
        "coverage": dict(scope.report.get("coverage", {})),
        "unpicked": dict(scope.report.get("unpicked", {})),
        "warnings": ref_report.warnings() + pick_report.warnings() + list(scope.warnings),
        "lower_bound_note": (
            "_lb marks a lower bound: an unmatched pick may be a real arrival the analyst never marked."
            if not options.exhaustive else "exhaustive reference: precision, f1, ap, ece are exact."
        ),
    }
