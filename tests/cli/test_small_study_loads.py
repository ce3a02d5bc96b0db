"""What a small study's command loads (issue 27): only what it uses.

Importing a library is most of a small study's time (``benchmarks/README.md``, "A small study end to end").
``pickscale score --quiet --no-figures`` on CSV files runs in the command's process on Dask's local scheduler:
it needs no cluster (``distributed``), no figures (``matplotlib``), no Dask collections (``dask.array``,
``dask.dataframe``: xarray is given a lazy entry, ``engine/lazy_dask.py``), no Parquet reader, and no progress
bar (nothing is printed).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEAD50 = ROOT / "tests/data/stead50_phasenet"

NOT_LOADED = ["distributed", "matplotlib", "dask.array", "dask.dataframe", "pyarrow.parquet", "tqdm"]

_CHILD = """
import json, sys
from pickscale.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def test_a_small_study_loads_only_what_it_uses(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _CHILD, "score", "--reference", str(STEAD50 / "reference.csv"),
                           "--picks", str(STEAD50 / "picks.csv"), "--out", str(out), "--quiet", "--no-figures"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["status"] == 0 and (out / "results.zarr").is_dir() and (out / "detection.csv").is_file()
    assert [name for name in NOT_LOADED if name in got["modules"]] == []
    assert {"pandas", "xarray", "zarr", "dask"} <= set(got["modules"])  # (the check sees what was loaded)
