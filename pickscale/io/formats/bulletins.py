"""Bulletin files: which sources are bulletins (by name or XML root element), read through ObsPy.

A bulletin (QuakeML, SC3ML, NonLinLoc ``.hyp``, hypoDD ``.pha``, Nordic,
IMS1.0 ...) is read with ``obspy.read_events`` on the client (bulletins are
small) and converted by :func:`~pickscale.io.formats.quakeml.catalog_to_frame`.
ObsPy is an optional dependency (``pip install 'pickscale[obspy]'``): it is
imported only when a bulletin is read, never by the core or the workers.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...errors import InputError
from ..normalised import NOTES_ATTR
from ..sources import SOURCE_SUFFIXES, has_magic
from .quakeml import catalog_to_frame

__all__ = [
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
    "bulletin_files",
    "read_bulletins",
    "xml_root",
    "is_bulletin_root",
]


#: File name endings read as bulletins (through ``obspy.read_events``, format detected by ObsPy):
#: QuakeML, SC3ML/SCML, NonLinLoc ``.hyp``, hypoDD ``.pha``, Nordic, IMS1.0.
BULLETIN_SUFFIXES = (".xml", ".qml", ".quakeml", ".sc3ml", ".scml", ".hyp", ".pha", ".nordic", ".ims")
#: What a user without ObsPy is told.
OBSPY_HINT = "reading a bulletin (QuakeML, SC3ML, NonLinLoc, hypoDD ...) needs ObsPy: pip install 'pickscale[obspy]'"
_BULLETIN_ROOTS = ("quakeml", "seiscomp", "eventparameters")
_SNIFF = 4096


def _obspy() -> Any:
    try:
        import obspy  # noqa: F401
        from obspy.core.event import read_events
    except ImportError:
        raise InputError(OBSPY_HINT + ".") from None
    return read_events


def xml_root(head: bytes) -> str | None:
    """The local name of the root element of an XML document's first bytes, or None if not XML.

    Examples
    --------
    >>> xml_root(b"<?xml version='1.0'?>\\n<!-- c -->\\n<q:quakeml xmlns:q='x'>")
    'quakeml'
    >>> xml_root(b"station,phase") is None
    True
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return None
    i = 0
    while True:
        j = text.find(b"<", i)
        if j < 0 or j + 1 >= len(text):
            return ""
        nxt = text[j + 1:j + 2]
        if nxt in (b"?", b"!"):
            end = text.find(b">", j)
            if end < 0:
                return ""
            i = end + 1
            continue
        name = text[j + 1:].split(None, 1)[0].split(b">", 1)[0].split(b"/", 1)[0]
        return name.split(b":")[-1].decode("utf-8", "replace")


def is_bulletin_root(root: str | None) -> bool:
    """Whether an XML root element name is a bulletin's (QuakeML, SeisComP)."""
    return root is not None and root != "" and root.casefold() in _BULLETIN_ROOTS


def _head(path: str) -> bytes:
    import fsspec

    try:
        with fsspec.open(path, "rb", compression="infer") as f:
            return f.read(_SNIFF)
    except (OSError, ValueError):
        return b""


def _is_bulletin_name(path: str) -> bool:
    low = path.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    return low.endswith(BULLETIN_SUFFIXES)


def bulletin_files(source: Any) -> list[str] | None:
    """The bulletin files that ``source`` names, or None when it is not a bulletin.

    A file whose name ends in one of :data:`BULLETIN_SUFFIXES`, or that is
    XML with another name (not CSV/Parquet); a glob or folder whose files are
    all of that kind (a folder holding CSV or Parquet files is not a
    bulletin folder).  A list of sources is a bulletin when all its items are.
    """
    if isinstance(source, (list, tuple)):
        if not source or not all(isinstance(s, (str, os.PathLike)) for s in source):
            return None
        found: list[str] = []
        for item in source:
            files = bulletin_files(item)
            if files is None:
                return None
            found.extend(files)
        return list(dict.fromkeys(found))
    if not isinstance(source, (str, os.PathLike)):
        return None
    import fsspec

    text = os.fspath(source)
    try:
        fs, path = fsspec.core.url_to_fs(text)
        if has_magic(path):
            matched = [p for p in sorted(fs.glob(path)) if not fs.isdir(p)]
        elif fs.isdir(path):
            matched = sorted(p for p in fs.find(path)
                             if _is_bulletin_name(p) or p.lower().endswith(SOURCE_SUFFIXES))
        elif fs.exists(path):
            matched = [path]
        else:
            return None
    except (OSError, ValueError):
        return None
    if not matched:
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")
    out = []
    for p in matched:
        name = p if local else fs.unstrip_protocol(p)
        if _is_bulletin_name(p):
            out.append(name)
        elif not p.lower().endswith(SOURCE_SUFFIXES) and xml_root(_head(name)) is not None:
            out.append(name)  # XML under another name: read (or refused) as a bulletin
        else:
            return None
    return out


def _read_one(path: str) -> Any:
    import fsspec

    head = _head(path)
    root = xml_root(head)
    if root is not None and not is_bulletin_root(root):
        raise InputError(
            f"{path}: is an XML file whose root element is <{root or '?'}>, not a bulletin "
            "(QuakeML <quakeml>, SC3ML <seiscomp>); pickscale reads reference arrivals from a bulletin, "
            "a CSV or a Parquet file."
        )
    read_events = _obspy()
    try:
        with fsspec.open(path, "rb", compression="infer") as f:
            data = io.BytesIO(f.read())
        return read_events(data)
    except InputError:
        raise
    except Exception as exc:  # ObsPy raises TypeError / ValueError / lxml errors for what it cannot read
        raise InputError(f"{path}: cannot be read as a bulletin by ObsPy ({type(exc).__name__}: {exc}).") from None


def read_bulletins(paths: Sequence[str], *, manual_only: bool = False, dataset: str | None = None,
                   description: str | None = None) -> pd.DataFrame:
    """Read bulletin files with ``obspy.read_events`` into one raw reference frame (see :func:`catalog_to_frame`)."""
    frames = []
    for path in paths:
        frames.append(catalog_to_frame(_read_one(path), manual_only=manual_only, dataset=dataset, source=path))
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    notes = [n for f in frames for n in f.attrs.get(NOTES_ATTR, [])]
    counts: dict[str, int] = {}
    for f in frames:
        for k, v in f.attrs.get("pickscale_counts", {}).items():
            counts[k] = counts.get(k, 0) + v
    frame.attrs = {}
    frame.attrs[NOTES_ATTR] = notes
    frame.attrs["pickscale_counts"] = counts
    what = description or (paths[0] if len(paths) == 1 else f"{len(paths)} bulletin files")
    frame.attrs["pickscale_description"] = (f"{what} ({counts.get('events', 0)} event(s), "
                                            f"{counts.get('arrivals', 0)} arrival(s))")
    frame.attrs["pickscale_files"] = list(paths)
    return frame
