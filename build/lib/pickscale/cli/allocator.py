"""The command's own memory allocator: glibc's per-thread arenas limited to :data:`ARENAS`.

The command's process is the Dask client (and, with ``--workers``, its scheduler): a dozen threads — Dask's
and Zarr's event loops, thread pools — each of which makes glibc open an arena of its own, and memory freed in
one arena serves no other.  Measured (issue 22, ``benchmarks/client_memory.py``): at 5.2·10^6 reference
arrivals the client's peak stood ~50 MB above its live data's growth, in arenas; with two arenas the run's
peak is within a few percent of a small run's.  Set with ``mallopt`` when the command starts (``M_ARENA_MAX``,
what the ``MALLOC_ARENA_MAX`` variable sets), before its threads are.  Not glibc: nothing.

Examples
--------
>>> limit_arenas() in (True, False)
True
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["ARENAS", "limit_arenas"]

#: glibc arenas the command's process uses at most.
ARENAS = 2
_M_ARENA_MAX = -8  # (glibc's malloc.h)


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Limit glibc's arenas for this process from now on; whether the C library took it (glibc only)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, int(arenas)))
    except (OSError, AttributeError):
        return False
