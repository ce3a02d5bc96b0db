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
    "ClusterError",
    "PickscaleWarning",
    "emit_warnings",
]


class PickscaleError(Exception):
    """Base class of every error caused by the user's input or options.

    Messages name options as the Python API does (``residual_tol``, ``drop_invalid``); ``options`` lists
    the ones a message names, so that the command line can say its own flags instead (``--residual-tol``).

    Examples
    --------
    >>> OptionsError("tol must be >= 0 seconds; got -1.0.", options=("tol",)).options
    ('tol',)
    """

    def __init__(self, *args: object, options: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.options = tuple(options)


class InputError(PickscaleError, ValueError):
    """An input table cannot be scored as it is.

    The message names the file, the column or rows, and what was expected.
    """


class OptionsError(PickscaleError, ValueError):
    """An option is out of range or inconsistent (grid, tolerances, budget, config)."""


class StoreError(PickscaleError, OSError):
    """A results store cannot be written or is not a complete pickscale store."""


class ClusterError(PickscaleError, RuntimeError):
    """A Dask cluster cannot run pickscale: no worker joined in time, or its workers cannot import
    ``pickscale.engine.parts`` or run another pickscale version (:func:`pickscale.engine.workers.check_workers`)."""


class PickscaleWarning(UserWarning):
    """What pickscale dropped, excluded or guessed (the lines of ``ds.attrs["warnings"]``).

    Filter them as usual: ``warnings.simplefilter("error", pickscale.PickscaleWarning)``.
    """


def emit_warnings(messages, *, stacklevel: int = 3) -> None:
    """Issue each message (once, in order) as a :class:`PickscaleWarning` from the caller's caller."""
    import warnings

    for message in dict.fromkeys(messages):
        warnings.warn(str(message), PickscaleWarning, stacklevel=stacklevel)
