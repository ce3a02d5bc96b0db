"""Realistic synthetic catalogues for the scale benchmark (Parquet).

``generate(out_dir, n_picks=10_000_000)`` writes ``out_dir/reference/`` (analyst
arrivals) and ``out_dir/picks/`` (model picks at a low floor) as Parquet, with
the SPEC §1 columns: reference ``dataset, station, phase, time, event``; picks
``dataset, model, station, phase, time, conf``; ``time`` is
``timestamp[ns, UTC]``, ``conf`` is float32.  ``manifest.json`` records the
parameters and what came out.

How the catalogue is made (all vectorised numpy, deterministic given ``seed``):

* **Stations** sit at random places in a 400 km square, each with its own
  sensitivity and noise level (log-normal), so some are busy and some quiet.
* **Events**: background seismicity (Poisson in time, uniform in space) plus
  aftershock sequences (a mainshock time and place, Omori-law decay in time,
  10 km scatter in space, Pareto-distributed sizes) — bursts of arrivals at the
  stations near a sequence.  Magnitudes follow Gutenberg–Richter (b = 1).
* **Arrivals**: a station records an event when it lies within a
  magnitude-dependent radius; P and S travel times from a 10 km deep source.
* **Reference**: the analyst marks arrivals of catalogued events only (all
  large ones, a fraction of the small ones, fewer inside bursts), P more often
  than S, near stations more often than far ones; onset error 0.02–0.04 s,
  times rounded to 0.01 s.  Unmarked real arrivals are still picked by the
  models — as on a real bulletin.
* **Picks** per model: most arrivals picked (closer = likelier, higher conf),
  residual spread 0.05–0.1 s with a few outliers, some duplicates, some swapped
  phases, times on a 100 Hz sample grid; plus noise picks at the floor (conf
  skewed low, 0.02 + 0.98·Beta(1, 9)), 30 % of them in event codas, the rest
  uniform in time, more at noisy stations.  Noise fills each model up to its
  share of ``n_picks``, so most picks are noise, as in a real low-floor run.

Size: ``n_picks`` in total (all models), or ``arrival_rate`` (reference
arrivals per station per day) — ``n_picks = n_models * picks_per_arrival *
stations * days * arrival_rate``.

Layouts: ``flat`` writes ``picks/part-00000.parquet …`` (one file per time
block, all stations — how a day-by-day picker run comes out); ``by_station``
writes hive folders ``picks/station=XX.S0001/part-00000.parquet`` (the
``station`` column is kept inside each file too).  Both layouts hold the same
rows for the same parameters: every (station, time block) cell has its own
random stream.  Generation is chunked by time block, so memory stays at one
file's worth of picks (plus the arrivals) whatever ``n_picks`` is.

Command line: ``python benchmarks/catalogue.py OUT --n-picks 1e7 [--layout by_station]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["generate", "Params", "cache_dir"]

GENERATOR_VERSION = 1
S = 1_000_000_000  # ns per second
DAY = 86_400
START_NS = int(np.datetime64("2024-01-01T00:00:00", "ns").astype(np.int64))
SIDE_KM = 400.0
VP, VS, DEPTH_KM = 6.0, 3.5, 10.0
FLOOR = 0.02

# name, detection prob, bias (s), spread (s), conf Beta(a, b), swap, duplicate, outlier rate
MODELS = [
    ("phasenet", 0.88, 0.00, 0.06, (5.0, 2.0), 0.02, 0.04, 0.03),
    ("eqtransformer", 0.82, 0.02, 0.05, (6.0, 1.5), 0.015, 0.02, 0.02),
    ("gpd", 0.78, -0.03, 0.10, (3.0, 2.5), 0.05, 0.08, 0.06),
    ("phasenet_stead", 0.85, 0.01, 0.07, (4.0, 2.0), 0.025, 0.05, 0.04),
    ("eqt_original", 0.80, 0.03, 0.08, (5.0, 3.0), 0.03, 0.03, 0.05),
]


@dataclass(frozen=True)
class Params:
    n_picks: int
    n_models: int = 3
    stations: int = 200
    days: int = 365
    picks_per_arrival: float = 20.0
    seed: int = 0
    layout: str = "flat"
    files: int = 0  # time blocks (= pick files in the flat layout); 0 = about 2 M picks each
    dataset: str = "synth"

    def resolved_files(self) -> int:
        return self.files or max(4, math.ceil(self.n_picks / 2_000_000))

    def key(self) -> str:
        text = json.dumps({**asdict(self), "files": self.resolved_files(), "v": GENERATOR_VERSION}, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:10]


def cache_dir(root: str | Path, params: Params) -> Path:
    """The folder a catalogue with these parameters is (or will be) cached in."""
    return Path(root) / f"cat-{params.n_picks:.0e}-{params.layout}-{params.key()}".replace("+", "")


# ----------------------------------------------------------------- events

def _events(rng: np.random.Generator, n: int, days: int, n_bursts: int):
    """n events: (origin s since start, x km, y km, magnitude, in_burst), sorted by time."""
    span = days * DAY
    n_bg = int(round(0.4 * n))
    n_af = n - n_bg
    t = [rng.uniform(0, span, n_bg)]
    x = [rng.uniform(-50, SIDE_KM + 50, n_bg)]
    y = [rng.uniform(-50, SIDE_KM + 50, n_bg)]
    burst = [np.zeros(n_bg, bool)]
    # Aftershock sequences: Pareto sizes, Omori decay (p = 1.1, c = 0.02 day) over at most 60 days.
    t0 = rng.uniform(0, span * 0.95, n_bursts)
    cx, cy = rng.uniform(0, SIDE_KM, n_bursts), rng.uniform(0, SIDE_KM, n_bursts)
    w = rng.pareto(1.2, n_bursts) + 1.0
    sizes = rng.multinomial(n_af, w / w.sum())
    which = np.repeat(np.arange(n_bursts), sizes)
    p, c = 1.1, 0.02 * DAY
    tmax = np.minimum(60 * DAY, span - t0[which])
    u = rng.random(n_af)
    # inverse CDF of (t + c)^-p on [0, tmax]
    a = c ** (1 - p)
    b = (tmax + c) ** (1 - p)
    dt = (a + u * (b - a)) ** (1 / (1 - p)) - c
    t.append(t0[which] + dt)
    x.append(cx[which] + rng.normal(0, 10, n_af))
    y.append(cy[which] + rng.normal(0, 10, n_af))
    burst.append(np.ones(n_af, bool))
    t, x, y, burst = (np.concatenate(v) for v in (t, x, y, burst))
    mag = 0.5 + rng.exponential(1 / math.log(10), n)  # Gutenberg–Richter, b = 1
    order = np.argsort(t, kind="stable")
    return t[order], x[order], y[order], mag[order], burst[order]


def _arrivals(rng, ev, st_x, st_y, st_sens):
    """Event–station detections -> arrays sorted by (station, time): true arrivals and who marks them."""
    t, x, y, mag, burst = ev
    n_sta = st_x.size
    cat_p = np.where(mag >= 2.0, 1.0, np.where(mag >= 1.2, 0.5, 0.15)) * np.where(burst, 0.6, 1.0)
    catalogued = rng.random(t.size) < cat_p
    rows_e, rows_s, rows_q, rows_d = [], [], [], []
    chunk = max(1, 2_000_000 // n_sta)
    for lo in range(0, t.size, chunk):
        hi = min(t.size, lo + chunk)
        d = np.hypot(x[lo:hi, None] - st_x[None, :], y[lo:hi, None] - st_y[None, :])
        r = 15.0 * 10 ** (0.45 * (mag[lo:hi, None] - 0.5)) * st_sens[None, :]
        e, s = np.nonzero(d < r)
        rows_e.append(e + lo)
        rows_s.append(s)
        rows_d.append(d[e, s])
        rows_q.append(1.0 - d[e, s] / r[e, s])
    e, s, d, q = (np.concatenate(v) for v in (rows_e, rows_s, rows_d, rows_q))
    hypo = np.sqrt(d ** 2 + DEPTH_KM ** 2)
    # Two arrivals (P, S) per detection.
    ev_idx = np.concatenate([e, e])
    sta = np.concatenate([s, s]).astype(np.int32)
    phase = np.concatenate([np.zeros(e.size, np.int8), np.ones(e.size, np.int8)])
    travel = np.concatenate([hypo / VP, hypo / VS])
    quality = np.concatenate([q, q])
    t_ns = START_NS + np.round((t[ev_idx] + travel) * S).astype(np.int64)
    mark_p = np.where(phase == 0, 0.5 + 0.5 * quality, 0.3 + 0.5 * quality) * catalogued[ev_idx]
    marked = rng.random(ev_idx.size) < mark_p
    order = np.lexsort((phase, t_ns, sta))
    return {
        "station": sta[order], "time": t_ns[order], "phase": phase[order], "quality": quality[order],
        "marked": marked[order], "event": ev_idx[order].astype(np.int64),
    }


def _plan(p: Params):
    """Stations, arrivals and the noise budget per (station, block) — everything but the picks."""
    rng = np.random.default_rng([p.seed, 0])
    st_x, st_y = rng.uniform(0, SIDE_KM, p.stations), rng.uniform(0, SIDE_KM, p.stations)
    st_sens = rng.lognormal(0.0, 0.35, p.stations)
    st_noise = rng.lognormal(0.0, 0.8, p.stations)
    n_bursts = max(2, round(p.days / 30))
    target_ref = p.n_picks / (p.n_models * p.picks_per_arrival)
    # Calibrate the event count on a pilot catalogue, then draw the real one.
    pilot_n = 20_000
    pilot = _arrivals(np.random.default_rng([p.seed, 1]),
                      _events(np.random.default_rng([p.seed, 2]), pilot_n, p.days, n_bursts), st_x, st_y, st_sens)
    per_event = max(pilot["marked"].sum() / pilot_n, 1e-3)
    n_events = max(10, int(round(target_ref / per_event)))
    ev = _events(np.random.default_rng([p.seed, 3]), n_events, p.days, n_bursts)
    arr = _arrivals(np.random.default_rng([p.seed, 4]), ev, st_x, st_y, st_sens)
    n_blocks = p.resolved_files()
    edges = START_NS + (np.arange(n_blocks + 1, dtype=np.int64) * (p.days * DAY) * S) // n_blocks
    edges[-1] = np.iinfo(np.int64).max  # late arrivals of the last events belong to the last block
    edges[0] = np.iinfo(np.int64).min
    # Expected picks on real arrivals per model, so that noise fills each model to its share.
    per_model = p.n_picks // p.n_models
    noise = np.zeros((p.n_models, p.stations, n_blocks), np.int64)
    n_arr = arr["time"].size
    for m in range(p.n_models):
        name, det, *_rest = MODELS[m % len(MODELS)]
        dup = MODELS[m % len(MODELS)][6]
        expected_true = float(np.sum(_p_detect(det, arr["quality"], arr["phase"]))) * (1 + dup)
        n_noise = max(0, per_model - int(round(expected_true)))
        w = (st_noise[:, None] * np.ones(n_blocks)[None, :]).ravel()
        noise[m] = np.random.default_rng([p.seed, 5, m]).multinomial(n_noise, w / w.sum()).reshape(p.stations, n_blocks)
    return {"arrivals": arr, "edges": edges, "noise": noise, "n_arrivals": n_arr, "n_events": n_events,
            "station_noise": st_noise}


# ------------------------------------------------------------------ picks

def _p_detect(det: float, quality: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Probability that a model picks a real arrival: near (quality -> 1) and P are easier."""
    return det * (0.55 + 0.45 * quality) * np.where(phase == 1, 0.92, 1.0)


def _cell(p: Params, plan, s: int, b: int):
    """Picks of station s in time block b, all models: (model, phase, time_ns, conf), sorted by time."""
    rng = np.random.default_rng([p.seed, 6, s, b])
    arr = plan["arrivals"]
    lo, hi = np.searchsorted(arr["station"], [s, s + 1])
    t_all = arr["time"][lo:hi]
    a0, a1 = np.searchsorted(t_all, plan["edges"][b:b + 2])
    a0, a1 = a0 + lo, a1 + lo
    at, aph, aq = arr["time"][a0:a1], arr["phase"][a0:a1], arr["quality"][a0:a1]
    out_m, out_ph, out_t, out_c = [], [], [], []
    block_lo = max(plan["edges"][b], START_NS)
    block_hi = min(plan["edges"][b + 1], START_NS + p.days * DAY * S)
    for m in range(p.n_models):
        _, det, bias, spread, (ca, cb), swap, dup, outl = MODELS[m % len(MODELS)]
        # Picks on real arrivals (marked by the analyst or not).
        hit = rng.random(at.size) < _p_detect(det, aq, aph)
        t = at[hit]
        q = aq[hit]
        ph = aph[hit]
        err = bias + spread * rng.standard_normal(t.size)
        out = rng.random(t.size) < outl
        err[out] += rng.normal(0, 0.6, int(out.sum()))
        ph = np.where(rng.random(t.size) < swap * (1.5 - q), 1 - ph, ph).astype(np.int8)
        conf = FLOOR + (1 - FLOOR) * rng.beta(ca * (0.5 + q), cb)
        tt = t + np.round(err * S).astype(np.int64)
        # Duplicates: a second, less confident pick near the first.
        d = rng.random(t.size) < dup
        nd = int(d.sum())
        dt = tt[d] + np.round(rng.normal(0, 0.2, nd) * S).astype(np.int64)
        dc = FLOOR + (conf[d] - FLOOR) * rng.uniform(0.2, 0.9, nd)
        dph = ph[d]
        # Noise: 30 % in event codas (after a real arrival), the rest uniform over the block.
        n_noise = int(plan["noise"][m, s, b])
        n_coda = int(round(0.3 * n_noise)) if at.size else 0
        src = at[rng.integers(0, at.size, n_coda)] if n_coda else np.zeros(0, np.int64)
        coda_t = src + np.round((0.5 + rng.exponential(15.0, n_coda)) * S).astype(np.int64)
        uni_t = rng.integers(block_lo, block_hi, n_noise - n_coda, dtype=np.int64)
        nt = np.concatenate([coda_t, uni_t])
        nc = FLOOR + (1 - FLOOR) * rng.beta(1.0, 9.0, n_noise)
        nph = (rng.random(n_noise) < 0.45).astype(np.int8)
        times = np.concatenate([tt, dt, nt])
        times = (times // (S // 100)) * (S // 100)  # 100 Hz samples
        out_t.append(times)
        out_c.append(np.concatenate([conf, dc, nc]))
        out_ph.append(np.concatenate([ph, dph, nph]))
        out_m.append(np.full(times.size, m, np.int8))
    m_, ph_, t_, c_ = (np.concatenate(v) for v in (out_m, out_ph, out_t, out_c))
    order = np.argsort(t_, kind="stable")
    return m_[order], ph_[order], t_[order], c_[order]


# ------------------------------------------------------------------ tables

def _dict_col(codes: np.ndarray, names: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names, pa.string()))


def _time_col(ns: np.ndarray) -> pa.Array:
    return pa.array(ns, type=pa.int64()).view(pa.timestamp("ns", tz="UTC"))


def _picks_table(p: Params, station_names, models, parts) -> pa.Table:
    sta = np.concatenate([np.full(c[0].size, s, np.int32) for s, c in parts]) if parts else np.zeros(0, np.int32)
    m = np.concatenate([c[0] for _, c in parts])
    ph = np.concatenate([c[1] for _, c in parts])
    t = np.concatenate([c[2] for _, c in parts])
    conf = np.concatenate([c[3] for _, c in parts]).astype(np.float32)
    n = t.size
    return pa.table({
        "dataset": _dict_col(np.zeros(n, np.int32), [p.dataset]).cast(pa.string()),
        "model": _dict_col(m, models).cast(pa.string()),
        "station": _dict_col(sta, station_names).cast(pa.string()),
        "phase": _dict_col(ph, ["P", "S"]).cast(pa.string()),
        "time": _time_col(t),
        "conf": pa.array(conf, pa.float32()),
    })


def _reference_table(p: Params, station_names, arr, idx) -> pa.Table:
    n = idx.size
    return pa.table({
        "dataset": _dict_col(np.zeros(n, np.int32), [p.dataset]).cast(pa.string()),
        "station": _dict_col(arr["station"][idx], station_names).cast(pa.string()),
        "phase": _dict_col(arr["phase"][idx], ["P", "S"]).cast(pa.string()),
        "time": _time_col(arr["ref_time"][idx]),
        "event": pa.array(arr["event"][idx]),
    })


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=1 << 20, compression="snappy")


# --------------------------------------------------------------- generate

def generate(out_dir, *, n_picks: int | None = None, n_models: int = 3, stations: int = 200, days: int = 365,
             arrival_rate: float | None = None, picks_per_arrival: float = 20.0, seed: int = 0,
             layout: str = "flat", files: int = 0, overwrite: bool = False, verbose: bool = False) -> dict:
    """Write a synthetic catalogue to ``out_dir`` (``reference/``, ``picks/``, ``manifest.json``).

    Give ``n_picks`` (total over all models) or ``arrival_rate`` (reference
    arrivals per station per day).  Returns the manifest.  An existing
    catalogue with the same parameters is reused unless ``overwrite``.
    """
    if layout not in ("flat", "by_station"):
        raise ValueError("layout must be 'flat' or 'by_station'")
    if (n_picks is None) == (arrival_rate is None):
        raise ValueError("give exactly one of n_picks and arrival_rate")
    if n_picks is None:
        n_picks = int(round(n_models * picks_per_arrival * stations * days * arrival_rate))
    p = Params(n_picks=int(n_picks), n_models=n_models, stations=stations, days=days,
               picks_per_arrival=picks_per_arrival, seed=seed, layout=layout, files=files)
    out = Path(out_dir)
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and not overwrite:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("key") == p.key():
            return manifest
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    started = time.perf_counter()
    plan = _plan(p)
    arr = plan["arrivals"]
    rng = np.random.default_rng([p.seed, 7])
    err = np.where(arr["phase"] == 0, 0.02, 0.04) * rng.standard_normal(arr["time"].size)
    arr["ref_time"] = ((arr["time"] + np.round(err * S).astype(np.int64)) // (S // 100)) * (S // 100)
    width = max(4, len(str(p.stations)))
    station_names = [f"SY.S{i:0{width}d}" for i in range(p.stations)]
    models = [MODELS[m % len(MODELS)][0] + ("" if m < len(MODELS) else f"_{m // len(MODELS)}")
              for m in range(p.n_models)]
    n_blocks = p.resolved_files()

    # Reference arrivals (small: kept whole).
    marked = np.flatnonzero(arr["marked"])
    if layout == "flat":
        n_ref_files = min(4, n_blocks)
        ref_block = np.searchsorted(plan["edges"][1:-1], arr["time"][marked], side="right") * n_ref_files // n_blocks
        for f in range(n_ref_files):
            _write(_reference_table(p, station_names, arr, marked[ref_block == f]), out / "reference" / f"part-{f:05d}.parquet")
    else:
        sta = arr["station"][marked]
        for s in range(p.stations):
            idx = marked[sta == s]
            if idx.size:
                _write(_reference_table(p, station_names, arr, idx),
                       out / "reference" / f"station={station_names[s]}" / "part-00000.parquet")

    # Picks, one time block (flat) or one station (by_station) at a time.
    per_station = np.zeros(p.stations, np.int64)
    per_model = np.zeros(p.n_models, np.int64)
    total = 0
    if layout == "flat":
        for b in range(n_blocks):
            parts = [(s, _cell(p, plan, s, b)) for s in range(p.stations)]
            table = _picks_table(p, station_names, models, parts)
            for s, c in parts:
                per_station[s] += c[0].size
                per_model += np.bincount(c[0], minlength=p.n_models)
            total += table.num_rows
            _write(table, out / "picks" / f"part-{b:05d}.parquet")
            if verbose:
                print(f"  block {b + 1}/{n_blocks}: {table.num_rows:,} picks", flush=True)
    else:
        for s in range(p.stations):
            cells = [_cell(p, plan, s, b) for b in range(n_blocks)]
            c = tuple(np.concatenate(v) for v in zip(*cells))
            table = _picks_table(p, station_names, models, [(s, c)])
            per_station[s] += table.num_rows
            per_model += np.bincount(c[0], minlength=p.n_models)
            total += table.num_rows
            if table.num_rows:
                _write(table, out / "picks" / f"station={station_names[s]}" / "part-00000.parquet")

    n_ref = int(marked.size)
    n_true = int(arr["time"].size)
    ordered = np.sort(per_station)[::-1]
    manifest = {
        "key": p.key(),
        "params": {**asdict(p), "files": n_blocks},
        "generator_version": GENERATOR_VERSION,
        "n_picks": int(total),
        "n_reference": n_ref,
        "n_true_arrivals": n_true,
        "n_events": int(plan["n_events"]),
        "models": models,
        "picks_per_model": {m: int(c) for m, c in zip(models, per_model)},
        "noise_picks": int(plan["noise"].sum()),
        "noise_fraction": float(plan["noise"].sum() / max(total, 1)),
        "reference_per_station_day": n_ref / (p.stations * p.days),
        "picks_per_station": {"min": int(ordered[-1]), "median": int(np.median(ordered)), "max": int(ordered[0]),
                              "busiest_10pct_share": float(ordered[: max(1, p.stations // 10)].sum() / max(total, 1))},
        "bytes": {"picks": _size(out / "picks"), "reference": _size(out / "reference")},
        "seconds": round(time.perf_counter() - started, 2),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*.parquet"))


def add_shape_arguments(ap: argparse.ArgumentParser) -> None:
    """The catalogue's shape options, shared by this script and scale.py."""
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--stations", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--picks-per-arrival", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layout", choices=("flat", "by_station"), default="flat")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--n-picks", type=float, default=None)
    ap.add_argument("--arrival-rate", type=float, default=None, help="reference arrivals per station per day")
    add_shape_arguments(ap)
    ap.add_argument("--files", type=int, default=0)
    ap.add_argument("--overwrite", action="store_true")
    a = ap.parse_args()
    n = None if a.n_picks is None else int(a.n_picks)
    if n is None and a.arrival_rate is None:
        n = 1_000_000
    m = generate(a.out, n_picks=n, n_models=a.models, stations=a.stations, days=a.days,
                 arrival_rate=a.arrival_rate, picks_per_arrival=a.picks_per_arrival, seed=a.seed,
                 layout=a.layout, files=a.files, overwrite=a.overwrite, verbose=True)
    print(json.dumps(m, indent=2))


if __name__ == "__main__":
    main()
