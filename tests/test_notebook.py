"""The notebook in notebooks/ runs clean, top to bottom, on a fresh kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_notebook_executes(name, tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    # Kept diffable: no outputs stored in git.
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "strip outputs before commit"
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # the recall plot and the figures
