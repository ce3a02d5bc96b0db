"""A dict ``{name: input}``: the name is the **model** of picks, the **dataset** of a reference.

Each value is opened by the first reader of the table that claims it and
accepts dict values in that role (``in_dicts``), then labelled with its key:
the table's own dispatcher (:func:`~pickscale.io.formats.reader.dispatchers`)
picks it, as for any input.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...errors import InputError
from ..table import NOTES_ATTR
from .reader import LABEL, SourceReader, dispatchers

__all__ = ["ModelDict"]


class ModelDict(SourceReader):
    """A non-empty dict with text keys, each value any input a dict may hold (PickList, Catalog, bulletin, frame).

    Examples
    --------
    >>> reader = ModelDict()
    >>> reader.guess_can_open({"PhaseNet": []}), reader.guess_can_open({1: []}), reader.guess_can_open({})
    (True, False, False)
    """

    name = "dict"
    description = "dict of model (or dataset) name -> input"
    in_dicts = ()

    def guess_can_open(self, source: Any) -> bool:
        return isinstance(source, dict) and bool(source) and all(isinstance(k, str) for k in source)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> pd.DataFrame:
        reader_for = dispatchers().reader_for
        column = LABEL[role]
        frames = []
        for label, obj in source.items():
            where = f"the {role} {column} {label!r}"
            reader = reader_for(obj, in_dict=role)
            if reader is None:
                raise InputError(
                    f"the {role}: the value under {label!r} is a {type(obj).__name__}; a dict maps a "
                    f"{column} name to a SeisBench PickList (or a list of pick-like objects), "
                    "an ObsPy Catalog, a bulletin file or a DataFrame.")
            frame = reader.open(obj, role=role, manual_only=manual_only, name=where)
            frames.append(reader.labelled(frame, label, role=role, name=where))
        out = pd.concat(frames, ignore_index=True)
        out.attrs = {
            NOTES_ATTR: [n for f in frames for n in f.attrs.get(NOTES_ATTR, [])],
            "pickscale_description": f"<{len(frames)} {column}s: {', '.join(map(repr, source))}>",
            "pickscale_files": [p for f in frames for p in f.attrs.get("pickscale_files", [])],
        }
        return out
