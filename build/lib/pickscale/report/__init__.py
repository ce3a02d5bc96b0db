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

from .._lazy import lazy_names

#: Each name, and the module of this package that defines it (loaded on first use, PEP 562).
_LAZY = {
    "OUTPUTS_MARKER": "outputs",
    "check_outputs": "outputs",
    "cleanup_output_temporaries": "outputs",
    "output_names": "outputs",
    "stale_outputs": "outputs",
    "store_fingerprint": "outputs",
    "write_report": "outputs",
    "NA_REP": "tables",
    "PRINTED": "tables",
    "TABLE_NAMES": "tables",
    "format_table": "tables",
    "to_csv_bytes": "tables",
    "write_tables": "tables",
}

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

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
