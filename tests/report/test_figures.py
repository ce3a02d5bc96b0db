"""Tests of pickscale.report.figures: every figure builds from the Dataset alone, names follow SPEC, files are valid.

Three Datasets, each built once per module: the demo catalogue (scored twice,
with and without ``exhaustive``) and a synthetic catalogue with 12 models and
300 stations in one dataset plus a small second dataset where half of the
models did not run.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.patches import Rectangle, StepPatch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import pickscale  # noqa: E402
from pickscale.demo import catalogue  # noqa: E402
from pickscale.report import figures as plot  # noqa: E402
from tests.helpers.results import figure_catalogue  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def demo_inputs():
    return catalogue()


@pytest.fixture(scope="module")
def demo(demo_inputs):
    return pickscale.score(*demo_inputs)


@pytest.fixture(scope="module")
def demo_exhaustive(demo_inputs):
    return pickscale.score(*demo_inputs, exhaustive=True)


@pytest.fixture(scope="module")
def big():
    return pickscale.score(*figure_catalogue())


@pytest.fixture(scope="module")
def big_figures(big):
    return plot.figures(big)


@pytest.fixture(scope="module")
def demo_figures(demo):
    return plot.figures(demo)


@pytest.fixture(scope="module")
def exhaustive_figures(demo_exhaustive):
    return plot.figures(demo_exhaustive)


# ------------------------------------------------------------------- helpers

def texts(fig: Figure) -> list[str]:
    """Every piece of text in a figure: titles, labels, ticks, legends, annotations."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def caption(fig: Figure) -> str:
    return fig.get_suptitle().replace("\n", " ")


def legend_labels(legend) -> list[str]:
    return [t.get_text() for t in legend.get_texts()]


def by_gid(fig: Figure, prefix: str, kind) -> dict[str, list]:
    out: dict[str, list] = {}
    for artist in fig.findobj(kind):
        gid = artist.get_gid()
        if gid and gid.startswith(prefix + ":"):
            out.setdefault(gid.split(":", 1)[1], []).append(artist)
    return out


def present_pairs(ds, phase_needs_reference: bool = True) -> set[tuple[str, str, str]]:
    """(dataset, model, phase) combinations a figure should draw."""
    n_ref = ds.n_reference.sum("station")
    out = set()
    for d in ds.dataset.values:
        for m in ds.model.values:
            if not bool(ds.model_present.sel(dataset=d, model=m)):
                continue
            for p in ("P", "S"):
                if phase_needs_reference and int(n_ref.sel(dataset=d, phase=p)) == 0:
                    continue
                out.add((str(d), str(m), p))
    return out


# -------------------------------------------------------------- model colours

def test_model_colors_are_deterministic_by_sorted_name():
    a = plot.model_colors(["sharp", "late", "liberal"])
    b = plot.model_colors(["liberal", "sharp", "late", "late"])
    assert a == b
    assert list(a) == ["late", "liberal", "sharp"]


def test_model_colors_twelve_distinguishable():
    names = [f"model_{i:02d}" for i in range(12)]
    colors = plot.model_colors(reversed(names))
    rgb = np.array([to_rgb(colors[n]) for n in names])
    assert len({tuple(c) for c in rgb}) == 12
    # Pairwise distance in RGB: no two colours nearly the same.
    dist = np.sqrt(((rgb[:, None, :] - rgb[None, :, :]) ** 2).sum(-1))
    assert dist[np.triu_indices(12, 1)].min() > 0.15


@pytest.mark.slow
def test_same_colour_for_a_model_in_every_figure(demo_figures):
    expected = plot.model_colors(["late", "liberal", "sharp"])
    bars = by_gid(demo_figures["recall_treatments"], "recall", Rectangle)
    maes = by_gid(demo_figures["timing"], "mae", Rectangle)
    hists = by_gid(demo_figures["residuals"], "residuals", StepPatch)
    for m, colour in expected.items():
        for artists in (bars[m], maes[m], hists[m]):
            assert all(np.allclose(a.get_facecolor()[:3], to_rgb(colour)) for a in artists)


# ----------------------------------------------------------------- the demo

@pytest.mark.slow
def test_every_figure_is_a_figure_with_a_caption(demo_figures):
    assert list(demo_figures) == [*plot.FIGURES, "pick_rates"]  # every run has pick rates (SPEC §20)
    for name, fig in demo_figures.items():
        assert isinstance(fig, Figure)
        assert caption(fig), f"{name} has no caption-like title"


@pytest.mark.slow
def test_figures_leave_pyplot_alone(demo):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot.figures(demo, names=["timing", "stations"])
    assert plt.get_fignums() == before


@pytest.mark.slow
def test_recall_treatments(demo, demo_figures):
    fig = demo_figures["recall_treatments"]
    assert len(fig.axes) == 2
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["P", "S"]
    labels = legend_labels(fig.legends[0])
    for m in ("late", "liberal", "sharp"):
        assert labels.count(m) == 1
    bars = by_gid(fig, "recall", Rectangle)
    # One bar per model, dataset and phase, at the recall stored in the Dataset.
    assert {m: len(b) for m, b in bars.items()} == {"late": 4, "liberal": 4, "sharp": 4}
    heights = sorted(round(b.get_height(), 12) for b in bars["liberal"])
    expected = sorted(round(float(v), 12) for v in demo.recall.sel(threshold=0.3, model="liberal").values.ravel())
    assert heights == expected
    assert "shared threshold 0.3" in caption(fig) and "matched pick budget" in caption(fig)
    # Each panel states its own arrival count.
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    n_p = int(demo.n_reference.sum("station").sel(dataset="aftershocks_north", phase="P"))
    assert any(f"{n_p} arrivals" in t for t in ticks)


def test_operating_curves(demo, demo_figures):
    fig = demo_figures["operating_curves"]
    assert len(fig.axes) == 4 * demo.sizes["dataset"]
    pr_axes = fig.axes[1::2]
    for ax in pr_axes:
        # Plain words, the variable's name in parentheses (issue 25 item 6).
        assert ax.get_ylabel() == "precision: share of picks matched\n(a lower bound: precision_lb)"
        labels = legend_labels(ax.get_legend())
        assert len(labels) == 3 and all("ap_lb" in s for s in labels)
    # The AP in the legend is the stored one.
    ap = float(demo.ap_lb.sel(dataset="aftershocks_north", model="late", phase="P"))
    assert f"late: ap_lb {ap:.2f}" in legend_labels(pr_axes[0].get_legend())
    for ax in fig.axes[0::2]:
        assert ax.get_xscale() == "log"
        assert len(ax.get_lines()) >= 3 + 1  # a curve per model and the budget line
    fig_labels = legend_labels(fig.legends[0])
    assert {"late", "liberal", "sharp"} <= set(fig_labels)
    assert any("budget" in s for s in fig_labels)


def test_timing(demo, demo_figures):
    fig = demo_figures["timing"]
    assert len(fig.axes) == 2
    bars = by_gid(fig, "mae", Rectangle)
    assert {m: len(b) for m, b in bars.items()} == {"late": 4, "liberal": 4, "sharp": 4}
    widths = sorted(round(b.get_width(), 12) for b in bars["late"])
    assert widths == sorted(round(float(v), 12) for v in demo.mae.sel(threshold=0.3, model="late").values.ravel())
    assert any("gross" in t for t in texts(fig))
    assert "(s)" in fig.axes[0].get_xlabel()


def test_residuals(demo, demo_figures):
    fig = demo_figures["residuals"]
    assert len(fig.axes) == 3 * 2
    hists = by_gid(fig, "residuals", StepPatch)
    assert set(hists) == {"late", "liberal", "sharp"}
    for m, patches in hists.items():
        assert len(patches) == 2  # P and S
        total = sum(int(p.get_data().values.sum()) for p in patches)
        # Pairs with conf >= the shared threshold: the n of the timing table.
        assert total == int(demo["n_pairs"].sel(threshold=0.3, model=m).sum())
    # ±tol is marked.
    xs = {round(float(line.get_xdata()[0]), 6) for ax in fig.axes for line in ax.get_lines()}
    assert {-0.5, 0.5} <= xs
    assert "±0.5 s" in caption(fig) or "±0.5" in caption(fig)


def test_reliability(demo, demo_figures):
    fig = demo_figures["reliability"]
    assert len(fig.axes) == demo.sizes["dataset"] * 2
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend.get_title().get_text() == "calibration error\n(ece_lb)"
        assert [s.split()[0] for s in legend_labels(legend)] == ["late", "liberal", "sharp"]
        assert ax.get_ylabel() == "share of the bin's picks matched\n(a lower bound: observed_lb)"
        # The diagonal.
        assert any(np.allclose(line.get_xdata(), [0, 1]) and np.allclose(line.get_ydata(), [0, 1])
                   for line in ax.get_lines())
    ece = float(demo.ece_lb.sel(dataset="aftershocks_north", model="sharp", phase="P"))
    assert f"sharp  {ece:.3f}" in legend_labels(fig.axes[0].get_legend())


def test_stations(demo, demo_figures):
    fig = demo_figures["stations"]
    assert len(fig.axes) == 2  # heat map and its colour bar
    ax = fig.axes[0]
    image = [a for a in ax.get_children() if isinstance(a, AxesImage)][0]
    grid = np.ma.filled(image.get_array(), np.nan)
    assert grid.shape == (8, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["late", "liberal", "sharp"]
    # Worst first.
    means = np.nanmean(grid, axis=1)
    assert np.all(np.diff(means) >= 0)
    # The worst row is the station with the lowest mean recall, computed independently.
    m = demo.matched.sel(threshold=0.3).sum("phase")
    r = (m / demo.n_reference.sum("phase")).where(demo.station_scored)
    worst = float(r.mean("model").min())
    assert means[0] == pytest.approx(worst)
    assert "all 8" in caption(fig)


# ------------------------------------------------------ SPEC naming (_lb)

@pytest.mark.slow
def test_lower_bound_names_on_a_normal_run(demo_figures):
    everything = " ".join(t for fig in demo_figures.values() for t in texts(fig))
    for name in ("precision_lb", "ap_lb", "ece_lb", "observed_lb"):
        assert name in everything


@pytest.mark.slow
def test_no_lower_bound_suffix_when_exhaustive(demo_exhaustive, exhaustive_figures):
    for name, fig in exhaustive_figures.items():
        offending = [t for t in texts(fig) if "_lb" in t]
        assert not offending, f"{name}: {offending[:3]}"
    oc = exhaustive_figures["operating_curves"]
    assert oc.axes[1].get_ylabel() == "precision: share of picks matched"
    assert all(": ap " in s for s in legend_labels(oc.axes[1].get_legend()))
    rel = exhaustive_figures["reliability"].axes[0]
    assert rel.get_legend().get_title().get_text() == "calibration error\n(ece)"
    assert rel.get_ylabel() == "share of the bin's picks matched"


# ------------------------------------------------------------ save_figures

@pytest.mark.slow
def test_save_figures_writes_valid_pngs(demo, tmp_path):
    paths = plot.save_figures(demo, tmp_path / "figs", dpi=60)
    assert [p.name for p in paths] == [f"{n}.png" for n in (*plot.FIGURES, "pick_rates")]
    for p in paths:
        data = p.read_bytes()
        assert len(data) > 1000
        assert data[:8] == PNG_SIGNATURE
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width > 200 and height > 100
        image = matplotlib.image.imread(p)
        assert image.shape[:2] == (height, width)


def _png_drawn_twice(ds, name: str, dpi: float) -> bytes:
    """A figure's PNG as matplotlib's savefig makes it alone (the layout run by a first, silent draw)."""
    import io

    from pickscale.report.figures import build

    data = io.BytesIO()
    with matplotlib.rc_context(build.STYLE):
        build._BUILDERS[name](ds).savefig(data, format="png", dpi=dpi, metadata=build._metadata("png", name))
    return data.getvalue()


@pytest.mark.parametrize("name", ["operating_curves", "stations"])
def test_a_png_laid_out_once_is_the_png_savefig_draws_twice(demo, tmp_path, name):
    """build.lay_out: the layout engine run alone, then one draw: the same bytes as savefig's two draws."""
    (path,) = plot.save_figures(demo, tmp_path, names=[name], dpi=50)
    assert path.read_bytes() == _png_drawn_twice(demo, name, 50)


@pytest.mark.slow
def test_every_png_laid_out_once_is_the_png_savefig_draws_twice(big, tmp_path):
    paths = plot.save_figures(big, tmp_path, dpi=40)
    assert len(paths) >= 6
    for path in paths:
        assert path.read_bytes() == _png_drawn_twice(big, path.stem, 40), path.name


@pytest.mark.slow
def test_save_figures_svg_and_bad_format(demo, tmp_path):
    paths = plot.save_figures(demo, tmp_path, format="svg", names=["timing"])
    assert paths == [tmp_path / "timing.svg"]
    assert paths[0].read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="format"):
        plot.save_figures(demo, tmp_path, format="jpg")
    with pytest.raises(ValueError, match="unknown figure"):
        plot.figures(demo, names=["nope"])


@pytest.mark.slow
def test_selection_and_unknown_names(demo):
    fig = plot.operating_curves(demo, datasets=["aftershocks_south"], models=["sharp"])
    assert len(fig.axes) == 4
    assert legend_labels(fig.axes[1].get_legend()) == [
        f"sharp: ap_lb {float(demo.ap_lb.sel(dataset='aftershocks_south', model='sharp', phase='P')):.2f}"
    ]
    with pytest.raises(ValueError, match="unknown model"):
        plot.timing(demo, models=["nope"])


@pytest.mark.slow
def test_figures_from_a_reopened_store(demo, tmp_path):
    target = pickscale.save(demo, tmp_path / "results.zarr")
    ds = pickscale.open_results(target)  # lazy, attrs from JSON
    fig = plot.recall_treatments(ds)
    assert len(by_gid(fig, "recall", Rectangle)["sharp"]) == 4


# ------------------------------------------------ 12 models, 300 stations

@pytest.mark.slow
def test_big_every_figure_builds(big, big_figures):
    assert big.sizes["model"] == 12 and big.sizes["station"] == 305
    for name, fig in big_figures.items():
        w, h = fig.get_size_inches()
        assert 4 < w < 40 and 2 < h < 60, (name, w, h)


@pytest.mark.slow
def test_big_station_cap_is_stated(big):
    # Every station of `big` has 4 arrivals, too few to rank by default (they are pooled: test_figures_review);
    # min_arrivals=0 ranks them all, and the cap is stated.
    fig = plot.stations(big, min_arrivals=0)
    image = [a for a in fig.axes[0].get_children() if isinstance(a, AxesImage)][0]
    assert image.get_array().shape == (40, 12)
    assert "worst 40 of 305" in caption(fig)
    assert len(fig.axes[0].get_yticklabels()) == 40
    # Models absent from `small` are grey (NaN), not 0.
    grid = np.ma.filled(image.get_array(), np.nan)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    for row, label in zip(grid, labels):
        if "small" in label:
            assert np.isnan(row[6:]).all() and np.isfinite(row[:6]).all()


@pytest.mark.slow
def test_big_station_cap_option(big):
    fig = plot.stations(big, max_stations=10, min_arrivals=0)
    assert "worst 10 of 305" in caption(fig)


@pytest.mark.slow
def test_big_absent_models_are_skipped(big, big_figures):
    expected = {}
    for _d, m, _p in present_pairs(big):
        expected[m] = expected.get(m, 0) + 1
    bars = by_gid(big_figures["recall_treatments"], "recall", Rectangle)
    assert {m: len(b) for m, b in bars.items()} == expected
    assert len(legend_labels(big_figures["recall_treatments"].legends[0])) == 12 + 2
    maes = by_gid(big_figures["timing"], "mae", Rectangle)
    assert {m: len(b) for m, b in maes.items()} == expected
    # Operating curves draw at most 10 models and reliability 8: the best by recall at the shared
    # threshold (m02 … m11 and m04 … m11 here, recall grows with k), and say so; `small` has m00 … m05.
    oc = big_figures["operating_curves"]
    assert len(oc.axes) == 8  # (big, small) × (P, S) rows, two panels each
    assert len(legend_labels(oc.axes[1].get_legend())) == 10
    assert [s.split(":")[0] for s in legend_labels(oc.axes[5].get_legend())] == [
        "m02", "m03", "m04_a_rather_long_name", "m05"]
    assert "showing 10 of 12 models" in oc.get_supxlabel()
    rel = big_figures["reliability"]
    assert [len(legend_labels(ax.get_legend())) for ax in rel.axes] == [8, 8, 2, 2]
    assert any("showing 8 of 12 models" in lg.get_title().get_text() for lg in rel.legends)
    assert len(big_figures["residuals"].axes) == 10 * 2
    assert "showing 10 of 12 models" in big_figures["residuals"].get_supxlabel()


@pytest.mark.slow
def test_one_model_one_station(demo_inputs):
    ref, picks = demo_inputs
    ref = ref[(ref.dataset == "aftershocks_north") & (ref.station == "XX.NO01")]
    picks = picks[(picks.dataset == "aftershocks_north") & (picks.station == "XX.NO01") & (picks.model == "sharp")]
    ds = pickscale.score(ref, picks)
    figs = plot.figures(ds)
    assert len(figs["recall_treatments"].axes) == 2
    assert len(figs["operating_curves"].axes) == 4
    assert len(figs["residuals"].axes) == 2
    assert len(figs["reliability"].axes) == 2
    assert "one station" in caption(figs["stations"])
