"""Expiry is final: the supervisor's heartbeat keeps a live session's
capability fresh, but never revives one that expired — the session then has no authority."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.sessions import adapters, capabilities
from roundtable.services.sessions.records import LaunchArgs
from roundtable.store.records import SessionCapability
from roundtable.supervisor import start_supervisor
from tests.helpers import eventually
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio


async def capability(runtime: Runtime, cap_id: str) -> SessionCapability:
    async with runtime.db.read() as r:
        return await r.get(SessionCapability, cap_id)


async def last_seen(runtime: Runtime, session_id: str) -> str:
    async with runtime.db.read() as r:
        return str(await r.scalar("SELECT last_seen_at FROM agent_sessions WHERE id = ?", (session_id,)) or "")


async def _later(runtime: Runtime, session_id: str, than: str) -> bool:
    return await last_seen(runtime, session_id) > than


async def test_heartbeat_never_revives_an_expired_capability(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path, heartbeat_interval=0.05)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=("import time; time.sleep(30)",),
        )
        session_id = res["session"]["id"]
        cap_id = sup.live[session_id].capability_id
        # While live, the heartbeat extends it.
        async with runtime.db.write() as tx:
            soon = clock.format_ns(clock.now_ns() + 2 * 10**9)
            await tx.update("session_capabilities", {"id": cap_id}, {"expires_at": soon})

        async def extended() -> bool:
            return clock.parse((await capability(runtime, cap_id)).expires_at) > clock.parse(soon)

        await eventually(extended, what="a heartbeat to extend the capability")
        # Once expired, heartbeats leave it expired.
        expired = clock.now()
        async with runtime.db.write() as tx:
            await tx.update("session_capabilities", {"id": cap_id}, {"expires_at": expired})
        # Two heartbeats after the expiry (each touches the session's `last_seen_at`).
        for _ in range(2):
            seen = await last_seen(runtime, session_id)
            await eventually(lambda seen=seen: _later(runtime, session_id, seen), what="a heartbeat")  # type: ignore[misc]
        cap = await capability(runtime, cap_id)
        assert cap.expires_at == expired and not capabilities.is_live(cap)
        assert session_id in sup.live  # the process was still heartbeated throughout
    finally:
        await sup.close()
