"""What ``score`` and ``report`` print (issue 15): a compact detection view that fits a 120-column terminal,
one block per dataset, and a pointer to the CSV files for the other columns."""

from __future__ import annotations

import pandas as pd
import pytest

import pickscale
from pickscale.demo import write_inputs
from pickscale.report.outputs import print_tables
from pickscale.report.tables import PRINTED_COLUMNS, format_table


@pytest.fixture(scope="module")
def demo_frames(tmp_path_factory):
    ref, picks = write_inputs(tmp_path_factory.mktemp("demo"))
    return {exhaustive: pickscale.tables(pickscale.score(str(ref), str(picks), exhaustive=exhaustive))
            for exhaustive in (False, True)}


@pytest.mark.slow
@pytest.mark.parametrize("exhaustive", [False, True])
def test_printed_tables_fit_120_columns(demo_frames, capsys, exhaustive):
    print_tables(demo_frames[exhaustive], exhaustive)
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > 120]
    assert not wide, wide


@pytest.mark.slow
def test_detection_view_has_the_main_columns_and_points_to_the_csv(demo_frames, capsys):
    print_tables(demo_frames[False], False)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("phase") and "n_reference" in line)
    assert header.split() == [c for c in PRINTED_COLUMNS["detection"] if c != "dataset"]
    assert "dataset: aftershocks_north" in out and "dataset: aftershocks_south" in out
    assert ("detection.csv also extra_rate, duplicate_rate, matched_budget, best_on_edge, f1_lb_at_best, "
            "recall_at_best" in " ".join(out.split()))  # (the line is wrapped at 120 columns)
    # The timing view shows fraction_within at its first bound; the note names the others.
    assert "timing.csv also fraction_within_0.25, fraction_within_0.5, p10, p90, iqr" in " ".join(out.split())


@pytest.mark.slow
def test_exhaustive_view_uses_the_plain_names(demo_frames, capsys):
    print_tables(demo_frames[True], True)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "n_reference" in line).split()
    assert header[-5:] == ["precision", "f1", "recall_at_budget", "best_threshold", "ap"]
    assert "_lb" not in " ".join(header)


def test_format_table_by_and_columns_by_hand():
    frame = pd.DataFrame({"dataset": ["B", "A"], "model": ["m", "m"], "recall": [0.5, 1.0], "x": [1, 2]})
    got = format_table(frame, columns=("dataset", "model", "recall", "missing"), by="dataset")
    assert got == ("dataset: B\nmodel  recall\n    m   0.500\n\n"
                   "dataset: A\nmodel  recall\n    m   1.000")
    assert format_table(frame) == frame.to_string(index=False, float_format=lambda v: f"{v:.3f}")
