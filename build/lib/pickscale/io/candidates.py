"""Picks without a model column: the unused text columns that may name the model, and the warning about them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .columns import column_key

__all__ = ["MODEL_CANDIDATES_MAX", "unused_text_candidates", "few_distinct", "union_candidates", "model_hint"]


MODEL_CANDIDATES_MAX = 20  # "a few distinct values": more is an id or a file name, not a model
_NOT_MODEL = ("file", "time", "event", "network", "channel", "location", "instrument", "polarity", "trace",
              "comment", "author", "agency")


def unused_text_candidates(columns: Sequence[Any], distinct: Any) -> dict[str, list[str]]:
    """Columns (not used, not named like a file/time/event/network column) whose few distinct values may be models.

    ``distinct(col)`` returns the distinct values of a column (or None to
    skip it); columns with 2 to 20 distinct values are kept.
    """
    out: dict[str, list[str]] = {}
    for col in columns:
        key = column_key(col)
        if any(word in key for word in _NOT_MODEL):
            continue
        values = distinct(col)
        if values is None:
            continue
        values = sorted({str(v).strip() for v in values if v is not None and str(v).strip() != ""})
        if all(pd.notna(pd.to_numeric(v, errors="coerce")) for v in values):
            continue  # numbers (an index, a count) name no model
        if 2 <= len(values) <= MODEL_CANDIDATES_MAX:
            out[str(col)] = values
    return out


def few_distinct(col: pd.Series) -> list[Any] | None:
    """The distinct values of a text column (None for other columns or more than a few values)."""
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        used = np.unique(col.cat.codes.to_numpy())
        used = used[used >= 0]
        return None if used.size > MODEL_CANDIDATES_MAX else list(dtype.categories[used])
    if not (dtype == np.dtype(object) or pd.api.types.is_string_dtype(dtype)):
        return None
    try:
        _, uniques = pd.factorize(col)
    except TypeError:
        return None
    if len(uniques) > MODEL_CANDIDATES_MAX:
        return None
    if dtype == np.dtype(object) and pd.api.types.infer_dtype(uniques) != "string":
        return None
    return list(uniques)


def union_candidates(maps: Iterable[dict[str, list[str]]]) -> dict[str, list[str]]:
    """The candidates of several files or partitions as one: values merged per column (a few kept)."""
    out: dict[str, list[str]] = {}
    for m in maps:
        for col, values in m.items():
            out[col] = sorted(set(out.get(col, [])) | set(values))[:MODEL_CANDIDATES_MAX + 1]
    return out


def model_hint(candidates: dict[str, list[str]]) -> str:
    """The warning for picks without a model column but with a column that may name the model."""
    parts = []
    for col, values in sorted(candidates.items()):
        shown = ", ".join(repr(v) for v in values[:4]) + (", ..." if len(values) > 4 else "")
        parts.append(f"{col!r} ({len(values)}{'+' if len(values) > MODEL_CANDIDATES_MAX else ''} "
                     f"distinct values: {shown})")
    first = sorted(candidates)[0]
    return ("the picks have no model column, so every pick is scored as one model 'model'; but "
            + ("column " if len(parts) == 1 else "columns ") + ", ".join(parts)
            + " may name the picker or its weights: if so, say which column holds the model, e.g. "
            f"columns={{'model': {first!r}}} (CLI: --columns model={first}).")
