"""Bytes a pick through Dask's p2p shuffle (issue 27: at most 16 bytes a pick in the exchange's frame).

A catalogue (``--picks`` picks, ``--stations`` stations, 3 models, float32 confidences as pickers write them)
is scored with ``exchange_method="shuffle"`` on a LocalCluster of two worker processes, and each worker
counts what p2p serialises: every shard it sends (``distributed.shuffle._shuffle.serialize_table``, wrapped
on the workers before the run) and its rows.  Bytes a row = the sum of the shards' bytes over their rows:
what travels between the workers (serialised to send) and what p2p's disk buffers hold (serialised again
when received, with the input partition's number added to each row), counted apart.  The exchange frame's own columns are reported beside it (their dtypes'
bytes a row, the index included: p2p writes the index as a column).

``--code COMMIT`` runs that commit's package (its workers too), to compare side by side with this tree.

Run: ``python benchmarks/exchange_bytes.py [--code COMMIT] [--write]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MARK = "<!-- exchange-bytes -->"

_MEASURE = r'''
import json, sys
import numpy as np
import pandas as pd
import pickscale
from distributed import Client, LocalCluster


def install():
    """On a worker: count the bytes and rows of every table p2p serialises (what it sends and buffers)."""
    import distributed.shuffle._shuffle as shuffle_module
    from distributed.shuffle import _arrow

    counted = {"sent": [0, 0, None], "buffered": [0, 0, None]}
    original = _arrow.serialize_table

    def counting(table):
        out = original(table)
        # p2p serialises a table twice: to send it (_shard_partition) and, received, to buffer it on disk.
        callers = {sys._getframe(depth).f_code.co_name for depth in range(1, 4)}
        side = counted["sent" if "_shard_partition" in callers else "buffered"]
        side[0] += len(out)
        side[1] += table.num_rows
        side[2] = [f"{f.name}:{f.type}" for f in table.schema]
        return out

    shuffle_module.serialize_table = counting
    shuffle_module._pickscale_counted = counted
    return True


def collect():
    import distributed.shuffle._shuffle as shuffle_module
    return shuffle_module._pickscale_counted


if __name__ == "__main__":
    cat = sys.argv[1]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(install)
        ds = pickscale.score(f"{cat}/reference", f"{cat}/picks", client=client, exchange_method="shuffle",
                             block_picks=int(sys.argv[2]), progress=False)
        got = list(client.run(collect).values())
    out = {"pickscale": pickscale.__file__, "matched": int(ds["matched"].sum())}
    for side in ("sent", "buffered"):
        out[side] = {"bytes": sum(g[side][0] for g in got), "rows": sum(g[side][1] for g in got),
                     "columns": next((g[side][2] for g in got if g[side][2]), None)}
    print(json.dumps(out))
'''


def _measure(cat: Path, block: int, code: Path | None, work: Path) -> dict:
    script = work / "measure.py"
    script.write_text(_MEASURE)
    env = dict(os.environ)
    if code is not None:  # (the workers, started by the script, inherit it)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(script), str(cat), str(block)], capture_output=True, text=True,
                         env=env, cwd=str(work), timeout=3600)
    if got.returncode != 0:
        raise SystemExit(got.stderr[-3000:])
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> None:
    import catalogue
    from client_memory import code_of
    from record import write_block

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--picks", type=int, default=2_000_000)
    ap.add_argument("--stations", type=int, default=300)
    ap.add_argument("--partitions", type=int, default=40, help="work partitions (block_picks = picks / this)")
    ap.add_argument("--code", default=None, help="also run this commit's package, side by side")
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/README.md")
    a = ap.parse_args()
    cat = HERE / "data" / f"exchange-{a.picks}-{a.stations}"
    manifest = catalogue.generate(cat, n_picks=a.picks, n_models=3, stations=a.stations, days=30)
    block = max(1, a.picks // a.partitions)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pickscale-exchange-") as tmp:
        work = Path(tmp)
        runs = [("this tree", None)] + ([(a.code, code_of(a.code, work / "code"))] if a.code else [])
        for label, code in runs:
            got = _measure(cat, block, code, work)
            got["label"] = label
            for side in ("sent", "buffered"):
                got[side]["per_row"] = got[side]["bytes"] / max(1, got[side]["rows"])
            print(json.dumps(got), flush=True)
            rows.append(got)
    if len(rows) == 2 and rows[0]["matched"] != rows[1]["matched"]:
        raise SystemExit("the two runs matched different numbers of arrivals")
    if a.write:
        lines = [f"{manifest['n_picks']:,} picks (float32 confidences), {a.stations} stations, 3 models, "
                 f"{a.partitions} work partitions, `exchange_method=\"shuffle\"` on 2 local worker processes; "
                 "bytes = every shard p2p serialised, as sent between the workers and as buffered on their disks "
                 "(rows: picks and arrivals):", "",
                 "| code | rows | sent: bytes a row | buffered: bytes a row | columns sent (buffered adds) |",
                 "|---|---|---|---|---|"]
        lines += [f"| {r['label']} | {r['sent']['rows']:,} | {r['sent']['per_row']:.1f} | "
                  f"{r['buffered']['per_row']:.1f} | {', '.join(r['sent']['columns'] or [])} "
                  f"({', '.join(sorted(set(r['buffered']['columns'] or []) - set(r['sent']['columns'] or [])))}) |"
                  for r in rows]
        write_block(MARK, "\n".join(lines), heading="Bytes a pick through the p2p shuffle (issue 27)")


if __name__ == "__main__":
    main()
