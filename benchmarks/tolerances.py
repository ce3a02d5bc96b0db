"""Cost of ``tols`` (SPEC §13, issue 27): CPU time of the station kernel with and without extra tolerances.

Run ``python benchmarks/tolerances.py`` (``--stations N``, ``--picks N`` per station; ``--write`` records
the table in ``benchmarks/README.md``).  The stations are :func:`kernel.catalogue` (benchmarks/kernel.py:
a picker run at a low floor, most picks noise with low confidences), one seed each, scored one by one with
:func:`pickscale.kernel.score_station`, the call the engine makes per partition.  Three runs, side by side
in one process, CPU time (``time.process_time``, best of 3, every station in each):

- ``none``: no ``tols``;
- ``before``: ``tols = [0.1, 0.25, 0.5, 1.0]`` through the former path (one full ``match_streams`` per
  tolerance: both matchings, the duplicate test and the other-phase reach, of every pick above the floor);
- ``after``: the same ``tols`` through today's ``_matched_at_tols`` (detection matching only, of the picks
  at or above the shared threshold, one candidate search for every tolerance).

Every station's ``matched_at_tol`` is checked equal (bytes) between ``before`` and ``after``.
Target (issue 27): ``after`` ≤ 1.25 × ``none``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from contextlib import contextmanager

import numpy as np
from kernel import catalogue  # benchmarks/ is the script's folder, so on sys.path
from record import write_block

from pickscale.kernel import score_station
from pickscale.kernel import station as station_module
from pickscale.kernel.streams import match_streams
from pickscale.options import Options

TOLS = [0.1, 0.25, 0.5, 1.0]
N_MODELS = 3


def matched_at_tols_before(r_stream, r_time, p_stream, p_time, p_conf, lvl, *, n_streams, options):
    """``_matched_at_tols`` as it was before issue 27: one full :func:`match_streams` per tolerance."""
    tols = options.tols_ns
    out = np.zeros((n_streams, len(tols)), dtype=np.int64)
    if not tols or p_time.size == 0 or r_time.size == 0:
        return out
    surviving = station_module._at_shared(lvl, p_stream, options)
    for i, tol in enumerate(tols):
        det = match_streams(r_stream, r_time, p_stream, p_time, p_conf, n_streams=n_streams,
                           tol=tol, rtol=options.residual_tol_ns)[0]
        out[:, i] = np.bincount(p_stream[surviving & (det >= 0)], minlength=n_streams)
    return out


@contextmanager
def former_path():
    """Score with the former ``_matched_at_tols`` for the duration of the block."""
    today = station_module._matched_at_tols
    station_module._matched_at_tols = matched_at_tols_before
    try:
        yield
    finally:
        station_module._matched_at_tols = today


def score_all(stations, options):
    return [score_station(*data, n_models=N_MODELS, options=options) for data in stations]


def cpu_best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def run(n_stations: int = 4, n_picks: int = 1_000_000, repeats: int = 3) -> dict:
    stations = [catalogue(n_picks=n_picks, n_arrivals=n_picks // 100, n_models=N_MODELS, seed=7 + k)
                for k in range(n_stations)]
    plain, with_tols = Options(), Options(tols=TOLS)
    # Warm-up, and the check: the same matched_at_tol, byte for byte, and nothing else changed.
    after = score_all(stations, with_tols)
    with former_path():
        before = score_all(stations, with_tols)
    for a, b in zip(after, before):
        assert a.matched_at_tol.tobytes() == b.matched_at_tol.tobytes()
    none = score_all(stations, plain)
    for a, n in zip(after, none):
        assert a.matched.tobytes() == n.matched.tobytes()
    times = {}
    # Interleaved, so that a change of load on the machine touches every run alike.
    for _ in range(repeats):
        times["none"] = min(times.get("none", np.inf), cpu_best(lambda: score_all(stations, plain), 1))
        with former_path():
            times["before"] = min(times.get("before", np.inf), cpu_best(lambda: score_all(stations, with_tols), 1))
        times["after"] = min(times.get("after", np.inf), cpu_best(lambda: score_all(stations, with_tols), 1))
    return {"stations": n_stations, "picks": sum(d[4].size for d in stations),
            "arrivals": sum(d[1].size for d in stations), **times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stations", type=int, default=4)
    parser.add_argument("--picks", type=int, default=1_000_000, help="picks per station")
    parser.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    args = parser.parse_args()
    out = run(args.stations, args.picks)
    none = out["none"]
    rows = [
        "| run | CPU s (best of 3) | × no tols |",
        "|---|---:|---:|",
        f"| no `tols` | {none:.2f} | 1.00 |",
        f"| `tols={TOLS}`, before (one `match_streams` per tol) | {out['before']:.2f} | {out['before'] / none:.2f} |",
        f"| `tols={TOLS}`, after (`match_detections`) | {out['after']:.2f} | {out['after'] / none:.2f} |",
    ]
    head = (f"{out['stations']} stations, {out['picks']:,} picks, {out['arrivals']:,} arrivals, {N_MODELS} models, "
            f"default grid ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"numpy {np.__version__}); `matched_at_tol` identical before and after:")
    body = head + "\n\n" + "\n".join(rows)
    print(body)
    if args.write:
        write_block("<!-- tolerances -->", body, heading="Tolerances (issue 27)")


if __name__ == "__main__":
    main()
