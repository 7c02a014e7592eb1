"""The one way roundtable runs a short-lived child process: an argv (never a shell), stdin fed,
output captured (or streamed to a sink), a timeout, and the child killed and reaped on timeout or
cancellation — no caller can leave a process behind.

Used by git (`services.repository.git.exec_git`), test commands (`services.testing.test_exec`), the sandbox probes
(`sandbox.runner`) and its probes. Long-lived supervised
sessions are the supervisor's own (they stream, heartbeat and outlive a call). This module
imports nothing of roundtable, so the small sandbox package may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

READ_CHUNK = 64 * 1024
REAP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Completed:
    """How a child ended: its exit status (`None` if it could not be reaped), its output (empty
    when streamed to a sink) and whether the timeout killed it."""

    code: int | None
    out: bytes
    err: bytes
    timed_out: bool = False


async def run(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | str | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = False,
    new_group: bool = False,
    preexec_fn: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    sink: Callable[[bytes], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> Completed:
    """Run `argv` to completion or `timeout` seconds. `new_group` starts it in its own process
    group and kills the whole group (its background children too) when it is stopped — and,
    for a sink, once it exits. `sink` receives stdout (stderr merged) chunk by chunk instead of
    capturing it. `pass_fds` are descriptors the child inherits. Raises `OSError` when the program cannot start; a timeout is a result."""
    streamed = sink is not None
    extra: dict[str, object] = {}
    if new_group:
        extra["start_new_session"] = True
    if preexec_fn is not None:
        extra["preexec_fn"] = preexec_fn
    if pass_fds:
        extra["pass_fds"] = tuple(pass_fds)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=None if cwd is None else str(cwd),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if (merge_stderr or streamed) else asyncio.subprocess.PIPE,
        env=None if env is None else dict(env),
        **extra,  # type: ignore[arg-type]
    )
    if on_start is not None:
        on_start(proc.pid)

    async def stream() -> tuple[bytes, bytes]:
        assert proc.stdout is not None and sink is not None
        while chunk := await proc.stdout.read(READ_CHUNK):
            sink(chunk)
        await proc.wait()
        return b"", b""

    try:
        out, err = await asyncio.wait_for(stream() if streamed else proc.communicate(stdin), timeout)
    except TimeoutError:
        await _stop(proc, new_group)
        return Completed(proc.returncode, b"", b"", timed_out=True)
    except BaseException:  # cancelled (client gone, shutdown): leave no process behind
        with contextlib.suppress(BaseException):
            await asyncio.shield(_stop(proc, new_group))
        raise
    if new_group:
        _kill(proc, new_group)  # background processes it left behind die with its group
    return Completed(proc.returncode, out or b"", err or b"")


def _kill(proc: asyncio.subprocess.Process, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()


async def _stop(proc: asyncio.subprocess.Process, group: bool) -> None:
    _kill(proc, group)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), REAP_TIMEOUT_S)
