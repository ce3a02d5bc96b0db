"""Record a benchmark's numbers in benchmarks/README.md, between a pair of markers."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

README = Path(__file__).with_name("README.md")


def write_block(marker: str, body: str, *, heading: str) -> None:
    """Replace the text between two ``marker`` lines (or append it under ``heading``)."""
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    block = f"{marker}\n{body}\n{marker}"
    if marker in text:
        head, _, rest = text.partition(marker)
        _, _, tail = rest.partition(marker)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + f"\n\n## {heading}\n\n" + block + "\n"
    README.write_text(text)


#: SPEC §5's means, exact since store schema 5 (the float sums before it could differ in the last bit).
MEANS = ("mae", "rmse", "residual_mean", "residual_std")


def read_tables(folder: Path, names: tuple[str, ...]) -> dict[str, list[list[str]]]:
    """The tables ``names`` of ``folder`` as rows of text cells (those that exist)."""
    return {name: list(csv.reader(io.StringIO((folder / f"{name}.csv").read_text())))
            for name in names if (folder / f"{name}.csv").exists()}


def same_tables(a: dict[str, list[list[str]]], b: dict[str, list[list[str]]]) -> bool:
    """Whether two runs' tables (:func:`read_tables`) are the same, byte for byte but for SPEC §5's four means,
    equal to 1e-12 (or 1e-15 s: a mean near 0, where the float sums lost digits; exact since store schema 5)."""
    if sorted(a) != sorted(b):
        return False
    for name, rows in a.items():
        other = b[name]
        if len(rows) != len(other) or (rows and rows[0] != other[0]):
            return False
        means = {i for i, column in enumerate(rows[0] if rows else []) if column.split("_by_")[0] in MEANS}
        for x, y in zip(rows[1:], other[1:]):
            for i, (u, v) in enumerate(zip(x, y)):
                if u != v and not (i in means and math.isclose(float(u), float(v), rel_tol=1e-12, abs_tol=1e-15)):
                    return False
    return True
