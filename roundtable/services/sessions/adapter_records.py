"""The `adapter_capabilities` table: what each built-in adapter supports (resume, MCP, a
read-only workspace, session-id capture), recorded when a project is initialised."""

from __future__ import annotations

import json

from roundtable.config import BUILTIN_ADAPTERS
from roundtable.store.db import Tx

_UPSERT = (
    "INSERT INTO adapter_capabilities (adapter, supports_resume, supports_mcp, "
    "supports_readonly_workspace, supports_session_capture, metadata_json) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(adapter) DO UPDATE SET "
    "supports_resume = excluded.supports_resume, supports_mcp = excluded.supports_mcp, "
    "supports_readonly_workspace = excluded.supports_readonly_workspace, "
    "supports_session_capture = excluded.supports_session_capture, "
    "metadata_json = excluded.metadata_json"
)


async def record_builtin(tx: Tx) -> list[str]:
    """Upsert one row per built-in adapter; returns the adapter names."""
    for name, adapter in BUILTIN_ADAPTERS.items():
        await tx.execute(
            _UPSERT,
            (
                name,
                int(adapter.supports_resume),
                int(adapter.supports_mcp),
                int(adapter.supports_readonly_workspace),
                int(adapter.captures_session_id),
                json.dumps({"command": adapter.command, "resume_pattern": adapter.resume_pattern}),
            ),
        )
    return sorted(BUILTIN_ADAPTERS)
