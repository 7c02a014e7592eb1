"""The reason an agent is launched reaches the harness: in its prompt (real harnesses) and in
`BRIEFING.md` of its private home (`ROUNDTABLE_BRIEFING_FILE`, the scripted agent)."""

from __future__ import annotations

from roundtable.autopilot.dispatcher import _Attempts, _briefing
from roundtable.autopilot.work import Job
from roundtable.config import Config
from roundtable.services import adapters


def test_the_briefing_is_in_the_prompt_of_a_real_harness() -> None:
    job = Job(
        "revise:P-1:abc",
        "revision_requested",
        "RUN-1",
        "implementer-1",
        "implementer",
        "T-1",
        detail="reviewer-1 voted revise on proposal P-1: add a docstring",
    )
    text = _briefing(job, _Attempts(count=2, last_error="session S-1 exited with code 1 (process_exited)"))
    assert text.splitlines() == [
        "Why you were launched: revision requested.",
        "reviewer-1 voted revise on proposal P-1: add a docstring",
        "Attempt 2; the previous one: session S-1 exited with code 1 (process_exited)",
    ]
    plan = adapters.start_plan(
        Config(),
        "codex",
        session_id="S-2",
        agent_id="implementer-1",
        run_id="RUN-1",
        working_directory="/tmp",
        role="implementer",
        task_id="T-1",
        briefing=text,
    )
    prompt = plan.argv[-1]
    assert prompt.startswith("You are implementer-1, the implementer of Roundtable run RUN-1")
    assert prompt.endswith("Attempt 2; the previous one: session S-1 exited with code 1 (process_exited)")
    assert "add a docstring" in prompt
    plain = adapters.start_plan(
        Config(),
        "codex",
        session_id="S-3",
        agent_id="implementer-1",
        run_id="RUN-1",
        working_directory="/tmp",
        role="implementer",
        task_id="T-1",
    )
    assert "Why you were launched" not in plain.argv[-1]
