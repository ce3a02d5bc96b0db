"""The notebook can be run from what pickscale declares (issue 15): a `notebook` extra and the command."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_notebook_extra_installs_jupyter_and_a_kernel():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {req.split(">")[0].split("=")[0].split("[")[0].strip() for req in extras["notebook"]}
    assert names & {"jupyterlab", "notebook"} and "ipykernel" in names


def test_notebooks_readme_says_how_to_run_it():
    text = (ROOT / "notebooks" / "README.md").read_text()
    assert "pip install -e '.[notebook]' && jupyter lab notebooks/explore_results.ipynb" in text
    assert "notebooks/README.md" in (ROOT / "README.md").read_text()
