"""Deprecated import path, kept for one release: the input formats now live in :mod:`pickscale.io.formats`.

``from pickscale.formats import as_frame`` and the submodules ``pickscale.formats.quakeml``,
``eqtransformer`` and ``seisbench`` still work; write ``pickscale.io.formats`` instead.  (Bulletin
files, once in ``quakeml``, are now :mod:`pickscale.io.formats.bulletins`; their names are still
re-exported here.)
"""

import sys

from ..io.formats import (
    BULLETIN_SUFFIXES,
    OBSPY_HINT,
    as_frame,
    bulletin_files,
    bulletins,
    catalog_to_frame,
    eqt_to_long,
    eqtransformer,
    is_catalog,
    is_eqt_wide,
    is_pick_collection,
    is_pick_like,
    picks_to_frame,
    quakeml,
    read_bulletins,
    seisbench,
)

# The old submodule paths name the new modules (``import pickscale.formats.quakeml``).
for _module in (bulletins, eqtransformer, quakeml, seisbench):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module

__all__ = [
    "as_frame",
    "catalog_to_frame",
    "read_bulletins",
    "bulletin_files",
    "is_catalog",
    "picks_to_frame",
    "is_pick_like",
    "is_pick_collection",
    "is_eqt_wide",
    "eqt_to_long",
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
]
