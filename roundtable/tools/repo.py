"""Repository reads: `repo.read_file`, `repo.search`, `repo.symbols` (and the unexposed
`repo.dependency_context`). There is deliberately no write tool: changes go through proposals."""

from __future__ import annotations

from typing import Any

import anyio

from roundtable.errors import ValidationError
from roundtable.services.repository import repo as repo_service
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import resolve_repo_path
from roundtable.tools.args import opt_bool, opt_int, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORDS, boolean, integer, obj, result, string

_PATH = string()


async def read_file(call: Call) -> dict[str, Any]:
    runtime = call.runtime
    args = call.args
    return await anyio.to_thread.run_sync(
        lambda: repo_service.read_file(
            runtime.root,
            args["path"],
            runtime.config.repo.max_read_bytes,
            start_line=opt_int(args, "start_line", 0),
            end_line=opt_int(args, "end_line", 0),
            numbered=opt_bool(args, "numbered", False),
        )
    )


async def search(call: Call) -> dict[str, Any]:
    runtime = call.runtime
    found = await anyio.to_thread.run_sync(
        lambda: repo_service.search(
            runtime.root,
            call.args["query"],
            path=opt_str(call.args, "path"),
            max_matches=runtime.config.repo.max_search_matches,
            max_file_bytes=runtime.config.repo.max_read_bytes,
            context_lines=opt_int(call.args, "context_lines", 0),
        )
    )
    return {"matches": found.matches, "truncated": found.truncated}


def _symbols(root: Any, path: str, max_bytes: int) -> list[symbol_index.Symbol]:
    absolute, rel = resolve_repo_path(root, path)
    return symbol_index.index_file(absolute, rel, max_bytes=max_bytes)


async def symbols(call: Call) -> dict[str, Any]:
    language = opt_str(call.args, "language")
    if language and language not in symbol_index.LANGUAGES:
        raise ValidationError(
            f"repo.symbols: language must be one of {', '.join(symbol_index.LANGUAGES)} (got {language})"
        )
    runtime = call.runtime
    found = await anyio.to_thread.run_sync(
        _symbols, runtime.root, call.args["path"], runtime.config.repo.max_read_bytes
    )
    if language:
        found = [s for s in found if s.language == language]
    truncated = len(found) > symbol_index.MAX_SYMBOLS
    return {"symbols": [s.to_dict() for s in found[: symbol_index.MAX_SYMBOLS]], "truncated": truncated}


TOOLS = [
    ToolSpec(
        name="repo.read_file",
        description=(
            "Read a repository text file, whole or lines start_line..end_line (1-based; the answer then gives total_lines); numbered prefixes line numbers. Binary files: binary true, no content."
        ),
        input_schema=obj(
            {
                "path": _PATH,
                "start_line": integer(minimum=1),
                "end_line": integer(minimum=1),
                "numbered": boolean("Prefix each line with its number and a tab."),
            },
            ["path"],
        ),
        output_schema=result(
            {
                "path": string(),
                "content": string(),
                "binary": boolean(),
                "size": integer(),
                "start_line": integer(),
                "end_line": integer(),
                "total_lines": integer(),
            },
            required=["path", "content"],
        ),
        handler=read_file,
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.search",
        description=(
            "Case-insensitive literal search of repository text files: {path, line, content} per match (before/after with context_lines); truncated when over the cap."
        ),
        input_schema=obj(
            {
                "query": string(),
                "path": _PATH,
                "context_lines": integer("Lines of context before and after each match.", minimum=0, maximum=20),
            },
            ["query"],
        ),
        output_schema=result({"matches": RECORDS, "truncated": boolean()}, required=["matches"]),
        handler=search,
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.symbols",
        description=(
            "The symbols (functions, classes, methods, types) of a Python, Go, TypeScript or JavaScript file, each with the resource_id to claim."
        ),
        input_schema=obj(
            {"path": _PATH, "language": string("Only this language: python, go, typescript, javascript.")}, ["path"]
        ),
        output_schema=result({"symbols": RECORDS, "truncated": boolean()}, required=["symbols"]),
        handler=symbols,
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
    ),
]
