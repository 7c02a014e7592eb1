"""Files that used to exhaust the owner: FIFOs, sockets, devices, symlink
loops and huge sparse files. Every repository read (`repo.read_file`, `repo.symbols`,
`repo.search`) answers at once with a clear error (search: skips them), never blocks a worker
thread and never loads more than `repo.max_read_bytes`; the owner keeps serving other calls and
still shuts down promptly. Also the symbols result cap and the parse deadline."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.server.socket_client import call_socket
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.repo import read_regular_bytes

pytestmark = pytest.mark.anyio

BIG = 200 * 1024 * 1024  # sparse: costs no disk, but reading it would cost 200 MB of memory
QUICK = 2.0  # seconds; every refusal below takes milliseconds


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory: Unix socket paths are limited to ~108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="rth", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def hostile(project: Path, short_dir: Path) -> Iterator[Path]:
    """A project holding one of each hostile file type, plus an ordinary module."""
    (project / "ok.py").write_text("def fine():\n    return 'needle'\n")
    os.mkfifo(project / "pipe.py")
    with open(project / "huge.py", "wb") as handle:
        handle.truncate(BIG)
    os.symlink("loop.py", project / "loop.py")  # a link to itself
    os.symlink("b.py", project / "a.py")  # a two-link cycle
    os.symlink("a.py", project / "b.py")
    os.symlink("gone.py", project / "dangling.py")
    # A listening socket inside the project (bound in a short dir, then moved in by rename).
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(short_dir / "s"))
    listener.listen(1)
    os.rename(short_dir / "s", project / "sock.py")
    try:
        yield project
    finally:
        listener.close()


@pytest.fixture
async def rt(hostile: Path) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(hostile)
    try:
        yield runtime
    finally:
        await runtime.close()


HOSTILE = [
    ("pipe.py", "not a regular file (a FIFO)"),
    ("sock.py", "not a regular file (a socket)"),
    ("loop.py", "not a regular file (a symbolic link)"),
    ("a.py", "not a regular file (a symbolic link)"),
    ("dangling.py", "no such file or directory"),
    ("huge.py", f"file is {BIG} bytes, over the read limit of 1048576 bytes (repo.max_read_bytes)"),
]


@pytest.mark.parametrize(("tool", "verb"), [("repo.read_file", "read"), ("repo.symbols", "read file")])
@pytest.mark.parametrize(("path", "message"), HOSTILE, ids=[p for p, _ in HOSTILE])
async def test_hostile_file_is_a_quick_clear_error(rt: Runtime, tool: str, verb: str, path: str, message: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        await asyncio.wait_for(rt.call(tool, {"path": path}), 10)
    assert time.monotonic() - started < QUICK
    assert str(info.value).startswith(f"{verb} {path}: {message}")
    # The runtime still serves ordinary reads right after.
    assert (await rt.call(tool, {"path": "ok.py"})) is not None


async def test_search_skips_hostile_files_quickly(rt: Runtime) -> None:
    started = time.monotonic()
    out = await asyncio.wait_for(rt.call("repo.search", {"query": "needle"}), 10)
    assert time.monotonic() - started < QUICK
    assert out == {"matches": [{"path": "ok.py", "line": 2, "content": "    return 'needle'"}], "truncated": False}
    for path, _ in HOSTILE:  # narrowed to the hostile file itself: skipped, not blocked, not an error
        started = time.monotonic()
        assert (await asyncio.wait_for(rt.call("repo.search", {"query": "x", "path": path}), 10))["matches"] == []
        assert time.monotonic() - started < QUICK


def test_bounded_read_refuses_devices_and_links_without_opening(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^read zero: not a regular file \(a character device\)$"):
        read_regular_bytes("/dev/zero", "zero", 1024)
    os.symlink(tmp_path / "target", tmp_path / "link")
    (tmp_path / "target").write_text("x")
    # The caller passes a resolved path; a symlink there (swapped in after the guard) is refused.
    with pytest.raises(ToolError, match=r"^read link: not a regular file \(a symbolic link\)$"):
        read_regular_bytes(tmp_path / "link", "link", 1024)
    with pytest.raises(ToolError, match=r"^read d: is a directory$"):
        read_regular_bytes(tmp_path, "d", 1024)
    assert read_regular_bytes(tmp_path / "target", "target", 1) == b"x"


def test_bounded_read_stops_at_the_cap_when_the_size_lies() -> None:
    """A /proc file reports size 0 but has content: the read stops at cap + 1 bytes."""
    assert os.stat("/proc/self/maps").st_size == 0
    with pytest.raises(
        ToolError, match=r"^read maps: file is over the read limit of 16 bytes \(repo.max_read_bytes\)$"
    ):
        read_regular_bytes("/proc/self/maps", "maps", 16)


async def test_owner_keeps_serving_and_stops_promptly(hostile: Path, short_dir: Path) -> None:
    """Many concurrent hostile calls over the real socket: each answers, an ordinary call still
    answers within a second, and the owner shuts down promptly (no worker thread is stuck)."""
    sock = short_dir / "mcp.sock"
    owner = Owner(hostile, http=False, socket_path=sock, chair=False)
    await owner.__aenter__()
    try:
        calls = [
            (tool, {"path": path})
            for _ in range(10)
            for tool in ("repo.read_file", "repo.symbols")
            for path in ("pipe.py", "huge.py", "loop.py", "sock.py")
        ]
        started = time.monotonic()
        replies = await asyncio.gather(
            *(asyncio.to_thread(call_socket, sock, tool, args, read_timeout=10) for tool, args in calls)
        )
        assert time.monotonic() - started < 10
        for reply in replies:
            assert reply["ok"] is False and "read" in reply["error"]
        started = time.monotonic()
        reply = await asyncio.to_thread(call_socket, sock, "repo.symbols", {"path": "ok.py"}, read_timeout=5)
        assert time.monotonic() - started < 1.0
        assert reply["ok"] is True and [s["name"] for s in reply["result"]["symbols"]] == ["fine"]
    finally:
        started = time.monotonic()
        await asyncio.wait_for(owner.__aexit__(None, None, None), 15)
        assert time.monotonic() - started < 10


async def test_symbols_result_is_capped_and_says_so(runtime: Runtime) -> None:
    count = symbol_index.MAX_SYMBOLS + 5
    (runtime.root / "many.py").write_text("".join(f"def f{i}(): pass\n" for i in range(count)))
    out = await runtime.call("repo.symbols", {"path": "many.py"})
    assert out["truncated"] is True
    assert len(out["symbols"]) == symbol_index.MAX_SYMBOLS
    assert out["symbols"][0]["name"] == "f0" and out["symbols"][-1]["name"] == f"f{symbol_index.MAX_SYMBOLS - 1}"
    (runtime.root / "few.py").write_text("def a(): pass\n")
    assert (await runtime.call("repo.symbols", {"path": "few.py"}))["truncated"] is False


def test_parse_gives_up_after_the_deadline() -> None:
    """Python source parsed as TypeScript: tree-sitter's error recovery takes seconds on 1 MiB."""
    data = "".join(f"def f{i}(): pass\n" for i in range(70_000)).encode()[: 1 << 20]
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"^parse typescript file x\.ts: gave up after 0\.5 s; the file is too large"):
        symbol_index.index_source("x.ts", data, parse_seconds=0.5)
    assert time.monotonic() - started < 3.0


async def test_read_cap_follows_configuration(project: Path) -> None:
    """`repo.max_read_bytes` bounds symbols the same way it bounds read_file."""
    config = project / ".roundtable" / "config.yaml"
    config.write_text(config.read_text().replace("max_read_bytes: 1048576", "max_read_bytes: 64"))
    (project / "mod.py").write_text("def f():\n    return 1\n" * 10)
    runtime = await Runtime.open(project)
    try:
        assert runtime.config.repo.max_read_bytes == 64
        with pytest.raises(ToolError, match=r"^read file mod\.py: file is 220 bytes, over the read limit of 64 bytes"):
            await runtime.call("repo.symbols", {"path": "mod.py"})
    finally:
        await runtime.close()
