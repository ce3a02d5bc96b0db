"""Shared pytest set-up: hypothesis profiles, set once here.

Shared helpers (the brute-force SPEC implementation, catalogue builders, result checks) live in the
``tests.helpers`` package and are imported as such: no ``sys.path`` edits.

Profiles: ``default`` (no deadline: the brute force is slow by design, and a loaded CI machine must not
turn time into failures; no example database, so every run is reproducible from its seed alone) and
``thorough`` (10× the examples: the profile's ``max_examples``, and the counts tests give as
``examples(N)``, tests/helpers/examples.py), chosen with ``HYPOTHESIS_PROFILE``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# A real S3-compatible server on 127.0.0.1 (moto), its environment, a fresh bucket: see tests/helpers/s3.py.
from tests.helpers.s3 import s3_bucket, s3_env, s3_server  # noqa: F401

_COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("default", **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
