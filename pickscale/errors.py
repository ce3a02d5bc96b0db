"""Errors that pickscale raises on purpose.

Every error a user can cause (a bad file, a bad option, a store that is not
complete) derives from :class:`PickscaleError`.  The command-line interface
turns these into a message and exit status 2, never a traceback; anything
else is a bug in pickscale and exits with status 1.
"""

from __future__ import annotations

__all__ = [
    "PickscaleError",
    "InputError",
    "OptionsError",
    "StoreError",
]


class PickscaleError(Exception):
    """Base class of every error caused by the user's input or options."""


class InputError(PickscaleError, ValueError):
    """An input table cannot be scored as it is.

    The message names the file, the column or rows, and what was expected.
    """


class OptionsError(PickscaleError, ValueError):
    """An option is out of range or inconsistent (grid, tolerances, budget, config)."""


class StoreError(PickscaleError, OSError):
    """A results store cannot be written or is not a complete pickscale store."""
