"""A synthetic catalogue whose answers are known, to see pickscale's output before using real data.

Two aftershock-like datasets, four stations each.  Every event gives a P and
an S arrival at every station; the analyst marked about 85 % of them (the
reference is not exhaustive, so precision is a lower bound).  Three models:

``sharp``
    Finds the clear arrivals (about 85 %) with confident, accurate picks
    (residual spread 0.03 s).
``late``
    Finds the same arrivals as ``sharp`` but 0.15 s late: equal recall, a
    0.15 s bias, a collapsed ``fraction_within_0.1``.
``liberal``
    Also finds the hard arrivals, at low confidence, and its confidences are
    inflated, so it emits about twice the picks at the shared threshold: the
    highest recall at 0.3 and the lowest precision_lb — yet at a matched pick
    budget its recall agrees with the others'.

Every event has a magnitude (``magnitude`` in the reference, rounded to 0.1:
each dataset's events spread evenly over 0 … 4, in random order), and an arrival is *clear* — found by every model —
with the probability :func:`detectability` of its event's magnitude, a
logistic curve: ``1 / (1 + exp(-(M - 0.5) / 0.4))`` (0.22 at M 0, 0.5 at
M 0.5, 0.92 at M 1.5, over 0.99 from M 2.5; 0.84 on average, about the 0.85 of before).  So
``--group-by magnitude:1,2,3`` shows recall rising with magnitude by a known
amount (:func:`expected_recall_by_group`; SPEC §14).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .scope.grouping import group_codes, parse_group_by

__all__ = ["catalogue", "write_inputs", "MODELS", "facts", "detectability", "expected_recall_by_group"]

MODELS = ("late", "liberal", "sharp")
_T0 = np.datetime64("2024-03-01T00:00:00", "ns").astype(np.int64)
_S = 1_000_000_000


#: The logistic detectability curve: its midpoint and its width (magnitude units).
_M50, _WIDTH = 0.5, 0.4


def detectability(magnitude) -> np.ndarray:
    """The probability that an arrival of an event of this magnitude is clear (found by every model).

    Examples
    --------
    >>> detectability(np.array([0.0, 0.5, 1.5, 3.0])).round(3).tolist()
    [0.223, 0.5, 0.924, 0.998]
    """
    return 1.0 / (1.0 + np.exp(-(np.asarray(magnitude, dtype=float) - _M50) / _WIDTH))


def _iso(ns: np.ndarray) -> np.ndarray:
    # Millisecond ISO-8601 with a Z, as picker exports usually write them.
    return np.datetime_as_string(ns.astype("datetime64[ns]"), unit="ms").astype(object) + "Z"


def catalogue(seed: int = 2024) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The demo reference and picks as two DataFrames (times as ISO strings).

    Examples
    --------
    >>> ref, picks = catalogue()
    >>> sorted(picks.model.unique())
    ['late', 'liberal', 'sharp']
    """
    rng = np.random.default_rng(seed)
    magnitudes = np.random.default_rng([seed, 18])  # a stream of their own
    ref_rows: list[tuple] = []
    pick_rows: list[tuple] = []
    for dataset, n_events in (("aftershocks_north", 40), ("aftershocks_south", 35)):
        stations = [f"XX.{dataset[12:14].upper()}{i:02d}" for i in range(1, 5)]
        origin = _T0 + np.sort(rng.integers(0, 6 * 3600 * _S, n_events))
        # Spread evenly over 0 … 4 (then shuffled): every dataset has the same mix of small and large events.
        magnitude = magnitudes.permutation(np.round(np.linspace(0.0, 4.0, n_events), 1))
        for station in stations:
            distance_s = rng.uniform(2.0, 12.0)
            p_time = origin + int(distance_s * _S) + rng.integers(-200, 200, n_events) * 1_000_000
            s_time = origin + int(1.75 * distance_s * _S) + rng.integers(-300, 300, n_events) * 1_000_000
            for phase, arrivals in (("P", p_time), ("S", s_time)):
                n = arrivals.size
                marked = rng.random(n) < 0.85
                clear = rng.random(n) < detectability(magnitude)  # the arrivals every model finds
                for t, m in zip(arrivals[marked], magnitude[marked]):
                    ref_rows.append((dataset, station, phase, t, float(m)))
                _model_picks(rng, pick_rows, dataset, station, phase, arrivals, clear)
        span = (origin.min() - 60 * _S, origin.max() + 120 * _S)
        for station in stations:
            _noise(rng, pick_rows, dataset, station, span)
    ref = pd.DataFrame(ref_rows, columns=["dataset", "station", "phase", "time", "magnitude"])
    picks = pd.DataFrame(pick_rows, columns=["dataset", "model", "station", "phase", "time", "conf"])
    ref["time"] = _iso(ref["time"].to_numpy(np.int64))
    picks["time"] = _iso(picks["time"].to_numpy(np.int64))
    picks["conf"] = picks["conf"].round(3)
    return ref, picks


def _model_picks(rng, rows, dataset, station, phase, arrivals, clear) -> None:
    n = arrivals.size
    for model, delay, spread in (("sharp", 0.0, 0.03), ("late", 0.15, 0.03), ("liberal", 0.0, 0.05)):
        residual = rng.normal(delay, spread, n)
        conf = np.clip(rng.beta(8, 2, n), 0.35, 1.0)
        found = clear.copy()
        if model == "liberal":
            # Inflated confidences: clear arrivals near the top, hard ones just above 0.3.
            conf = 0.55 + 0.45 * rng.beta(8, 2, n)
            hard = ~clear & (rng.random(n) < 0.8)
            conf = np.where(hard, rng.uniform(0.3, 0.4, n), conf)
            found |= hard
        for t, r, c in zip(arrivals[found], residual[found], conf[found]):
            rows.append((dataset, model, station, phase, int(t + r * _S), float(c)))
        # A few second picks on found arrivals (duplicates), and a few swapped phases.
        other = "S" if phase == "P" else "P"
        for t in arrivals[found][rng.random(int(found.sum())) < 0.02]:
            rows.append((dataset, model, station, phase, int(t + rng.uniform(0.2, 0.45) * _S), 0.3))
        for t in arrivals[~found][rng.random(int((~found).sum())) < 0.1]:
            rows.append((dataset, model, station, other, int(t + rng.normal(0, 0.05) * _S), 0.5))


def _noise(rng, rows, dataset, station, span) -> None:
    lo, hi = span
    for model, n in (("sharp", 60), ("late", 60), ("liberal", 150)):
        t = rng.integers(lo, hi, n)
        if model == "liberal":
            conf = rng.uniform(0.3, 0.55, n)  # inflated: most of its noise passes a 0.3 threshold
        else:
            conf = np.clip(rng.beta(1.2, 6.0, n), 0.05, 1.0)
        phase = np.where(rng.random(n) < 0.5, "P", "S")
        for ti, ci, pi in zip(t, conf, phase):
            rows.append((dataset, model, station, str(pi), int(ti), float(ci)))


def write_inputs(out_dir: str | Path, seed: int = 2024) -> tuple[Path, Path]:
    """Write ``reference.csv`` and ``picks.csv`` into ``out_dir/inputs``; return their paths."""
    inputs = Path(out_dir) / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    ref, picks = catalogue(seed)
    ref_path, picks_path = inputs / "reference.csv", inputs / "picks.csv"
    ref.to_csv(ref_path, index=False, lineterminator="\n")
    picks.to_csv(picks_path, index=False, lineterminator="\n")
    return ref_path, picks_path


def expected_recall_by_group(group_by: str, seed: int = 2024) -> dict[str, float]:
    """The recall of ``sharp`` (and ``late``) per group of ``group_by`` on a magnitude bin, as built in.

    The mean of :func:`detectability` over the reference arrivals of each group
    (pooled over datasets and phases): what ``by_group.csv`` measures, up to the
    draws of which arrivals are clear.

    Examples
    --------
    >>> {k: round(v, 2) for k, v in expected_recall_by_group("magnitude:1,2,3").items()}
    {'<1': 0.48, '[1,2)': 0.9, '[2,3)': 0.99, '>=3': 1.0}
    """
    ref, _ = catalogue(seed)
    codes, labels = group_codes(parse_group_by(group_by), ref["magnitude"].to_numpy())
    p = detectability(ref["magnitude"].to_numpy(float))
    return {labels[g]: float(p[codes == g].mean()) for g in np.unique(codes)}


def _by_group_fact(table: pd.DataFrame, group_by: str) -> str:
    """The magnitude effect in ``by_group.csv``: sharp's recall per group, pooled, against the built-in one."""
    sharp = table[table.model == "sharp"].groupby("group", sort=False)[["n_reference", "matched"]].sum()
    expected = expected_recall_by_group(group_by)
    parts = [f"{g} {row.matched / row.n_reference:.2f} (built in {expected[g]:.2f})"
             for g, row in sharp.iterrows() if row.n_reference and g in expected]
    return ("Recall rises with magnitude (sharp, pooled over datasets and phases; by_group.csv): "
            + ", ".join(parts) + ".")


def facts(frames: dict[str, pd.DataFrame], *, group_by: str | None = None) -> list[str]:
    """What the reader should see in the demo's tables, read off those tables.

    Each line states a fact that was built into the catalogue, with the number
    pickscale measured for it.  Recall, precision and ``fraction_within_0.1`` are pooled
    over the demo's datasets (from the counts); the bias (a median) and the
    recall at the matched budget (a per-dataset reading) are means over the
    datasets, and say so.  Column names follow the table (``precision`` with
    ``--exhaustive``, ``precision_lb`` without).  With ``group_by`` on the
    magnitude bins (``magnitude:1,2,3``), a line on recall per magnitude group
    against the built-in one (:func:`expected_recall_by_group`).
    """
    det = frames["detection"]
    tim = frames["timing"]
    precision = "precision_lb" if "precision_lb" in det else "precision"
    n_datasets = det["dataset"].nunique()
    mean_of = f"mean of the {n_datasets} datasets" if n_datasets > 1 else "one dataset"
    lines = []
    for phase in ("P", "S"):
        counts = det[det.phase == phase].groupby("model")[["n_reference", "emitted", "matched"]].sum()
        recall = counts.matched / counts.n_reference
        prec = counts.matched / counts.emitted
        at_budget = det[det.phase == phase].groupby("model")["recall_at_budget"].mean()
        t = tim[tim.phase == phase]
        bias = t.groupby("model")["bias"].mean()
        pairs = t.groupby("model")["n_pairs"].sum()
        within = (t["fraction_within_0.1"] * t["n_pairs"]).groupby(t["model"]).sum() / pairs
        lines.append(
            f"{phase}: late is as good at detection as sharp (recall {recall['late']:.3f} vs "
            f"{recall['sharp']:.3f}) but {bias['late']:.3f} s late (median, {mean_of}; built in: 0.150 s); "
            f"fraction_within_0.1 drops from {within['sharp']:.2f} to {within['late']:.2f}."
        )
        lines.append(
            f"{phase}: liberal has the highest recall at the shared threshold ({recall['liberal']:.3f}) "
            f"and the lowest {precision} ({prec['liberal']:.3f}); at the matched budget the three recalls "
            f"agree ({mean_of}): " + ", ".join(f"{m} {at_budget[m]:.3f}" for m in MODELS) + "."
        )
    lines.append("Recall, precision and fraction_within_0.1 are pooled over the datasets; every per-dataset number is "
                 "in detection.csv and timing.csv.")
    if group_by is not None and "by_group" in frames and group_by.split(":")[0] == "magnitude" and ":" in group_by:
        lines.append(_by_group_fact(frames["by_group"], group_by))
    return lines
