"""SPEC §11 with SPEC §13: a store scored with ``tols`` extends like one run over all inputs, and a given option
equal to the store's is not mistaken for a different one."""

from __future__ import annotations

import pandas as pd
import pytest

import pickscale
from pickscale.errors import OptionsError
from pickscale.report.tables import to_csv_bytes

TOLS = [0.1, 0.5, 1.0]


def _inputs():
    ref = pd.DataFrame({"dataset": ["d1", "d2", "d2"], "station": ["A", "B", "B"], "phase": ["P", "P", "S"],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T00:30:00Z", "2024-03-01T00:30:04Z"]})
    picks = pd.DataFrame({"dataset": ["d1", "d2", "d2"], "station": ["A", "B", "B"], "phase": ["P", "P", "S"],
                          "time": ["2024-03-01T00:10:00.05Z", "2024-03-01T00:30:00.3Z", "2024-03-01T00:30:04.8Z"],
                          "conf": [0.9, 0.8, 0.7]})
    return ref, picks


@pytest.mark.slow
def test_extend_a_store_with_tols(tmp_path):
    ref, picks = _inputs()
    whole = pickscale.score(ref, picks, tols=TOLS, progress=False)
    pickscale.save(pickscale.score(ref[ref.dataset == "d1"], picks[picks.dataset == "d1"], tols=TOLS,
                                   progress=False), tmp_path / "results.zarr")
    with pytest.raises(OptionsError, match="tols"):
        pickscale.extend(tmp_path / "results.zarr", ref[ref.dataset == "d2"], picks[picks.dataset == "d2"],
                         tols=[0.2], progress=False)
    # The store's own tol and tols given again are the store's options, not a difference.
    ext = pickscale.extend(tmp_path / "results.zarr", ref[ref.dataset == "d2"], picks[picks.dataset == "d2"],
                           tol=0.5, tols=TOLS, progress=False)
    a, b = pickscale.tables(whole), pickscale.tables(ext)
    assert list(a) == list(b) and "tolerance" in a
    assert all(to_csv_bytes(a[k]) == to_csv_bytes(b[k]) for k in a)
