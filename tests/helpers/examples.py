"""How many examples a property test runs: the count written at the test, times the hypothesis profile's scale.

A count given in ``@settings(max_examples=...)`` wins over the profile's own ``max_examples``, so the
``thorough`` profile of ``tests/conftest.py`` would not reach those tests: they write
``max_examples=examples(N)`` instead, N being what an ordinary run (CI's included) explores, and the
profile scales it (``HYPOTHESIS_PROFILE=thorough``: 10×).
"""

from __future__ import annotations

import os

#: The scale of each profile of tests/conftest.py (a profile not named here: 1).
SCALES = {"default": 1, "thorough": 10}


def examples(n: int) -> int:
    """``n`` examples scaled by the profile chosen with ``HYPOTHESIS_PROFILE``."""
    return max(1, round(n * SCALES.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), 1)))
