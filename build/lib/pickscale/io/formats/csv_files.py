"""CSV files, the text tables no other reader claims, and why a file cannot be one (what it is instead).

Any delimiter (``,``, ``;``, tab), gzip, bzip2, xz or Zstandard compression
(from the content, whatever the name), UTF-8, or UTF-16/UTF-32 with a
byte-order mark; parsed by :func:`pickscale.io.csv.read_csv_file`.  The
messages of :func:`not_text_reason` (:mod:`pickscale.io.sniff`, below the
readers) name what a file is instead (a ZIP or Excel workbook, an HTML page,
a bulletin, UTF-16 without a byte-order mark, binary data), so that the user
knows what to do with it.
"""

from __future__ import annotations

import pandas as pd

from ...errors import InputError
from ..csv import read_csv_file
from ..sniff import ZIP_MAGIC, not_text_reason
from ..sources import COMPRESSION_SUFFIXES, CSV_SUFFIXES
from .reader import FileReader, Probe, dispatchers

__all__ = ["ZIP_MAGIC", "CsvFiles", "not_text_reason"]

_TEXT_SUFFIXES = (".tsv", ".txt")


class CsvFiles(FileReader):
    """CSV (and ``.tsv``/``.txt``) files: a file named so, or text no other reader claims.

    The last file reader of the table: a file that no other claims is read
    as CSV, whose messages say what the file is instead.

    Examples
    --------
    >>> reader = CsvFiles()
    >>> reader.guess_can_open("picks.csv.gz"), reader.guess_can_open(Probe("x.dat", head=b"PAR1\\x15\\x04"))
    (True, False)
    """

    name = "csv"
    description = "CSV (any delimiter, compressed or not)"
    suffixes = CSV_SUFFIXES + _TEXT_SUFFIXES + tuple(t + c for t in _TEXT_SUFFIXES for c in COMPRESSION_SUFFIXES)
    listed = CSV_SUFFIXES
    batched = True

    def recognises(self, probe: Probe) -> bool:
        if dispatchers().claimed_elsewhere(probe, self):  # a bulletin under another name, Parquet ...
            return False
        content = probe.content
        return bool(content) and not_text_reason(content) is None

    def open(self, probe: Probe) -> pd.DataFrame:
        content = probe.content  # decompressed: the codec is checked first, naming the package to install
        if not content and probe.compression:
            raise InputError(f"{probe.path}: the compressed file is empty.")
        return read_csv_file(probe.path, content, probe.compression)
