"""security.review: the automatic scan of the current revision, manual reviews and who may
record them, all bound to the revision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.governance.security_scan import scan_patch
from roundtable.tools.context import OPERATOR

from .conftest import AGENT, add_lines_patch, count, events, make_proposal, session_caller

pytestmark = pytest.mark.anyio


async def _scan(rt: Runtime, patch: str) -> dict[str, object]:
    pid = await make_proposal(rt, patch)
    return await rt.call("security.review", {"proposal_id": pid}, AGENT)


async def test_clean_patch_is_approved_and_bound_to_revision(rt: Runtime) -> None:
    out = await _scan(rt, add_lines_patch("app.py", ["def sub(a, b):", "    return format(a - b)  # mvn"]))
    review = out["review"]
    assert review["status"] == "approved"
    assert review["summary_md"] == "Security review completed with no blocking findings."
    assert out["findings"] == []
    assert review["findings_json"] == "[]"
    assert review["reviewer_id"] == "security"
    async with rt.db.read() as r:
        current = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (review["proposal_id"],))
    assert review["revision"] == current and len(current) == 64
    [event] = await events(rt, "security.reviewed")
    assert event["payload"]["automatic"] is True and event["actor_id"] == "reviewer-1"


async def test_secret_in_added_line_vetoes(rt: Runtime) -> None:
    out = await _scan(rt, add_lines_patch("app.py", ['DB_PASSWORD = "s3cr3t-hunter2"']))
    assert out["review"]["status"] == "veto"
    assert out["review"]["summary_md"] == "Security review vetoed the proposal due to critical findings."
    [finding] = out["findings"]
    assert finding == {
        "code": "hardcoded_secret",
        "severity": "critical",
        "message": "Added line assigns a literal value to a credential (password, secret, token or key).",
        "path": "app.py",
        "line": 3,
    }
    # The secret itself is not copied anywhere.
    assert "hunter2" not in out["review"]["findings_json"]


async def test_private_key_and_token_shapes(rt: Runtime) -> None:
    patch = add_lines_patch(
        "keys.txt",
        ["-----BEGIN OPENSSH PRIVATE KEY-----", "aws = AKIAABCDEFGHIJKLMNOP"],
        new_file=True,
    )
    out = await _scan(rt, patch)
    codes = {(f["code"], f["line"]) for f in out["findings"]}
    assert codes == {("private_key", 1), ("access_token", 2)}
    assert out["review"]["status"] == "veto"


async def test_dangerous_command_and_call_need_changes(rt: Runtime) -> None:
    out = await _scan(rt, add_lines_patch("app.py", ["import os", "os.system('rm -rf build')"]))
    assert out["review"]["status"] == "needs_changes"
    found = {(f["code"], f["message"]) for f in out["findings"]}
    assert ("dangerous_command", 'Added content references dangerous command pattern "rm".') in found
    assert ("dangerous_call", "Added content calls os.system(), which can run arbitrary code or commands.") in found
    assert all(f["severity"] == "high" and f["path"] == "app.py" and f["line"] == 4 for f in out["findings"])


async def test_sensitive_path_needs_changes(rt: Runtime) -> None:
    out = await _scan(rt, add_lines_patch(".env.local", ["DEBUG=1"], new_file=True))
    assert out["review"]["status"] == "needs_changes"
    assert [(f["code"], f["severity"], f["path"]) for f in out["findings"]] == [
        ("sensitive_path", "high", ".env.local"),
        ("high_risk_path", "info", ".env.local"),  # policy risk.high_paths: informs, never blocks
    ]


async def test_policy_dangerous_commands_are_used(repo: Path) -> None:
    (repo / "POLICIES.ROUNDTABLE.md").write_text(
        "# Policy\n\n```yaml\ncommands:\n  dangerous:\n    - terraform destroy\n```\n", encoding="utf-8"
    )
    rt = await Runtime.open(repo)
    try:
        assert "terraform destroy" in rt.policy.dangerous_commands
        out = await _scan(rt, add_lines_patch("app.py", ["# run: terraform   destroy -auto-approve", "# rm"]))
        assert [f["message"] for f in out["findings"]] == [
            'Added content references dangerous command pattern "terraform destroy".'
        ]
    finally:
        await rt.close()


def test_scan_ignores_removed_lines_and_substrings() -> None:
    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n"
        "-password = 'old-secret-value'\n+x = format(y)  # mvn, chmodding, permv\n keep\n"
    )
    result = scan_patch(patch)
    assert result.status == "approved" and result.findings == ()
    assert result.touched == ("a.py",)


def test_findings_sort_critical_first() -> None:
    patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,3 @@\n keep\n+eval(x)\n+print(token)\n"
    result = scan_patch(patch)
    assert [f.severity for f in result.findings] == ["critical", "high"]
    with pytest.raises(ToolError, match="parse patch"):
        scan_patch("not a patch at all\n")


async def test_manual_review_rules(rt: Runtime) -> None:
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# fine"]))
    other = await make_proposal(rt, add_lines_patch("app.py", ["# other"]))
    # A plain agent may not record a verdict.
    with pytest.raises(ToolError, match="manual security review"):
        await rt.call("security.review", {"proposal_id": pid, "status": "approved"}, AGENT)
    # The proposal's security session may; reviewer is the session's agent.
    security = session_caller("security", "security-1", pid)
    out = await rt.call("security.review", {"proposal_id": pid, "status": "needs_changes", "summary_md": "x"}, security)
    assert out["review"]["reviewer_id"] == "security-1" and out["review"]["status"] == "needs_changes"
    assert out["findings"] == []
    # ... but not for another proposal, and not as someone else.
    with pytest.raises(ToolError, match="manual security review"):
        await rt.call("security.review", {"proposal_id": other, "status": "approved"}, security)
    with pytest.raises(ToolError, match="argument reviewer_id names 'x', but this connection acts as"):
        await rt.call("security.review", {"proposal_id": pid, "status": "approved", "reviewer_id": "x"}, security)
    # The operator may, and may replace an existing review (created_at kept).
    op = await rt.call(
        "security.review", {"proposal_id": pid, "status": "approved", "review_id": out["review"]["id"]}, OPERATOR
    )
    assert op["review"]["status"] == "approved" and op["review"]["reviewer_id"] == "operator"
    assert op["review"]["created_at"] == out["review"]["created_at"]
    assert op["review"]["summary_md"] == "Security review recorded."
    # Agents cannot overwrite reviews.
    with pytest.raises(ToolError, match="agents cannot replace reviews"):
        await rt.call("security.review", {"proposal_id": pid, "review_id": out["review"]["id"]}, AGENT)
    assert await count(rt, "security_reviews") == 1


async def test_resource_only_and_bad_input(rt: Runtime) -> None:
    with pytest.raises(ToolError, match="proposal_id or resource_id is required"):
        await rt.call("security.review", {}, OPERATOR)
    with pytest.raises(ToolError, match="resource-only security reviews are recorded by the operator"):
        await rt.call("security.review", {"resource_id": "file:app.py"}, AGENT)
    with pytest.raises(ToolError, match="get proposal P-nope: not found"):
        await rt.call("security.review", {"proposal_id": "P-nope"}, AGENT)
    with pytest.raises(ToolError, match="argument status must be one of"):
        await rt.call("security.review", {"proposal_id": "P-nope", "status": "ok"}, OPERATOR)
    assert await count(rt, "security_reviews") == 0
    out = await rt.call("security.review", {"resource_id": "file:app.py"}, OPERATOR)
    assert out["review"]["status"] == "approved" and out["review"]["revision"] == ""
    assert json.loads(out["review"]["findings_json"]) == []


async def test_tampered_patch_file_is_an_error(rt: Runtime) -> None:
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# fine"]))
    for path in (rt.root / ".roundtable" / "patches").glob("*.diff"):
        path.write_text("changed", encoding="utf-8")
    with pytest.raises(ToolError, match="does not match its hash"):
        await rt.call("security.review", {"proposal_id": pid}, AGENT)
    assert await count(rt, "security_reviews") == 0



async def test_a_revision_attached_during_the_scan_refuses_the_review(rt: Runtime) -> None:
    """The scan runs before the call's transaction (`security.review`'s prepare); the review is
    written in it only if the proposal still has the revision the scan saw."""
    from roundtable.services.governance import security
    from roundtable.tools.approvals import actor_of

    pid = await make_proposal(rt, add_lines_patch("app.py", ["x = 1"]))
    req = security.ReviewArgs.model_validate({"proposal_id": pid})
    scanned = await security.scan_first(rt, req)
    assert scanned is not None and scanned.scan.status == "approved"
    async with rt.db.write() as tx:  # a new revision lands while the scan ran
        await tx.update("proposals", {"id": pid}, {"current_revision": "f" * 64})
    with pytest.raises(ToolError, match="got a new patch revision during the scan; run the review again"):
        async with rt.db.write() as tx:
            await security.review(tx, req, actor_of(AGENT), scanned)
    assert await count(rt, "security_reviews") == 0
    with pytest.raises(ValueError, match="needs its scan"):  # an automatic review never skips it
        async with rt.db.write() as tx:
            await security.review(tx, req, actor_of(AGENT), None)
