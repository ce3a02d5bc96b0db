"""The derived-variable registry (issue 24 item 3): every declaration agrees with the counts' kinds
(``kernel/combine.FIELDS``) and the variables' dims, and ``derive`` gives, for each, what its kernel gives
through ``xarray.apply_ufunc`` on the station totals -- the way the metrics were derived before, bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pickscale
from pickscale.kernel.combine import DENSE_BINNED, FIELDS, Kind
from pickscale.options import Options
from pickscale.results.registry import FAMILIES, REGISTRY, Derived, Input, derived_names, lay_out
from pickscale.results.variables import EVENT_VARIABLES, RATE_VARIABLES, VARIABLES, metric_name


def _kind_of(name: str) -> Kind | None:
    """The kind of a count of the Dataset (a dense time-binned one: its rows' kind); None for a derived one."""
    rows = DENSE_BINNED.get(name)
    return FIELDS.get(rows if rows is not None else name)


def test_every_entry_names_the_kind_its_counts_combine_by():
    for name, entry in REGISTRY.items():
        kinds = {_kind_of(i.name) for i in entry.inputs} - {None}
        assert entry.kind in kinds, name
        # A kernel that reads a float sum is DERIVED's (rounded once from the limbs); a binned count BINNED's.
        for strongest in (Kind.DERIVED, Kind.BINNED):
            if strongest in kinds:
                assert entry.kind is strongest, name


def test_every_derived_variable_is_declared_once_with_its_dims():
    names = derived_names()
    assert len(names) == len(set(names))
    for name in names:
        assert name in VARIABLES or name in EVENT_VARIABLES or name in RATE_VARIABLES or name == "recall_at_budgets", \
            name
    for name, entry in REGISTRY.items():
        dims = entry.variable.dims
        assert entry.core is None or entry.core in {d for i in entry.inputs for d in VARIABLES[i.name].dims}
        for given in entry.inputs:
            # What the input keeps of its dims: not the stations (summed), nor what it is read at or summed over.
            read_at = {"station", given.over, "phase" if given.phase else None, "threshold" if given.shared else None}
            assert set(VARIABLES[given.name].dims) - read_at <= set(dims) | {entry.core}, (name, given)
    for family in FAMILIES.values():
        assert family.after is None or family.after in REGISTRY


def test_lay_out_is_what_apply_ufunc_hands_a_kernel():
    values = np.arange(6).reshape(3, 2)  # (phase, dataset)
    out = lay_out(values, ("phase", "dataset"), ("dataset", "model", "phase"))
    assert out.shape == (2, 1, 3)
    assert (out[:, 0, :] == values.T).all()
    with pytest.raises(ValueError, match="station"):
        lay_out(values, ("station", "dataset"), ("dataset", "phase"))


def _through_apply_ufunc(entry: Derived, ds: xr.Dataset, options: Options) -> xr.DataArray:
    """``entry`` derived as before the registry: its kernel through ``xarray.apply_ufunc`` on the totals."""

    def read(given: Input) -> xr.DataArray:
        value = ds[given.name].sum("station")
        if given.shared:
            value = options.at_shared(value, drop=True)
        if given.over:
            value = value.sum(given.over)
        return value.sel(phase=given.phase, drop=True) if given.phase else value

    args = [read(i) for i in entry.inputs]
    if entry.core is None:
        return xr.apply_ufunc(entry.func, *args)
    core = [[entry.core] if entry.core in a.dims else [] for a in args]
    if entry.output is None:
        return xr.apply_ufunc(entry.func, *args, input_core_dims=core)
    outs = xr.apply_ufunc(entry.func, *args, input_core_dims=core, output_core_dims=[[entry.core]] * 3)
    return outs[entry.output]


@pytest.mark.slow
@pytest.mark.parametrize("exhaustive", [False, True])
def test_derive_is_each_kernel_through_apply_ufunc(exhaustive):
    ref = pd.DataFrame({"station": ["A", "A", "B"], "phase": ["P", "S", "P"], "magnitude": [0.5, 1.5, 2.5],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T00:10:05Z", "2024-03-01T02:30:00Z"]})
    picks = pd.DataFrame({
        "model": ["m1", "m1", "m2", "m2", "m2"], "station": ["A", "B", "A", "A", "B"],
        "phase": ["P", "P", "P", "S", "S"],
        "time": ["2024-03-01T00:10:00.05Z", "2024-03-01T02:30:00.3Z", "2024-03-01T00:10:00.2Z",
                 "2024-03-01T00:10:05.9Z", "2024-03-01T02:30:01Z"],
        "conf": [0.9, 0.8, 0.7, 0.6, 0.35]})
    ds = pickscale.score(ref, picks, progress=False, tols=[0.1, 0.5], time_bin="1h", group_by="magnitude:1,2",
                         threshold={"P": 0.5, "S": 0.3}, exhaustive=exhaustive)
    options = Options.from_attrs(ds.attrs["options"])
    for name, entry in REGISTRY.items():
        expected = _through_apply_ufunc(entry, ds, options)
        if "model" in expected.dims:
            expected = expected.where(ds.model_present)
        got = ds[metric_name(name, exhaustive)]
        assert got.dims == expected.dims, name
        np.testing.assert_array_equal(got.values, expected.transpose(*got.dims).values, err_msg=name)
        assert got.dtype == expected.dtype, name
