"""Tool names in texts for agents are the names clients are given: descriptions,
the manifest, tools.schema.json and AGENTS.ROUNDTABLE.md, all rendered from the registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

from roundtable.assets import write_assets
from roundtable.config import load_config
from roundtable.tools.registry import get_registry, render_tool_names

DOTTED = [spec.name for spec in get_registry()]


def dotted_tool_names(text: str) -> set[str]:
    return {name for name in DOTTED if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w|\.\w)", text)}


def test_render_tool_names_both_ways_and_leaves_events_alone() -> None:
    text = "call agent.turn_request, then wait for agent.turn_scheduled; test.evidence.submit; x.task.create"
    under = render_tool_names(text, "underscore")
    assert under == "call agent_turn_request, then wait for agent.turn_scheduled; test_evidence_submit; x.task.create"
    assert render_tool_names(under, "dotted") == (
        "call agent.turn_request, then wait for agent.turn_scheduled; test.evidence.submit; x.task.create"
    )
    assert render_tool_names("mcp__roundtable__agent_turn_request", "dotted") == "mcp__roundtable__agent_turn_request"


def test_descriptions_name_tools_as_clients_see_them() -> None:
    registry = get_registry()
    for spec in registry:
        assert dotted_tool_names(spec.description) == set(), spec.name  # what tools/list serves
    turn = registry.lookup("agent.turn_start")
    assert turn is not None and "agent.turn_scheduled" in turn.description  # an event, not a tool
    suggest = registry.lookup("test.suggest")
    assert suggest is not None and "test_run" in suggest.description
    assert "test.run" in suggest.description_for("dotted")


def test_scaffold_and_assets_use_the_configured_spelling(project: Path) -> None:
    agents = (project / "AGENTS.ROUNDTABLE.md").read_text()
    manifest = (project / ".roundtable/mcp/AGENT_MCP_MANIFEST.md").read_text()
    schema = json.loads((project / ".roundtable/mcp/tools.schema.json").read_text())
    for text in (agents, manifest, *(t["description"] for t in schema["tools"])):
        assert dotted_tool_names(text) == set()
    assert "`agent_turn_request`" in agents and "mcp__roundtable__<name>" in agents
    assert "`table_get_state`" in manifest and "agent.turn_scheduled" in manifest
    cfg = project / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("tool_names: underscore", "tool_names: dotted"))
    write_assets(project, load_config(project))
    manifest = (project / ".roundtable/mcp/AGENT_MCP_MANIFEST.md").read_text()
    assert "`agent.turn_request`" in manifest and "agent_turn_request" not in manifest
