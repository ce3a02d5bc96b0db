"""SPEC §10's bound on the number of time bins (issue 23): counted before any bin is built, refused with the
span, the bin and the stray rows at its ends.

The commands run in a subprocess under a memory limit and a timeout: today's failure mode was gigabytes of
bins (a pick dated 1800 and ``--time-bin 1h``; ``1s`` over a year).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pickscale.errors import OptionsError
from pickscale.kernel.bins import MAX_BINS, bin_edges, count_bins
from tests.helpers.processes import run_limited

DAY = 86_400 * 10**9


@pytest.mark.parametrize("freq", ["1ms", "1s", "1min", "1h", "1D", "7D", "MS", "W-MON", "QS", "YS", "B"])
@pytest.mark.parametrize(("lo", "hi"), [(0, 3 * DAY + 5), (pd.Timestamp("2023-12-30").value,
                                                           pd.Timestamp("2024-03-02T05:00").value)])
def test_count_is_the_number_of_edges_built(freq, lo, hi):
    n = count_bins(lo, hi, freq)
    if n > MAX_BINS:  # 1 ms over days
        with pytest.raises(OptionsError, match=f"makes {n:,} bins"):
            bin_edges(lo, hi, freq)
    else:
        assert n == bin_edges(lo, hi, freq).size - 1


@pytest.mark.slow
@pytest.mark.parametrize("freq", ["MS", "W-MON", "YS", "B", "QS"])
def test_a_calendar_count_bounds_the_bins_from_above(freq):
    lo, hi = pd.Timestamp("1700-01-01").value, pd.Timestamp("2200-01-01").value
    n = count_bins(lo, hi, freq)
    true = len(pd.date_range(pd.Timestamp(lo, tz="UTC"), pd.Timestamp(hi, tz="UTC"), freq=freq))
    assert true <= n <= 2 * true + 2


def test_too_many_bins_are_refused_before_any_is_built():
    """1800 … 2024 at 1 ms is 7·10^12 bins (56 TB of edges): refused by arithmetic, in no time."""
    lo, hi = pd.Timestamp("1800-01-01").value, pd.Timestamp("2024-06-01").value
    with pytest.raises(OptionsError, match="time_bin '1ms' over the scored span 1800-01-01T00:00:00Z") as err:
        bin_edges(lo, hi, "1ms")
    assert f"more than the {MAX_BINS:,}" in str(err.value) and err.value.options == ("time_bin",)
    assert bin_edges(0, (MAX_BINS - 1) * 3600 * 10**9, "1h").size == MAX_BINS + 1  # the bound itself is allowed
    with pytest.raises(OptionsError):
        bin_edges(0, MAX_BINS * 3600 * 10**9, "1h")


def _inputs(tmp_path, stray: str | None):
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    times = t0 + pd.to_timedelta(np.arange(3) * 120 * DAY, unit="ns")  # 3 arrivals over most of a year
    iso = list(times.strftime("%Y-%m-%dT%H:%M:%SZ"))
    pd.DataFrame({"station": "CI.CLC", "phase": "P", "time": iso}).to_csv(tmp_path / "ref.csv", index=False)
    picks = pd.DataFrame({"station": "CI.CLC", "phase": "P", "time": iso, "conf": 0.9})
    if stray:
        picks = pd.concat([picks, pd.DataFrame({"station": ["CI.CLC"], "phase": ["P"], "time": [stray],
                                                "conf": [0.8]})])
    picks.to_csv(tmp_path / "picks.csv", index=False)
    return tmp_path / "ref.csv", tmp_path / "picks.csv"


@pytest.mark.slow  # a command in a fresh interpreter, with a local cluster of its own
@pytest.mark.parametrize(("stray", "freq", "said"), [
    ("1800-03-04T05:06:07Z", "1h", "pick 1800-03-04T05:06:07Z (station 'CI.CLC', model 'model')"),
    (None, "1s", "arrival 2024-01-01T00:00:00Z (station 'CI.CLC')"),
])
def test_the_command_names_the_span_the_bin_and_the_stray_rows(tmp_path, stray, freq, said):
    ref, picks = _inputs(tmp_path, stray)
    proc = run_limited("score", "--reference", ref, "--picks", picks, "--out", tmp_path / "out", "--no-figures",
                       "--workers", "1", "--time-bin", freq)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert f"--time-bin '{freq}' over the scored span" in proc.stderr or f"time_bin '{freq}'" in proc.stderr
    assert f"more than the {MAX_BINS:,}" in proc.stderr
    assert said in proc.stderr, proc.stderr[-3000:]
    assert "2024-08-28T00:00:00Z" in proc.stderr  # the latest scored time is named too
    assert not (tmp_path / "out" / "results.zarr").exists()


@pytest.mark.slow
def test_a_stray_row_that_stretches_the_bins_is_warned_about():
    import pickscale
    from pickscale.errors import PickscaleWarning
    from tests.helpers.extend import stretches

    ref, picks = stretches(1)  # 2024-03-01
    stray = picks.iloc[:1].assign(time=pd.Timestamp("1800-01-01T00:00:00Z"))
    with pytest.warns(PickscaleWarning, match="stretch the span") as caught:
        ds = pickscale.score(ref, pd.concat([picks, stray], ignore_index=True), time_bin="7D")
    said = " ".join(str(w.message) for w in caught)
    assert "1800-01-0" in said and "pick 1800-01-01T00:00:00" in said, said
    assert any("stretch the span" in w for w in ds.attrs["warnings"])
    # Without the stray row: no such warning.
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pickscale.score(ref, picks, time_bin="7D")
    assert not [w for w in seen if "stretch the span" in str(w.message)]
