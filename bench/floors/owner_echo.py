"""The real owner (lock, runtime, socket, HTTP) with one echo tool added to the real registry,
so the benchmark measures the transports and `Runtime.call` alone (`bench.echo`) and a real
read tool (`task.get`, on a task this script creates and announces) through the same owner.

With a fourth argument (a file path), a loop-lag probe (`bench.looplag`) runs in the owner's
event loop from ready to SIGTERM and its p99 and max (ms) are written there as JSON on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path
from typing import Any

from roundtable.owner import Owner
from roundtable.services.args import Args, Int
from roundtable.tools.registry import Registry, ToolSpec, get_registry


class EchoArgs(Args):
    n: Int = 0


async def echo(call: Any) -> dict[str, Any]:
    return {"n": call.args.n} if call.args.given("n") else {}


async def main(root: str, port: int, sock: str, lag_file: str = "") -> None:
    from bench.looplag import LoopLag

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Owner(Path(root), http_address=f"127.0.0.1:{port}", socket_path=sock, chair=False) as owner:
        spec = ToolSpec(
            name="bench.echo",
            description="echo",
            args=EchoArgs,
            output_schema={"type": "object"},
            handler=echo,
            mode="none",
            read_only=True,
        )
        owner.runtime.registry = Registry({**{s.name: s for s in get_registry()}, spec.name: spec})
        task = await owner.runtime.call("task.create", {"title": "bench", "body_md": "a task to read"})
        async with LoopLag() as lag:  # from ready to SIGTERM: what the benchmark's calls cause
            print(f"ready {task['task']['id']}", flush=True)
            await stop.wait()
    if lag_file:
        data = {"p99_ms": lag.p99_ms, "max_ms": lag.max_ms, "samples": len(lag.samples_ms)}
        text = json.dumps(data)
        await asyncio.to_thread(Path(lag_file).write_text, text)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], *sys.argv[4:5]))
