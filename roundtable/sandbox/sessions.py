"""How a supervised session's process is started: in the default-deny sandbox (profile
`session`), or — only where the operator opted in — as a plain subprocess.

`choose` picks once per supervisor: bubblewrap when it works, else the Landlock launcher (the
same mount list either way; see `layout.py`). Where neither works, a launch is refused with the
reason unless the configuration says `sessions.allow_unsandboxed: true`; then sessions run as
plain subprocesses and the reason is recorded with each session (`isolation: subprocess`).

`ROUNDTABLE_SESSION_ISOLATION=auto|bwrap|landlock|subprocess` overrides `sessions.sandbox`
(`subprocess` still needs the opt-in).

Inside the sandbox a session sees: the system directories, its interpreter and roundtable's own
package (the stdio bridge), the harness's install directory, `sessions.read_paths`, its working
directory (its workspace) and its own directory (private HOME, its MCP socket, its gateway
socket) writable, a private `/tmp`, and no network but a loopback of its own: there the sandbox's
init relays `127.0.0.1:GATEWAY_PORT` to the session's gateway socket, so the harness's model API
and its HTTP(S) proxy are `http://127.0.0.1:GATEWAY_PORT`. The project's working tree, its
`.roundtable/`, the legacy socket, the home, other projects and the host's network (its loopback
included) do not exist there.

The environment is never put on a command line: the launcher and the sandbox inherit the
session's scrubbed environment, so the token stays out of every argv.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roundtable.sandbox import runner
from roundtable.sandbox.spec import Spec

ENV_VAR = "ROUNDTABLE_SESSION_ISOLATION"
MODES = ("auto", "bwrap", "landlock", "subprocess")
SUBPROCESS = "subprocess"
OPT_IN = "sessions.allow_unsandboxed: true"
# Where a sandboxed session finds the gateway, on its own loopback (outside Linux's ephemeral
# range, so a port the session's own programs bind never takes it).
GATEWAY_PORT = 4780


class LaunchRefused(Exception):
    """No sandbox works for sessions and the operator has not opted in to running them bare."""


@dataclass(frozen=True)
class Launcher:
    """The chosen way to start session processes; `kind` is recorded as the session's isolation
    (`bwrap`, `landlock`, `subprocess`, or `none` when launches are refused)."""

    kind: str
    reason: str  # why this one and not a stronger one ("" when nothing was passed over)
    sandbox: runner.Sandbox | None = None

    @property
    def usable(self) -> bool:
        return self.kind != runner.NONE

    def describe(self) -> str:
        """One line for `start`'s log and `doctor`."""
        if self.sandbox is not None:
            return self.sandbox.describe()
        if self.kind == SUBPROCESS:
            return f"subprocess — UNSANDBOXED, agents run with the owner's rights ({self.reason})"
        return f"none — launches are refused ({self.reason})"

    def refusal(self) -> str:
        return (
            f"no sandbox works for agent sessions here ({self.reason}); install bubblewrap or enable "
            f"unprivileged user namespaces and Landlock, or set {OPT_IN} in .roundtable/config.yaml to run "
            "agents unconfined"
        )

    def spec(
        self,
        argv: list[str],
        *,
        workdir: Path,
        session_dir: Path,
        root: Path,
        socket_dir: Path | None,
        search_path: str,
        read_paths: Sequence[str] = (),
        max_processes: int = 0,
        gateway_socket: Path | None = None,
    ) -> Spec | None:
        """The sandbox spec for `argv` (None for a plain subprocess). A program missing from the
        session's PATH is raised as a failed exec here: inside, it would only be status 127."""
        if self.sandbox is None:
            return None
        if not argv or shutil.which(argv[0], path=search_path) is None:
            program = argv[0] if argv else ""
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        return runner.build_spec(
            self.sandbox.kind,
            argv,
            workdir,
            root=root,
            profile="session",
            socket_dir=socket_dir,
            max_processes=max_processes,
            read_paths=read_paths,
            writable=[str(session_dir)],
            search_path=search_path,
            executable=self.sandbox.executable,
            bwrap_size=self.sandbox.bwrap_size,
            gateway_socket=str(gateway_socket or ""),
            gateway_port=GATEWAY_PORT if gateway_socket is not None else 0,
        )


def requested_mode(configured: str, environ: dict[str, str] | None = None) -> str:
    """`ROUNDTABLE_SESSION_ISOLATION` if set, else the configured `sessions.sandbox`."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "").strip().lower()
    mode = raw or configured or "auto"
    if mode not in MODES:
        raise ValueError(f"{ENV_VAR} must be one of {', '.join(MODES)} (got {env.get(ENV_VAR)!r})")
    return mode


async def choose(mode: str, *, allow_unsandboxed: bool) -> Launcher:
    """The launcher for `mode`; kind `none` (launches refused) when no sandbox works and the
    operator has not opted in."""
    if mode not in MODES:
        raise ValueError(f"session isolation must be one of {', '.join(MODES)} (got {mode!r})")
    if mode == SUBPROCESS:
        why = f"{ENV_VAR}=subprocess"
        if allow_unsandboxed:
            return Launcher(SUBPROCESS, why)
        return Launcher(runner.NONE, f"{why} without {OPT_IN}")
    sandbox = await runner.choose(mode)
    if sandbox.usable:
        return Launcher(sandbox.kind, sandbox.reason, sandbox)
    if allow_unsandboxed:
        return Launcher(SUBPROCESS, f"{OPT_IN}; {sandbox.reason}")
    return Launcher(runner.NONE, sandbox.reason)


class LoopbackRelay:
    """For a session that runs as a plain subprocess (no network namespace of its own): a
    listener on the host's `127.0.0.1` (an ephemeral port) relaying each connection byte for byte
    to the session's gateway socket, as the sandbox's init does inside. Any local user can connect
    to it, but the gateway's model APIs still want the session's token."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._links.add(task)
        try:
            try:
                far_reader, far_writer = await asyncio.open_unix_connection(str(self.socket_path))
            except OSError:
                return
            try:
                await asyncio.gather(_copy(reader, far_writer), _copy(far_reader, writer))
            finally:
                far_writer.close()
        finally:
            writer.close()
            self._links.discard(task)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._links):
            task.cancel()
        for task in list(self._links):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from `reader` to `writer` as they come, then end `writer`'s side."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()
