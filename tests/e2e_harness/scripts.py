"""What the stubbed model does in an implementer session: the turn protocol around one change.

request a turn → start it (after `table_watch` long polls while the Chair has not scheduled it) →
edit the file with the harness's own tools → propose the workspace's diff → complete the turn →
a final answer. Each step is decided from the tool calls already made and their results, so a
failed call ends the session with an answer that names it (the test then shows it) instead of
repeating blindly.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

from .model_stub import Answer, Exchange, Script, Step, ToolCall

# How many times the model asks again for a turn the Chair has not scheduled yet (each after a
# `table_watch` long poll of up to 2 s).
START_ATTEMPTS = 30


def unified_patch(path: str, before: str, after: str) -> str:
    """A `git apply`-able diff of one file."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def request_event_id(result: str) -> int:
    """`request_event_id` from a tool result's JSON text (0 when absent)."""
    try:
        value = json.loads(result)
    except ValueError:
        value = None
    if isinstance(value, dict):
        inner = value.get("structuredContent", value)
        if isinstance(inner, dict) and isinstance(inner.get("request_event_id"), int):
            return int(inner["request_event_id"])
    found = re.search(r'"?request_event_id"?\s*:\s*(\d+)', result)  # JSON or the YAML agents get
    return int(found.group(1)) if found else 0


def claude_edit(ws: Path, path: str, old: str, new: str) -> list[ToolCall]:
    """Claude Code's own edit of `path` in workspace `ws`: Read, then Edit (it refuses an Edit of
    a file it has not read)."""
    file_path = str(ws / path)
    return [
        ToolCall("Read", {"file_path": file_path}),
        ToolCall("Edit", {"file_path": file_path, "old_string": old, "new_string": new}),
    ]


def codex_edit(ws: Path, path: str, old: str, new: str) -> list[ToolCall]:
    """Codex's own edit of `path` (relative to its working directory, the workspace): `new` is
    `old` with lines added at its end, written in Codex's patch format (the last line of the file
    as context). Codex applies an `apply_patch` command itself (its own patch tool), not through a
    shell."""
    context = old.rstrip("\n").splitlines()[-1]
    added = new[len(old) :].splitlines()
    body = "\n".join([" " + context, *("+" + line for line in added)])
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n{body}\n*** End Patch\n"
    return [ToolCall("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})]


def _ok(history: list[Exchange], tool: str) -> Exchange | None:
    return next((e for e in history if e.tool == tool and not e.is_error), None)


def implementer(edit: list[ToolCall], title: str) -> Script:
    """The implementer's script for one change made in its workspace with the harness's own
    tools (`edit`: Claude Code's Read and Edit, Codex's `apply_patch`), then proposed."""

    def script(history: list[Exchange]) -> Step:
        last = history[-1] if history else None
        requested = _ok(history, "agent_turn_request")
        if requested is None:
            if last is not None:
                return Answer(f"FAILED agent_turn_request: {last.result}")
            return ToolCall("agent_turn_request", {"reason_md": f"implement: {title}"})
        request_id = request_event_id(requested.result)
        if _ok(history, "agent_turn_start") is None:
            starts = sum(1 for e in history if e.tool == "agent_turn_start")
            if starts >= START_ATTEMPTS:
                return Answer(f"FAILED agent_turn_start: {last.result if last else ''}")
            if last is not None and last.tool == "agent_turn_start":
                return ToolCall("table_watch", {"after_event_id": request_id, "limit": 50, "wait_ms": 2000})
            return ToolCall("agent_turn_start", {"request_event_id": request_id})
        for step in (
            *edit,
            # The session's capability names its task: workspace_propose claims what the diff
            # touches and records it as a proposal.
            ToolCall("workspace_propose", {"title": title, "summary_md": f"{title}."}),
            ToolCall("agent_turn_complete", {"request_event_id": request_id}),
        ):
            if _ok(history, step.tool) is None:
                if last is not None and last.tool == step.tool:
                    return Answer(f"FAILED {step.tool}: {last.result}")
                return step
        return Answer("Done: edited, proposed and completed the turn.")

    return script


def in_order(steps: list[ToolCall], done: str) -> Script:
    """Make `steps` one after another, each once it is not yet done; a failed step ends the
    session with an answer naming it; then answer `done`."""

    def script(history: list[Exchange]) -> Step:
        last = history[-1] if history else None
        if last is not None and last.is_error:
            return Answer(f"FAILED {last.tool}: {last.result}")
        made = len(history)
        if made < len(steps):
            return steps[made]
        return Answer(done)

    return script


class Switch:
    """A script that can be replaced between sessions (the stub outlives them)."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def __call__(self, history: list[Exchange]) -> Step:
        return self.script(history)
