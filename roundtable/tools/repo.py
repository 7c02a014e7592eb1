"""Repository reads: `repo.read_file`, `repo.search`, `repo.symbols` (and the unexposed
`repo.dependency_context`). There is deliberately no write tool: changes go through proposals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from annotated_types import Le
from pydantic import Field

from roundtable.services.args import Args, Count, Flag, Positive, Query, RepoPath
from roundtable.services.repository import repo as repo_service
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import resolve_repo_path
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORDS, boolean, integer, result, string


class ReadFileArgs(Args):
    path: RepoPath
    start_line: Positive = 0
    end_line: Positive = 0
    numbered: Flag = Field(False, description="Number the lines.")


async def read_file(call: Call[ReadFileArgs]) -> dict[str, Any]:
    runtime = call.runtime
    a = call.args
    return await anyio.to_thread.run_sync(
        lambda: repo_service.read_file(
            runtime.root,
            a.path,
            runtime.config.repo.max_read_bytes,
            start_line=a.start_line,
            end_line=a.end_line,
            numbered=a.numbered,
        )
    )


class SearchArgs(Args):
    query: Query
    path: RepoPath = ""
    context_lines: Annotated[Count, Le(20)] = Field(0, description="Lines around each match.")


async def search(call: Call[SearchArgs]) -> dict[str, Any]:
    runtime = call.runtime
    a = call.args
    found = await anyio.to_thread.run_sync(
        lambda: repo_service.search(
            runtime.root,
            a.query,
            path=a.path,
            max_matches=runtime.config.repo.max_search_matches,
            max_file_bytes=runtime.config.repo.max_read_bytes,
            context_lines=a.context_lines,
        )
    )
    return {"matches": found.matches, "truncated": found.truncated}


if TYPE_CHECKING:
    Language = str
else:
    Language = Literal[symbol_index.LANGUAGES]


class SymbolsArgs(Args):
    path: RepoPath
    language: Language | None = None  # only this language


class PathArgs(Args):
    path: RepoPath


def _symbols(root: Any, path: str, max_bytes: int) -> list[symbol_index.Symbol]:
    absolute, rel = resolve_repo_path(root, path)
    return symbol_index.index_file(absolute, rel, max_bytes=max_bytes)


async def symbols(call: Call[SymbolsArgs]) -> dict[str, Any]:
    language = call.args.language
    runtime = call.runtime
    found = await anyio.to_thread.run_sync(_symbols, runtime.root, call.args.path, runtime.config.repo.max_read_bytes)
    if language:
        found = [s for s in found if s.language == language]
    truncated = len(found) > symbol_index.MAX_SYMBOLS
    return {"symbols": [s.to_dict() for s in found[: symbol_index.MAX_SYMBOLS]], "truncated": truncated}


TOOLS = [
    ToolSpec(
        name="repo.read_file",
        description=("A repository text file, whole or lines start_line..end_line."),
        args=ReadFileArgs,
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
        description=("Literal, case-insensitive search of the repository's text files."),
        args=SearchArgs,
        agent_view=views.matches_for_agent,
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
        args=SymbolsArgs,
        output_schema=result({"symbols": RECORDS, "truncated": boolean()}, required=["symbols"]),
        handler=symbols,
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="repo.dependency_context",
        description="Not implemented.",
        args=PathArgs,
        output_schema={"type": "object"},
        handler=None,
        mode="read",
        read_only=True,
    ),
]
