"""Input formats, one reader class each, registered in one table (:data:`~.registry.READERS`).

:func:`as_frame` is what the engine (``engine.load``) makes of an in-memory
object or a bulletin: a raw pandas frame that the ordinary normaliser (SPEC
§1) then reads, or ``None`` for anything else (CSV/Parquet paths, frames),
which takes the usual path.  Each reader says what it can open
(``guess_can_open``: by type, by file name, by content) and how it opens it
(``open``); the dispatchers of :mod:`.registry` walk the table in order
(:mod:`.reader` describes the three stages: what the user passed, one listed
file, a table as read).

============================================  ==========================================================
input (reader)                                 read as
============================================  ==========================================================
``{name: input}`` (:class:`ModelDict`)         one model per key (picks), one dataset per key (reference)
ObsPy ``Catalog`` (:class:`ObspyCatalog`);     reference arrivals: the picks of each event's preferred
QuakeML / SC3ML / NonLinLoc / hypoDD … file,   origin's arrivals (:mod:`.bulletins`, :mod:`.quakeml`)
folder or glob (:class:`BulletinFiles`)
SeisBench ``PickList``, a list or iterator     picks: ``trace_id, peak_time, peak_value, phase``
of objects with SeisBench ``Pick``'s           (:mod:`.seisbench`, duck-typed)
attributes (:class:`SeisbenchPicks`)
pandas / Dask DataFrame (:mod:`.frames`)       as they are: chunks of rows / one task a partition
Parquet file (:class:`ParquetFiles`)           as it is (``PAR1``, whatever the name)
CSV file (:class:`CsvFiles`)                   as it is: text no other reader claims
EQTransformer ``X_prediction_results.csv``     one row per pick, recognised by its header in the
(:class:`EqtTables`)                           normaliser (:mod:`.eqtransformer`)
============================================  ==========================================================

PhaseNet's ``picks.csv`` (``station_id, phase_time, phase_score,
phase_type``) and QuakeScope's Parquet (``tid, pha, peak, conf, rid``) need
no conversion: SPEC §1's aliases cover their columns.
"""

from __future__ import annotations

from .bulletins import BULLETIN_SUFFIXES, OBSPY_HINT, BulletinFiles, bulletin_files, read_bulletins
from .csv_files import CsvFiles
from .dicts import ModelDict
from .eqtransformer import EqtTables, eqt_to_long, is_eqt_wide
from .frames import DaskFrame, PandasFrame
from .parquet_files import ParquetFiles
from .quakeml import ObspyCatalog, catalog_to_frame, is_catalog
from .reader import FileReader, LayoutReader, Probe, Reader, SourceReader
from .registry import READERS, as_frame, file_reader_for, layout_for, reader_for
from .seisbench import SeisbenchPicks, is_pick_like, picks_to_frame

__all__ = [
    "READERS",
    "Reader",
    "SourceReader",
    "FileReader",
    "LayoutReader",
    "Probe",
    "reader_for",
    "file_reader_for",
    "layout_for",
    "as_frame",
    "ModelDict",
    "ObspyCatalog",
    "SeisbenchPicks",
    "BulletinFiles",
    "PandasFrame",
    "DaskFrame",
    "ParquetFiles",
    "CsvFiles",
    "EqtTables",
    "catalog_to_frame",
    "read_bulletins",
    "bulletin_files",
    "is_catalog",
    "picks_to_frame",
    "is_pick_like",
    "is_eqt_wide",
    "eqt_to_long",
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
]
