"""Record a benchmark's numbers in benchmarks/README.md, between a pair of markers."""

from __future__ import annotations

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
