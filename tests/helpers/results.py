"""Catalogues for the figure tests: many models and stations, and models that did not run everywhere.

Nothing here imports pickscale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def figure_catalogue(n_models: int = 12, n_stations: int = 300, seed: int = 11):
    """Two events (P and S) per station; model k finds an arrival with probability 0.5 + 0.04 k.

    Dataset ``big`` has every model at ``n_stations`` stations; dataset ``small``
    (5 stations) has only the first half of the models.
    """
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2024-01-01T00:00:00", "ns").astype(np.int64)
    models = [f"m{k:02d}" + ("_a_rather_long_name" if k % 4 == 0 else "") for k in range(n_models)]
    ref, picks = [], []
    for dataset, n_sta, ms in (("big", n_stations, models), ("small", 5, models[: n_models // 2])):
        for s in range(n_sta):
            station = f"XX.S{s:03d}" if dataset == "big" else f"YY.T{s:02d}"
            for e in range(2):
                for phase, offset in (("P", 5.0), ("S", 9.0)):
                    t = t0 + int((e * 60 + offset) * 1e9)
                    ref.append((dataset, station, phase, t))
                    for k, m in enumerate(ms):
                        if rng.random() < 0.5 + 0.04 * k:
                            dt = int(rng.normal(0.02 * k, 0.1) * 1e9)
                            picks.append((dataset, m, station, phase, t + dt, float(rng.uniform(0.1, 1.0))))
                # One false pick per event, from a random model.
                m = ms[rng.integers(len(ms))]
                picks.append((dataset, m, station, "P", t0 + int((e * 60 + 30) * 1e9), float(rng.uniform(0.05, 0.6))))
    ref = pd.DataFrame(ref, columns=["dataset", "station", "phase", "time"])
    picks = pd.DataFrame(picks, columns=["dataset", "model", "station", "phase", "time", "conf"])
    ref["time"] = pd.to_datetime(ref["time"], utc=True)
    picks["time"] = pd.to_datetime(picks["time"], utc=True)
    return ref, picks
