"""The real harnesses, from npm, against a project prepared only by `roundtable init`,
`roundtable connect … --agent implementer-1 (--approve | --trust)` and `roundtable start`:
Claude Code's `claude mcp list` reports the server Connected, and
Codex's `app-server` reports it connected with every advertised tool (`mcpServerStatus/list`).

Marked `real_client` and skipped unless selected (`pytest -m real_client tests/harness`): it
installs `@anthropic-ai/claude-code` and `@openai/codex` into a temporary directory (native
binaries; about 10 s from a warm npm cache), which `make test` should not pay. It skips with the
reason where npm is missing or the registry cannot be reached. No model key is needed: neither
check talks to a model. Everything runs with a private HOME, so the user's own Claude and Codex
settings are never read or written; `--trust` writes that private HOME's `.codex/config.toml`.

One deviation from a bare `init`: the project gets a free HTTP port and a short socket path, so
the test cannot collide with an owner already listening on the default 127.0.0.1:7117.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roundtable.tools.registry import get_registry
from tests.support.owners import free_port

from .npm_install import install_harnesses

pytestmark = pytest.mark.real_client
ROUNDTABLE = [sys.executable, "-m", "roundtable"]


@pytest.fixture(scope="module")
def harness_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`node_modules/.bin` of a temporary install of both CLIs."""
    return install_harnesses(tmp_path_factory.mktemp("harnesses"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def private_env(home: Path) -> dict[str, str]:
    """The environment a user would have, with HOME private and no model keys or Codex home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE_"))}
    env.pop("ROUNDTABLE_MCP_TOKEN", None)
    env["HOME"] = str(home)
    return env


def rt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*ROUNDTABLE, *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rt-h-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Owner:
    """`roundtable start` as a child process."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*ROUNDTABLE, "start", "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "roundtable coordinator ready" in line, line + (self.proc.stderr.read() if self.proc.stderr else "")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _err = self.proc.communicate(timeout=30)
        return out


class AppServer:
    """`codex app-server`: JSON-RPC over stdio, one message per line."""

    def __init__(self, binary: Path, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "app-server"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 90.0) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:
                break
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return dict(reply["result"])
        raise AssertionError(f"codex app-server: no answer to {method}")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def codex_server_status(binary: Path, root: Path, env: dict[str, str]) -> dict[str, Any]:
    """The `roundtable` entry of `mcpServerStatus/list` once Codex has started it."""
    server = AppServer(binary, root, env)
    try:
        server.request("initialize", {"clientInfo": {"name": "roundtable-test", "version": "1"}})
        server.notify("initialized")
        thread = server.request("thread/start", {"cwd": str(root), "ephemeral": True})["thread"]["id"]
        deadline = time.monotonic() + 60
        while True:
            listed = server.request("mcpServerStatus/list", {"threadId": thread})
            entry = next((s for s in listed.get("data", []) if s.get("name") == "roundtable"), None)
            if entry is not None and (entry.get("runtimeStatus") != "starting" or time.monotonic() > deadline):
                return entry
            assert entry is not None or time.monotonic() < deadline, listed
            time.sleep(1)
    finally:
        server.close()


def test_claude_code_and_codex_connect_to_a_project_set_up_by_roundtable(
    tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    env = private_env(home)
    root = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    rt(env, "init", "--root", str(root))
    cfg = root / ".roundtable" / "config.yaml"
    text = cfg.read_text().replace('"127.0.0.1:7117"', f'"127.0.0.1:{free_port()}"')
    cfg.write_text(text.replace("socket_path: .roundtable/mcp/roundtable.sock", f"socket_path: {socket_dir}/s.sock"))
    claude, codex = harness_bin / "claude", harness_bin / "codex"

    # Without the remaining steps each harness ignores the server, as connect says.
    said = rt(env, "connect", "claude", "--agent", "implementer-1", "--root", str(root)).stdout
    assert "rerun with --approve" in said
    said = rt(env, "connect", "codex", "--agent", "implementer-1", "--root", str(root)).stdout
    assert "rerun with --trust" in said
    untrusted = subprocess.run(
        [str(codex), "mcp", "list"], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert "roundtable" not in untrusted.stdout

    # The flags take them; nothing of the user's global state exists but the private HOME's.
    rt(env, "connect", "claude", "--agent", "implementer-1", "--approve", "--root", str(root))
    rt(env, "connect", "codex", "--agent", "implementer-1", "--trust", "--root", str(root))
    trusted = (home / ".codex" / "config.toml").read_text()
    assert f'[projects."{root.resolve()}"]' in trusted and 'trust_level = "trusted"' in trusted
    listed = subprocess.run([str(codex), "mcp", "list"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert "roundtable" in listed.stdout, listed.stdout + listed.stderr
    for harness_file in (root / ".mcp.json", root / ".codex" / "config.toml"):
        assert "rttok_" not in harness_file.read_text()  # no secret in any harness file

    owner = Owner(root, env)
    try:
        doctor = subprocess.run(
            [*ROUNDTABLE, "doctor", "--root", str(root)], capture_output=True, text=True, env=env, timeout=120
        )
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        claude_list = subprocess.run(
            [str(claude), "mcp", "list"], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        line = next((ln for ln in claude_list.stdout.splitlines() if ln.startswith("roundtable:")), "")
        assert "Connected" in line, claude_list.stdout + claude_list.stderr
        status = codex_server_status(codex, root, env)
        assert status["runtimeStatus"] == "connected", status
        tools = status.get("tools") or {}
        # Connected as implementer-1: every advertised tool but the operator's patch_apply/patch_reject.
        assert len(tools) == len(get_registry().exposed()) - 2 == 39
        assert "agent_turn_request" in tools
    finally:
        log = owner.stop()
    assert owner.proc.returncode == 0
    assert re.search(r"roundtable coordinator stopped", log)
