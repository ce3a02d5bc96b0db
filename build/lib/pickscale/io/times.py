"""Times to int64 nanoseconds since 1970 UTC, exactly, and the detection of mixed time zones.

ISO-8601 strings (any UTC offset, none = UTC), datetime columns (naive = UTC)
and numbers of seconds since 1970 (integers exact, floats rounded to the
nearest ns, numeric strings parsed from their digits).  Values that cannot be
parsed or fall outside 1677–2262 are invalid, never an exception.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .text import as_text

__all__ = ["parse_time", "time_zones"]


_I64_MAX = np.iinfo(np.int64).max
# Largest whole number of seconds whose nanosecond count fits in int64 (~year 2262).
_MAX_SECONDS = _I64_MAX // 10**9 - 1

# ASCII digits only: Python's \d (and float()) also take full-width or Arabic-Indic digits, which
# pyarrow's regex and pandas' parsers do not; such a time is an unreadable time (an invalid row).
_NUMBER_RE = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_DECIMAL_RE = r"^(?P<sign>[+-]?)(?P<whole>\d*)(?:\.(?P<frac>\d*))?$"
_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _datetimes_to_ns(dt: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """datetime64 Series (naive = UTC, aware -> UTC) to int64 ns with a valid mask.

    Values outside the int64 ns range (before 1677 or after 2262) are invalid
    rather than an OverflowError, so they are reported with their row.
    """
    if isinstance(dt.dtype, pd.ArrowDtype):
        if dt.dt.tz is not None:
            dt = dt.dt.tz_convert("UTC").dt.tz_localize(None)
        dt = dt.astype(f"datetime64[{dt.dtype.pyarrow_dtype.unit}]")
    # An aware numpy-backed column already stores UTC instants: to_numpy(datetime64)
    # returns them as they are (no tz_convert/tz_localize pass, no copy).
    unit = dt.dtype.unit if isinstance(dt.dtype, pd.DatetimeTZDtype) else np.datetime_data(dt.dtype)[0]
    values = dt.to_numpy(dtype=f"datetime64[{unit}]").view(np.int64)
    factor = _UNIT_NS[unit]
    # |value| within the bound; NaT (the smallest int64) lies below -bound.
    bound = _I64_MAX // factor - 1
    valid = (values >= -bound) & (values <= bound)
    ns = np.where(valid, values, 0)
    if factor != 1:
        ns *= factor
    return ns, valid


def _float_seconds_to_ns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float seconds -> the float's exact value rounded to the nearest ns.

    Whole and fractional seconds are converted separately: ``np.round(x * 1e9)``
    would round the product to float64's spacing near 1.6e18 (256 ns) first.
    ``x - floor(x)`` is exact in float64, and ``np.round`` rounds ties to even.
    (A float64 near 1.7e9 s itself only resolves ~0.24 µs: give ISO strings or
    decimal text when nanoseconds matter.)
    """
    x = np.asarray(x, dtype=np.float64)
    valid = np.isfinite(x) & (np.abs(x) <= _MAX_SECONDS)
    x = np.where(valid, x, 0.0)
    whole = np.floor(x)
    frac_ns = np.round((x - whole) * 1e9).astype(np.int64)
    return whole.astype(np.int64) * np.int64(10**9) + frac_ns, valid


def _int_seconds_to_ns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.dtype.kind == "u":
        valid = x <= _MAX_SECONDS
        x = np.where(valid, x, 0).astype(np.int64)
    else:
        x = x.astype(np.int64)
        valid = (x >= -_MAX_SECONDS) & (x <= _MAX_SECONDS)  # np.abs(-2**63) overflows
    return np.where(valid, x, 0) * np.int64(10**9), valid


def _decimal_strings_to_ns(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Exact seconds->ns for decimal strings ('1153670347.960123456').

    Digits beyond the 9th decimal are rounded half away from zero on the 10th.
    Strings with an exponent ('1.1e9') go through float64.
    """
    n = len(text)
    ns = np.zeros(n, dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    has_exp = text.str.contains("[eE]", regex=True).to_numpy(dtype=bool)
    if has_exp.any():
        f = pd.to_numeric(text[has_exp], errors="coerce").to_numpy(dtype=np.float64)
        ns[has_exp], valid[has_exp] = _float_seconds_to_ns(f)
    plain = ~has_exp
    if plain.any():
        ns[plain], valid[plain] = _plain_decimals_to_ns(text[plain])
    return ns, valid


def _plain_decimals_to_ns(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Decimal strings without an exponent, digit by digit in int64 (no float on the way).

    pyarrow compute does the string work: pandas' ``str.extract`` would loop in Python.
    """
    arr = pa.array(text.to_numpy(dtype=object), type=pa.string())
    parts = pc.extract_regex(arr, _DECIMAL_RE)
    sign = pc.struct_field(parts, "sign")
    whole = pc.utf8_ltrim(pc.struct_field(parts, "whole"), "0")
    frac = pc.utf8_rpad(pc.struct_field(parts, "frac"), 10, "0")
    fits = pc.less_equal(pc.utf8_length(whole), 10)
    whole = pc.if_else(pc.and_(fits, pc.not_equal(whole, "")), whole, "0")
    whole_int = pc.cast(whole, pa.int64()).to_numpy()
    nano = pc.cast(pc.utf8_slice_codeunits(frac, 0, 9), pa.int64()).to_numpy()
    round_up = pc.greater_equal(pc.utf8_slice_codeunits(frac, 9, 10), "5").to_numpy(
        zero_copy_only=False)
    ok = fits.to_numpy(zero_copy_only=False) & (whole_int <= _MAX_SECONDS)
    total = np.where(ok, whole_int, 0) * np.int64(10**9) + nano + round_up
    negative = pc.equal(sign, "-").to_numpy(zero_copy_only=False)
    return np.where(negative, -total, total), ok


def _string_times_to_ns(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Strings: numbers are seconds since 1970, everything else ISO-8601.

    ISO strings may carry any UTC offset ('Z', '+02:00') or none (then UTC);
    a column may mix them (naive values are taken as UTC).  Fractional seconds
    are kept to the nanosecond (a 10th digit and beyond is truncated by pandas).
    """
    n = len(text)
    ns = np.zeros(n, dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    # RFC 3339 allows a lower-case 't'/'z'; pandas' ISO8601 parser does not.
    text = text.str.upper()
    numeric = text.str.fullmatch(_NUMBER_RE).fillna(False).to_numpy(dtype=bool)
    if numeric.any():
        ns[numeric], valid[numeric] = _decimal_strings_to_ns(text[numeric])
    iso = ~numeric
    if iso.any():
        dt = pd.to_datetime(text[iso], utc=True, format="ISO8601", errors="coerce")
        ns[iso], valid[iso] = _datetimes_to_ns(dt)
    return ns, valid


def parse_time(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Any supported time column to ``(int64 ns since 1970 UTC, valid mask)``.

    - strings: ISO-8601 (``T`` or space, ``Z``/offset/none = UTC; values
      without an offset are parsed as UTC even among values with one —
      :func:`~pickscale.io.normalise` then reports them, see :func:`time_zones`) or numbers
      (seconds since 1970, parsed exactly from the decimal digits);
    - datetime64 columns: naive = UTC, aware converted to UTC;
    - numeric columns: seconds since 1970; integers are exact, floats are
      rounded to the nearest ns (ties to even; see ``_float_seconds_to_ns``).

    Values that cannot be parsed or fall outside 1677–2262 are invalid.

    Examples
    --------
    >>> ns, ok = parse_time(pd.Series(["1970-01-01T00:00:01.000000001Z",
    ...                                "1970-01-01 02:00:00+02:00", "1.5", "x"]))
    >>> ns.tolist(), ok.tolist()
    ([1000000001, 0, 1500000000, 0], [True, True, True, False])
    """
    dtype = col.dtype
    if dtype.kind == "M" or isinstance(dtype, pd.DatetimeTZDtype):
        return _datetimes_to_ns(col)
    if dtype.kind in "iu" and not col.hasnans:
        return _int_seconds_to_ns(col.to_numpy(dtype=np.dtype(dtype.kind + "8")))
    if dtype.kind in "iuf":  # also nullable / pyarrow numbers with missing values
        return _float_seconds_to_ns(col.to_numpy(dtype=np.float64, na_value=np.nan))
    if dtype == np.dtype(object):
        kind = pd.api.types.infer_dtype(col, skipna=True)
        if kind in ("datetime64", "datetime", "date"):
            dt = pd.to_datetime(col, utc=True, errors="coerce")
            return _datetimes_to_ns(dt)
        if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
            f = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
            return _float_seconds_to_ns(f)
    text, missing = as_text(col)
    ns, valid = _string_times_to_ns(text.fillna(""))
    valid &= ~missing
    return np.where(valid, ns, 0), valid


_ISO_DATE_RE = r"^[+-]?\d{4}-\d{2}-\d{2}|^\d{8}T"
# A time of day followed by a UTC offset ('Z', '+02', '+0200', '+02:00') at the end ...
_TIME_OF_DAY = r"[T ]\d{1,2}(?::?\d{2}){0,2}(?:[.,]\d*)?\s*"
_OFFSET_RE = _TIME_OF_DAY + r"(?:Z|[+-]\d{2}(?::?\d{2})?)$"
# ... and one that is not zero (not 'Z', '+00', '+00:00', '-0000').
_NONZERO_OFFSET_RE = _TIME_OF_DAY + r"[+-](?:(?:0[1-9]|[1-9]\d)(?::?\d{2})?|00:?(?:0[1-9]|[1-5]\d))$"


def time_zones(col: pd.Series, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which valid ISO time strings carry no UTC offset, and which a non-zero one.

    Returns ``(naive, with_offset)`` boolean masks.  Both are all False for
    columns that are not text (datetime and number columns are unambiguous).
    SPEC §1 reads a time without an offset as UTC; a column that mixes such
    times with times at a non-zero offset ('+02:00') was most likely written in
    local time with the offset left off some rows, so :func:`normalise` treats
    the times without an offset as invalid rows then.  ``Z``/``+00:00`` mixed
    with no offset is not ambiguous: both mean UTC.

    Examples
    --------
    >>> naive, off = time_zones(pd.Series(["2020-01-01T00:00:00", "2020-01-01T01:00:00+01:00",
    ...                                    "2020-01-01T00:00:00Z", "1577836800"]), np.ones(4, bool))
    >>> naive.tolist(), off.tolist()
    ([True, False, False, False], [False, True, False, False])
    """
    n = len(col)
    none = np.zeros(n, dtype=bool)
    if n == 0 or not valid.any() or col.dtype.kind in "iufbmM" or isinstance(col.dtype, pd.DatetimeTZDtype):
        return none, none
    if col.dtype == np.dtype(object) and pd.api.types.infer_dtype(col, skipna=True) != "string":
        return none, none
    text, _ = as_text(col)
    arr = pa.array(text)  # pyarrow-backed text: no copy

    def match(pattern: str) -> np.ndarray:
        found = pc.match_substring_regex(arr, pattern, ignore_case=True)
        return pc.fill_null(found, False).to_numpy(zero_copy_only=False).astype(bool)

    with_offset = match(_NONZERO_OFFSET_RE) & valid
    if not with_offset.any():
        return none, none
    iso = match(_ISO_DATE_RE) & valid
    offset = match(_OFFSET_RE)
    return iso & ~offset, with_offset
