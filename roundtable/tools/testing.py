"""Tests and evidence: `test.suggest`, `test.run`, `test.get_result`, `test.evidence.submit`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, obj, result, string

TOOLS = [
    ToolSpec(
        name="test.get_result",
        description="Fetch one test run with its status and log path.",
        input_schema=obj({"test_run_id": string("Test run id, e.g. TR-...")}, ["test_run_id"]),
        output_schema=result({"test_run": RECORD}, required=["test_run"]),
        handler=not_implemented("test.get_result"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="test.run",
        description=(
            "Run an allowlisted test command (no shell: argv is split like a shell would, but "
            "pipes, redirects and substitutions are refused), with a timeout; the result is bound "
            "to the proposal's current revision."
        ),
        input_schema=obj(
            {
                "command": string("e.g. pytest -q tests/test_app.py"),
                "proposal_id": string("Proposal the run is evidence for."),
                "task_id": string("Task concerned."),
                "test_run_id": string("Explicit id (default: generated)."),
            },
            ["command"],
        ),
        output_schema={"type": "object"},
        handler=not_implemented("test.run"),
        mode="none",
    ),
    ToolSpec(
        name="test.suggest",
        description="Suggest test commands from the repository's own markers (pyproject, package.json, go.mod, Cargo.toml, Makefile).",
        input_schema=obj(
            {"proposal_id": string("Proposal to suggest tests for."), "task_id": string("Task concerned.")}
        ),
        output_schema={"type": "object"},
        handler=not_implemented("test.suggest"),
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="test.evidence.submit",
        description="Tester sessions: report a test you ran yourself. Stored as reported evidence, never counted as a pass.",
        input_schema=obj(
            {
                "proposal_id": string("Your session's proposal."),
                "command": string("The command you ran."),
                "outcome": string("passed, failed or inconclusive."),
                "summary_md": string("What you saw."),
            },
            ["proposal_id", "command", "outcome", "summary_md"],
        ),
        output_schema=result({"test_run": RECORD}, required=["test_run"]),
        handler=not_implemented("test.evidence.submit"),
        session_only=True,
    ),
]
