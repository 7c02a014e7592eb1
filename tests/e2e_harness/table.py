"""The project side of the e2e-harness tier: the demo project, a real owner (`roundtable start`)
as a child process, a launch through `roundtable sessions launch`, and read-only queries of the
owner's database.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from roundtable.demo.workspace import SAMPLE_FILES
from roundtable.runtime import Runtime
from roundtable.scaffold import init_project
from roundtable.services.coordination.runs import create_run
from tests.support.owners import free_port

from .scripts import unified_patch

ROUNDTABLE = [sys.executable, "-m", "roundtable"]
CHANGED = "calc/ops.py"
TITLE = "Add mul()"
BEFORE = SAMPLE_FILES[CHANGED]
AFTER = BEFORE + "\n\ndef mul(a: int, b: int) -> int:\n    return a * b\n"
PATCH = unified_patch(CHANGED, BEFORE, AFTER)


def prepare_project(
    root: Path, socket_dir: Path, adapter: str, upstream: str = "", settings: dict[str, Any] | None = None
) -> None:
    """The demo project's files in a git repository with `roundtable init`'s starter config; its
    implementers on `adapter`, whose model API (the gateway's upstream) is `upstream`; the
    autopilot manual (only the test launches), a free port and a short socket path so nothing
    collides with an owner on the defaults; `settings` are top-level sections to set (budgets)."""
    root.mkdir(parents=True)
    for rel, text in SAMPLE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".roundtable/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-C", str(root)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "demo project"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    init_project(root)
    config = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["mcp"]["http_address"] = f"127.0.0.1:{free_port()}"
    data["mcp"]["socket_path"] = str(socket_dir / "s.sock")
    data["agents"]["implementers"]["adapter"] = adapter
    # These scripts drive roundtable's MCP tools (`test_shell_sessions` sets `shell`, the default).
    data.setdefault("sessions", {})["tools"] = "mcp"
    if upstream:
        data["adapters"][adapter]["upstream"] = upstream
    data.update(settings or {})
    if isinstance(data.get("autopilot"), dict):
        data["autopilot"]["mode"] = "manual"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def seed(root: Path) -> tuple[str, str]:
    """A run and a task assigned to implementer-1, recorded as the operator (before the owner starts)."""

    async def work() -> tuple[str, str]:
        runtime = await Runtime.open(root)
        try:
            run = await create_run(runtime, "Improve the calculator")
            task = await runtime.call(
                "task.create",
                {
                    "title": TITLE,
                    "body_md": f"Add `mul(a, b)` to `{CHANGED}`.",
                    "assigned_agent_id": "implementer-1",
                    "readable_paths": ["calc"],
                },
            )
            return run.id, str(task["task"]["id"])
        finally:
            await runtime.close()

    return asyncio.run(work())


def operator_env(home: Path, harness_bin: Path, extra: dict[str, str]) -> dict[str, str]:
    """The operator's environment: a private HOME, the harnesses on PATH, none of the caller's
    model keys or harness settings, plus `extra` (the operator's key for the stub)."""
    prefixes = ("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE_", "ROUNDTABLE_MCP_", "ROUNDTABLE_AGENT")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([str(harness_bin), env.get("PATH", os.defpath)])
    env.update(extra)
    return env


def rt(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*ROUNDTABLE, *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Owner:
    """`roundtable start` as a child process (HTTP, socket, Chair, supervisor)."""

    def __init__(self, root: Path, env: dict[str, str], stderr: Path) -> None:
        self._stderr = stderr.open("w")
        self.proc = subprocess.Popen(
            [*ROUNDTABLE, "start", "--root", str(root)], stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env
        )
        assert self.proc.stdout is not None
        # What it says before it is ready (recovered transactions, resumed sessions), then ready.
        self.said: list[str] = []
        while not self.said or "roundtable coordinator ready" not in self.said[-1]:
            line = self.proc.stdout.readline()
            assert line and len(self.said) < 50, "".join(self.said) + line + stderr.read_text()
            self.said.append(line)

    def kill(self) -> int:
        """SIGKILL, as a crash or the OOM killer ends it: nothing of its own shutdown runs."""
        self.proc.kill()
        self.proc.communicate(timeout=60)
        self._stderr.close()
        return self.proc.returncode

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
        self._stderr.close()
        return self.proc.returncode


def launch(root: Path, env: dict[str, str], agent_id: str, task_id: str) -> str:
    """`roundtable sessions launch`: the operator's request to the owner's supervisor."""
    out = rt(env, "sessions", "launch", "--agent", agent_id, "--task", task_id, "--root", str(root), "--json")
    return str(json.loads(out)["session"]["id"])


def query(root: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of the owner's database, read-only."""
    conn = sqlite3.connect(f"file:{root / '.roundtable' / 'roundtable.db'}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def wait_for_end(root: Path, session_id: str, timeout: float) -> str:
    """The session's final status (`ended` / `failed`), or its status when `timeout` passed."""
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        rows = query(root, "SELECT status FROM agent_sessions WHERE id = ?", (session_id,))
        status = str(rows[0]["status"]) if rows else ""
        if status in ("ended", "failed"):
            return status
        time.sleep(0.5)
    return status


def session_log(root: Path, session_id: str) -> str:
    path = root / ".roundtable" / "logs" / "sessions" / f"{session_id}.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


class KeyWatch:
    """While a session runs, from outside: every process of the session (its environment names
    the session) and every file of its own directory and workspace, searched for `secrets`. The
    search runs in a thread every few tenths of a second until `stop`."""

    def __init__(self, root: Path, session_id: str, secrets: tuple[str, ...]) -> None:
        self.root = root
        self.session_id = session_id
        self.secrets = tuple(s.encode() for s in secrets if s)
        self.processes: set[int] = set()
        self.files: set[str] = set()
        self.leaks: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="key-watch", daemon=True)
        self._thread.start()

    def _leaked(self, data: bytes) -> bool:
        return any(secret in data for secret in self.secrets)

    def _places(self) -> list[Path]:
        rows = query(self.root, "SELECT mcp_socket, metadata_json FROM agent_sessions WHERE id = ?", (self.session_id,))
        if not rows:
            return []
        places = [Path(rows[0]["mcp_socket"]).parent]
        workspace = json.loads(rows[0]["metadata_json"] or "{}").get("workspace")
        return places + ([Path(workspace)] if workspace else [])

    def _sweep(self) -> None:
        marker = f"ROUNDTABLE_SESSION_ID={self.session_id}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker in environ:
                self.processes.add(int(entry))
                if self._leaked(environ) or self._leaked(cmdline):
                    self.leaks.append(f"process {entry}: {cmdline[:200]!r}")
        for place in self._places():
            for dirpath, _dirs, names in os.walk(place):
                for name in names:
                    path = os.path.join(dirpath, name)
                    try:
                        if os.path.islink(path) or os.path.getsize(path) > 8 << 20:
                            continue
                        data = Path(path).read_bytes()
                    except OSError:
                        continue
                    self.files.add(path)
                    if self._leaked(data):
                        self.leaks.append(f"file {path}")

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            try:
                self._sweep()
            except (OSError, sqlite3.Error):
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def workspace_diff(ws: Path) -> str:
    """`git diff` of the workspace against its base (the worktree's HEAD), as a user runs it."""
    # As root the sandboxed harness runs as another uid and the workspace is its: say it is safe.
    git = ["git", "-c", "safe.directory=*", "-C", str(ws)]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    return subprocess.run([*git, "diff", "--cached"], check=True, capture_output=True, text=True).stdout
