"""Agent records: synchronised from the configuration whenever an owner or a run starts.

The configured team is `chair-1`, `architect-1`, `tester-1`,
`security-1`, `memory-oracle-1`, `implementer-1..N` and `reviewer-1..M`. Every configured agent
is written enabled and idle (a manually disabled one is re-enabled); a row that is no longer in
the configuration — say `implementer-3` after the pool shrank to 2 — is disabled but kept, so
history still names it and the Chair never schedules or assigns to it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundtable import clock
from roundtable.config import Config
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Agent

if TYPE_CHECKING:
    from roundtable.services.project import Project


@dataclass(frozen=True)
class AgentSpec:
    """One agent the configuration asks for."""

    id: str
    role: str
    name: str
    adapter: str
    command: str
    model: str


def configured_agents(config: Config) -> list[AgentSpec]:
    """The agents of `config`, in the reference's upsert order."""
    agents = config.agents

    def spec(agent_id: str, name: str, role: str, adapter: str, model: str) -> AgentSpec:
        command = config.adapters[adapter].command.strip() if adapter in config.adapters else ""
        return AgentSpec(agent_id, role, name, adapter, command, model)

    out = [
        spec("chair-1", "Chair 1", agents.chair.role, agents.chair.adapter, agents.chair.model),
        spec("architect-1", "Architect 1", agents.architect.role, agents.architect.adapter, agents.architect.model),
        spec("tester-1", "Tester 1", agents.tester.role, agents.tester.adapter, agents.tester.model),
        spec("security-1", "Security 1", agents.security.role, agents.security.adapter, agents.security.model),
        spec(
            "memory-oracle-1",
            "Memory Oracle 1",
            agents.memory_oracle.role,
            agents.memory_oracle.adapter,
            agents.memory_oracle.model,
        ),
    ]
    pool = agents.implementers
    out += [
        spec(f"implementer-{i}", f"Implementer {i}", "Implementer", pool.adapter, pool.model)
        for i in range(1, pool.count + 1)
    ]
    pool = agents.reviewers
    out += [
        spec(f"reviewer-{i}", f"Reviewer {i}", "Reviewer", pool.adapter, pool.model) for i in range(1, pool.count + 1)
    ]
    return out


async def sync_adapter_capabilities(tx: Tx, config: Config) -> None:
    """Upsert one `adapter_capabilities` row per configured adapter (rows are never deleted)."""
    for name, adapter in config.adapters.items():
        metadata = json.dumps(
            {"command": adapter.command, "resume_pattern": adapter.resume_pattern},
            separators=(",", ":"),
            sort_keys=True,
        )
        await tx.execute(
            "INSERT INTO adapter_capabilities (adapter, supports_resume, supports_mcp, supports_readonly_workspace,"
            " supports_session_capture, metadata_json) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(adapter) DO UPDATE SET supports_resume = excluded.supports_resume,"
            " supports_mcp = excluded.supports_mcp,"
            " supports_readonly_workspace = excluded.supports_readonly_workspace,"
            " supports_session_capture = excluded.supports_session_capture, metadata_json = excluded.metadata_json",
            (
                name,
                int(adapter.supports_resume),
                int(adapter.supports_mcp),
                int(adapter.supports_readonly_workspace),
                int(adapter.captures_session_id),
                metadata,
            ),
        )
    tx.tables.add("adapter_capabilities")


async def sync_agents_tx(tx: Tx, config: Config) -> list[str]:
    """Write the configured agents; disable rows no longer configured. Returns the disabled ids."""
    wanted = configured_agents(config)
    for agent in wanted:
        await tx.execute(
            "INSERT INTO agents (id, role, name, adapter, command, model, status, is_enabled, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'idle', 1, ?)"
            " ON CONFLICT(id) DO UPDATE SET role = excluded.role, name = excluded.name,"
            " adapter = excluded.adapter, command = excluded.command, model = excluded.model,"
            " status = 'idle', is_enabled = 1",
            (agent.id, agent.role, agent.name, agent.adapter, agent.command or None, agent.model or None, clock.now()),
        )
    keep = {a.id for a in wanted}
    rows = await tx.fetchall("SELECT id FROM agents WHERE is_enabled = 1")
    disabled = sorted(str(r[0]) for r in rows if str(r[0]) not in keep)
    for agent_id in disabled:
        await tx.update("agents", {"id": agent_id}, {"is_enabled": 0})
    tx.tables.add("agents")
    return disabled


async def sync_agents(runtime: Project) -> list[str]:
    """Synchronise adapter capabilities and agent rows from `runtime.config` (one transaction)."""
    async with runtime.db.write(tool="agents.sync") as tx:
        await sync_adapter_capabilities(tx, runtime.config)
        return await sync_agents_tx(tx, runtime.config)


async def get_agent(q: Reader | Tx, agent_id: str) -> Agent:
    agent = await q.get(Agent, agent_id)
    return agent


def _natural_key(agent_id: str) -> tuple[str, int, str]:
    match = re.match(r"^(.*?)(\d+)$", agent_id)
    if match:
        return (match.group(1), int(match.group(2)), agent_id)
    return (agent_id, 0, agent_id)


async def enabled_with_role(q: Reader | Tx, role: str) -> list[Agent]:
    """Enabled agents whose role equals `role` (case-insensitive), `implementer-2` before `implementer-10`."""
    agents = await q.all(Agent, "SELECT * FROM agents WHERE is_enabled = 1 AND lower(role) = lower(?)", (role,))
    return sorted(agents, key=lambda a: _natural_key(a.id))
