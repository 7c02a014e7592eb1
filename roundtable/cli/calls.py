"""How a CLI command reaches the project's state: one helper for each way, so no command opens
the runtime or the database its own way.

- `call(root, tool, args)`: one registered operation as the operator, through `Runtime.call` in
  a runtime this process opens for it and closes after (with or without a running owner: the
  owner picks the change up from the commit), so it is validated and audited like any call;
- `read(root, query)`: `query(reader)` over one read snapshot of the project's database;
- `with_runtime(root, work)` / `async with opened(root)`: the runtime for a command that makes
  several calls or reads (paging, a follow loop, a report);
- `owner_call(root, tool, args)`: an operation only the running owner can do (its supervisor
  starts, stops and resumes sessions), sent over its legacy socket;
- `given(args)`: the arguments the command line filled in (blank ones left out, so the
  operation's own defaults apply).

`call`, `read` and `owner_call` are synchronous — what a click command calls; the `_async`
forms are for code already running on a loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from roundtable.cli.common import fail

if TYPE_CHECKING:
    from roundtable.runtime import Runtime
    from roundtable.store.db import Reader
    from roundtable.tools.context import Caller

T = TypeVar("T")


def given(args: Mapping[str, Any]) -> dict[str, Any]:
    """`args` without the ones left blank (`""` or None)."""
    return {key: value for key, value in args.items() if value is not None and value != ""}


@asynccontextmanager
async def opened(root: Path, *, busy_timeout_ms: int = 0) -> AsyncIterator[Runtime]:
    """The project's runtime, closed when the block ends. `busy_timeout_ms` (0: the store's
    default) bounds a write's wait for another process's write lock."""
    from roundtable.runtime import Runtime
    from roundtable.store.db import BUSY_TIMEOUT_MS

    async with await Runtime.open(root, busy_timeout_ms=busy_timeout_ms or BUSY_TIMEOUT_MS) as runtime:
        yield runtime


async def with_runtime(root: Path, work: Callable[[Runtime], Awaitable[T]], *, busy_timeout_ms: int = 0) -> T:
    """`work(runtime)` on the project's runtime (`opened`)."""
    async with opened(root, busy_timeout_ms=busy_timeout_ms) as runtime:
        return await work(runtime)


async def call_async(
    root: Path,
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    caller: Caller | None = None,
    busy_timeout_ms: int = 0,
) -> dict[str, Any]:
    """`call` for code already on a loop."""
    from roundtable.tools.context import OPERATOR

    async def one(runtime: Runtime) -> dict[str, Any]:
        return await runtime.call(tool, dict(args or {}), caller or OPERATOR)

    return await with_runtime(root, one, busy_timeout_ms=busy_timeout_ms)


def call(root: Path, tool: str, args: Mapping[str, Any] | None = None, *, busy_timeout_ms: int = 0) -> dict[str, Any]:
    """Run operation `tool` with `args` as the operator; its result (a `RoundtableError` on refusal)."""
    return asyncio.run(call_async(root, tool, args, busy_timeout_ms=busy_timeout_ms))


async def read_async(root: Path, query: Callable[[Reader], Awaitable[T]]) -> T:
    """`read` for code already on a loop."""

    async def snapshot(runtime: Runtime) -> T:
        async with runtime.db.read() as reader:
            return await query(reader)

    return await with_runtime(root, snapshot)


def read(root: Path, query: Callable[[Reader], Awaitable[T]]) -> T:
    """`query(reader)` over one snapshot of the project's database."""
    return asyncio.run(read_async(root, query))


def owner_call(root: Path, tool: str, args: Mapping[str, Any], *, read_timeout: float = 60.0) -> dict[str, Any]:
    """Run `tool` in the running owner (over its legacy socket, as the operator); exit 1 with its
    refusal, or with why no owner answers."""
    from roundtable.config import load_config
    from roundtable.server.socket_client import call_socket

    config = load_config(root)
    reply = call_socket(config.socket_path(root), tool, dict(args), read_timeout=read_timeout)
    if not reply.get("ok"):
        fail(str(reply.get("error") or f"{tool} failed"))
    result = reply.get("result")
    return result if isinstance(result, dict) else {}
