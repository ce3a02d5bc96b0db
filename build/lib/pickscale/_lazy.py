"""Names of a package loaded on first use (PEP 562), one declaration per package.

``import pickscale`` and the packages a worker passes through (:mod:`pickscale.engine`, :mod:`pickscale.store`)
import none of their modules up front: a worker that unpickles a task of :mod:`pickscale.engine.parts` or reads
a store's pairs (:mod:`pickscale.store.pair_chunks`) then never loads xarray, and a command loads what it uses.

Examples
--------
>>> import types
>>> pkg = types.ModuleType("pkg")
>>> pkg.__getattr__, pkg.__dir__ = lazy_names("json", {"dumps": ""}, vars(pkg))
>>> pkg.dumps([1])
'[1]'
>>> "dumps" in dir(pkg)
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, names: Mapping[str, str], namespace: MutableMapping[str, Any]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: ``names[name]`` is the module of ``package`` (relative, without
    its dot; empty: ``package`` itself) that defines ``name``, imported when ``name`` is first asked for and kept
    in ``namespace`` (the package's globals) after."""

    def __getattr__(name: str) -> Any:
        if name in names:
            module = importlib.import_module(f".{names[name]}", package) if names[name] else (
                importlib.import_module(package))
            value = getattr(module, name)
            namespace[name] = value  # next time: a plain attribute
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
