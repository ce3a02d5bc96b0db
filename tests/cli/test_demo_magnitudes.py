"""Issue 14 item 5: the demo's events have magnitudes whose detectability is built in (a logistic curve), so
`pickscale demo --group-by magnitude:1,2,3` shows recall rising with magnitude by a known amount."""

from __future__ import annotations

import pandas as pd
import pytest

from pickscale.cli import main
from pickscale.demo import catalogue, detectability, expected_recall_by_group


def test_demo_reference_has_magnitudes_with_the_built_in_detectability():
    ref, _ = catalogue()
    assert ref["magnitude"].between(0, 4).all() and ref["magnitude"].round(1).eq(ref["magnitude"]).all()
    p = detectability(ref["magnitude"].to_numpy(float))
    assert 0.80 <= p.mean() <= 0.88  # about the 0.85 of the demo before magnitudes


@pytest.mark.slow
def test_demo_recall_rises_with_magnitude_by_the_built_in_amount(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--group-by", "magnitude:1,2,3", "--workers", "1", "--no-figures",
                 "--quiet"]) == 0
    stdout = capsys.readouterr().out
    table = pd.read_csv(out / "by_group.csv", keep_default_na=False, na_values=["NaN"])
    expected = expected_recall_by_group("magnitude:1,2,3")
    assert list(expected) == ["<1", "[1,2)", "[2,3)", ">=3"]
    for model in ("sharp", "late"):  # late finds the same arrivals as sharp
        pooled = table[table.model == model].groupby("group", sort=False)[["n_reference", "matched"]].sum()
        assert pooled.index.tolist() == list(expected)  # no arrival without a magnitude: no "missing" group
        recall = pooled.matched / pooled.n_reference
        # The direction: recall rises with magnitude; the size: within the draws' noise of the built-in one.
        assert recall["<1"] < recall["[1,2)"] <= recall["[2,3)"] + 0.02 and recall["[2,3)"] <= recall[">=3"] + 0.02
        for group, value in expected.items():
            assert abs(recall[group] - value) <= 0.1, (model, group, recall[group], value)
        assert recall[">=3"] - recall["<1"] >= 0.3  # built in: about 0.46
    # The counts of each group add up to detection.csv's.
    det = pd.read_csv(out / "detection.csv")
    assert table.groupby(["dataset", "phase", "model"]).matched.sum().tolist() == det.sort_values(
        ["dataset", "phase", "model"]).matched.tolist()
    assert "Recall rises with magnitude (sharp" in stdout and "built in 0.48" in stdout
