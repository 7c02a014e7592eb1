"""The package's Python source as syntax trees, for the static checks (`bench signatures`, the
tests that hold the vocabulary and the write path).

`parse` keeps the garbage collector off while it runs. CPython 3.11's `ast` keeps the depth of
the tree it is building in the interpreter's state; a finalizer run by a collection in the middle
of that (an asyncio transport reporting "Event loop is closed", say) formats a traceback, which in
3.11 calls `ast.parse` itself to place its carets, and the outer parse then fails with
`SystemError: AST constructor recursion depth mismatch` (seen in CI after an unrelated failure).
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse(path: Path, filename: str | None = None) -> ast.Module:
    """The syntax tree of the Python file at `path` (`filename` names it in errors)."""
    source = path.read_text(encoding="utf-8")
    collecting = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=filename or str(path))
    finally:
        if collecting:
            gc.enable()
