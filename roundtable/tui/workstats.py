"""The live work in agents' workspaces, for the Agents pane: a diffstat per agent.

Reading a workspace's diff runs git (`services.workspaces.worktrees.diffstat`), so the stats are computed
at most once per `interval` and reused by the refreshes in between.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable.services.workspaces import worktrees as workspaces

if TYPE_CHECKING:
    from roundtable.config import Config

INTERVAL = 10.0


def describe(stat: dict[str, Any]) -> str:
    """`2 files +10 -3`, `no changes`, or `refused: …` (a workspace git would not read)."""
    if stat.get("error"):
        return "refused: " + str(stat["error"])[:60]
    files = int(stat.get("files", 0))
    if not files:
        return "no changes"
    return f"{files} file{'s' if files != 1 else ''} +{stat.get('added', 0)} -{stat.get('deleted', 0)}"


class WorkStats:
    """agent id → the diffstat of its live workspace(s), refreshed at most every `interval` s."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.stats: dict[str, str] = {}
        self._at = -interval

    async def update(self, root: Path, db: Any, config: Config | None = None) -> dict[str, str]:
        if time.monotonic() - self._at < self.interval:
            return self.stats
        self._at = time.monotonic()
        async with db.read() as reader:
            live = await workspaces.listing(reader)
        out: dict[str, list[str]] = {}
        bounds = workspaces.bounds_of(config)
        for ws in live:
            out.setdefault(ws.agent_id, []).append(describe(await workspaces.diffstat(root, ws, bounds)))
        self.stats = {agent: "; ".join(texts) for agent, texts in out.items()}
        return self.stats
