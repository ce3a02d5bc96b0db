"""What a command has done so far (for the message when it is interrupted), and its exit statuses."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXIT_OK", "EXIT_INTERNAL", "EXIT_USAGE", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "Terminated", "Run"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: clean up, then exit 143."""


class Run:
    """What a run has written so far, for the message when it is interrupted."""

    store: Path | None = None  # the results store once it is complete at its target
    target: Path | None = None  # the store the run is writing

    @classmethod
    def reset(cls) -> None:
        cls.store = cls.target = None

    @classmethod
    def interrupted_note(cls) -> str:
        if cls.store is not None:
            return (f"the results store {cls.store} is complete, but its tables and figures may not be: "
                    f"write them again with `pickscale report {cls.store} --overwrite`.")
        if cls.target is not None:
            return f"no results store was written ({cls.target} is as it was before this run)."
        return "no results store was written."
