"""Study files: a scoring run described in TOML (read with ``tomllib``, data only).

Keys: ``reference``, ``picks``, ``out`` (paths relative to the file),
``threshold`` (a number, or one per phase: ``threshold = {P = 0.5, S = 0.3}``), ``tol``,
``residual_tol``, ``thresholds``, ``budget``, ``tols``, ``time_bin``,
``exhaustive``, ``drop_invalid``, ``overwrite``, ``workers``, ``scheduler``,
``scheduler_file`` (a path, relative to the file), ``block_picks``,
``coverage`` (a path, relative to the file, in ``[inputs]`` or at the top),
``group_by`` and ``stations`` (SPEC §14; a path, relative to the file), ``select_on`` (SPEC §16),
``storage_options`` (a table, given to fsspec for inputs on object storage:
``storage_options = {endpoint_url = "http://…"}`` or a ``[storage_options]`` table).
Options may also sit in an ``[options]`` table and the cluster keys in a
``[cluster]`` table.  An unknown key is an error, so a typo never silently
falls back to a default.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import OptionsError
from .io.text import cut, quote  # what a message quotes from the file is cut short
from .settings import study_keys, study_tables

__all__ = ["load_config", "KEYS"]

#: A study file's keys and the TOML types of each; its tables and the keys each holds: both from the one
#: declaration of every setting (:mod:`pickscale.settings`).
KEYS: dict[str, tuple[type, ...]] = study_keys()
_TABLES = study_tables()


def load_config(path: str | Path) -> tuple[dict[str, Any], Path]:
    """Read a study file; return its flat settings and the folder paths are relative to.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "s.toml")
    >>> _ = open(f, "w").write('reference = "ref.csv"\\n[options]\\ntol = 0.25\\n')
    >>> load_config(f)[0]
    {'reference': 'ref.csv', 'tol': 0.25}
    """
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OptionsError(f"config file {p} does not exist.") from None
    except IsADirectoryError:
        raise OptionsError(f"config file {p} is a folder, not a TOML file.") from None
    except OSError as exc:
        raise OptionsError(f"config file {p} cannot be read: {exc.strerror or exc}.") from None
    except UnicodeDecodeError as exc:
        raise OptionsError(f"config file {p} is not UTF-8 text (byte {exc.start}); a study file is TOML.") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionsError(f"config file {p} is not valid TOML: {cut(exc, limit=200)}.") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables by recursion
        raise OptionsError(f"config file {p} nests arrays or tables too deeply to be read; a study file holds "
                           "a few tables of plain values.") from None
    except MemoryError:
        raise OptionsError(f"config file {p} is too large to be read; a study file holds a few tables of plain "
                           "values.") from None
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _TABLES and not isinstance(value, dict):
            raise OptionsError(f"config file {p}: {key!r} should be a table ([{key}]) holding "
                               f"{', '.join(_TABLES[key])}; got {quote(value)}.")
        if key in _TABLES:
            for sub, v in value.items():
                if sub not in _TABLES[key]:
                    raise OptionsError(f"config file {p}: unknown key [{key}] {quote(sub)}; "
                                       f"allowed there: {', '.join(_TABLES[key])}.")
                if sub in flat:
                    raise OptionsError(f"config file {p}: {quote(sub)} is given twice (at the top and in [{key}]).")
                flat[sub] = v
        elif key in KEYS:
            if key in flat:
                raise OptionsError(f"config file {p}: {key!r} is given twice (at the top and in a table).")
            flat[key] = value
        else:
            raise OptionsError(f"config file {p}: unknown key {quote(key)}; known keys: {', '.join(sorted(KEYS))}.")
    for key, value in flat.items():
        wants = KEYS[key]
        ok = any(isinstance(value, want) or (want is float and isinstance(value, int)) for want in wants)
        if not ok or (isinstance(value, bool) and bool not in wants):
            names = " or ".join(want.__name__ for want in wants)
            raise OptionsError(f"config file {p}: {key} should be a {names}, got {quote(value)}.")
        if isinstance(value, list) and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise OptionsError(f"config file {p}: {key} should be a list of numbers, got {quote(value)}.")
    return flat, p.resolve().parent
