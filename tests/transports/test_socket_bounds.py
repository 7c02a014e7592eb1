"""Out-of-range input on the legacy socket: integers past SQLite's 64-bit
range up to 5,000 digits, 5,000-character paths and keys, NaN/±Infinity, numbers out of float
range and nesting deep enough to break the parser. Every line gets one JSON reply naming the
problem — never a dropped connection, never "internal error" — the database is unchanged, and
the owner keeps serving. The owner runs the real tool registry on its own loop in a thread so
hypothesis can drive it with plain blocking clients."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable.owner import Owner
from roundtable.scaffold import init_project
from roundtable.store.schema import TABLES
from roundtable.tools.registry import INT_MAX, INT_MIN, get_registry

ALLOWED_ON_REFUSAL = {"claim_contentions"}  # a refused claim records why
FIVE_THOUSAND_DIGITS = "9" * 5000
MAX_DIGITS = "9" * 4300  # the longest integer Python converts by default: parsed, then out of range


class Background:
    """An owner (socket only, real registry, no Chair) on a private loop in a daemon thread."""

    def __init__(self, root: Path, sock: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.owner = Owner(root, http=False, socket_path=sock, chair=False)
        self.sock = sock
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(30)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with self.owner:
            self.ready.set()
            await self._stop.wait()

    def fingerprint(self) -> dict[str, str]:
        async def read() -> dict[str, str]:
            out = {}
            async with self.owner.runtime.db.read() as r:
                for table in TABLES:
                    if table not in ALLOWED_ON_REFUSAL:
                        rows = await r.fetchall(f"SELECT * FROM {table} ORDER BY 1")
                        out[table] = hashlib.sha256(repr([tuple(row) for row in rows]).encode()).hexdigest()
            return out

        return asyncio.run_coroutine_threadsafe(read(), self.loop).result(30)

    def close(self) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)


@pytest.fixture(scope="module")
def bg() -> Iterator[Background]:
    tmp = Path(tempfile.mkdtemp(prefix="rtb", dir="/tmp"))
    root = tmp / "p"
    root.mkdir()
    init_project(root)
    (root / "app.py").write_text("def main():\n    return 1\n")
    server = Background(root, tmp / "s.sock")
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def send_line(path: Path, line: bytes, timeout: float = 10.0) -> dict[str, Any]:
    """Send one request line; return the decoded reply. Fails if the server drops the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(str(path))
        client.sendall(line + b"\n")
        data = bytearray()
        while b"\n" not in data:
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.endswith(b"\n"), f"connection dropped without a reply (got {bytes(data[:200])!r})"
    reply = json.loads(data)
    assert isinstance(reply, dict)
    return reply


def request(tool: str, args_json: str) -> bytes:
    """A request line with `args_json` spliced in raw (json.dumps cannot write some of these)."""
    return f'{{"tool":"{tool}","args":{args_json}}}'.encode()


TASK = '"title":"t","body_md":"b"'
CASES = [
    pytest.param(
        request("table.watch", f'{{"after_event_id":{FIVE_THOUSAND_DIGITS}}}'),
        "invalid request: a number has 5000 digits (at most 4300)",
        id="5000-digit-int",
    ),
    pytest.param(
        request("table.watch", f'{{"after_event_id":{MAX_DIGITS}}}'),
        f"table.watch: argument after_event_id must be at most {INT_MAX}",
        id="4300-digit-int",
    ),
    pytest.param(
        request("task.create", f'{{{TASK},"priority":1{"0" * 30}}}'),
        f"task.create: argument priority must be at most {INT_MAX}",
        id="priority-1e30",
    ),
    pytest.param(
        request("memory.record", f'{{{TASK},"scope":"project","kind":"finding","importance":-1{"0" * 30}}}'),
        f"memory.record: argument importance must be at least {INT_MIN}",
        id="importance-minus-1e30",
    ),
    pytest.param(
        request("table.watch", f'{{"after_event_id":{INT_MAX + 1}}}'),
        f"table.watch: argument after_event_id must be at most {INT_MAX}",
        id="int64-max-plus-one",
    ),
    pytest.param(request("vote.cast", '{"confidence":NaN}'), "invalid request: NaN is not valid JSON", id="NaN"),
    pytest.param(
        request("vote.cast", '{"confidence":Infinity}'), "invalid request: Infinity is not valid JSON", id="Infinity"
    ),
    pytest.param(
        request("vote.cast", '{"confidence":-Infinity}'), "invalid request: -Infinity is not valid JSON", id="-Infinity"
    ),
    pytest.param(
        request("vote.cast", '{"confidence":1e999}'), "invalid request: number 1e999 is out of range", id="1e999"
    ),
    pytest.param(
        request("task.create", '{"title":' + "[" * 100_000 + "]" * 100_000 + "}"),
        "invalid request: nesting too deep",
        id="deep-arrays",
    ),
    pytest.param(
        request("task.create", '{"title":' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}"),
        "invalid request: nesting too deep",
        id="deep-objects",
    ),
    pytest.param(
        request("task.create", f"{{{TASK.replace(chr(34) + 't' + chr(34), '[' * 500 + ']' * 500)}}}"),
        "task.create: argument title must be a string",
        id="nesting-the-parser-accepts",
    ),
    pytest.param(
        request("repo.read_file", json.dumps({"path": "a" * 5000})),
        "repo.read_file: argument path is too long: 5000 characters, at most 4096 allowed",
        id="5000-char-path",
    ),
    pytest.param(
        request("repo.read_file", json.dumps({"path": "a/" * 2500})),
        "repo.read_file: argument path is too long: 5000 characters, at most 4096 allowed",
        id="5000-char-nested-path",
    ),
    pytest.param(
        request("task.get", json.dumps({"task_id": "t" * 129})),
        "task.get: argument task_id is too long: 129 characters, at most 128 allowed",
        id="129-char-id",
    ),
    pytest.param(
        request("table.get_state", json.dumps({"k" * 5000: 1})),
        f"table.get_state: unknown argument {'k' * 64}… (5000 characters) "
        "(allowed: agent_id, cursor, limit, lists, run_id, status, summary)",
        id="5000-char-key",
    ),
    pytest.param(
        request("task.create", json.dumps({"title": "t", "body_md": "b", "readable_paths": ["x"] * 10_001})),
        "task.create: argument readable_paths has too many items: 10001, at most 200 allowed",
        id="10001-items",
    ),
]


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_hostile_line_gets_a_clear_json_reply(bg: Background, line: bytes, expected: str) -> None:
    before = bg.fingerprint()
    started = time.monotonic()
    reply = send_line(bg.sock, line)
    assert time.monotonic() - started < 5
    assert reply["ok"] is False
    assert reply["error"] == expected
    assert bg.fingerprint() == before
    # The owner still serves an ordinary call on a fresh connection.
    assert send_line(bg.sock, request("table.get_state", "{}"))["ok"] is True


def test_request_over_the_line_cap_gets_a_reply(bg: Background) -> None:
    """A 16 MiB patch cannot travel the socket: the 1 MiB line cap answers first."""
    before = bg.fingerprint()
    reply = send_line(bg.sock, request("proposal.create", json.dumps({"patch": "p" * (2 << 20)})))
    assert reply == {"ok": False, "error": "request too large"}
    assert bg.fingerprint() == before


# --- every tool, every argument -----------------------------------------------------------

LINE_CAP = 1 << 20
# Internal operations do not exist for socket callers (`tool not implemented`): not theirs to bound.
TOOLS = [
    spec
    for spec in get_registry()
    if spec.handler is not None and spec.input_schema.get("properties") and spec.audience not in ("internal", "session")
]


def _hostile_literals(schema: dict[str, Any]) -> list[str]:
    """Raw JSON literals out of range for this argument's schema."""
    literals = [FIVE_THOUSAND_DIGITS, MAX_DIGITS, f"-{MAX_DIGITS}", "NaN", "Infinity", "-Infinity", "1e999"]
    literals += ["[" * 5000 + "]" * 5000, '{"a":' * 400 + "1" + "}" * 400]
    limit = schema.get("maxLength") or schema.get("items", {}).get("maxLength")
    if limit and limit + 100 < LINE_CAP:
        text = json.dumps("a" * (limit + 1))
        literals.append(text if schema.get("type") == "string" else f"[{text}]")
    if schema.get("type") == "integer":
        literals += [str(schema["maximum"] + 1), str(schema["minimum"] - 1)]
    return literals


def _args_text(spec: Any, key: str, literal: str) -> str:
    """Plausible required arguments (so the hostile one is what gets checked), `key` spliced raw."""
    parts = []
    for name in spec.input_schema.get("required", []):
        if name != key:
            prop = spec.input_schema["properties"][name]
            plain = {"integer": 1, "number": 0.5, "boolean": True, "array": []}.get(
                prop.get("type", ""), (prop.get("enum") or ["x"])[0]
            )
            parts.append(f"{json.dumps(name)}:{json.dumps(plain)}")
    parts.append(f"{json.dumps(key)}:{literal}")
    return "{" + ",".join(parts) + "}"


CASES_ALL = [
    (spec.name, key, _args_text(spec, key, literal))
    for spec in TOOLS
    for key, prop in spec.input_schema["properties"].items()
    for literal in _hostile_literals(prop)
]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)
@given(index=st.integers(0, len(CASES_ALL) - 1))
def test_every_tool_answers_out_of_range_values(bg: Background, index: int) -> None:
    tool, key, args_text = CASES_ALL[index]
    before = bg.fingerprint()
    reply = send_line(bg.sock, request(tool, args_text))
    label = f"{tool} {key} in {args_text[:80]}…"
    assert reply["ok"] is False, label
    error = reply["error"]
    assert "internal error" not in error, f"{label}: {error[:300]}"
    # The socket is the operator: the arguments are what is refused, by the decoder or the schema.
    assert error.startswith(("invalid request: ", f"{tool}: argument {key} ", f"{tool}: argument {key}[")), (
        f"{label}: {error[:300]}"
    )
    assert len(error) < 600, f"{label}: the reply echoes the value"
    assert bg.fingerprint() == before, f"{label}: refused but changed the database"


def test_sweep_of_every_tool_and_argument(bg: Background) -> None:
    """All of CASES_ALL, not a sample: each answered, and the database unchanged at the end."""
    before = bg.fingerprint()
    started = time.monotonic()
    for tool, key, args_text in CASES_ALL:
        reply = send_line(bg.sock, request(tool, args_text))
        error = reply.get("error", "")
        assert reply["ok"] is False and "internal error" not in error, f"{tool} {key}: {error[:300]}"
    assert bg.fingerprint() == before
    assert time.monotonic() - started < 120


@pytest.mark.anyio
async def test_socket_path_over_the_unix_limit_is_a_clear_error(project: Path) -> None:
    """bind() says only "AF_UNIX path too long" (no strerror: the owner used to print "None").
    Under pytest-xdist a project's default socket path grows past the limit, for instance."""
    from roundtable.server.socket import MAX_SOCKET_PATH, SocketError

    deep = Path("/tmp") / ("d" * 60) / ("e" * 60) / "rt.sock"
    assert len(str(deep)) > MAX_SOCKET_PATH
    with pytest.raises(SocketError, match=rf"^mcp socket path is {len(str(deep))} bytes, over the Unix limit of 107"):
        async with Owner(project, http=False, socket_path=deep, chair=False):
            pass
    assert not deep.parent.exists()  # refused before creating anything
