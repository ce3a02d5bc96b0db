"""Catalogues for the tests of ``pickscale extend``: models added, and a catalogue cut at a quiet gap.

``stretches()`` is hand-made: dataset ``d``, stations ``A`` and ``B``, models ``m1`` and ``m2``, the same
pattern on 2024-03-01 and on 2024-03-03 (a quiet gap of two days between).  Per stretch and station: P at
+10 s and +100 s, S at +20 s and +110 s.  ``m1`` picks every arrival 0.1 s late (conf 0.9), and a false P at
+50 s at A (conf 0.4); ``m2`` picks every P 0.2 s late (conf 0.8), the S at +20 s 0.3 s early (conf 0.35),
and a false P at +50 s at A (conf 0.6).  Every model also picks P at +1 s and +200 s at A (conf 0.1, far from
any arrival), so that every model's picks span the whole stretch: scored alone, each model keeps the
arrivals the whole run keeps.

``with_bookends`` gives a generated catalogue (``plain_catalogue``) the same property.

Nothing here imports pickscale.
"""

from __future__ import annotations

import pandas as pd

DAY = pd.Timedelta(1, "D")
START = pd.Timestamp("2024-03-01T00:00:00Z")


def stretches(n: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The hand-made reference and picks (``n`` stretches, two days apart)."""
    ref, picks = [], []
    s = pd.Timedelta(1, "s")
    for k in range(n):
        base = START + 2 * k * DAY
        for station in ("A", "B"):
            for phase, at in (("P", 10), ("S", 20), ("P", 100), ("S", 110)):
                t = base + at * s
                ref.append(("d", station, phase, t))
                picks.append(("d", "m1", station, phase, t + 0.1 * s, 0.9))
                if phase == "P":
                    picks.append(("d", "m2", station, phase, t + 0.2 * s, 0.8))
                elif at == 20:
                    picks.append(("d", "m2", station, phase, t - 0.3 * s, 0.35))
        picks.append(("d", "m1", "A", "P", base + 50 * s, 0.4))
        picks.append(("d", "m2", "A", "P", base + 50 * s, 0.6))
        for model in ("m1", "m2"):
            for at in (1, 200):
                picks.append(("d", model, "A", "P", base + at * s, 0.1))
    return (pd.DataFrame(ref, columns=["dataset", "station", "phase", "time"]),
            pd.DataFrame(picks, columns=["dataset", "model", "station", "phase", "time", "conf"]))


def with_bookends(picks: pd.DataFrame) -> pd.DataFrame:
    """Every (dataset, model) gets a low-confidence P pick one minute before the first hour and one minute
    after the last hour of the dataset's picks, at its first station: all models span the same stretch."""
    rows = []
    spans = picks.groupby("dataset")["time"].agg(["min", "max"])
    for (d, m), g in picks.groupby(["dataset", "model"]):
        station = sorted(g["station"].unique())[0]
        lo, hi = spans.loc[d, "min"].floor("h"), spans.loc[d, "max"].ceil("h")
        for t in (lo - pd.Timedelta(60, "s"), hi + pd.Timedelta(60, "s")):
            rows.append((d, m, station, "P", t, 0.5))
    return pd.concat([picks, pd.DataFrame(rows, columns=list(picks.columns))], ignore_index=True)


def generated(seed: int = 5, *, shift_days: int = 7) -> tuple[pd.DataFrame, pd.DataFrame, pd.Timestamp]:
    """Two generated catalogues (``plain_catalogue``), the second ``shift_days`` later, as one; and a cut
    time in the quiet gap between them."""
    from .catalogues import plain_catalogue

    parts_ref, parts_picks = [], []
    for k, s in enumerate((seed, seed + 1)):
        cat = plain_catalogue(s)
        shift = pd.Timedelta(shift_days * k, "D")
        parts_ref.append(cat.ref_canonical.assign(time=pd.to_datetime(cat.ref_canonical["time"], utc=True) + shift))
        parts_picks.append(with_bookends(cat.picks_canonical.assign(
            time=pd.to_datetime(cat.picks_canonical["time"], utc=True) + shift)))
    cut = parts_picks[0]["time"].max() + DAY
    return pd.concat(parts_ref, ignore_index=True), pd.concat(parts_picks, ignore_index=True), cut


#: The residual pairs' variables, in canonical-order rank (SPEC §9).
PAIR_VARIABLES = ("pair_dataset", "pair_model", "pair_phase", "pair_station", "residual", "pair_conf", "pair_group")


def canonical_pairs(ds) -> dict:
    """``ds``'s residual pairs (NumPy) in the canonical order of one run: an extended store keeps its segments
    one after the other (SPEC §11), which holds the same pairs."""
    import numpy as np

    names = [v for v in PAIR_VARIABLES if v in ds]
    values = {v: np.asarray(ds[v].values) for v in names}
    order = np.lexsort(tuple(values[v] for v in reversed(names))) if names else np.zeros(0, dtype=np.int64)
    return {v: values[v][order] for v in names}


def ranked_by_stream(ds) -> dict:
    """``ds``'s ranked runs (SPEC §9) as one run per stream holds them: each (dataset, model, phase)'s ranked
    residuals and levels over all its runs, ranked again (an extended store has a run per segment)."""
    import numpy as np

    out: dict = {}
    e, level = np.asarray(ds["ranked_residual"].values), np.asarray(ds["ranked_level"].values)
    row = 0
    for d, m, p, n in ds.attrs["pair_runs"]:
        out.setdefault((d, m, p), []).append((e[row:row + n], level[row:row + n]))
        row += n
    merged = {}
    for key, runs in out.items():
        ee = np.concatenate([r[0] for r in runs])
        ll = np.concatenate([r[1] for r in runs])
        order = np.lexsort((ll, ee))
        merged[key] = (ee[order].tolist(), ll[order].tolist())
    return merged


def differing(a, b) -> list[str]:
    """The variables of ``a`` and ``b`` that differ: the pairs compared as one run holds them, and their ranked
    runs too (their block tables are checked against them by every opening, SPEC §15)."""
    import numpy as np

    from pickscale.results.variables import RANKED

    pa, pb = canonical_pairs(a), canonical_pairs(b)
    # (kept since stores keep their pairs ranked, SPEC §9: an extension of a store written before has none)
    later = {*RANKED, "residual_sums"}
    differ = [v for v in a.data_vars if v not in pa and v not in RANKED
              and not (v in later and v not in b) and (v not in b or not a[v].equals(b[v]))]
    differ += [v for v in pa if v not in pb or not np.array_equal(pa[v], pb[v])]
    # (an extension of a store written before stores kept them has none, SPEC §11)
    if "ranked_residual" in a and "ranked_residual" in b and ranked_by_stream(a) != ranked_by_stream(b):
        differ.append("ranked_residual")
    return differ
