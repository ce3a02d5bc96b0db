"""SPEC §12: pickscale.bootstrap on results Datasets built by hand (station by station)."""

from __future__ import annotations

import hashlib
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.errors import OptionsError
from pickscale.kernel import score_station
from pickscale.metrics.calibration import ece
from pickscale.options import Options
from pickscale.report.tables import tables, to_csv_bytes
from pickscale.results import assemble, bootstrap, combine

S = 10**9
METRICS = ("recall", "precision_lb", "f1_lb", "recall_at_budget", "mae", "ece_lb")


def station(o, arrivals, picks, n_models=1):
    """arrivals: [(phase, t s)]; picks: [(model, phase, t s, conf)]."""
    return score_station(
        np.array([p for p, _ in arrivals], dtype=np.int8), np.array([round(t * S) for _, t in arrivals]),
        np.array([m for m, *_ in picks], dtype=np.int32), np.array([p for _, p, _, _ in picks], dtype=np.int8),
        np.array([round(t * S) for _, _, t, _ in picks]), np.array([c for *_, c in picks], dtype=np.float64),
        n_models=n_models, options=o)


def results(stations, o, models=("m",)):
    return assemble({"d": combine(list(stations.items()), models=list(models), options=o)}, options=o)


def test_one_station_gives_zero_width_intervals_on_the_estimate():
    o = Options()
    r = station(o, [(0, 10), (0, 20), (0, 30), (1, 12)],
                [(0, 0, 10.1, 0.9), (0, 0, 20.3, 0.5), (0, 0, 45, 0.7), (0, 1, 12.2, 0.4), (0, 0, 29.0, 0.1)])
    ds = bootstrap(results({"A": r}, o), draws=50)
    for name in METRICS:
        est = ds[name].sel(threshold=0.3) if "threshold" in ds[name].dims else ds[name]
        lo, hi, e = ds[f"{name}_lo"].values, ds[f"{name}_hi"].values, est.values
        assert np.array_equal(lo, hi, equal_nan=True), name
        assert np.array_equal(lo, e, equal_nan=True), name


def two_stations(o):
    # A: one P arrival, found; B: one P arrival, missed (its pick is 3 s away).
    a = station(o, [(0, 10)], [(0, 0, 10.1, 0.9)])
    b = station(o, [(0, 10)], [(0, 0, 13.0, 0.9)])
    return results({"A": a, "B": b}, o)


def test_two_stations_spread_by_hand():
    # Symmetric bootstrap-t (SPEC §12): R = 1/2, residuals +1/2 and -1/2, se = sqrt(1/2) / 2.  A draw takes A
    # and B (R(w) = 1/2: t = 0) with probability 1/2, A twice or B twice (R(w) = 1 or 0, se(w) = 0: |t| = inf)
    # with 1/2.  At level 0.95 the quantile of |t| is inf: the interval is the station ratios' range, [0, 1].
    # At level 0.4 it falls among the 0s: [0.5, 0.5].
    o = Options()
    ds = two_stations(o)
    wide = bootstrap(ds, draws=4000, seed=1)
    assert (float(wide.recall_lo.sel(phase="P").item()), wide.recall_hi.sel(phase="P").item()) == (0.0, 1.0)
    narrow = bootstrap(ds, level=0.4, draws=4000, seed=1)
    assert (float(narrow.recall_lo.sel(phase="P").item()), narrow.recall_hi.sel(phase="P").item()) == (0.5, 0.5)
    # No S arrival: recall undefined, and so is its interval.
    assert np.isnan(wide.recall_lo.sel(phase="S").item())
    # MAE: only A has a pair within residual_tol (0.1 s); B's pick is 3 s away: every defined draw is 0.1 s.
    assert wide.mae_lo.sel(phase="P").item() == wide.mae_hi.sel(phase="P").item() == pytest.approx(0.1)


def test_fixed_seed_gives_identical_intervals_and_another_seed_others():
    o = Options()
    rng = np.random.default_rng(5)
    stations = {}
    for k in range(6):
        arr = [(0, 10.0 * i) for i in range(1, 8)]
        picks = [(m, 0, 10.0 * i + rng.normal(0, 0.2), float(rng.uniform(0.05, 1))) for m in (0, 1)
                 for i in range(1, 8) if rng.uniform() < 0.8]
        stations[f"S{k}"] = station(o, arr, picks, n_models=2)
    ds = results(stations, o, models=("a", "b"))
    one, two, other = bootstrap(ds, draws=300), bootstrap(ds, draws=300), bootstrap(ds, draws=300, seed=9)
    names = [n for n in one.data_vars if n.endswith(("_lo", "_hi")) or "_diff" in n]
    assert all(np.array_equal(one[n].values, two[n].values, equal_nan=True) for n in names)
    assert not all(np.array_equal(one[n].values, other[n].values, equal_nan=True) for n in names)
    # The interval contains the estimate.
    for name in ("recall", "precision_lb", "f1_lb", "mae", "ece_lb", "recall_at_budget"):
        est = one[name].sel(threshold=0.3) if "threshold" in one[name].dims else one[name]
        e, lo, hi = est.sel(phase="P").values, one[f"{name}_lo"].sel(phase="P").values, \
            one[f"{name}_hi"].sel(phase="P").values
        ok = ~np.isnan(e)
        assert (lo[ok] <= e[ok]).all() and (e[ok] <= hi[ok]).all(), name
    # Paired differences: a - b is minus b - a; the interval of a - b holds its estimate.
    cell = dict(dataset="d", model="a", model_b="b", phase="P")
    d_ab = one.recall_diff.sel(cell).item()
    assert d_ab == -one.recall_diff.sel(cell | {"model": "b", "model_b": "a"}).item()
    assert one.recall_diff_lo.sel(cell).item() <= d_ab <= one.recall_diff_hi.sel(cell).item()
    assert np.isnan(one.recall_diff.sel(cell | {"model_b": "a"}).item())


def symmetric_t_by_hand(groups, draws, level=0.95):
    """SPEC §12's symmetric bootstrap-t by brute force: ``groups`` lists per station its (numerator,
    denominator) contributions; each draw is the multiset of stations it takes, summed in a Python loop."""
    a = np.array([sum(x for x, _ in g) for g in groups], dtype=float)
    b = np.array([sum(y for _, y in g) for g in groups], dtype=float)
    r_hat = a.sum() / b.sum()
    se = np.sqrt(sum((ai - r_hat * bi) ** 2 for ai, bi in zip(a, b))) / b.sum()
    t = []
    for drawn in draws:
        sa, sb = sum(a[s] for s in drawn), sum(b[s] for s in drawn)
        if sb == 0:
            continue
        r = sa / sb
        se_w = np.sqrt(sum((a[s] - r * b[s]) ** 2 for s in drawn)) / sb
        t.append(0.0 if abs(r - r_hat) < 1e-13 else abs(r - r_hat) / se_w if se_w > 1e-13 else np.inf)
    t = sorted(t)  # the linear quantile (SPEC §12), +inf ordered last
    h = (len(t) - 1) * level
    j = int(h)
    q = t[j] if h == j or t[j + 1] == t[j] else t[j] + (h - j) * (t[j + 1] - t[j])
    ratios = [ai / bi for ai, bi in zip(a, b) if bi > 0]
    return max(r_hat - q * se, min(ratios)), min(r_hat + q * se, max(ratios))


def test_vectorised_draws_equal_rescoring_each_draw():
    # Brute force: for each draw, the multiset of stations it drew, scored with the metric kernels on
    # plainly summed counts (a Python loop), against the weighted totals of the draws: the percentile interval
    # of ece_lb, and the symmetric bootstrap-t of the ratio metrics (SPEC §12), each from its own definition.
    o = Options()
    rng = np.random.default_rng(11)
    stations = {}
    for k in range(4):
        arr = [(0, 10.0 * i) for i in range(1, 6 + k)]
        picks = [(0, 0, 10.0 * i + rng.normal(0, 0.3), float(rng.uniform(0.05, 1))) for i in range(1, 6 + k)]
        stations[f"S{k}"] = station(o, arr, picks)
    ds = results(stations, o)
    got = bootstrap(ds, draws=64, seed=4)
    # SPEC §12: dataset d's generator is default_rng([seed, *sha256(d in UTF-8)]), one multinomial call.
    weights = np.random.default_rng([4, *hashlib.sha256(b"d").digest()]).multinomial(
        4, [0.25] * 4, size=64)
    ti = o.threshold_index
    sel = dict(dataset=0, model=0, phase=0)
    m, e = ds.matched.isel(threshold=ti, **sel).values, ds.emitted.isel(threshold=ti, **sel).values
    n = ds.n_reference.isel(dataset=0, phase=0).values
    cn, cc, ch = (ds[k].isel(**sel).transpose("station", "bin").values for k in ("cal_n", "cal_conf", "cal_hits"))
    pairs = (ds.pair_conf.values >= 0.3) & (ds.pair_phase.values == 0)
    res, pst = np.abs(np.round(ds.residual.values[pairs] * 1e9)), ds.pair_station.values[pairs]
    eces = []
    for w in weights:
        drawn = np.repeat(np.arange(4), w)
        eces.append(float(ece(cn[drawn].sum(0), cc[drawn].sum(0), ch[drawn].sum(0))))
    draws = [np.repeat(np.arange(4), w) for w in weights]
    want = {
        "recall": symmetric_t_by_hand([[(m[s], n[s])] for s in range(4)], draws),
        "precision_lb": symmetric_t_by_hand([[(m[s], e[s])] for s in range(4)], draws),
        "f1_lb": symmetric_t_by_hand([[(2 * m[s], n[s] + e[s])] for s in range(4)], draws),
        # MAE: each pair's |e| (ns) over one pair; the interval in seconds.
        "mae": tuple(v / 1e9 for v in symmetric_t_by_hand([[(r, 1) for r in res[pst == s]] for s in range(4)],
                                                            draws)),
        "ece_lb": tuple(np.quantile(eces, [0.025, 0.975])),
    }
    for name, (w_lo, w_hi) in want.items():
        est = ds[name].sel(threshold=0.3) if "threshold" in ds[name].dims else ds[name]
        lo, hi = got[f"{name}_lo"].isel(**sel).item(), got[f"{name}_hi"].isel(**sel).item()
        np.testing.assert_allclose([lo, hi], [w_lo, w_hi], rtol=1e-12, err_msg=name)
        assert lo <= est.isel(**sel).item() <= hi
        assert hi > lo, name  # four different stations: a spread


def test_paired_recall_difference_is_the_symmetric_t_of_the_matched_difference():
    # SPEC §12: recall_diff's interval is the symmetric bootstrap-t of (matched_a - matched_b) / arrivals, on the
    # draws both models share; by brute force from the drawn multisets of stations.
    o = Options()
    rng = np.random.default_rng(3)
    stations = {}
    for k in range(7):
        arr = [(0, 10.0 * i) for i in range(1, 4 + 2 * k)]
        picks = [(m, 0, t + rng.normal(0, 0.1), float(rng.uniform(0.4, 1))) for m in (0, 1) for _, t in arr
                 if rng.uniform() < (0.9 if m == 0 else 0.6)]
        stations[f"S{k}"] = station(o, arr, picks, n_models=2)
    ds = results(stations, o, models=("a", "b"))
    got = bootstrap(ds, draws=200, seed=8, level=0.9)
    weights = spec_weights(8, "d", 7, 200)
    ti = o.threshold_index
    m = ds.matched.isel(dataset=0, phase=0, threshold=ti).transpose("model", "station").values
    n = ds.n_reference.isel(dataset=0, phase=0).values
    draws = [np.repeat(np.arange(7), w) for w in weights]
    want = symmetric_t_by_hand([[(m[0, s] - m[1, s], n[s])] for s in range(7)], draws, level=0.9)
    cell = dict(dataset="d", model="a", model_b="b", phase="P")
    lo, hi = got.recall_diff_lo.sel(cell).item(), got.recall_diff_hi.sel(cell).item()
    np.testing.assert_allclose([lo, hi], want, rtol=1e-12)
    assert -1 <= lo <= got.recall_diff.sel(cell).item() <= hi <= 1
    # b - a is the mirror image of a - b.
    back = cell | {"model": "b", "model_b": "a"}
    np.testing.assert_allclose([got.recall_diff_lo.sel(back).item(), got.recall_diff_hi.sel(back).item()],
                               [-hi, -lo], rtol=1e-12)


@pytest.mark.slow
def test_intervals_are_the_same_bytes_whatever_the_order_stations_come_in():
    # SPEC §9, §12: stations are weighed in code-point order of their names, so the order in which their counts
    # arrive (partitions finishing in any order) changes no bit of any interval.
    o = Options()
    rng = np.random.default_rng(17)
    stations = []
    for k in range(6):
        arr = [(int(rng.integers(0, 2)), 10.0 * i) for i in range(1, 5 + k)]
        picks = [(m, p, t + rng.normal(0, 0.2), float(rng.uniform(0.05, 1))) for m in (0, 1) for p, t in arr
                 if rng.uniform() < 0.7]
        stations.append((f"S{k}", station(o, arr, picks, n_models=2)))
    runs = []
    for order in (range(6), [3, 0, 5, 1, 4, 2], range(5, -1, -1)):
        items = [stations[i] for i in order]
        ds = assemble({"d": combine(items, models=["a", "b"], options=o)}, options=o)
        runs.append(interval_values(bootstrap(ds, draws=150, seed=2), "d", ["a", "b"]))
    for other in runs[1:]:
        assert runs[0].keys() == other.keys()
        for v in runs[0]:
            assert runs[0][v].tobytes() == other[v].tobytes(), v


def spec_weights(seed, name, n_stations, draws):
    """SPEC §12 by hand: numpy's generator from the seed and the SHA-256 bytes of the name, nothing else."""
    entropy = [seed, *hashlib.sha256(name.encode("utf-8")).digest()]
    return np.random.default_rng(entropy).multinomial(n_stations, [1 / n_stations] * n_stations, size=draws)


@pytest.mark.slow
def test_each_datasets_generator_is_the_one_spec_names():
    # Two stations per dataset, A's arrival found and B's missed, each by one pick at conf 0.9: a draw's ece_lb
    # (a percentile interval, SPEC §12) is |0.9 - w_A / 2| (both picks in one bin, w_A of the 2 hits), and with
    # one draw lo = hi = that.  The weight of A is read back for each dataset and seed and compared with the
    # SPEC formula recomputed here with numpy.
    o = Options()
    a = station(o, [(0, 10)], [(0, 0, 10.1, 0.9)])
    b = station(o, [(0, 10)], [(0, 0, 13.0, 0.9)])
    names = ("ds0", "ds1", "Étna", "b")
    ds = assemble({n: combine([("A", a), ("B", b)], models=["m"], options=o) for n in names}, options=o)
    for seed in (0, 1, 7, 2**40):
        got = bootstrap(ds, draws=1, seed=seed)
        for name in names:
            w = spec_weights(seed, name, 2, 1)
            cell = dict(dataset=name, model="m", phase="P")
            lo, hi = got.ece_lb_lo.sel(cell).item(), got.ece_lb_hi.sel(cell).item()
            assert lo == hi and lo == pytest.approx(abs(0.9 - w[0, 0] / 2), rel=1e-12), (seed, name)
    # Many draws: the whole spread is that of the SPEC's weights.
    got = bootstrap(ds, draws=500, seed=3)
    for name in names:
        q = np.quantile(np.abs(0.9 - spec_weights(3, name, 2, 500)[:, 0] / 2), [0.025, 0.975], method="linear")
        cell = dict(dataset=name, model="m", phase="P")
        np.testing.assert_allclose([got.ece_lb_lo.sel(cell).item(), got.ece_lb_hi.sel(cell).item()], q,
                                   rtol=1e-12, err_msg=name)


def interval_values(ds, name, models):
    """Every interval and difference variable of dataset ``name``, on ``models`` only."""
    out = {}
    for v in ds.data_vars:
        if v.endswith(("_lo", "_hi")) or "_diff" in v:
            sel = {"dataset": name, "model": list(models)}
            if "model_b" in ds[v].dims:
                sel["model_b"] = list(models)
            out[v] = ds[v].sel(sel).values
    return out


@pytest.mark.slow
def test_a_datasets_intervals_do_not_depend_on_the_other_datasets():
    # Issue 20 item 6: one generator carried across datasets made "b"'s intervals change when a dataset that
    # sorts first ("a") is scored beside it.  "a" also brings a station sorting between b's and a model of its
    # own, so the shared station and model axes differ too.
    o = Options()
    rng = np.random.default_rng(21)

    def stations_of(names, n_models):
        out = {}
        for s in names:
            arr = [(int(rng.integers(0, 2)), 10.0 * i) for i in range(1, 9)]
            picks = [(m, p, t + rng.normal(0, 0.2), float(rng.uniform(0.05, 1))) for m in range(n_models)
                     for p, t in arr if rng.uniform() < 0.75]
            out[s] = station(o, arr, picks, n_models=n_models)
        return out

    per = {"b": (stations_of(["B1", "B3", "B5", "B7"], 2), ["x", "y"]),
           "c": (stations_of(["C1", "C2"], 2), ["x", "y"]),
           "a": (stations_of(["A1", "B4"], 3), ["x", "y", "z"])}

    def run(names):
        counts = {n: combine(list(per[n][0].items()), models=per[n][1], options=o) for n in names}
        return bootstrap(assemble(counts, options=o), draws=200, seed=5)

    alone = interval_values(run(["b"]), "b", ["x", "y"])
    for others in (["b", "c"], ["a", "b"], ["a", "b", "c"]):
        beside = interval_values(run(others), "b", ["x", "y"])
        assert alone.keys() == beside.keys()
        for v in alone:
            assert np.array_equal(alone[v], beside[v], equal_nan=True), (others, v)


@pytest.mark.slow
def test_tables_gain_interval_columns_only_with_intervals():
    o = Options()
    ds = two_stations(o)
    plain = tables(ds)
    with_ci = tables(bootstrap(ds, draws=20))
    for name in ("reliability", "phase_quality", "sweep"):
        assert to_csv_bytes(plain[name]) == to_csv_bytes(with_ci[name])
    for name, added in (("detection", ["recall", "precision_lb", "f1_lb", "recall_at_budget"]),
                        ("timing", ["mae"]), ("calibration", ["ece_lb"])):
        cols = list(with_ci[name].columns)
        assert cols[:len(plain[name].columns)] == list(plain[name].columns)
        assert cols[len(plain[name].columns):] == [f"{a}_{e}" for a in added for e in ("lo", "hi")]
    assert "model_differences" in with_ci and "model_differences" not in plain


@pytest.mark.slow
def test_model_differences_table_rows():
    o = Options()
    a = station(o, [(0, 10), (0, 20)], [(0, 0, 10.1, 0.9), (1, 0, 20.0, 0.8), (2, 0, 10.0, 0.9)], n_models=3)
    b = station(o, [(0, 10)], [(0, 0, 10.1, 0.9), (1, 0, 14.0, 0.8), (2, 0, 10.0, 0.9)], n_models=3)
    ds = bootstrap(results({"A": a, "B": b}, o, models=("x", "y", "z")), draws=30)
    table = tables(ds)["model_differences"]
    assert table[["phase", "model_a", "model_b"]].values.tolist() == [
        ["P", "x", "y"], ["P", "x", "z"], ["P", "y", "z"], ["S", "x", "y"], ["S", "x", "z"], ["S", "y", "z"]]
    # x finds 2 of 3, y 1 of 3 (A's second arrival), z 2 of 3.
    assert table.recall_diff.tolist()[:3] == pytest.approx([1 / 3, 0.0, -1 / 3])


def test_bad_level_draws_seed_are_refused_naming_the_option():
    ds = two_stations(Options())
    for kw, option in (({"level": 1.0}, "level"), ({"level": 0}, "level"), ({"draws": 0}, "draws"),
                       ({"seed": -1}, "seed"), ({"draws": 2.5}, "draws")):
        with pytest.raises(OptionsError) as err:
            bootstrap(ds, **kw)
        assert err.value.options == (option,)


def _pairs_dataset(rng, n_pairs, n_datasets=2, n_stations=4, n_models=3):
    """A Dataset holding only what :func:`pair_sums` reads: the coordinates' sizes and the pair variables."""
    import xarray as xr

    return xr.Dataset(
        {"pair_dataset": ("pair", rng.integers(0, n_datasets, n_pairs).astype(np.int32)),
         "pair_model": ("pair", rng.integers(0, n_models, n_pairs).astype(np.int32)),
         "pair_phase": ("pair", rng.integers(0, 2, n_pairs).astype(np.int8)),
         "pair_station": ("pair", rng.integers(0, n_stations, n_pairs).astype(np.int32)),
         "pair_conf": ("pair", rng.choice([0.05, 0.3, 0.31, 0.5, 0.9], n_pairs)),
         "residual": ("pair", rng.integers(-10**9, 10**9, n_pairs) / 1e9)},
        coords={"dataset": np.arange(n_datasets), "station": np.arange(n_stations), "model": np.arange(n_models)})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_pairs=st.integers(0, 60), batch=st.integers(1, 70),
       per_phase=st.booleans())
def test_the_pairs_summed_a_batch_at_a_time_equal_the_sums_pair_by_pair(seed, n_pairs, batch, per_phase):
    # Brute force: each pair at or above its phase's shared threshold adds |e| (integer ns) and 1 to its
    # (dataset, station, model, phase), one pair at a time in Python, against the batched sums.
    boot = importlib.import_module("pickscale.results.bootstrap")  # (the package's name is the function)

    o = Options(threshold={"P": 0.3, "S": 0.5}) if per_phase else Options()
    ds = _pairs_dataset(np.random.default_rng(seed), n_pairs)
    want_abs, want_n = np.zeros((2, 4, 3, 2), np.int64), np.zeros((2, 4, 3, 2), np.int64)
    for i in range(n_pairs):
        phase = int(ds.pair_phase.values[i])
        if ds.pair_conf.values[i] >= o.phase_thresholds[phase if o.per_phase else 0]:
            at = (int(ds.pair_dataset.values[i]), int(ds.pair_station.values[i]), int(ds.pair_model.values[i]), phase)
            want_abs[at] += abs(round(float(ds.residual.values[i]) * 1e9))
            want_n[at] += 1
    read = []

    def pairs(lo, hi):
        read.append((lo, hi))
        return boot._read_pairs(ds, lo, hi)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(boot, "PAIR_BATCH", batch)
        got_abs, got_n = boot.pair_sums(ds, o, pairs=pairs)
    assert np.array_equal(got_abs, want_abs) and np.array_equal(got_n, want_n)
    # Every pair read once, never more than a batch at a time.
    assert read == [(lo, min(lo + batch, n_pairs)) for lo in range(0, n_pairs, batch)]


def test_intervals_read_the_pairs_a_batch_at_a_time_and_do_not_change(monkeypatch):
    boot = importlib.import_module("pickscale.results.bootstrap")  # (the package's name is the function)

    o = Options()
    rng = np.random.default_rng(5)
    stations = {}
    for k in range(5):
        arr = [(i % 2, 10.0 * i) for i in range(1, 9 + k)]
        picks = [(0, i % 2, 10.0 * i + rng.normal(0, 0.3), float(rng.uniform(0.05, 1))) for i in range(1, 9 + k)]
        stations[f"S{k}"] = station(o, arr, picks)
    ds = results(stations, o)
    whole = bootstrap(ds, draws=64, seed=2)
    monkeypatch.setattr(boot, "PAIR_BATCH", 4)
    batched = bootstrap(ds, draws=64, seed=2)
    assert ds.sizes["pair"] > 8  # (several batches)
    assert whole.identical(batched)
