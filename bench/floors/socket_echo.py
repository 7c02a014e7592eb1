"""Floor: a bare asyncio Unix-socket server speaking the legacy framing with an echo handler."""

from __future__ import annotations

import asyncio
import json
import sys


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    line = await reader.readline()
    req = json.loads(line)
    writer.write(json.dumps({"ok": True, "result": req.get("args") or {}}, separators=(",", ":")).encode() + b"\n")
    await writer.drain()
    writer.close()


async def main(path: str) -> None:
    server = await asyncio.start_unix_server(handle, path=path)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
