"""The rows behind tests/data/formats: one small bulletin and two pickers at two stations.

``make_format_data.py`` writes them in each tool's layout; the tests score each file
and compare with scoring :func:`reference_frame` / :func:`picks_frame` (the
canonical SPEC §1 tables of the same rows).

The bulletin (three events at 0, 60 and 120 s after 2020-01-01T00:00:00Z) holds
what a real one holds besides the reference arrivals:

- event 0: a non-preferred automatic origin whose arrival points to an
  automatic pick (10.8 s), and a pick no arrival points to (40.0 s);
- event 1: an arrival whose pick is missing, and an automatic S pick an arrival
  of the preferred origin points to (kept unless manual_only);
- event 2: no preferred origin (its only origin counts); a Pn arrival.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd

T0 = datetime(2020, 1, 1)

# (event, station, phase name in the bulletin, seconds after T0, evaluation mode)
ARRIVALS = [
    (0, "CI.CLC", "Pg", 10.5, "manual"), (0, "CI.CLC", "Sg", 15.25, "manual"),
    (0, "CI.WBS", "P", 11.0, "manual"), (0, "CI.WBS", "S", 17.0, "manual"),
    (1, "CI.CLC", "P", 70.5, "manual"), (1, "CI.CLC", "S", 75.25, "automatic"),
    (1, "CI.WBS", "P", 71.0, "manual"), (1, "CI.WBS", "S", 77.0, "manual"),
    (2, "CI.CLC", "Pn", 130.5, "manual"), (2, "CI.WBS", "Sg", 137.0, "manual"),
    (2, "CI.CLC", "S", 135.25, "manual"),
]

_PN_CONF = [0.91, 0.87, 0.62, 0.95, 0.48, 0.77, 0.83, 0.59, 0.71, 0.66, 0.93]
_EQT_CONF = [0.88, 0.79, 0.55, 0.97, 0.51, 0.69, 0.9, 0.64, 0.73, None, 0.58]


def _phase(name: str | None) -> str:
    return "P" if name is None or name.startswith("P") else "S"


def _picks() -> list[dict]:
    out = []
    for i, (ev, sta, ph, t, _) in enumerate(ARRIVALS):
        out.append({"model": "PhaseNet", "event": ev, "station": sta, "phase": _phase(ph),
                    "t": round(t + 0.06, 2), "conf": _PN_CONF[i]})
        if _EQT_CONF[i] is not None:
            out.append({"model": "EQTransformer", "event": ev, "station": sta, "phase": _phase(ph),
                        "t": round(t - 0.04, 2), "conf": _EQT_CONF[i]})
    out.append({"model": "PhaseNet", "event": 0, "station": "CI.CLC", "phase": "P", "t": 40.0, "conf": 0.35})
    out.append({"model": "EQTransformer", "event": 3, "station": "CI.WBS", "phase": "S", "t": 200.0, "conf": 0.45})
    return out


PICKS = _picks()


def iso(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat(timespec="microseconds") + "Z"


def reference_frame(*, manual_only: bool = False) -> pd.DataFrame:
    """The reference arrivals the bulletin holds (SPEC §1 columns)."""
    rows = [(sta, ph or "Pn", iso(t)) for _, sta, ph, t, mode in ARRIVALS
            if not manual_only or mode == "manual"]
    return pd.DataFrame(rows, columns=["station", "phase", "time"])


def picks_frame(models: tuple[str, ...] = ("PhaseNet", "EQTransformer"), *, with_model: bool = True) -> pd.DataFrame:
    rows = [{"model": p["model"], "station": p["station"], "phase": p["phase"], "time": iso(p["t"]),
             "conf": p["conf"]} for p in PICKS if p["model"] in models]
    frame = pd.DataFrame(rows)
    return frame if with_model else frame.drop(columns="model")


def bulletin_events() -> list[dict]:
    """Events, origins, arrivals and picks of bulletin.xml (resource ids fixed, so the file is stable)."""
    events = []
    for ev in range(3):
        picks, arrivals = [], []
        for i, (e, sta, ph, t, mode) in enumerate(ARRIVALS):
            if e != ev:
                continue
            pid = f"smi:pickscale/test/pick/{i}"
            hint = _phase(ph) if ph is not None else "Pn"
            cha = "HHZ" if hint.startswith("P") else "HHN"
            picks.append({"id": pid, "seed": f"{sta}..{cha}", "t": t, "hint": hint, "mode": mode})
            arrivals.append({"pick": pid, "phase": ph})
        origins = []
        preferred = f"smi:pickscale/test/origin/{ev}"
        if ev == 0:
            picks.append({"id": "smi:pickscale/test/pick/auto0", "seed": "CI.CLC..HHZ", "t": 10.8, "hint": "P",
                          "mode": "automatic"})
            picks.append({"id": "smi:pickscale/test/pick/lonely", "seed": "CI.CLC..HHZ", "t": 40.0, "hint": "P",
                          "mode": "automatic"})
            origins.append({"id": "smi:pickscale/test/origin/0-auto", "t": 0.3,
                            "arrivals": [{"pick": "smi:pickscale/test/pick/auto0", "phase": "P"}]})
        if ev == 1:
            arrivals.append({"pick": "smi:pickscale/test/pick/missing", "phase": "S"})
        origins.append({"id": preferred, "t": 60.0 * ev, "arrivals": arrivals})
        events.append({"id": f"smi:pickscale/test/event/{ev}", "picks": picks, "origins": origins,
                       "preferred": None if ev == 2 else preferred})
    return events
