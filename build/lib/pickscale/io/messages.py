"""What the user is told about invalid rows (with hints per column), and many files' errors said once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .text import QUOTE_CHARS, QUOTE_VALUES, as_text, capped_counts, cut, quote, quote_values, top_counts

__all__ = ["N_EXAMPLES", "ROWS_CONVENTION", "DROP_HINT", "describe_invalid", "invalid_rows_message",
           "join_failures", "quote", "quote_values", "capped_counts", "top_counts", "cut", "QUOTE_CHARS",
           "QUOTE_VALUES", "quote_counts"]


#: Example rows shown per problem.
N_EXAMPLES = 5
#: How row numbers in messages count.
ROWS_CONVENTION = "row numbers as a spreadsheet shows them: header = row 1"
#: How a user asks for invalid rows to be dropped (the CLI flag).
DROP_HINT = "or rerun with drop_invalid to drop them (they are then counted in a warning)"

_PROBLEM = {
    "dataset": "an empty dataset name",
    "model": "an empty model name",
    "station": "an empty station",
    "phase": "an empty phase",
    "time": "an unreadable time (or one outside 1677-2262)",
    "time zone": "a time without a UTC offset, in a column whose other times have one",
    "conf": "conf missing or outside [0, 1]",
}
#: Problems that are not named after their column: problem -> canonical column.
_COLUMN_OF = {"time zone": "time"}


def _show(value: Any) -> str:
    return quote("" if value is None or (isinstance(value, float) and np.isnan(value)) else value, limit=40)


def quote_counts(counts: dict[str, int], *, limit: int = QUOTE_VALUES) -> str:
    """``'name': rows, …`` for the ``limit`` largest counts (ties by name), and how many names more.

    Examples
    --------
    >>> quote_counts({"PKP": 2, "pP": 1}), quote_counts({f"X{i}": 1 for i in range(12)}, limit=2)
    ("'PKP': 2, 'pP': 1", "'X0': 1, 'X1': 1 and 10 more names (10 rows)")
    """
    top = top_counts(counts, limit=limit)
    more = top.pop("…", None)
    shown = ", ".join(f"{quote(k)}: {v}" for k, v in top.items())
    return shown + (f" and {more['names']:,} more names ({more['rows']:,} rows)" if more else "")


def _time_hint(values: pd.Series) -> str:
    x = pd.to_numeric(as_text(values)[0], errors="coerce").to_numpy(np.float64)
    x = np.abs(x[np.isfinite(x)])
    hint = (" Expected ISO-8601 (e.g. 2021-03-04T05:06:07.89Z; any UTC offset, none = UTC)"
            " or a number of seconds since 1970.")
    if x.size == 0:
        return hint
    mag = float(np.median(x))
    for lo, unit, div in ((1e17, "nanoseconds", "1e9"), (1e14, "microseconds", "1e6"),
                          (1e11, "milliseconds", "1000")):
        if mag >= lo:
            return hint + (f" The numbers look like {unit} since 1970; convert to seconds "
                           f"(divide by {div}).")
    return hint


def _conf_hint(values: pd.Series, all_values: pd.Series) -> str:
    hint = " Expected a number in [0, 1]."
    text, _ = as_text(all_values)
    x = pd.to_numeric(text, errors="coerce").to_numpy(np.float64)
    x = x[np.isfinite(x)]
    # A percentage column: everything in [0, 100] and most values above 1 (a
    # stray 1.5 among probabilities is a bad row, not a different scale).
    if x.size and 1 < x.max() <= 100 and x.min() >= 0 and np.mean(x > 1) >= 0.5:
        hint += " conf looks like a percentage (0-100); divide by 100."
    if as_text(values)[0].str.fullmatch(r"[+-]?\d+,\d+").fillna(False).any():
        hint += " Some values use a decimal comma; use a decimal point."
    return hint


def _zone_hint(col: pd.Series, with_offset: np.ndarray, row_offset: int) -> str:
    i = int(np.flatnonzero(with_offset)[0])
    return (f" Times without an offset are read as UTC, but this column also holds times with one "
            f"(e.g. row {row_offset + i + 2}: {_show(col.iloc[i])}), so those without are probably "
            "local time: give every time its UTC offset, or write them all in UTC.")


def describe_invalid(
    raw: pd.DataFrame,
    columns: dict[str, str | None],
    problems: dict[str, np.ndarray],
    row_offset: int,
    with_offset: np.ndarray | None = None,
) -> tuple[list[str], list[str]]:
    """(message lines per problem, short examples) for the invalid rows."""
    lines: list[str] = []
    examples: list[str] = []
    for problem, bad in problems.items():
        idx = np.flatnonzero(bad)
        if idx.size == 0:
            continue
        canonical = _COLUMN_OF.get(problem, problem)
        name = columns[canonical]
        col = raw[name]
        first = idx[:N_EXAMPLES]
        shown = [f"row {row_offset + i + 2}: {_show(col.iloc[i])}" for i in first]
        examples += [f"row {row_offset + i + 2}: {problem} {_show(col.iloc[i])}" for i in first]
        more = f" (first {len(first)} shown)" if idx.size > len(first) else ""
        hint = ""
        if problem == "time":
            hint = _time_hint(col.iloc[idx[:1000]])
        elif problem == "time zone" and with_offset is not None:
            hint = _zone_hint(col, with_offset, row_offset)
        elif problem == "conf":
            hint = _conf_hint(col.iloc[idx[:1000]], col)
        lines.append(
            f"  {canonical} (column {quote(str(name))}): {idx.size} row(s) with {_PROBLEM[problem]}"
            f"{more} — " + ", ".join(shown) + "." + hint
        )
    return lines, examples


def invalid_rows_message(source: str, role: str, n_invalid: int, n_rows: int, lines: list[str]) -> str:
    """The error for invalid rows that are not dropped: how many, one line per problem, what to do."""
    head = f"{source}: {n_invalid} invalid row(s) of {n_rows} in the {role} table ({ROWS_CONVENTION}):"
    return "\n".join([head, *lines, f"Fix these rows, {DROP_HINT}."])


def join_failures(messages: Sequence[str]) -> str:
    """Input errors of many files as one text: a message that several files share is said once.

    Messages that are equal once the file name that starts them is taken
    out (a glob of files of one layout: "<file>: the picks table has no
    column for ...") become one message naming the first file and how many
    files share it.  Order: first occurrence.

    Examples
    --------
    >>> print(join_failures(["a.csv: no column for 'conf'.", "b.csv: no column for 'conf'.", "c.csv: empty."]))
    a.csv (and 1 more file with the same problem, 2 in all): no column for 'conf'.
    c.csv: empty.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for m in messages:
        head, sep, rest = m.partition(": ")
        key = rest if sep and head and "\n" not in head else m
        groups.setdefault(key, []).append((head if sep else "", m))
    out: list[str] = []
    for key, items in groups.items():
        if len(items) == 1 or not items[0][0]:
            out.extend(dict.fromkeys(m for _, m in items))
            continue
        n = len(items)
        out.append(f"{items[0][0]} (and {n - 1} more file{'s' if n > 2 else ''} with the same problem, "
                   f"{n} in all): {key}")
    return "\n".join(out)
