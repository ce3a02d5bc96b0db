"""Issue 24 item 2: pickscale's own modules are imported at the top of a module, unless an import must stay lazy.

An import of a pickscale module inside a function (``from . import x``, ``from ..store import y``,
``import pickscale.z``) says why on its line or just above it, in a comment that starts with ``# lazy:`` (an
import cycle; start-up cost where it must stay low: ``import pickscale``, the command line, the Dask workers;
an optional dependency).  One comment covers the imports that follow it in one run of import statements.
"""

from __future__ import annotations

import ast
import io
import pathlib
import tokenize

import pickscale

ROOT = pathlib.Path(pickscale.__file__).parent

MARK = "# lazy:"


def _internal(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "pickscale"
    return any(alias.name.split(".")[0] == "pickscale" for alias in node.names)


def _marked_lines(source: str) -> tuple[set[int], set[int]]:
    """The lines with a ``# lazy:`` comment, and the lines that hold nothing but a comment."""
    marked, comment_only = set(), set()
    lines = source.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row = tok.start[0]
            if tok.string.startswith(MARK):
                marked.add(row)
            if lines[row - 1].lstrip().startswith("#"):
                comment_only.add(row)
    return marked, comment_only


def unexplained(source: str) -> list[int]:
    """The lines of the function-level imports of pickscale modules in ``source`` that say no ``# lazy:``.

    Examples
    --------
    >>> unexplained("def f():\\n    from .store import open_results\\n")
    [2]
    >>> unexplained("def f():\\n    from .store import open_results  # lazy: store/ brings zarr\\n")
    []
    >>> unexplained("def f():\\n    # lazy: a cycle\\n    # (store -> report -> store)\\n    from . import a\\n"
    ...             "    from .b import c\\n    x = 1\\n    from .d import e\\n")
    [7]
    >>> unexplained("import pickscale.io\\ndef f():\\n    import numpy\\n    import pickscale.store\\n")
    [4]
    """
    runs = []  # each run of import statements in a function's bodies, when it imports a pickscale module
    seen: set[int] = set()  # (a nested function is walked with the function around it)
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if not isinstance(body, list):
                    continue
                run: list[ast.Import | ast.ImportFrom] = []
                for stmt in [*body, None]:  # (None ends the last run)
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        run.append(stmt)
                        continue
                    if any(_internal(s) for s in run):
                        runs.append(run)
                    run = []
    if not runs:
        return []
    marked, comment_only = _marked_lines(source)

    def explained(stmt: ast.stmt) -> bool:
        if marked & set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)):
            return True
        row = stmt.lineno - 1  # the comment lines right above it
        while row in comment_only:
            if row in marked:
                return True
            row -= 1
        return False

    found: set[int] = set()
    for run in runs:
        covered = False  # by the comment of an earlier import of the run
        for stmt in run:
            covered = covered or explained(stmt)
            if _internal(stmt) and not covered:
                found.add(stmt.lineno)
    return sorted(found)


def _relative(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _offences() -> dict[str, list[int]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        lines = unexplained(path.read_text(encoding="utf-8"))
        if lines:
            out[_relative(path)] = lines
    return out


def test_every_function_level_import_of_pickscale_says_why_it_is_lazy():
    offences = _offences()
    listing = "\n".join(f"  pickscale/{name}:{line}" for name, lines in offences.items() for line in lines)
    assert not offences, ("imports of pickscale modules inside functions, with no `# lazy:` comment saying why "
                          f"(move them to the top of the module, or say why they stay):\n{listing}")

