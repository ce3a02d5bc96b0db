"""Shared pytest set-up for the numerical-core tests.

``tests/`` is put on ``sys.path`` so that the test modules can ``import brute``
whatever the import mode pytest runs in.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
