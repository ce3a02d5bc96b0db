"""Synthetic catalogues for the engine, determinism and CLI tests.

Every builder returns a :class:`Catalogue`: the *raw* reference and picks
tables as a user would hand them to pickscale (aliased column names, phase
names such as ``Pg``/``Sn``/``pP``, station ids with trailing dots, times as
ISO strings with ``Z``, with an offset, or naive), *and* the canonical truth
they encode (``dataset, [model,] station, phase in {P, S}, time int64 ns,
conf``), which the generator knows by construction.  The tests compute their
expected numbers from the canonical truth, never from pickscale's reader.

Nothing here imports pickscale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

S = 1_000_000_000  # ns per second
T0 = 1_709_251_200 * S  # 2024-03-01T00:00:00Z

# Phase spellings that map to P / S (SPEC §1) and some that are dropped.
P_NAMES = ("P", "Pg", "Pn", "Pb", "P*")
S_NAMES = ("S", "Sg", "Sn", "Sb", "S*")


@dataclass
class Catalogue:
    """Raw inputs and the canonical rows they stand for."""

    reference: pd.DataFrame  # raw, as written to files
    picks: pd.DataFrame  # raw, as written to files
    ref_canonical: pd.DataFrame  # dataset, station, phase, time (P/S rows only, duplicates kept)
    picks_canonical: pd.DataFrame  # dataset, model, station, phase, time, conf (P/S rows only)
    ref_dropped_phases: dict = field(default_factory=dict)  # original phase name -> rows dropped
    picks_dropped_phases: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # what the traps are, for assertions

    # ------------------------------------------------------------------ files
    def write_csv(self, folder: Path, *, ref_name="reference.csv", picks_name="picks.csv") -> tuple[Path, Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        ref_path, picks_path = folder / ref_name, folder / picks_name
        self.reference.to_csv(ref_path, index=False, lineterminator="\n")
        self.picks.to_csv(picks_path, index=False, lineterminator="\n")
        return ref_path, picks_path

    def write_parquet(self, folder: Path) -> tuple[Path, Path]:
        """Parquet with *typed* columns: datetimes (naive reference, UTC-aware picks), float conf.

        Aliases, phase spellings and trailing dots are kept; the time strings'
        formats are replaced by the typed instants they denote.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        ref = self.reference.copy()
        picks = self.picks.copy()
        ref[self.notes["ref_time_col"]] = pd.to_datetime(self.notes["ref_time_ns"], unit="ns")  # naive = UTC
        picks[self.notes["pick_time_col"]] = pd.to_datetime(self.notes["pick_time_ns"], unit="ns", utc=True)
        picks[self.notes["pick_conf_col"]] = np.asarray(self.notes["pick_conf"], dtype=np.float64)
        ref_path, picks_path = folder / "reference.parquet", folder / "picks.parquet"
        ref.to_parquet(ref_path, index=False)
        picks.to_parquet(picks_path, index=False)
        return ref_path, picks_path


# ---------------------------------------------------------------------- times

def iso(ns: int, style: str) -> str:
    """One instant (int ns since 1970 UTC) written in one of several ISO-8601 styles."""
    ns = int(ns)
    if style == "Z":
        return np.datetime_as_string(np.datetime64(ns, "ns"), unit="ns") + "Z"
    if style == "naive":
        return np.datetime_as_string(np.datetime64(ns, "ns"), unit="ns")
    if style == "naive_space":
        return np.datetime_as_string(np.datetime64(ns, "ns"), unit="ns").replace("T", " ")
    if style == "+00:00":
        return np.datetime_as_string(np.datetime64(ns, "ns"), unit="ns") + "+00:00"
    if style == "+02:00":  # local time two hours ahead of UTC
        return np.datetime_as_string(np.datetime64(ns + 2 * 3600 * S, "ns"), unit="ns") + "+02:00"
    if style == "-05:30":
        return np.datetime_as_string(np.datetime64(ns - (5 * 3600 + 1800) * S, "ns"), unit="ns") + "-05:30"
    if style == "ms_Z":  # millisecond precision only (value must be whole ms)
        assert ns % 1_000_000 == 0
        return np.datetime_as_string(np.datetime64(ns, "ns"), unit="ms") + "Z"
    raise ValueError(style)


# ------------------------------------------------------------------ the trap catalogue

# Datasets in code-point order: 'Ridgecrest' < 'amatrice' < 'Ñuble' (upper case sorts first; Ñ is U+00D1).
DATASETS = ("Ridgecrest", "amatrice", "Ñuble")
# Models in code-point order: 'EQT' < 'GPD' < 'PhaseNet' < 'eqt-lite'.
MODELS = ("EQT", "GPD", "PhaseNet", "eqt-lite")

_MODEL_PARAMS = {
    #            detect, bias s, spread s, conf beta a, b, noise picks per station
    "EQT": (0.90, 0.00, 0.05, 6.0, 2.0, 4),
    "GPD": (0.95, 0.02, 0.15, 1.5, 1.5, 10),
    "PhaseNet": (0.85, -0.01, 0.04, 5.0, 2.0, 3),
    "eqt-lite": (0.50, 0.05, 0.10, 3.0, 3.0, 2),
}


def trap_catalogue(seed: int = 11, *, n_events: int = 8) -> Catalogue:
    """A small catalogue holding every trap of the engine issue.

    - column aliases: reference ``sequence, sta, pha, arrival_time`` (plus an
      ``event`` column that is not a dataset and an ``onset`` column that must lose
      to ``arrival_time``); picks ``Sequence, weights, trace_id, phase_hint,
      peak_time, probability`` (plus ``run`` and ``score`` that must lose);
    - phases ``Pg/Pn/Pb/P*/Sg/Sn/Sb/S*`` kept, ``pP/sS/PKP`` dropped and counted;
    - station ids with trailing dots (``CI.CLC.``, ``CI.CLC..``) and surrounding blanks;
    - times with ``Z``, ``+00:00``, ``+02:00``, ``-05:30`` and none (naive = UTC), to the ns;
    - duplicate reference rows (``Pg`` and ``P`` at the same instant, written differently);
    - 'eqt-lite' absent from two stations of Ridgecrest and without S picks in amatrice;
    - 'GPD' absent from the whole dataset 'Ñuble' (only picks below the floor at a
      scored station and picks at a station without reference there);
    - 'Ñuble' has P arrivals only (S rows: n_reference 0, NaN rates);
    - stations on one side only, a station whose picks are all below the floor;
    - arrivals outside the picked span, at and one ns beyond its edges, and next to
      picks that must not widen the span (below the floor / at unreferenced stations);
    - hand-made SPEC §3 cases: the greedy counter-example, a pick exactly ``tol`` away,
      a pick equidistant from two arrivals, identical duplicate picks, equal-conf ties,
      conf exactly 0.02, 0.3 and 1.0, conf 0.0 and just below the floor.
    """
    rng = np.random.default_rng(seed)
    ref_rows: list[tuple] = []  # (dataset, station_raw, phase_raw, time_ns, canonical_station or None)
    pick_rows: list[tuple] = []  # (dataset, model, station_raw, phase_raw, time_ns, conf)

    stations = {
        "Ridgecrest": ["CI.CLC", "CI.SRT", "CI.WBM", "CI.LRL", "XX.A01"],
        "amatrice": ["IV.MMO", "IV.NRCA", "XX.A01", "IV.T1212"],
        "Ñuble": ["C1.AC04", "C1.AC05", "C1.VA01"],
    }
    ds_offset = {"Ridgecrest": 0, "amatrice": 3 * 86400 * S, "Ñuble": 9 * 86400 * S}
    models_of = {"Ridgecrest": MODELS, "amatrice": MODELS, "Ñuble": ("EQT", "PhaseNet", "eqt-lite")}
    lite_absent = {("Ridgecrest", "CI.WBM"), ("Ridgecrest", "CI.LRL")}

    def add_ref(d, st, phase_canon, t, *, raw_phase=None):
        name = raw_phase or rng.choice(P_NAMES if phase_canon == "P" else S_NAMES)
        ref_rows.append((d, st, str(name), int(t)))

    def add_pick(d, m, st, phase_canon, t, c, *, raw_phase=None):
        name = raw_phase or rng.choice(P_NAMES if phase_canon == "P" else S_NAMES)
        pick_rows.append((d, m, st, str(name), int(t), float(c)))

    for d in DATASETS:
        base = T0 + ds_offset[d]
        origins = base + np.sort(rng.integers(0, 1800 * S, n_events))
        for st in stations[d]:
            tp = rng.uniform(2.0, 12.0)
            p_t = origins + int(tp * S) + rng.integers(-300_000_000, 300_000_000, n_events)
            s_t = origins + int(1.75 * tp * S) + rng.integers(-400_000_000, 400_000_000, n_events)
            phases = (("P", p_t),) if d == "Ñuble" else (("P", p_t), ("S", s_t))
            for ph, arrivals in phases:
                marked = rng.random(n_events) < 0.85
                for t in arrivals[marked]:
                    add_ref(d, st, ph, t)
                # depth phases: dropped and counted
                for t in arrivals[marked][: 2]:
                    ref_rows.append((d, st, "pP" if ph == "P" else "sS", int(t + 2 * S)))
            # Ñuble has S arrivals in the data, unlabelled: models still pick them.
            all_phases = (("P", p_t), ("S", s_t))
            for m in models_of[d]:
                if m == "eqt-lite" and (d, st) in lite_absent:
                    continue
                detect, bias, spread, a, b, n_noise = _MODEL_PARAMS[m]
                for ph, arrivals in all_phases:
                    if m == "eqt-lite" and d == "amatrice" and ph == "S":
                        continue  # ran, but emitted nothing for S
                    found = rng.random(n_events) < detect
                    resid = rng.normal(bias, spread, n_events)
                    conf = rng.beta(a, b, n_events)
                    for t, r, c in zip(arrivals[found], resid[found], conf[found]):
                        add_pick(d, m, st, ph, t + int(r * S), c)
                    # gross errors: matched at residual_tol (2 s) but not at tol (0.5 s)
                    for t in arrivals[found][rng.random(int(found.sum())) < 0.15]:
                        add_pick(d, m, st, ph, t + int(rng.uniform(0.6, 1.9) * S) * rng.choice([-1, 1]),
                                 rng.uniform(0.05, 0.6))
                    # second picks on found arrivals (duplicates)
                    for t in arrivals[found][rng.random(int(found.sum())) < 0.15]:
                        add_pick(d, m, st, ph, t + int(rng.uniform(0.1, 0.45) * S), rng.uniform(0.02, 0.5))
                    # swapped phase on missed arrivals
                    other = "S" if ph == "P" else "P"
                    if not (m == "eqt-lite" and d == "amatrice" and other == "S"):
                        for t in arrivals[~found][rng.random(int((~found).sum())) < 0.5]:
                            add_pick(d, m, st, other, t + int(rng.normal(0, 0.1) * S), rng.uniform(0.2, 0.9))
                for _ in range(n_noise):
                    ph = "P" if rng.random() < 0.5 or (m == "eqt-lite" and d == "amatrice") else "S"
                    add_pick(d, m, st, ph, base + int(rng.uniform(-30, 1830) * S), rng.uniform(0.0, 0.7))
                # noise below the floor (ignored entirely)
                add_pick(d, m, st, "P", base + int(rng.uniform(0, 1800) * S), 0.0199999)

    # --- hand-made SPEC §3 cases at Ridgecrest / CI.CLC, model PhaseNet and EQT
    d, st, hb = "Ridgecrest", "CI.CLC", T0 + 2000 * S
    for t in (10_000_000_000, 10_700_000_000):  # greedy counter-example
        add_ref(d, st, "P", hb + t, raw_phase="P")
    add_pick(d, "PhaseNet", st, "P", hb + 10_250_000_000, 0.9, raw_phase="P")
    add_pick(d, "PhaseNet", st, "P", hb + 9_600_000_000, 0.5, raw_phase="P")
    add_ref(d, st, "S", hb + 20 * S, raw_phase="S")  # a pick exactly tol away (inclusive)
    add_pick(d, "PhaseNet", st, "S", hb + 20 * S + 500_000_000, 0.3, raw_phase="Sg")  # conf exactly 0.3
    add_pick(d, "EQT", st, "S", hb + 20 * S - 500_000_001, 0.95, raw_phase="S")  # 1 ns beyond tol
    for t in (30 * S, 31 * S):  # a pick equidistant from two arrivals takes the earlier
        add_ref(d, st, "P", hb + t, raw_phase="Pn")
    add_pick(d, "EQT", st, "P", hb + 30_500_000_000, 0.8, raw_phase="P")
    add_pick(d, "EQT", st, "P", hb + 30_500_000_000, 0.8, raw_phase="P")  # identical duplicate pick
    add_pick(d, "EQT", st, "P", hb + 30_600_000_000, 0.8, raw_phase="Pg")  # equal conf, later time
    add_ref(d, st, "S", hb + 40 * S, raw_phase="S")
    add_pick(d, "EQT", st, "S", hb + 40 * S + 1, 1.0, raw_phase="S")  # conf exactly 1.0
    add_pick(d, "EQT", st, "S", hb + 40 * S - 1, 0.02, raw_phase="S")  # conf exactly the floor
    add_pick(d, "GPD", st, "S", hb + 40 * S + 7, 0.0, raw_phase="S")  # conf 0: below the floor
    add_pick(d, "GPD", st, "P", hb + 40 * S, 0.7, raw_phase="P")  # a P pick on an S arrival: a swap

    # --- picks of phases that are not first arrivals: dropped and counted
    add_pick(d, "GPD", "CI.SRT", "P", hb + 50 * S, 0.9, raw_phase="pP")
    add_pick(d, "GPD", "CI.SRT", "P", hb + 51 * S, 0.8, raw_phase="pP")
    add_pick(d, "EQT", "CI.SRT", "P", hb + 52 * S, 0.7, raw_phase="PKP")
    add_pick(d, "EQT", "CI.SRT", "P", hb + 53 * S, 0.6, raw_phase="p")  # case-sensitive: not P

    # --- duplicate reference rows: Pg and P at the same instant (written differently below)
    dup_instants = []
    for d in DATASETS:
        rows = [r for r in ref_rows if r[0] == d and r[2] in P_NAMES and r[2] != "P"]
        for r in rows[:3]:
            ref_rows.append((r[0], r[1], "P", r[3]))
            dup_instants.append(r[3])
    # an exact duplicate row as well
    r0 = next(r for r in ref_rows if r[0] == "amatrice" and r[2] in S_NAMES)
    ref_rows.append(r0)

    # --- stations on one side only
    # reference only (no pick at all)
    for k in range(3):
        add_ref("Ridgecrest", "CI.REFONLY", "P", T0 + (100 + 50 * k) * S)
    # reference, and picks only below the floor
    for k in range(2):
        add_ref("Ridgecrest", "CI.LOWCONF", "S", T0 + (300 + 40 * k) * S)
        add_pick("Ridgecrest", "EQT", "CI.LOWCONF", "S", T0 + (300 + 40 * k) * S, 0.01)
    # picks only, a day later than everything else in 'amatrice' (must not widen its span)
    late = T0 + ds_offset["amatrice"] + 86400 * S
    for k, m in enumerate(MODELS):
        add_pick("amatrice", m, "IV.PICKONLY", "P", late + k * S, 0.8)
        add_pick("amatrice", m, "IV.PICKONLY", "S", late + k * S + 5 * S, 0.6)
    # 'GPD' in 'Ñuble': only below the floor at a scored station, and at a station without reference
    nb = T0 + ds_offset["Ñuble"]
    add_pick("Ñuble", "GPD", "C1.AC04", "P", nb + 500 * S, 0.015)
    for k in range(3):
        add_pick("Ñuble", "GPD", "C1.PCK", "P", nb + (200 + k) * S, 0.9)

    # --- arrivals at the edges of the scored span (residual_tol = 2 s, the default)
    picks_df = pd.DataFrame(pick_rows, columns=["dataset", "model", "station", "phase_raw", "time", "conf"])
    scored_station = {"Ridgecrest": "CI.SRT", "amatrice": "IV.MMO", "Ñuble": "C1.AC05"}
    ref_stations = {}
    for r in ref_rows:
        ref_stations.setdefault(r[0], set()).add(r[1])
    span_notes = {}
    for d in DATASETS:
        p = picks_df[(picks_df.dataset == d) & (picks_df.conf >= 0.02) & picks_df.station.isin(ref_stations[d])
                     & picks_df.phase_raw.map(_phase_canon).notna()]
        first, last = int(p.time.min()), int(p.time.max())
        st = scored_station[d]
        ph = "P"
        edges = {
            "kept_low": first - 2 * S,
            "out_low": first - 2 * S - 1,
            "kept_high": last + 2 * S,
            "out_high": last + 2 * S + 1,
            "out_far": last + 86400 * S if d != "amatrice" else late + 2 * S,  # next to IV.PICKONLY picks
            "out_early": first - 86400 * S,  # at a pick below the floor (which must not widen the span)
        }
        for t in edges.values():
            add_ref(d, st, ph, t, raw_phase="P")
        add_pick(d, "EQT" if d != "Ñuble" else "GPD", st, "P", edges["out_early"], 0.001, raw_phase="P")
        span_notes[d] = (first, last, edges)

    # ------------------------------------------------------------ canonical truth
    ref = pd.DataFrame(ref_rows, columns=["dataset", "station", "phase_raw", "time"])
    picks = pd.DataFrame(pick_rows, columns=["dataset", "model", "station", "phase_raw", "time", "conf"])
    ref = ref.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    picks = picks.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)

    return _render(
        ref, picks, rng,
        notes={"span": span_notes, "dup_instants": dup_instants,
               "lite_absent": sorted(lite_absent), "scored_station": scored_station},
    )


def _phase_canon(name: str) -> str | None:
    if name in P_NAMES:
        return "P"
    if name in S_NAMES:
        return "S"
    return None


def _render(ref: pd.DataFrame, picks: pd.DataFrame, rng, notes: dict) -> Catalogue:
    """Write the canonical rows as a user's raw tables, with aliases and formatting traps."""
    n_ref, n_picks = len(ref), len(picks)

    # Reference: sequence, event, sta, pha, arrival_time, onset
    ref_styles = rng.choice(["Z", "naive", "naive_space", "+00:00"], n_ref)
    ref_time = [iso(t, s) for t, s in zip(ref["time"], ref_styles)]
    # Duplicate instants: make sure the two rows of a pair are written differently.
    seen: dict = {}
    for i, (d, st, t) in enumerate(zip(ref["dataset"], ref["station"], ref["time"])):
        key = (d, st, int(t))
        if key in seen:
            ref_time[i] = iso(t, "Z" if ref_styles[seen[key]] != "Z" else "naive")
        else:
            seen[key] = i
    sta = [f" {s}" if k % 7 == 0 else s for k, s in enumerate(ref["station"])]
    raw_ref = pd.DataFrame({
        "sequence": ref["dataset"],
        "event": [f"ev{k % 13:03d}" for k in range(n_ref)],  # NOT a dataset
        "sta": sta,
        "pha": ref["phase_raw"],
        "arrival_time": ref_time,
        "onset": ["?"] * n_ref,  # an alias of time that loses to arrival_time
    })

    # Picks: Sequence, run, weights, trace_id, phase_hint, peak_time, probability, score
    # Offsets of any kind in the picks; naive (= UTC) times only beside UTC ones (the reference):
    # a column that mixes naive times with non-UTC offsets is refused as ambiguous (issue 6).
    pick_styles = rng.choice(["Z", "+02:00", "-05:30", "+00:00"], n_picks)
    dots = rng.choice(["", ".", "..", " "], n_picks, p=[0.4, 0.35, 0.15, 0.1])
    raw_picks = pd.DataFrame({
        "Sequence": picks["dataset"],
        "run": ["run-1"] * n_picks,  # an alias of model that loses to weights
        "weights": picks["model"],
        "trace_id": [s + x for s, x in zip(picks["station"], dots)],
        "phase_hint": picks["phase_raw"],
        "peak_time": [iso(t, s) for t, s in zip(picks["time"], pick_styles)],
        "probability": [repr(float(c)) for c in picks["conf"]],
        "score": [repr(float(c) * 100) for c in picks["conf"]],  # loses to probability (and is not in [0, 1])
    })

    keep_r = ref["phase_raw"].map(_phase_canon)
    keep_p = picks["phase_raw"].map(_phase_canon)
    ref_canon = pd.DataFrame({
        "dataset": ref["dataset"], "station": ref["station"], "phase": keep_r, "time": ref["time"].astype(np.int64),
    })[keep_r.notna()].reset_index(drop=True)
    picks_canon = pd.DataFrame({
        "dataset": picks["dataset"], "model": picks["model"], "station": picks["station"], "phase": keep_p,
        "time": picks["time"].astype(np.int64), "conf": picks["conf"].astype(np.float64),
    })[keep_p.notna()].reset_index(drop=True)
    notes = dict(notes)
    notes.update(
        ref_time_col="arrival_time", pick_time_col="peak_time", pick_conf_col="probability",
        ref_time_ns=ref["time"].to_numpy(np.int64), pick_time_ns=picks["time"].to_numpy(np.int64),
        pick_conf=picks["conf"].to_numpy(np.float64),
    )
    return Catalogue(
        reference=raw_ref,
        picks=raw_picks,
        ref_canonical=ref_canon,
        picks_canonical=picks_canon,
        ref_dropped_phases=ref.loc[keep_r.isna(), "phase_raw"].value_counts().to_dict(),
        picks_dropped_phases=picks.loc[keep_p.isna(), "phase_raw"].value_counts().to_dict(),
        notes=notes,
    )


# ------------------------------------------------------------------ plain catalogue

def plain_catalogue(seed: int = 5, *, n_datasets: int = 2, n_stations: int = 6, n_events: int = 12,
                    models=("alpha", "beta", "gamma")) -> Catalogue:
    """A clean catalogue with canonical column names and ISO ``Z`` times (for CLI and determinism).

    Many stations and full-precision confidences, so that any change in the order
    of a float reduction would show in the last bits.
    """
    rng = np.random.default_rng(seed)
    ref_rows, pick_rows = [], []
    for k in range(n_datasets):
        d = f"ds{k}"
        base = T0 + k * 86400 * S
        origins = base + np.sort(rng.integers(0, 3600 * S, n_events))
        for j in range(n_stations):
            st = f"NW.S{j:02d}"
            tp = rng.uniform(2.0, 15.0)
            for ph, arr in (("P", origins + int(tp * S)), ("S", origins + int(1.73 * tp * S))):
                arr = arr + rng.integers(-200_000_000, 200_000_000, n_events)
                for t in arr[rng.random(n_events) < 0.9]:
                    ref_rows.append((d, st, ph, int(t)))
                for m in models:
                    found = rng.random(n_events) < rng.uniform(0.6, 0.95)
                    res = rng.normal(rng.normal(0, 0.05), 0.08, n_events)
                    conf = rng.random(n_events)
                    for t, r, c in zip(arr[found], res[found], conf[found]):
                        pick_rows.append((d, m, st, ph, int(t + r * S), float(c)))
                    for t in arr[found][rng.random(int(found.sum())) < 0.1]:
                        pick_rows.append((d, m, st, ph, int(t + rng.uniform(0.1, 1.5) * S), float(rng.random())))
            for m in models:
                for _ in range(4):
                    pick_rows.append((d, m, st, "P" if rng.random() < 0.5 else "S",
                                      int(base + rng.uniform(0, 3600) * S), float(rng.random())))
    ref = pd.DataFrame(ref_rows, columns=["dataset", "station", "phase", "time"])
    picks = pd.DataFrame(pick_rows, columns=["dataset", "model", "station", "phase", "time", "conf"])
    ref = ref.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    picks = picks.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)
    raw_ref = ref.assign(time=[iso(t, "Z") for t in ref["time"]])
    raw_picks = picks.assign(time=[iso(t, "Z") for t in picks["time"]],
                             conf=[repr(float(c)) for c in picks["conf"]])
    return Catalogue(
        reference=raw_ref, picks=raw_picks,
        ref_canonical=ref.astype({"time": np.int64}), picks_canonical=picks.astype({"time": np.int64}),
        notes={"ref_time_col": "time", "pick_time_col": "time", "pick_conf_col": "conf",
               "ref_time_ns": ref["time"].to_numpy(np.int64), "pick_time_ns": picks["time"].to_numpy(np.int64),
               "pick_conf": picks["conf"].to_numpy(np.float64)},
    )


def with_magnitudes(cat: Catalogue, *, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(reference, picks) of ``cat`` with a ``magnitude`` column for SPEC §14's groups: uniform in [-0.5, 4.5]
    to 0.1, and about one arrival in ten without one (the group "missing")."""
    ref = cat.reference.copy()
    rng = np.random.default_rng(seed)
    mag = np.round(rng.uniform(-0.5, 4.5, len(ref)), 1).astype(object)
    mag[rng.random(len(ref)) < 0.1] = None
    ref["magnitude"] = mag
    return ref, cat.picks
