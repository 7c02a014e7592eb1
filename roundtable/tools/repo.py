"""Repository reads: `repo.read_file`, `repo.search`, `repo.symbols` (and the unexposed
`repo.dependency_context`). There is deliberately no write tool: changes go through proposals.
`repo.read_file`'s and `repo.search`'s arguments are declared in `services.repository.repo`,
which receives them whole with the repository's limits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import anyio

from roundtable.services.args import Args, RepoPath
from roundtable.services.repository import repo as repo_service
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import resolve_repo_path
from roundtable.services.repository.repo import ReadFileArgs, SearchArgs
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORDS, boolean, integer, result, string


async def read_file(call: Call[ReadFileArgs]) -> dict[str, Any]:
    runtime = call.runtime
    return await anyio.to_thread.run_sync(repo_service.read_file, runtime.root, call.args, runtime.config.repo)


async def search(call: Call[SearchArgs]) -> dict[str, Any]:
    runtime = call.runtime
    found = await anyio.to_thread.run_sync(repo_service.search, runtime.root, call.args, runtime.config.repo)
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
        rare_args=frozenset({"numbered"}),  # plain lines unless asked (`rt repo_read_file --help` names it)
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
