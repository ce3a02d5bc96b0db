"""SPEC §7 with several budgets: recall_at_budgets, budgets.csv, and the options that carry them."""

from __future__ import annotations

import numpy as np
import pytest

from pickscale.errors import OptionsError
from pickscale.kernel import score_station
from pickscale.options import Options
from pickscale.report.tables import tables, to_csv_bytes
from pickscale.results import assemble, combine

S = 10**9


def scored(budget):
    o = Options(budget=budget)
    # 4 P arrivals; picks on 3 of them at conf 0.9, 0.7, 0.5 and 2 false picks at 0.8 and 0.4.
    r = score_station(np.zeros(4, dtype=np.int8), np.array([10, 20, 30, 40]) * S,
                      np.zeros(5, dtype=np.int32), np.zeros(5, dtype=np.int8),
                      np.array([10, 20, 30, 55, 65]) * S, np.array([0.9, 0.7, 0.5, 0.8, 0.4]),
                      n_models=1, options=o)
    return assemble({"d": combine([("A", r)], models=["m"], options=o)}, options=o)


def test_budget_list_options_round_trip_and_refusals():
    o = Options(budget=[200, 50, 100])
    assert o.budget == (200, 50, 100) and o.budgets == (200, 50, 100)
    assert o.to_attrs()["budget"] == [200, 50, 100] and Options.from_attrs(o.to_attrs()) == o
    assert Options(budget=[7]).budget == 7 and Options(budget=[7]).to_attrs() == Options(budget=7).to_attrs()
    for bad in ([], [5, 5], [3, -1], [2.5]):
        with pytest.raises(OptionsError) as err:
            Options(budget=bad)
        assert err.value.options == ("budget",)


@pytest.mark.slow
def test_several_budgets_by_hand_and_one_row_each():
    # Emitted/matched as conf falls: 0.9 -> 1/1, 0.8 -> 2/1, 0.7 -> 3/2, 0.5 -> 4/3, 0.4 -> 5/3.
    # recall at 2 picks: 1/4; at 3: 2/4; at 5: 3/4 (n_reference 4).
    ds = scored([3, 2, 5])
    t = tables(ds)
    p = t["budgets"][t["budgets"].phase == "P"]
    assert p[["budget", "recall_at_budget"]].values.tolist() == [[2, 0.25], [3, 0.5], [5, 0.75]]
    assert t["budgets"].budget.dtype.kind == "i" and len(t["budgets"]) == 6  # S: no arrival, recall NaN
    # The detection table reads the first budget given, exactly as a run with that one budget.
    assert to_csv_bytes(t["detection"]) == to_csv_bytes(tables(scored(3))["detection"])
    assert "budgets" not in tables(scored(3)) and "budgets" not in tables(scored(None))
