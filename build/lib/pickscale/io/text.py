"""Text columns normalised per distinct value, rows referring to them by integer codes.

A text column of a million rows usually holds a few hundred distinct values
(stations, models, one dataset, a handful of phase names).  The parsers of
:mod:`pickscale.io.fields` run on those distinct values only and rows refer to
them by integer codes, so that no per-row Python string is ever made (the
per-row cost is a few numpy takes over small integer codes).  A
``Categorical`` input is used through its own codes; with
``normalise(..., categorical=True)`` the output keeps codes too.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Text", "as_text", "defused", "to_object", "row_counts", "distinct_values", "concat_frames",
           "QUOTE_CHARS", "QUOTE_VALUES", "quote", "quote_values", "cut", "capped_counts", "top_counts"]

#: The longest a value is quoted in a message or an attribute (longer ones are cut, with "…").
QUOTE_CHARS = 60
#: How many values a message or an attribute quotes (the rest are counted).
QUOTE_VALUES = 10


def quote(value: Any, *, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of an input value for a message, cut to ``limit`` characters with "…".

    Every message and attribute that quotes what a file holds goes through this (or :func:`quote_values`),
    so a 100 MB station name costs 60 characters on stderr, not 100 MB.

    Examples
    --------
    >>> quote("CI.CLC")
    "'CI.CLC'"
    >>> quote("x" * 1000)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'"
    """
    return repr(cut(value, limit=limit))


def cut(value: Any, *, limit: int = QUOTE_CHARS) -> str:
    """``str(value)`` cut to ``limit`` characters with "…" (for names that are not quoted, and JSON keys)."""
    text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def quote_values(values: Any, *, limit: int = QUOTE_VALUES, counts: dict | None = None, sep: str = ", ") -> str:
    """The first ``limit`` of ``values`` quoted (each by :func:`quote`), and how many more there are.

    With ``counts`` (value -> count) each is shown as ``'name': count``.

    Examples
    --------
    >>> quote_values(["a", "b", "c"], limit=2)
    "'a', 'b' and 1 more"
    >>> quote_values(["pP", "PKP"], counts={"pP": 1, "PKP": 2})
    "'pP': 1, 'PKP': 2"
    """
    out, n = [], 0
    for v in values:
        if n < limit:
            out.append(quote(v) if counts is None else f"{quote(v)}: {counts[v]}")
        n += 1
    more = n - len(out)
    return sep.join(out) + (f" and {more:,} more" if more else "")


def top_counts(counts: dict, *, limit: int = QUOTE_VALUES) -> dict[str, Any]:
    """:func:`capped_counts` of the ``limit`` largest counts (ties in the mapping's order), vectorised: a
    mapping of a million names costs one stable numpy sort, no Python comparison per name.

    Examples
    --------
    >>> top_counts({"PKP": 1, "pP": 5, "X": 2, "Y": 2}, limit=2)
    {'pP': 5, 'X': 2, '…': {'names': 2, 'rows': 3}}
    """
    keys = list(counts)
    values = np.fromiter((int(v) for v in counts.values()), dtype=np.int64, count=len(keys))
    top = np.argsort(-values, kind="stable")[:limit]
    out: dict[str, Any] = {}
    for i in top.tolist():
        out[cut(keys[i])] = out.get(cut(keys[i]), 0) + int(values[i])
    if len(keys) > len(top):
        out["…"] = {"names": len(keys) - len(top), "rows": int(values.sum()) - int(values[top].sum())}
    return out


def capped_counts(counts: dict, *, limit: int = QUOTE_VALUES) -> dict[str, Any]:
    """A mapping (name -> count or name) for the store's attributes: its first ``limit`` items (names cut by
    :func:`cut`), and, when there are more, ``"…"`` -> how many more names and the rows (counts) they hold.

    Examples
    --------
    >>> capped_counts({"a": 1, "b": 2, "c": 3}, limit=2)
    {'a': 1, 'b': 2, '…': {'names': 1, 'rows': 3}}
    """
    items = list(counts.items())
    out: dict[str, Any] = {cut(k): v for k, v in items[:limit]}
    rest = items[limit:]
    if rest:
        more: dict[str, int] = {"names": len(rest)}
        if all(isinstance(v, (int, np.integer)) for _, v in rest):
            more["rows"] = int(sum(int(v) for _, v in rest))
        out["…"] = more
    return out


def as_text(col: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Stripped string values (pandas ``str`` dtype) and a missing-value mask."""
    missing = col.isna().to_numpy()
    if not (pd.api.types.is_string_dtype(col.dtype) and col.dtype != object):
        try:
            col = col.astype("str")
        except UnicodeDecodeError:  # bytes that are not UTF-8 (a Parquet binary column)
            col = col.map(lambda v: v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v,
                          na_action="ignore").astype("str")
    text = col.str.strip()
    missing = missing | (text == "").fillna(True).to_numpy(dtype=bool)
    return text, missing


def defused(col: pd.Series) -> pd.Series | None:
    """An object column that pandas cannot even test for missing values, made testable; else None.

    A ``Decimal('sNaN')`` (signalling NaN, e.g. from a Parquet decimal column
    or a frame built in Python) raises ``decimal.InvalidOperation`` in every
    pandas missing-value check: it becomes an ordinary missing value.
    """
    if col.dtype != object:
        return None
    try:
        col.isna()
        pd.api.types.infer_dtype(col, skipna=True)
        return None
    except ArithmeticError:  # decimal.InvalidOperation
        return col.map(lambda v: np.nan if isinstance(v, decimal.Decimal) and v.is_nan() else v)


def to_object(values: pd.Series) -> np.ndarray:
    """The values as an object array (of Python ``str`` for text)."""
    return values.astype(object).to_numpy(dtype=object)


@dataclass
class Text:
    """A text column normalised per distinct value.

    Attributes
    ----------
    codes
        Per row: index into ``values``; -1 for a missing value.
    values
        Object array: the normalised ``str`` of each distinct raw value
        (``None`` for a phase that is not P- or S-like).
    valid
        Per distinct value: False when it normalises to an invalid (empty) value.
    keep
        Per distinct value: False for a phase that is not P- or S-like (rows
        dropped before validation); all True for other columns.
    """

    codes: np.ndarray
    values: np.ndarray
    valid: np.ndarray
    keep: np.ndarray

    def valid_rows(self) -> np.ndarray:
        """Per row: the value is present and valid."""
        return _per_row(self.valid, self.codes)

    def kept_rows(self) -> np.ndarray:
        """Per row: the value is present and not dropped."""
        return _per_row(self.keep, self.codes)

    def column(self, rows: np.ndarray, categorical: bool) -> pd.Series:
        """The normalised values of ``rows`` (which must all be valid and kept).

        An object column of ``str`` or, with ``categorical``, a ``Categorical``
        (see :func:`_categorical`).
        """
        # Usually every row is kept: then the codes need no take.  (No -1 among
        # them: the rows are valid.)
        codes = self.codes if len(rows) == len(self.codes) else self.codes.take(rows)
        if categorical:
            return pd.Series(_categorical(codes, self.values), copy=False)
        return pd.Series(self.values.take(codes), dtype=object, copy=False)


def _per_row(flags: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row: the flag of its distinct value; False for a missing value (code -1)."""
    if flags.all():
        return codes >= 0  # a comparison is cheaper than a take
    return np.append(flags, False).take(codes)  # code -1 picks the trailing False


def row_counts(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Rows per distinct value (missing rows, code -1, not counted)."""
    return np.bincount(codes.astype(np.intp) + 1, minlength=n_values + 1)[1:]


def _code_dtype(n_categories: int) -> np.dtype:
    """The smallest signed integer type that holds codes -1..n-1 (as pandas' own categoricals do)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _categorical(codes: np.ndarray, values: np.ndarray) -> pd.Categorical:
    """A ``Categorical`` of ``values[codes]`` built from the codes, without per-row strings.

    ``codes`` must not hold -1.  The categories are the distinct strings among
    the values used, sorted (as ``astype("category")`` sorts them): distinct
    raw values that normalise to the same string (``" A"``, ``"A."``, ``"A"``)
    become one category.  The result owns its codes (``codes`` may be a view
    of the caller's input, which must not change with the output).
    """
    used = np.bincount(codes, minlength=len(values)) > 0
    # Sorted as Python str (code points); not as numpy "U" strings, which lose trailing NULs.
    categories, inverse = np.unique(values[used], return_inverse=True)
    table = np.full(len(values), -1, dtype=_code_dtype(len(categories)))
    table[used] = inverse.reshape(-1)
    if codes.dtype == table.dtype and np.array_equal(table, np.arange(len(values))):
        new_codes = codes.copy()  # already sorted, distinct and all used: a copy beats a take
    else:
        new_codes = table.take(codes)
    dtype = pd.CategoricalDtype(pd.Index(categories, dtype="str"))
    # validate=False: the codes index the categories by construction (no pass over them).
    return pd.Categorical.from_codes(new_codes, dtype=dtype, validate=False)


def distinct_values(col: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Per-row codes (-1 = missing) into the distinct values of ``col``, and those values.

    The distinct values keep the dtype of ``col`` (a ``Categorical`` gives a
    ``Categorical`` of its categories), so that :func:`as_text` converts each
    of them exactly as it would convert the rows holding it.  A
    ``Categorical`` costs nothing: its codes are used as they are.

    Examples
    --------
    >>> codes, values = distinct_values(pd.Series(["B", None, "A", "B"]))
    >>> codes.tolist(), values.tolist()
    ([0, -1, 1, 0], ['B', 'A'])
    """
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        everything = pd.Categorical.from_codes(np.arange(len(dtype.categories)), dtype=dtype)
        return col.cat.codes.to_numpy(), pd.Series(everything)
    if dtype == np.dtype(object):
        try:
            codes, uniques = pd.factorize(col)
        except TypeError:  # unhashable objects (lists, dicts)
            pass
        else:
            # Objects other than str may hash equal when their text differs (1 == 1.0 == True).
            if pd.api.types.infer_dtype(uniques, skipna=False) in ("string", "empty"):
                return codes, pd.Series(uniques, copy=False)
    elif dtype.kind in "iub" or pd.api.types.is_string_dtype(dtype):
        codes, uniques = pd.factorize(col)
        return codes, pd.Series(uniques, copy=False)
    # Mixed objects, floats (0.0 == -0.0), datetimes...: keyed by their text, made per row.
    text, missing = as_text(col)
    codes, uniques = pd.factorize(text.mask(missing))
    return codes, pd.Series(uniques, copy=False)


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat`` of normalised frames, keeping ``Categorical`` text columns categorical.

    ``pd.concat`` turns categoricals with different categories into object
    columns of per-row strings; here such a column gets the union of the
    categories, sorted as Python ``str`` (as :func:`_categorical` sorts them),
    and each frame's codes are re-mapped (a take per frame, no string per row).
    """
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    names = list(frames[0].columns)
    is_cat = {c: all(isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames) for c in names}
    if not any(is_cat.values()) or any(list(f.columns) != names for f in frames):
        return pd.concat(frames, ignore_index=True)
    rest = pd.concat([f[[c for c in names if not is_cat[c]]] for f in frames], ignore_index=True)
    out: dict[str, Any] = {}
    for c in names:
        if not is_cat[c]:
            out[c] = rest[c]
            continue
        first = frames[0][c].dtype
        if all(f[c].dtype.categories.equals(first.categories) for f in frames[1:]):  # the usual case
            all_codes = np.concatenate([f[c].cat.codes.to_numpy() for f in frames])
            out[c] = pd.Series(pd.Categorical.from_codes(all_codes, dtype=first, validate=False), copy=False)
            continue
        cats = [np.asarray(f[c].cat.categories.astype(object), dtype=object) for f in frames]
        union = np.unique(np.concatenate(cats)) if sum(map(len, cats)) else np.zeros(0, dtype=object)
        dtype = pd.CategoricalDtype(pd.Index(union, dtype="str"))
        index = pd.Index(union, dtype=object)
        codes = [np.append(index.get_indexer(cat), -1).take(f[c].cat.codes.to_numpy())
                 for cat, f in zip(cats, frames)]
        all_codes = np.concatenate(codes).astype(_code_dtype(len(union)))
        out[c] = pd.Series(pd.Categorical.from_codes(all_codes, dtype=dtype, validate=False), copy=False)
    return pd.DataFrame(out, copy=False)
