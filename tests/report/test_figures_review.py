"""Figures fixed as a reviewer asked (issue 25 item 6), each with a test of what it claims.

* ``recall_by_group``: groups of a text column (no order) are points, no line joins them; bins of a numeric
  column keep a line, but not through ``missing``; each bar carries its arrival count; groups with fewer than
  :data:`~pickscale.report.figures.style.FEW_ARRIVALS` arrivals are hollow, their bars hatched, and the
  legend and the footnote say so.
* ``stations``: stations with few arrivals are not ranked but pooled, one row per dataset, and the rule is said.
* ``recall_over_time``: a bin is drawn over ``[start, end)`` (steps and bars of the bin's width, calendar bins
  their own length); first and last bins the scored span covers only in part are hatched, with the share
  scored; the time axis says the bins' width.
* ``operating_curves``: ten models stay apart (colour, line style and mark), the legends sit outside the axes.
* every figure: axis labels in plain words, a variable's name only in parentheses.

Claims about numbers are checked on the figures' data-selection functions, claims about drawing on the
artists.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Polygon, Rectangle, StepPatch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import pickscale  # noqa: E402
from pickscale.demo import catalogue  # noqa: E402
from pickscale.report import figures as plot  # noqa: E402
from pickscale.report.figures import by_group, over_time, station_recall  # noqa: E402
from pickscale.report.figures.style import FEW_ARRIVALS, fmt_pct  # noqa: E402
from tests.helpers.results import figure_catalogue  # noqa: E402
from tests.report.test_figures_claims import undrawn_tick_labels  # noqa: E402

# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def inputs():
    return catalogue()


@pytest.fixture(scope="module")
def by_network(inputs):
    """The demo with a text group: networks AA and BB, and ZZ for the first 5 north P arrivals (few)."""
    ref, picks = inputs
    ref = ref.copy()
    ref["network"] = np.where(ref.station.isin(["XX.NO01", "XX.NO02", "XX.SO01"]), "AA", "BB")
    north_p = ref.index[(ref.dataset == "aftershocks_north") & (ref.phase == "P")][:5]
    ref.loc[north_p, "network"] = "ZZ"
    return pickscale.score(ref, picks, group_by="network", progress=False).load()


@pytest.fixture(scope="module")
def by_magnitude(inputs):
    """The demo by magnitude bins; ``>=3.9`` holds few arrivals, and 6 arrivals have no magnitude."""
    ref, picks = inputs
    ref = ref.copy()
    ref.loc[ref.index[:6], "magnitude"] = np.nan
    return pickscale.score(ref, picks, group_by="magnitude:1,2,3.9", progress=False).load()


@pytest.fixture(scope="module")
def hourly(inputs):
    return pickscale.score(*inputs, time_bin="1h", progress=False).load()


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text() and t.get_visible()]


def _by_gid(fig, prefix: str, kind=object) -> dict[str, list]:
    out: dict[str, list] = {}
    for artist in fig.findobj(lambda a: isinstance(a, kind)):
        gid = artist.get_gid()
        if gid and gid.startswith(prefix + ":"):
            out.setdefault(gid.split(":", 1)[1], []).append(artist)
    return out


def _legend_text(fig) -> str:
    return " ".join(t.get_text() for lg in fig.legends for t in lg.get_texts()).replace("\n", " ")


# ----------------------------------------------------------- recall_by_group

@pytest.mark.slow
def test_text_groups_have_no_order_and_no_line(by_network):
    panels, _ = by_group.by_group_rows(by_network)
    assert not by_group.is_ordered(by_network)
    for p in panels:
        assert not p.ordered.any()
        assert (p.n_reference > 0).all()  # a network without arrivals in a panel is left out of it
    # ZZ has arrivals only in the north P panel.
    assert [p.groups for p in panels if p.dataset == "aftershocks_north" and p.phase == "P"] == [["AA", "BB", "ZZ"]]
    assert all("ZZ" not in p.groups for p in panels if (p.dataset, p.phase) != ("aftershocks_north", "P"))
    fig = by_group.recall_by_group(by_network)
    assert not _by_gid(fig, "recall_line", Line2D), "a line joins unordered groups"
    points = {**_by_gid(fig, "recall", Line2D)}
    assert set(points) == {"late", "liberal", "sharp"}
    for lines in points.values():
        for line in lines:
            assert line.get_linestyle() == "None" and line.get_marker() not in ("", "None", None)
            # Each point sits in its group's slot (the models side by side within it).
            x = np.asarray(line.get_xdata(), dtype=float)
            assert np.all(np.abs(x - np.round(x)) < 0.4)


@pytest.mark.slow
def test_numeric_bins_keep_a_line_but_missing_stands_apart(by_magnitude):
    panels, _ = by_group.by_group_rows(by_magnitude)
    assert by_group.is_ordered(by_magnitude)
    groups = ["<1", "[1,2)", "[2,3.9)", ">=3.9", "missing"]
    assert any(p.groups == groups for p in panels)
    for p in panels:
        assert p.ordered.tolist() == [g != "missing" for g in p.groups]
    fig = by_group.recall_by_group(by_magnitude)
    lines = _by_gid(fig, "recall_line", Line2D)
    assert set(lines) == {"late", "liberal", "sharp"}
    for m, drawn in lines.items():
        for line, panel in zip(drawn, panels):
            n_bins = int(panel.ordered.sum())
            assert len(line.get_xdata()) == n_bins  # missing is not on the line
            assert np.allclose(line.get_ydata(), panel.recall[m][:n_bins], equal_nan=True)


@pytest.mark.slow
def test_each_group_bar_says_its_arrival_count(by_network):
    panels, _ = by_group.by_group_rows(by_network)
    fig = by_group.recall_by_group(by_network)
    counts = _by_gid(fig, "count", Text)
    n = by_network.n_reference_by_group.sum("station")
    drawn = sorted((g, t.get_text()) for g, ts in counts.items() for t in ts)
    expected = sorted((g, f"{int(n.sel(dataset=p.dataset, phase=p.phase, group=g)):,}")
                      for p in panels for g in p.groups)
    assert drawn == expected
    bars = _by_gid(fig, "arrivals", Rectangle)
    assert sorted((g, int(b.get_height())) for g, bs in bars.items() for b in bs) == sorted(
        (g, int(c.replace(",", ""))) for g, c in expected)


@pytest.mark.slow
def test_groups_with_few_arrivals_are_hollow_and_said(by_network):
    panels, _ = by_group.by_group_rows(by_network)
    for p in panels:
        assert p.few.tolist() == (p.n_reference < FEW_ARRIVALS).tolist()
    north = next(p for p in panels if (p.dataset, p.phase) == ("aftershocks_north", "P"))
    assert north.few.tolist() == [False, False, True] and north.n_reference[-1] == 5
    fig = by_group.recall_by_group(by_network)
    hollow = _by_gid(fig, "recall_few", Line2D)
    assert set(hollow) == {"late", "liberal", "sharp"}
    for lines in hollow.values():
        (line,) = lines  # only the north P panel has a group with few arrivals
        assert line.get_markerfacecolor() in ("white", "w", (1.0, 1.0, 1.0, 1.0))
        assert np.allclose(np.round(line.get_xdata()), [2])  # ZZ's slot
    for line in _by_gid(fig, "recall", Line2D)["sharp"]:
        assert matplotlib.colors.to_hex(line.get_markerfacecolor()) == matplotlib.colors.to_hex(line.get_color())
    (zz_bar,) = _by_gid(fig, "arrivals", Rectangle)["ZZ"]
    assert zz_bar.get_hatch() and not _by_gid(fig, "arrivals", Rectangle)["AA"][0].get_hatch()
    assert f"< {FEW_ARRIVALS} arrivals" in _legend_text(fig)
    assert f"fewer than {FEW_ARRIVALS} reference arrivals" in fig.get_supxlabel()
    # The rule is an option: with min_arrivals=3 no group is few, and nothing is said.
    fig = by_group.recall_by_group(by_network, min_arrivals=3)
    assert not _by_gid(fig, "recall_few", Line2D) and "arrivals" not in _legend_text(fig)


# ------------------------------------------------------------------ stations

@pytest.fixture(scope="module")
def thin_stations(inputs):
    """The demo with XX.NO03 cut to 4 reference arrivals and XX.NO04 to 2 (both below 10)."""
    ref, picks = inputs
    keep = np.ones(len(ref), dtype=bool)
    for station, n in (("XX.NO03", 4), ("XX.NO04", 2)):
        rows = np.flatnonzero((ref.station == station).to_numpy())
        keep[rows[n:]] = False
    return pickscale.score(ref[keep], picks, progress=False).load()


@pytest.mark.slow
def test_stations_with_few_arrivals_are_pooled_not_ranked(thin_stations):
    ds = thin_stations
    data = station_recall.station_rows(ds)
    assert data.min_arrivals == FEW_ARRIVALS
    ranked = {r.station for r in data.rows}
    assert ranked == {"XX.NO01", "XX.NO02", "XX.SO01", "XX.SO02", "XX.SO03", "XX.SO04"}
    assert all(r.n_reference >= FEW_ARRIVALS for r in data.rows)
    (few,) = data.few
    assert (few.dataset, few.n_stations, few.n_reference) == ("aftershocks_north", 2, 6)
    # Pooled: their matched picks over their arrivals (not the mean of two station recalls).
    m = ds.matched.sel(threshold=0.3, dataset="aftershocks_north", station=["XX.NO03", "XX.NO04"]).sum(
        ["phase", "station"])
    assert np.allclose(few.recall, (m / 6).sel(model=data.models).values)
    assert "with ≥ 10 arrivals" in data.extent
    # min_arrivals=0 ranks every station.
    every = station_recall.station_rows(ds, min_arrivals=0)
    assert not every.few and len(every.rows) == 8


@pytest.mark.slow
def test_stations_figure_sets_the_few_apart_and_says_the_rule(thin_stations):
    fig = plot.stations(thin_stations)
    images = {im.get_gid(): im for im in fig.findobj(AxesImage)}
    assert set(images) == {"stations", "few"}
    assert images["stations"].get_array().shape == (6, 3) and images["few"].get_array().shape == (1, 3)
    assert images["stations"].norm is images["few"].norm  # one colour scale for both
    few_ax = next(ax for ax in fig.axes if images["few"] in ax.get_images())
    (label,) = [t.get_text() for t in few_ax.get_yticklabels()]
    assert label.startswith(f"2 stations with < {FEW_ARRIVALS} arrivals") and "6 pooled" in label
    assert f"fewer than {FEW_ARRIVALS} reference arrivals" in fig.get_supxlabel()
    # A dataset whose stations all have few arrivals: no row of noise, one pooled row per dataset.
    big = pickscale.score(*figure_catalogue(n_models=3, n_stations=40, seed=1), progress=False)
    fig = plot.stations(big)
    images = {im.get_gid(): im for im in fig.findobj(AxesImage)}
    assert set(images) == {"few"} and images["few"].get_array().shape == (2, 3)
    assert "no station with ≥ 10 arrivals" in fig.get_suptitle()


# ---------------------------------------------------------- recall_over_time

@pytest.mark.slow
def test_time_bins_are_drawn_as_bins(hourly):
    panels, _ = over_time.over_time_rows(hourly)
    p = panels[0]
    hour = np.timedelta64(3600, "s")
    assert np.all(p.ends - p.starts == hour)
    fig = over_time.recall_over_time(hourly)
    steps = _by_gid(fig, "recall", StepPatch)
    assert set(steps) == {"late", "liberal", "sharp"}
    for step, panel in zip(steps["sharp"], panels):
        data = step.get_data()
        edges = matplotlib.dates.date2num(np.r_[panel.starts, panel.ends[-1:]])
        assert np.allclose(data.edges, edges)  # one step per bin, from its start to its end
        assert np.allclose(data.values, np.where(panel.few, np.nan, panel.recall["sharp"]), equal_nan=True)
    # No points at bin starts any more: the only marks are dashes at the middle of lone bins (no value on
    # either side), where a step alone would be a few pixels wide.
    for ax, panel in zip(fig.axes[::2], panels):
        for line in ax.get_lines():
            if line.get_marker() in ("", "None", None):
                continue
            assert line.get_marker() == "_" and line.get_gid().startswith("recall_lone")
            model = line.get_gid().split(":", 1)[1]
            x = np.asarray(line.get_xdata(), dtype="datetime64[ns]")
            i = np.searchsorted(panel.starts, x) - 1
            assert np.all(over_time._lone(panel.recall[model])[i])
            assert (x == panel.starts[i] + (panel.ends[i] - panel.starts[i]) / 2).all()
    # Each bar is as wide as its bin (in days, matplotlib's date unit).
    for bar in (b for bs in _by_gid(fig, "arrivals", Rectangle).values() for b in bs):
        assert bar.get_width() == pytest.approx(1 / 24)


def test_calendar_bins_have_their_own_length():
    starts = np.array(["2024-01-01", "2024-02-01", "2024-03-01"], dtype="datetime64[ns]")
    ends = over_time.bin_ends(starts, "MS")
    days = ((ends - starts) / np.timedelta64(1, "D")).tolist()
    assert days == [31, 29, 31]  # the last month is March's length, not February's
    assert over_time.bin_ends(starts[:1], "YS")[0] == np.datetime64("2025-01-01", "ns")


@pytest.mark.slow
def test_partial_first_and_last_bins_are_marked(hourly):
    panels, _ = over_time.over_time_rows(hourly)
    lo, hi = over_time.scored_span(hourly)
    p = panels[0]
    first = (p.ends[0] - lo) / (p.ends[0] - p.starts[0])
    last = (hi - p.starts[-1]) / (p.ends[-1] - p.starts[-1])
    assert p.covered[0] == pytest.approx(first) and p.covered[-1] == pytest.approx(last)
    assert np.all(p.covered[1:-1] == 1.0) and not p.partial[1:-1].any()
    assert first < over_time.PARTIAL and last < 0.1  # the demo's data start after 00:00 and end just after 06:00
    assert p.partial[[0, -1]].all()
    fig = over_time.recall_over_time(hourly)
    marks = _by_gid(fig, "partial", Polygon) or _by_gid(fig, "partial", Rectangle)
    assert set(marks) == {"0", str(p.starts.size - 1)}
    assert len(marks["0"]) == len(panels)  # shaded in every panel
    bars = _by_gid(fig, "arrivals", Rectangle)
    assert all(b.get_hatch() for b in bars["0"]) and not any(b.get_hatch() for b in bars["1"])
    note = fig.get_supxlabel()
    assert f"first bin (2024-03-01 00:00) {fmt_pct(first)} scored" in note and f"{fmt_pct(last)} scored" in note
    assert "partial bin" in _legend_text(fig)


@pytest.mark.slow
def test_whole_bins_are_not_marked(hourly):
    # A store without a scored span (written before attrs["extent"]) marks nothing rather than guessing.
    ds = hourly.copy()
    ds.attrs = {k: v for k, v in hourly.attrs.items() if k != "extent"}
    panels, _ = over_time.over_time_rows(ds)
    assert np.isnan(panels[0].covered).all() and not panels[0].partial.any()
    fig = over_time.recall_over_time(ds)
    assert not _by_gid(fig, "partial", object) and "Hatched" not in fig.get_supxlabel()


@pytest.mark.slow
def test_time_axis_says_the_bin_width(hourly):
    fig = over_time.recall_over_time(hourly)
    labels = [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()]
    assert labels == ["time (UTC), bins of 1 hour (time_bin 1h)"]
    assert [over_time.bin_width_words(b) for b in ("1h", "7D", "1D", "15min", "MS", "YS", "QS", "W-MON")] == [
        "1 hour", "7 days", "1 day", "15 minutes", "a calendar month", "a calendar year", "a calendar quarter",
        "a week (from Monday)"]


@pytest.mark.slow
def test_bins_with_few_arrivals_are_faint(inputs):
    ref, picks = inputs
    ds = pickscale.score(ref, picks, time_bin="15min", progress=False).load()
    panels, _ = over_time.over_time_rows(ds)
    assert any(p.few[p.n_reference > 0].any() for p in panels)
    fig = over_time.recall_over_time(ds)
    faint = _by_gid(fig, "recall_few", StepPatch)
    assert set(faint) == {"late", "liberal", "sharp"}
    assert all(s.get_alpha() < 0.5 for ss in faint.values() for s in ss)
    for step, panel in zip(faint["late"], panels):
        assert np.allclose(step.get_data().values, np.where(panel.few, panel.recall["late"], np.nan),
                           equal_nan=True)
    assert f"< {FEW_ARRIVALS}" in _legend_text(fig)


# ---------------------------------------------------------- operating_curves

@pytest.mark.slow
@pytest.mark.parametrize("n_models", [3, 10])
def test_operating_curves_keep_models_apart(n_models):
    ds = pickscale.score(*figure_catalogue(n_models=n_models, n_stations=20, seed=2), progress=False)
    fig = plot.operating_curves(ds)
    assert "showing" not in fig.get_supxlabel()  # up to ten models, none left out
    curves = _by_gid(fig, "curve", Line2D)
    assert len(curves) == n_models
    looks = {(ln[0].get_color(), str(ln[0].get_linestyle()), ln[0].get_marker()) for ln in curves.values()}
    assert len(looks) == n_models
    assert len({look[0] for look in looks}) == n_models and len({look[2] for look in looks}) == n_models
    # The legends sit outside every axes, and clear of one another.
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    boxes = [lg.get_window_extent(renderer) for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if lg]
    axes = [ax.get_window_extent(renderer) for ax in fig.axes]
    for box in boxes:
        assert not any(box.overlaps(a) for a in axes)
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:])


# ---------------------------------------------------------------- all labels

def _all_figures(by_network, hourly, inputs):
    tols = pickscale.score(*inputs, tols=[0.1, 0.5], progress=False)
    figs = plot.figures(by_network)
    figs["recall_over_time"] = over_time.recall_over_time(hourly)
    figs["recall_vs_tolerance"] = plot.figures(tols, names=["recall_vs_tolerance"])["recall_vs_tolerance"]
    return figs


@pytest.mark.slow
def test_axis_labels_are_plain_words(by_network, hourly, inputs):
    for name, fig in _all_figures(by_network, hourly, inputs).items():
        for ax in fig.axes:
            for label in (ax.get_xlabel(), ax.get_ylabel()):
                if not label:
                    continue
                # A variable's name (observed_lb, precision_lb, time_bin) only inside parentheses.
                outside = re.sub(r"\([^)]*\)", "", label)
                assert "_" not in outside, (name, label)
                assert re.search(r"[a-z]{4,}", outside), (name, label)
        if name == "reliability":
            assert fig.axes[0].get_ylabel().startswith("share of the bin's picks matched")
            assert "observed_lb" in fig.axes[0].get_ylabel()


@pytest.mark.slow
def test_exhaustive_labels_drop_the_bound(inputs):
    ds = pickscale.score(*inputs, exhaustive=True, progress=False)
    rel = plot.reliability(ds).axes[0]
    assert rel.get_ylabel() == "share of the bin's picks matched"
    oc = plot.operating_curves(ds).axes[1]
    assert oc.get_ylabel() == "precision: share of picks matched"


@pytest.mark.slow
def test_tables_do_not_change(by_network, inputs):
    # Drawing only: the by_group table is the selection's numbers, unchanged by min_arrivals.
    table = pickscale.tables(by_network)["by_group"]
    panels, _ = by_group.by_group_rows(by_network, min_arrivals=50)
    for p in panels:
        for m, r in p.recall.items():
            rows = table[(table.dataset == p.dataset) & (table.phase == p.phase) & (table.model == m)]
            rows = rows.set_index("group").loc[p.groups]
            assert np.allclose(rows.recall.to_numpy(), r, equal_nan=True)
            assert rows.n_reference.tolist() == p.n_reference.tolist()


@pytest.mark.slow
def test_no_text_outside_the_canvas(by_network, by_magnitude, hourly, thin_stations):
    figs = [by_group.recall_by_group(by_network), by_group.recall_by_group(by_magnitude),
            over_time.recall_over_time(hourly), plot.stations(thin_stations)]
    for fig in figs:
        FigureCanvasAgg(fig).draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        outside = []
        hidden = undrawn_tick_labels(fig)  # ticks outside the view: kept by matplotlib, never drawn
        for t in fig.findobj(Text):
            if not t.get_text() or not t.get_visible() or id(t) in hidden:
                continue
            ext = t.get_window_extent(renderer)
            if ext.x0 < box.x0 - 1 or ext.y0 < box.y0 - 1 or ext.x1 > box.x1 + 1 or ext.y1 > box.y1 + 1:
                outside.append(t.get_text()[:40])
        assert not outside, outside[:4]


@pytest.mark.slow
def test_a_lone_bin_gets_a_dash_at_its_middle():
    # Arrivals in hours 0 and 2, none in hour 1: both bins are steps without risers.
    ref = pd.DataFrame({"station": ["A", "A", "A"], "phase": ["P", "P", "P"],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T02:10:00Z", "2024-03-01T02:20:00Z"]})
    picks = ref.assign(model="m", conf=0.9)
    ds = pickscale.score(ref, picks, time_bin="1h", progress=False)
    fig = over_time.recall_over_time(ds, min_arrivals=1)
    (dash,) = _by_gid(fig, "recall_lone", Line2D)["m"]
    middles = np.array(["2024-03-01T00:30", "2024-03-01T02:30"], dtype="datetime64[ns]")
    assert (np.asarray(dash.get_xdata(), dtype="datetime64[ns]") == middles).all()
    assert dash.get_ydata().tolist() == [1.0, 1.0]
