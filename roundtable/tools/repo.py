"""Repository reads: `repo.read_file`, `repo.search`, `repo.symbols` (and the unexposed
`repo.dependency_context`). There is deliberately no write tool: changes go through proposals."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORDS, boolean, integer, obj, result, string

_PATH = string("Repository-relative path.")

TOOLS = [
    ToolSpec(
        name="repo.read_file",
        description="Read one repository file (text; binary files are reported, not dumped; large files are refused).",
        input_schema=obj({"path": _PATH}, ["path"]),
        output_schema=result(
            {"path": string(), "content": string(), "binary": boolean(), "size": integer()},
            required=["path", "content"],
        ),
        handler=not_implemented("repo.read_file"),
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.search",
        description="Case-insensitive literal search of repository text files; path narrows it to one file.",
        input_schema=obj({"query": string("Text to find."), "path": _PATH}, ["query"]),
        output_schema=result({"matches": RECORDS}, required=["matches"]),
        handler=not_implemented("repo.search"),
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.symbols",
        description="List the symbols (functions, classes, types, methods) declared in one file (Python, Go, TypeScript, JavaScript).",
        input_schema=obj(
            {"path": _PATH, "language": string("Only this language: python, go, typescript, javascript.")}, ["path"]
        ),
        output_schema=result({"symbols": RECORDS}, required=["symbols"]),
        handler=not_implemented("repo.symbols"),
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.dependency_context",
        description="Not implemented.",
        input_schema=obj({"path": _PATH}, ["path"]),
        output_schema={"type": "object"},
        handler=None,
        mode="none",
        read_only=True,
        exposed=False,
    ),
]
