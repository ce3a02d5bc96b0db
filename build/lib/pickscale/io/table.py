"""The result of normalising a table (:class:`Normalised`): the frame, what was dropped and why.

Results of several files or partitions of one input combine into one
(:meth:`Normalised.combine`), keeping ``Categorical`` columns categorical.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from .candidates import model_hint, union_candidates
from .messages import N_EXAMPLES, ROWS_CONVENTION, quote_counts, top_counts
from .text import concat_frames

__all__ = ["NOTES_ATTR", "Normalised", "attach_report"]


#: ``frame.attrs`` key of lines a converter (``pickscale.io.formats``) wants reported with the warnings.
NOTES_ATTR = "pickscale_notes"


@dataclass
class Normalised:
    """A normalised table and what normalising it did.

    Attributes
    ----------
    frame
        Canonical columns only (:data:`~pickscale.io.columns.COLUMNS` of the role): ``dataset``,
        (``model``,) ``station``, ``phase`` as object columns of Python ``str``
        (pandas ``Categorical`` with sorted categories when :func:`~pickscale.io.normalise`
        was asked for ``categorical=True``); ``time`` int64 ns since 1970 UTC;
        (``conf`` float64).  Index 0..n-1.
    role
        ``"reference"`` or ``"picks"``.
    source
        The file name used in messages.
    columns
        Canonical name -> the file's column that was used, or ``None`` when the
        column was absent and the default (``all`` / ``model``) was used.
    n_rows_read
        Data rows in the input.
    n_invalid
        Invalid rows dropped (only ever non-zero with ``drop_invalid``).
    invalid_counts
        Canonical column -> number of rows invalid in that column (a row can
        count under several columns).
    invalid_examples
        Up to five short descriptions per column, e.g. ``"row 7: conf '85'"``.
    dropped_phases
        Original phase name -> rows dropped because it is not P- or S-like.
    mapped_phases
        Original phase name -> ``"P"``/``"S"`` for every name that was kept.
    ignored_columns
        Columns of the file that pickscale does not use (e.g. ``event``).
    model_candidates
        Picks without a model column: unused text columns with a few (2–20)
        distinct values -> some of those values (a run id or weights name
        that may be the model; reported by :meth:`warnings`).
    notes
        Lines a converter (``pickscale.io.formats``) left in ``raw.attrs``
        (what a bulletin's conversion left out), reported by :meth:`warnings`.
    """

    frame: pd.DataFrame
    role: str
    source: str
    columns: dict[str, str | None]
    n_rows_read: int
    n_invalid: int = 0
    invalid_counts: dict[str, int] = field(default_factory=dict)
    invalid_examples: list[str] = field(default_factory=list)
    dropped_phases: dict[str, int] = field(default_factory=dict)
    mapped_phases: dict[str, str] = field(default_factory=dict)
    ignored_columns: list[str] = field(default_factory=list)
    model_candidates: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        """Rows kept in :attr:`frame`."""
        return len(self.frame)

    @property
    def n_dropped_phases(self) -> int:
        """Rows dropped because their phase is neither P- nor S-like."""
        return int(sum(self.dropped_phases.values()))

    def warnings(self) -> list[str]:
        """Human-readable lines for what was dropped (empty when nothing was)."""
        out = []
        if self.n_invalid:
            per = ", ".join(f"{k}: {v}" for k, v in self.invalid_counts.items())
            ex = "; ".join(self.invalid_examples[:N_EXAMPLES])
            out.append(
                f"{self.source}: dropped {self.n_invalid} invalid row(s) of "
                f"{self.n_rows_read} ({per}); first: {ex} ({ROWS_CONVENTION})"
            )
        if self.dropped_phases:
            per = quote_counts(self.dropped_phases)
            out.append(
                f"{self.source}: dropped {self.n_dropped_phases} row(s) whose phase is "
                f"neither P- nor S-like ({per})"
            )
        out.extend(self.notes)
        if self.model_candidates:
            out.append(model_hint(self.model_candidates))
        return out

    @classmethod
    def combine(cls, parts: Sequence[Normalised]) -> Normalised:
        """Concatenate the results of several partitions or files of one role.

        Counts are summed, examples are kept in order (first five per part),
        ``columns`` and ``source`` are taken from the first part (files of one
        input may use different aliases: ``source`` then lists them all).

        Examples
        --------
        >>> import pandas as pd
        >>> from pickscale.io import normalise
        >>> raw = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": ["2020-01-01T00:00:00Z"]})
        >>> a = normalise(raw, role="reference", source="a.csv")
        >>> Normalised.combine([a, a]).n_rows
        2
        """
        if not parts:
            raise ValueError("combine() needs at least one part")
        first = parts[0]
        frame = concat_frames([p.frame for p in parts])
        sources = list(dict.fromkeys(p.source for p in parts))
        invalid_counts: dict[str, int] = {}
        dropped: dict[str, int] = {}
        mapped: dict[str, str] = {}
        for p in parts:
            for k, v in p.invalid_counts.items():
                invalid_counts[k] = invalid_counts.get(k, 0) + v
            for k, v in p.dropped_phases.items():
                dropped[k] = dropped.get(k, 0) + v
            mapped.update(p.mapped_phases)
        attach_report(frame, sum(p.n_rows_read for p in parts), sum(p.n_invalid for p in parts), dropped)
        return cls(
            frame=frame,
            role=first.role,
            source=", ".join(sources),
            columns=dict(first.columns),
            n_rows_read=sum(p.n_rows_read for p in parts),
            n_invalid=sum(p.n_invalid for p in parts),
            invalid_counts=invalid_counts,
            invalid_examples=[e for p in parts for e in p.invalid_examples],
            dropped_phases=dropped,
            mapped_phases=mapped,
            ignored_columns=list(dict.fromkeys(c for p in parts for c in p.ignored_columns)),
            model_candidates=union_candidates(p.model_candidates for p in parts),
            notes=list(dict.fromkeys(n for p in parts for n in p.notes)),
        )


def attach_report(frame: pd.DataFrame, rows_read: int, n_invalid: int, dropped: dict[str, int]) -> None:
    """Record in ``frame.attrs`` why rows are missing, for the messages of :mod:`pickscale.scope`.

    When nothing is left to score, "no P- or S-like phase" is only helpful with
    the phases that *were* found.
    """
    frame.attrs["pickscale_rows"] = {
        "rows_read": int(rows_read),
        "invalid_dropped": int(n_invalid),
        "dropped_phases": top_counts(dropped),  # the most frequent few (pandas copies attrs with each frame)
    }
