"""The job on Dask: inputs as read tasks, the work units, the exchange, scoring, and where it all runs.

Modules, in the order of the data flow: :mod:`~pickscale.engine.inputs` (inputs as lazy read tasks),
:mod:`~pickscale.engine.parts` (what read tasks make on the workers), :mod:`~pickscale.engine.units` (work units
and partitions; :mod:`~pickscale.engine.unit_size`, whether a worker can take them),
:mod:`~pickscale.engine.exchange` (picks moved to their partition), :mod:`~pickscale.engine.scoring` (a partition
scored), :mod:`~pickscale.engine.graph` (computing, retries, reduction trees), :mod:`~pickscale.engine.run`
(:func:`score`, the stages in order), :mod:`~pickscale.engine.collect` (the combined result brought to the client a
batch of fields at a time), :mod:`~pickscale.engine.provenance` (the store's attributes),
:mod:`~pickscale.engine.extent` and :mod:`~pickscale.engine.extension` (extending a store),
:mod:`~pickscale.engine.cluster` and :mod:`~pickscale.engine.workers` (where it runs).

The names below are loaded on first use (PEP 562): a worker that unpickles a task of
:mod:`pickscale.engine.parts` or :mod:`pickscale.engine.scoring` then never imports xarray, zarr, matplotlib or
dask.dataframe.
"""

from __future__ import annotations

from .._lazy import lazy_names

_LAZY = {
    "score": "run",
    "extend": "extension",
    "load": "inputs",
    "Source": "inputs",
    "local_cluster": "cluster",
    "cluster_client": "cluster",
    "small_local_input": "cluster",
    "SMALL_INPUT_BYTES": "cluster",
    "check_workers": "workers",
    "plan_units": "units",
    "UnitPlan": "units",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
