"""The tables as declared (issue 24 item 3): each table writes its keys and declared columns, in order, and a
table is one more entry of ``TABLES`` -- the one builder makes it."""

from __future__ import annotations

import pytest

import pickscale
from pickscale.report import tables as tables_module
from pickscale.report.tables import OPTIONAL_TABLES, TABLE_NAMES, TABLES, Column, Table, headers
from pickscale.results.variables import metric_name


@pytest.fixture(scope="module")
def demo():
    from pickscale.demo import catalogue

    return pickscale.score(*catalogue(), progress=False, tols=[0.1, 0.5], time_bin="2h", group_by="magnitude:1,2",
                           budget=[50, 100]).load()


@pytest.mark.slow
def test_every_table_writes_its_keys_then_its_declared_columns(demo):
    frames = pickscale.tables(demo)
    assert list(TABLES) == [*TABLE_NAMES, *OPTIONAL_TABLES]
    assert set(frames) == {"detection", "timing", "calibration", "reliability", "phase_quality", "sweep",
                           "over_time", "budgets", "tolerance", "by_group", "pick_rates"}
    for name, frame in frames.items():
        table = TABLES[name]
        # (a variable with a dim of its own: one column per label, fraction_within_0.1 …)
        declared = [*table.keys, *(h for c in table.columns for h in headers(metric_name(c.name, False)))]
        # Intervals (SPEC §12) and select_on's columns (SPEC §16) come after, only where the results hold them.
        assert frame.columns.tolist()[:len(declared)] == declared, name


@pytest.mark.slow
def test_a_table_is_one_more_declaration(demo, monkeypatch):
    # What a new table costs: its entry (keys, columns of the results' variables), nothing else.
    one = Table("recall_at_shared", ("dataset", "phase", "model"),
                (Column("n_reference"), Column("recall", shared=True), Column("extra", "emitted", shared=True,
                                                                              minus="matched")))
    monkeypatch.setattr(tables_module, "TABLES", {**TABLES, one.name: one})
    frames = pickscale.tables(demo)
    detection = frames["detection"]
    frame = frames["recall_at_shared"]
    assert frame.columns.tolist() == ["dataset", "phase", "model", "n_reference", "recall", "extra"]
    assert frame[["dataset", "phase", "model", "n_reference", "recall"]].equals(
        detection[["dataset", "phase", "model", "n_reference", "recall"]])
    assert (frame["extra"] == detection["emitted"] - detection["matched"]).all()


@pytest.mark.slow
def test_a_table_of_an_option_is_written_only_with_it(demo):
    plain = demo.drop_vars([v for v in demo.data_vars if "over_time" in str(v)])
    assert "over_time" not in pickscale.tables(plain)
    assert all(t.requires is not None for n, t in TABLES.items() if n in OPTIONAL_TABLES)
