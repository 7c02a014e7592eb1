"""Each apply gate as a table: the pure decisions `services.governance.gates.evaluate` assembles, checked
directly (the end-to-end gate tests in test_gates.py drive them through real proposals)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from roundtable.services.governance.gates import (
    ClaimCheck,
    Gate,
    GateReport,
    claims_gate,
    dry_run_gate,
    normalise_command,
    policy_gate,
    rollback_plan_gate,
    security_gate,
    select_approval,
    status_gate,
)
from roundtable.services.governance.gates import tests_gate as gate_of_tests  # not `test*`: pytest would collect it
from roundtable.services.policy.engine import PolicyResult
from roundtable.store.records import HumanApproval, Proposal, SecurityReview, TestRun

RESULT = PolicyResult(
    approvals=2,
    blockers=0,
    vetoes=0,
    approvable=True,
    needs_human=False,
    summary="2 approvals of 2 required",
    approval_votes=("r1", "r2"),
    blocking_votes=(),
    high_risk_paths=(),
    profiles=("default",),
    approvals_required=2,
    blockers_allowed=0,
    tests_required=False,
    rollback_plan_required=False,
    security_review_required=False,
    required_roles=(),
)


def result(**changes: Any) -> PolicyResult:
    return replace(RESULT, **changes)


def proposal(**values: Any) -> Proposal:
    return Proposal.from_row({"id": "P1", "status": "pending", **values})


def approval(ident: str = "HA1", **values: Any) -> HumanApproval:
    return HumanApproval.from_row({"id": ident, "status": "approved", "decided_by": "operator", **values})


def review(status: str, ident: str = "SR1") -> SecurityReview:
    return SecurityReview.from_row({"id": ident, "status": status})


def run(ident: str, status: str, command: str = "pytest -q") -> TestRun:
    return TestRun.from_row({"id": ident, "status": status, "command": command})


@pytest.mark.parametrize(
    ("status", "passed", "reason"),
    [
        ("pending", True, "proposal is pending"),
        ("in_review", True, "proposal is in_review"),
        ("accepted", False, "proposal is accepted; only pending or in_review proposals can be applied"),
        ("rejected", False, "proposal is rejected; only pending or in_review proposals can be applied"),
        ("revision_requested", False, "proposal is revision_requested; only pending or in_review"),
        ("", False, "proposal is in no state; only pending or in_review proposals can be applied"),
    ],
)
def test_status_gate(status: str, passed: bool, reason: str) -> None:
    gate = status_gate(proposal(status=status))
    assert gate.name == "status" and gate.passed is passed and gate.reason.startswith(reason)


@pytest.mark.parametrize(
    ("covered", "recorded", "passed", "reason"),
    [
        (ClaimCheck({"C1": 4}), {"C1": 4}, True, "1 claim(s) cover the patch"),
        (ClaimCheck({"C1": 4, "C2": 7}), {"C1": 4, "C2": 7, "C9": 1}, True, "2 claim(s) cover the patch"),
        # Released and re-taken: same resource, new fence — the revision must be attached again.
        (ClaimCheck({"C1": 5}), {"C1": 4}, False, "claims changed since revision 3 was attached (C1)"),
        # A different claim now covers the file.
        (ClaimCheck({"C2": 9}), {"C1": 4}, False, "claims changed since revision 3 was attached (C2)"),
        (ClaimCheck({}, "unclaimed affected resource: file:a.py"), {}, False, "unclaimed affected resource"),
    ],
)
def test_claims_gate(covered: ClaimCheck, recorded: dict[str, int], passed: bool, reason: str) -> None:
    gate = claims_gate(covered, recorded, 3)
    assert gate.name == "claims" and gate.passed is passed and gate.reason.startswith(reason)


@pytest.mark.parametrize(
    ("error", "passed", "reason"),
    [
        (None, False, "not checked"),
        ("", True, "git apply --check accepts the patch"),
        ("error: patch failed: a.py:3", False, "error: patch failed: a.py:3"),
    ],
)
def test_dry_run_gate(error: str | None, passed: bool, reason: str) -> None:
    assert dry_run_gate(error) == Gate("dry_run", passed, reason)


@pytest.mark.parametrize(
    ("policy", "chosen", "passed", "reason"),
    [
        (result(), None, True, "2 approvals of 2 required"),
        (result(approvable=False, summary="1 approval of 2"), None, False, "1 approval of 2"),
        (result(approvable=False, summary="1 approval of 2"), approval(), True, "human approval HA1 by operator"),
    ],
)
def test_policy_gate(policy: PolicyResult, chosen: HumanApproval | None, passed: bool, reason: str) -> None:
    assert policy_gate(policy, chosen) == Gate("policy", passed, reason)


NEEDS_REVIEW = result(security_review_required=True)


@pytest.mark.parametrize(
    ("policy", "latest", "chosen", "passed", "reason"),
    [
        (result(), None, None, True, "no security review required"),
        (result(), review("veto"), None, True, "no security review required"),
        (NEEDS_REVIEW, None, None, False, "security review required"),
        (NEEDS_REVIEW, review("approved"), None, True, "security review SR1 approved"),
        (
            NEEDS_REVIEW,
            review("changes_requested"),
            None,
            False,
            "security review required (latest review SR1 is changes_requested)",
        ),
        (NEEDS_REVIEW, review("veto"), None, False, "security review required (latest review SR1 is veto)"),
        # A veto stands unless the selected human approval overrides policy.
        (NEEDS_REVIEW, review("veto"), approval(), False, "security review required (latest review SR1 is veto)"),
        (NEEDS_REVIEW, review("veto"), approval(override_policy=1), True, "security veto overridden by approval HA1"),
        # An override does not turn a pending review into an approval.
        (
            NEEDS_REVIEW,
            review("pending"),
            approval(override_policy=1),
            False,
            "security review required (latest review SR1 is pending)",
        ),
    ],
)
def test_security_gate(
    policy: PolicyResult, latest: SecurityReview | None, chosen: HumanApproval | None, passed: bool, reason: str
) -> None:
    assert security_gate(policy, latest, chosen) == Gate("security", passed, reason)


NEEDS_TESTS = result(tests_required=True)
EXPECT_TWO = proposal(expected_tests_json='["pytest -q", "ruff  check ."]')


@pytest.mark.parametrize(
    ("policy", "prop", "runs", "passed", "reason"),
    [
        (result(), proposal(), [], True, "no tests required"),
        (NEEDS_TESTS, proposal(), [], False, "tests required: no test run of the current revision"),
        # Agent-reported, queued and running evidence never counts.
        (
            NEEDS_TESTS,
            proposal(),
            [run("T1", "reported")],
            False,
            "tests required: no test run of the current revision",
        ),
        (NEEDS_TESTS, proposal(), [run("T1", "running")], False, "tests required: no test run of the current revision"),
        (NEEDS_TESTS, proposal(), [run("T1", "passed")], True, "test run T1 passed"),
        # The latest host run decides: a later failure undoes an earlier pass, and vice versa.
        (
            NEEDS_TESTS,
            proposal(),
            [run("T1", "passed"), run("T2", "failed")],
            False,
            "tests required: latest test run T2 is failed",
        ),
        (
            NEEDS_TESTS,
            proposal(),
            [run("T1", "failed"), run("T2", "passed"), run("T3", "reported")],
            True,
            "test run T2 passed",
        ),
        # Expected commands: each must have passed in its latest run (compared shell-normalised).
        (
            NEEDS_TESTS,
            EXPECT_TWO,
            [run("T1", "passed")],
            False,
            "tests required: expected test not run on the current revision: ruff check .",
        ),
        (
            NEEDS_TESTS,
            EXPECT_TWO,
            [run("T1", "passed"), run("T2", "passed", "ruff check  .")],
            True,
            "2 expected test command(s) passed",
        ),
        (
            NEEDS_TESTS,
            EXPECT_TWO,
            [run("T1", "passed"), run("T2", "passed", "ruff check ."), run("T3", "failed")],
            False,
            "tests required: pytest -q is failed (test run T3)",
        ),
    ],
)
def test_tests_gate(policy: PolicyResult, prop: Proposal, runs: list[TestRun], passed: bool, reason: str) -> None:
    assert gate_of_tests(policy, prop, runs) == Gate("tests", passed, reason)


@pytest.mark.parametrize(
    ("policy", "notes", "passed", "reason"),
    [
        (result(), "", True, "not required"),
        (
            result(rollback_plan_required=True, profiles=("schema", "ci")),
            "",
            False,
            "rollback notes required by profile schema, ci",
        ),
        (result(rollback_plan_required=True), "  \n ", False, "rollback notes required by profile default"),
        (result(rollback_plan_required=True), "git revert", True, "rollback notes present"),
    ],
)
def test_rollback_plan_gate(policy: PolicyResult, notes: str, passed: bool, reason: str) -> None:
    assert rollback_plan_gate(policy, proposal(rollback_notes=notes)) == Gate("rollback_plan", passed, reason)


HUMAN = result(approvable=False, needs_human=True)


@pytest.mark.parametrize(
    ("policy", "approvals", "chosen"),
    [
        (result(), [approval()], None),  # no human needed: none selected
        (HUMAN, [], None),
        (HUMAN, [approval("HA1"), approval("HA2")], "HA2"),  # the latest decided approval
        (HUMAN, [approval("HA1"), approval("HA2", decided_by="")], "HA1"),  # undecided never counts
        (HUMAN, [approval("HA1", status="denied")], None),
        (HUMAN, [approval("HA1", status="pending", decided_by="")], None),
        # With vetoes, only an approval that overrides policy counts.
        (replace(HUMAN, vetoes=1, blockers=1), [approval("HA1")], None),
        (replace(HUMAN, vetoes=1, blockers=1), [approval("HA1", override_policy=1), approval("HA2")], "HA1"),
        # Blockers beyond the vetoes cannot be approved away.
        (replace(HUMAN, vetoes=1, blockers=2), [approval("HA1", override_policy=1)], None),
    ],
)
def test_select_approval(policy: PolicyResult, approvals: list[HumanApproval], chosen: str | None) -> None:
    selected = select_approval(policy, approvals)
    assert (selected.id if selected else None) == chosen


@pytest.mark.parametrize(
    ("command", "normal"),
    [
        ("pytest  -q", "pytest -q"),
        ("  make test ", "make test"),
        ("echo 'a  b'", "echo a  b"),
        ("echo 'open", "echo 'open"),
    ],
)
def test_normalise_command(command: str, normal: str) -> None:
    assert normalise_command(command) == normal


def test_report_error_names_the_first_failing_gate() -> None:
    gates = [Gate("status", True, "ok"), Gate("dry_run", False, "not checked"), Gate("policy", False, "no votes")]
    report = GateReport(proposal(), None, None, gates, None, [], [], None, [], None, [], {})
    assert not report.ok and [g.name for g in report.failures()] == ["dry_run", "policy"]
    assert report.error() == "proposal validation failed: dry_run: not checked"
    report.gates = [Gate("policy", False, "no votes")]
    assert report.error() == "proposal not approvable: no votes"
