"""One merged stream timed by rank against timing every pair, by the stored stream's size (issue 22, item 3).

An extension that adds pairs to a stored stream needs the merged stream's exact medians and quantiles.  Before
the ranked runs (SPEC §9) it read and sorted every stored pair with the new ones (``engine.pairs.
stream_statistics``); now it takes the stored sums and reads only the blocks of the stored runs its searches
reach (``engine.by_rank``, ``metrics.ranked_runs.RankedStream``).  Here: a new part of ``--new`` pairs onto a
stored stream of 0.27–16 million pairs (heavy-tailed residuals, confidences over the default grid), both ways,
in one process, the stored rows read through a counter of the 2^14-row chunks a store would decode.  The two
give the same numbers (checked); the time by rank should not grow with the stored pairs.

Run: ``python benchmarks/by_rank.py [--new 100000] [--write]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import write_block  # noqa: E402

from pickscale.engine import ranged  # noqa: E402
from pickscale.engine.by_rank import RankedRows, ranked_stream  # noqa: E402
from pickscale.engine.pairs import stream_statistics  # noqa: E402
from pickscale.metrics.level_sums import encode, level_sums  # noqa: E402
from pickscale.metrics.ranked_runs import block_table  # noqa: E402
from pickscale.metrics.timing import WITHIN, levels_of  # noqa: E402
from pickscale.options import Options  # noqa: E402
from pickscale.store.segments import RANKED_CHUNK_ROWS  # noqa: E402

MARK = "<!-- by_rank -->"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new", type=int, default=100_000, help="pairs of the new part")
    ap.add_argument("--stored", type=int, nargs="*", default=[270_000, 1_000_000, 4_000_000, 16_000_000])
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    a = ap.parse_args()
    options = Options()
    rng = np.random.default_rng(1)
    bound = options.residual_tol_ns

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        e = np.clip(np.round(rng.standard_t(4, n) * 0.05e9).astype(np.int64), -bound, bound)
        return e, rng.beta(5, 2, n)

    new_e, new_c = draw(a.new)
    shared = int(np.searchsorted(options.grid, options.threshold_of(0), side="left"))
    lines = ["| stored pairs | by rank (s) | blocks read | chunks read (of) | every pair (s) | same numbers |",
             "|---|---|---|---|---|---|"]
    for n in a.stored:
        e, conf = draw(n)
        level = levels_of(conf, options.grid)
        order = np.lexsort((level, e))
        ranked_e, ranked_level = e[order], level[order]
        first, counts = block_table(ranked_e, ranked_level, options.grid.size)
        kept = encode(level_sums(e, level, options.grid.size, tol=options.tol, within=WITHIN))
        chunks: set[int] = set()

        def read(lo: int, hi: int, re: np.ndarray = ranked_e, rl: np.ndarray = ranked_level,
                 seen: set[int] = chunks) -> tuple[np.ndarray, np.ndarray]:
            seen.add(lo // RANKED_CHUNK_ROWS)
            return re[lo:hi], rl[lo:hi]

        t = time.perf_counter()
        stored = ranked_stream([(first, counts)], [0], RankedRows(read, RANKED_CHUNK_ROWS), kept, shared=shared,
                               bound=bound)
        new = ranged.part_of({"residual_ns": new_e, "conf": new_c}, options=options, phase=0)
        by_rank = ranged.statistics({0: [stored, new]}, None, options=options)[0]
        t_rank = time.perf_counter() - t
        t = time.perf_counter()
        whole = stream_statistics({"residual_ns": e, "conf": conf}, {"residual_ns": new_e, "conf": new_c},
                                  options=options, phase=0)
        t_whole = time.perf_counter() - t
        same = all(np.asarray(by_rank["sweep"][k]).tobytes() == np.asarray(whole["sweep"][k]).tobytes()
                   for k in whole["sweep"])
        row = (f"| {n:,} | {t_rank:.2f} | {stored.blocks_read} of {len(first):,} | {len(chunks)} of "
               f"{-(-n // RANKED_CHUNK_ROWS):,} | {t_whole:.2f} | {'yes' if same else 'NO'} |")
        print(row, flush=True)
        lines.append(row)
    body = (f"A new part of {a.new:,} pairs onto one stored stream, its statistics at the default grid's "
            f"{options.grid.size} thresholds (one process):\n\n" + "\n".join(lines))
    if a.write:
        write_block(MARK, body, heading="One stream timed by rank, by the stored stream's size (issue 22)")


if __name__ == "__main__":
    main()
