"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import pytest

from tests.helpers.checks import no_default_client, start_cluster


@pytest.fixture(scope="module")
def client():
    """Two worker processes and a client that is not Dask's default one (module-wide: clusters are slow to
    start)."""
    cluster, client = start_cluster(n_workers=2)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
    assert no_default_client()
