"""The real owner (lock, runtime, socket, HTTP) with one echo tool added to the real registry,
so the benchmark measures the transports and `Runtime.call` alone (`bench.echo`) and a real
read tool (`task.get`, on a task this script creates and announces) through the same owner."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from roundtable.owner import Owner
from roundtable.tools.registry import Registry, ToolSpec, get_registry

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}


async def echo(call: Any) -> dict[str, Any]:
    return dict(call.args)


async def main(root: str, port: int, sock: str) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Owner(Path(root), http_address=f"127.0.0.1:{port}", socket_path=sock, chair=False) as owner:
        spec = ToolSpec("bench.echo", "echo", SCHEMA, {"type": "object"}, echo, mode="none", read_only=True)
        owner.runtime.registry = Registry({**{s.name: s for s in get_registry()}, spec.name: spec})
        task = await owner.runtime.call("task.create", {"title": "bench", "body_md": "a task to read"})
        print(f"ready {task['task']['id']}", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
