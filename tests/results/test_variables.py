"""Every variable of the results Dataset is declared once (pickscale.results.variables), with the dims it has."""

from __future__ import annotations

import pytest

from pickscale.kernel import score_station
from pickscale.options import Options
from pickscale.results import COORDINATES, VARIABLES, assemble, combine, metric_name
from pickscale.results.variables import GROUPED, TIME_BINNED, TOLERANCED

S = 10**9


@pytest.mark.parametrize("exhaustive", [False, True])
def test_declared_dims_and_attrs_are_those_of_the_dataset(exhaustive):
    o = Options(thresholds=[0.5], exhaustive=exhaustive)
    r = score_station([0, 1], [10 * S, 20 * S], [0, 0, 1], [0, 1, 0], [10 * S, 21 * S, 10 * S], [0.9, 0.6, 0.4],
                      n_models=2, options=o)
    ds = assemble({"d": combine([("A", r), ("B", r)], models=["m", "n"], options=o)}, options=o)
    # Without time bins, none of the time-binned variables (SPEC §10).
    # Without tols, none of the tolerance variables (SPEC §13).
    # Without group_by, none of the group variables (SPEC §14).
    names = {metric_name(name, exhaustive): name for name in VARIABLES
             if name not in TIME_BINNED and name not in TOLERANCED and name not in GROUPED}
    assert set(ds.data_vars) == set(names)
    for name, canonical in names.items():
        declared = VARIABLES[canonical]
        assert ds[name].dims == declared.dims, name
        assert ds[name].attrs["units"] == declared.units and ds[name].attrs["description"] == declared.description
        assert ("lower bound" in ds[name].attrs["long_name"]) == ("lower bound" in declared.long_name
                                                                  and not exhaustive)
    for name, declared in COORDINATES.items():
        assert ds[name].dims == declared.dims and ds[name].attrs == declared.attrs


def test_group_variables_have_their_declared_dims():
    """SPEC §14: with group_by, every variable of GROUPED, with its declared dims, and the group coordinate."""
    o = Options(thresholds=[0.5], group_by="magnitude:1").with_group_labels(["<1", ">=1"])
    r = score_station([0, 1], [10 * S, 20 * S], [0, 0, 1], [0, 1, 0], [10 * S, 21 * S, 10 * S], [0.9, 0.6, 0.4],
                      n_models=2, options=o, arrival_group=[1, 0])
    ds = assemble({"d": combine([("A", r), ("B", r)], models=["m", "n"], options=o)}, options=o)
    assert set(GROUPED) <= set(ds.data_vars)
    for name in GROUPED:
        assert ds[name].dims == VARIABLES[name].dims, name
        assert ds[name].attrs["description"] == VARIABLES[name].description
    assert ds["group"].values.tolist() == ["<1", ">=1"] and ds["group"].attrs["long_name"] == "group of arrivals"
