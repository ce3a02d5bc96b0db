"""Feedback on long runs: one labelled display per stage (reading picks k/n, scoring partitions k/n).

On a terminal a stage is a ``tqdm`` bar on stderr; when stderr is not a terminal (a log file, a batch
job) it is a line every ``interval`` seconds (10 by default), in tqdm's own format, and a closing line
once the stage has printed any — so a short run prints nothing.  Stages are driven by the engine
(:mod:`pickscale.engine.graph`): Dask's local-scheduler callbacks or ``distributed.as_completed``.
Only the client imports this module (tqdm is never loaded on a worker).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Stage", "INTERVAL"]

#: Seconds between two lines when stderr is not a terminal.
INTERVAL = 10.0
#: One line of the line mode (tqdm's fields): plain text for a log.
_LINE = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%), {elapsed} elapsed, {remaining} to go"


class Stage:
    """A labelled count ``done/total`` of one stage.

    Parameters
    ----------
    label
        What is counted, e.g. ``"reading picks"`` (tqdm's description).
    total
        How many items the stage has.
    stream
        Where to write (default ``sys.stderr``).
    interval
        Seconds between lines when ``stream`` is not a terminal.
    clock
        A monotonic clock in seconds (tests pass a fake one).
    terminal
        Force the terminal (bar) or line mode; default: ``stream.isatty()``.

    Examples
    --------
    >>> import io
    >>> now = [0.0]
    >>> out = io.StringIO()
    >>> stage = Stage("scoring partitions", 4, stream=out, interval=10, clock=lambda: now[0])
    >>> stage.update(); now[0] = 12.0; stage.update(); stage.close()
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    scoring partitions: 2/4 (50%), 00:12 elapsed, 00:12 to go
    scoring partitions: 2/4 (50%), 00:12 elapsed, 00:12 to go; stopped
    """

    def __init__(self, label: str, total: int, *, stream: IO[str] | None = None, interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic, terminal: bool | None = None) -> None:
        self.label, self.total, self.done = label, int(total), 0
        self.stream = stream if stream is not None else sys.stderr
        self.clock, self.interval = clock, float(interval)
        self.started = clock()
        self.next_line = self.started + self.interval
        self.lines = 0
        if terminal is None:
            terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar: Any = None
        if terminal:
            from tqdm import tqdm  # (here: a stage that never prints a line need not load it)

            # delay: a stage that ends within two seconds shows no bar at all (small studies, the demo).
            self.bar = tqdm(total=self.total, desc=self.label, file=self.stream, leave=True, mininterval=0.2,
                            dynamic_ncols=True, delay=2.0)

    def grow(self, n: int) -> None:
        """``n`` more items to do, found once the stage is under way (the figures of the writing stage)."""
        self.total += int(n)
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def update(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = self.clock()
        if now >= self.next_line and self.done < self.total:  # the last item: the closing line says it
            self._line(now)
            self.next_line = now + self.interval

    def _line(self, now: float, end: str = "") -> None:
        from tqdm import tqdm

        text = tqdm.format_meter(self.done, self.total, now - self.started, prefix=self.label, bar_format=_LINE)
        try:
            self.stream.write(text + end + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):  # a closed log: progress is never worth failing a run
            pass
        self.lines += 1

    def close(self) -> None:
        """End the display (a closing line in line mode, if the stage printed any)."""
        if self.bar is not None:
            self.bar.close()
        elif self.lines:
            self._line(self.clock(), "; done" if self.done >= self.total else "; stopped")

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
