"""Fixtures for the sandbox tests: each test runs in both kinds (bubblewrap skipped where it is
not installed or does not work), on a scratch directory outside a fake project whose
`.roundtable/` holds a database, a config, a credential and a listening legacy socket."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from roundtable.sandbox import runner
from roundtable.services.testing import test_exec

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
SECRET = "s3cr3t-credential-value"


@dataclass
class Place:
    root: Path  # the fake project
    workdir: Path  # the scratch directory the command runs in
    socket_path: Path


def _private_parent() -> str:
    """A parent outside /tmp and the home when possible, so hiding the project root is tested by
    itself and not only through the private /tmp."""
    for candidate in ("/var/tmp", tempfile.gettempdir()):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return candidate
    return tempfile.gettempdir()


@pytest.fixture
def place() -> Iterator[Place]:
    root = Path(tempfile.mkdtemp(prefix="rt-sandbox-project-", dir=_private_parent()))
    os.chmod(root, 0o755)  # readable by the sandbox's user (nobody) when the tests run as root
    work = Path(tempfile.mkdtemp(prefix="rt-sandbox-work-"))
    state = root / ".roundtable"
    (state / "credentials").mkdir(parents=True)
    (state / "mcp").mkdir()
    (state / "roundtable.db").write_text("SQLite format 3 (fake)", encoding="utf-8")
    (state / "config.yaml").write_text("mcp: {}\n", encoding="utf-8")
    (state / "credentials" / "operator").write_text(SECRET, encoding="utf-8")
    (root / "app.py").write_text("print('project')\n", encoding="utf-8")
    sock_path = state / "mcp" / "roundtable.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(8)
    try:
        yield Place(root, work, sock_path)
    finally:
        server.close()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


async def run(
    kind: str,
    place: Place,
    argv: list[str],
    *,
    timeout: float = 30.0,
    memory_mb: int = 1024,
    max_processes: int = 256,
    read_paths: tuple[str, ...] = (),
) -> test_exec.Execution:
    """Run `argv` in the sandbox `kind` on the place's scratch directory."""
    sandbox = await runner.choose(kind)
    assert sandbox.kind == kind, sandbox.reason
    spec = runner.build_spec(
        kind,
        argv,
        place.workdir,
        root=place.root,
        socket_dir=place.socket_path.parent,
        memory_bytes=memory_mb * 1024 * 1024,
        max_processes=max_processes,
        read_paths=read_paths,
        executable=sandbox.executable,
        bwrap_size=sandbox.bwrap_size,
    )
    return await test_exec.execute(argv, place.workdir, timeout=timeout, spec=spec)
