"""The per-station results are held once while they are laid out (issue 15: many stations on the client).

The engine hands :func:`pickscale.results.assemble` the combined stack's own arrays; each is taken out of
the stack as it is laid out, so the client's peak stays near one copy of the station data (the laid-out
Dataset) instead of two or three.  Measured as the process's peak resident memory (``VmHWM``, reset through
``/proc/self/clear_refs``), with fields larger than glibc's largest ``mmap`` threshold (32 MB) so that a freed
array really leaves the process.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest

from pickscale.kernel import PER_STATION, StationStack, score_station
from pickscale.options import Options
from pickscale.results import assemble, counts_from_stack

pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists() or sys.platform != "linux",
                                reason="needs Linux's /proc peak-memory reset")

N_STATIONS = 16_000  # a count field of 3 models: 16,000 × 3 × 2 × 47 × 8 B = 36 MB


def _memory() -> tuple[int, int]:
    """(resident, peak resident) bytes of this process."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024


def _stack(options: Options, rng: np.random.Generator) -> StationStack:
    none = np.zeros(0, dtype=np.int64)
    zero = score_station(none, none, none, none, none, none.astype(np.float64), n_models=3, options=options)
    fields = {}
    for name in PER_STATION:
        shape = (N_STATIONS,) + getattr(zero, name).shape
        values = rng.integers(0, 1000, size=shape)  # touched pages: resident, as real counts are
        fields[name] = values.astype(getattr(zero, name).dtype)
        del values
    pairs = {name: np.zeros(0, dtype=getattr(zero, name).dtype) for name in
             ("pair_model", "pair_phase", "pair_residual_ns", "pair_conf", "pair_group")}
    return StationStack(keys=np.arange(N_STATIONS, dtype=np.int64), fields=fields,
                        pair_key=np.zeros(0, np.int64), pairs=pairs)


@pytest.mark.slow
def test_assembly_holds_the_station_data_once():
    options = Options()
    rng = np.random.default_rng(5)
    # Stations named in shuffled order, and a tenth of the dataset's stations with no row (zero counts).
    names = np.array([f"XX.S{i:06d}" for i in rng.permutation(N_STATIONS)], dtype=object)
    listed = np.concatenate([names, np.array([f"YY.Q{i:05d}" for i in range(N_STATIONS // 10)], dtype=object)])
    stack = _stack(options, rng)
    station_bytes = sum(v.nbytes for v in stack.fields.values())
    expected = {name: stack.fields[name].sum(axis=0) for name in ("matched", "emitted", "cal_conf_limbs")}
    assert station_bytes > 150e6
    gc.collect()
    before, _ = _memory()
    Path("/proc/self/clear_refs").write_text("5")  # peak := current

    counts = counts_from_stack(stack, names=names, models=["a", "b", "c"], options=options, fine=None,
                               stations=listed)
    del stack  # the caller keeps no handle (as engine/run.py does)
    ds = assemble({"D": counts}, options=options)
    _, peak = _memory()

    extra = peak - before
    # One copy is the laid-out Dataset (its station variables) plus the one field in transit; two copies
    # (the old layout) would be ≥ station_bytes.
    assert extra < 0.5 * station_bytes, (extra / 1e6, station_bytes / 1e6)
    # And the numbers are the stack's, placed by name: zero at the stations with no row.
    for name, total in expected.items():
        got = ds[name].sel(dataset="D").sum("station").transpose(*ds[name].dims[1:-1]).values
        assert np.array_equal(got, total), name
    empty = ds["matched"].sel(dataset="D", station=listed[N_STATIONS:].tolist())
    assert int(empty.sum()) == 0 and bool(ds["station_scored"].sel(dataset="D").all())
    assert ds.sizes["station"] == listed.size
