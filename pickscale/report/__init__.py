"""What is read off a results store: the SPEC §8 tables, the figures, and the output folder.

:mod:`pickscale.report.tables`
    the six SPEC §8 tables of a results Dataset (:func:`pickscale.tables`), as CSV and as printed;
:mod:`pickscale.report.figures`
    the six figures, one module per figure family (imports matplotlib: not imported here);
:mod:`pickscale.report.outputs`
    the ``--out`` folder of ``pickscale score`` and ``pickscale report``: the tables and figures written
    aside and moved in, and ``pickscale-outputs.json`` naming the store they come from.

This package stays light (no xarray, no matplotlib at import): ``import pickscale`` imports the
:func:`~pickscale.report.tables.tables` function from it, as ``pickscale.tables``.  That function is
not re-exported here, so that ``pickscale.report.tables`` is always the module, never the function.

Examples
--------
>>> from pickscale.report import TABLE_NAMES
>>> TABLE_NAMES[:2]
('detection', 'timing')
"""

from __future__ import annotations

from .outputs import (
    OUTPUTS_MARKER,
    check_outputs,
    cleanup_output_temporaries,
    output_names,
    stale_outputs,
    store_fingerprint,
    write_report,
)
from .tables import NA_REP, PRINTED, TABLE_NAMES, format_table, to_csv_bytes, write_tables

__all__ = [
    "TABLE_NAMES",
    "PRINTED",
    "NA_REP",
    "format_table",
    "to_csv_bytes",
    "write_tables",
    "OUTPUTS_MARKER",
    "output_names",
    "store_fingerprint",
    "stale_outputs",
    "check_outputs",
    "cleanup_output_temporaries",
    "write_report",
]
