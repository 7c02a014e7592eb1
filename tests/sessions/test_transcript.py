"""The transcript in words, read from the harnesses' own streams: recorded from Claude Code 2.1.197
and Codex 0.171.0 driven by the model stub of `tests/e2e_harness` (a native tool allowed, one
refused, a missing file, a closing question; each conversation resumed once with the harness's own
resume), and from lines shaped like theirs where a recording cannot provoke the case."""

from __future__ import annotations

import json
from pathlib import Path

from roundtable.services.sessions.transcript import (
    ARGUMENTS_LIMIT,
    MESSAGE_LIMIT,
    Attention,
    Entry,
    Kind,
    Transcript,
    operator_line,
    read,
)

STREAMS = Path(__file__).parent / "streams"


def lines(name: str) -> list[str]:
    return (STREAMS / name).read_text(encoding="utf-8").splitlines()


def test_claude_stream_in_words_with_its_refused_tool_and_session_id() -> None:
    t = read(lines("claude-code-2.1.197-refused-and-asks.jsonl"))
    assert t.harness_session_id == "737e9f07-360e-469f-9311-f2ec5999bf4f"
    kinds = [e.kind for e in t.entries]
    assert kinds == [
        Kind.STATUS,
        Kind.TOOL_CALL,
        Kind.TOOL_RESULT,
        Kind.TOOL_CALL,
        Kind.TOOL_RESULT,
        Kind.TOOL_CALL,
        Kind.TOOL_RESULT,
        Kind.MESSAGE,
        Kind.STATUS,
    ]
    read_call, read_result, bash_call, bash_result = t.entries[1:5]
    assert read_call.line() == "→ Read(file_path=/etc/hostname)"
    assert (read_result.tool, read_result.failed, read_result.call_id) == ("Read", False, read_call.call_id)
    assert bash_call.line() == "→ Bash(command=ls /, description=list the root)"
    assert bash_result.failed and bash_result.line().startswith("✗ Bash: ls in '/' was blocked")
    assert t.entries[6].failed and "File does not exist" in t.entries[6].text
    assert t.entries[7].line() == (
        "agent: I read the hostname. I was not allowed to run the shell: should I go on without it?"
    )
    # The result event lists the refused tool: the session waits for a permission, not an answer.
    assert t.attention == Attention.WAITING_PERMISSION
    assert t.detail == "not allowed: Bash(command=ls /, description=list the root)"


def test_claude_resumed_stream_keeps_the_id_and_waits_for_an_answer() -> None:
    t = read(lines("claude-code-2.1.197-resumed.jsonl"))
    assert t.harness_session_id == "737e9f07-360e-469f-9311-f2ec5999bf4f"
    assert t.attention == Attention.WAITING_ANSWER
    assert t.detail.endswith("should I go on without it?")


def test_claude_asking_the_operator_is_explicit_and_its_answer_lets_it_go_on() -> None:
    """Under `--permission-prompt-tool stdio` Claude Code asks on its stream (`control_request`
    can_use_tool) and waits: a question tool's request is a wait for an answer, whatever its
    wording; once its result arrives it works on, and a turn that ends after it is finished."""
    recorded = lines("claude-code-2.1.197-asks-the-operator.jsonl")
    asked_at = next(i for i, line in enumerate(recorded) if '"control_request"' in line)
    t = read(recorded[: asked_at + 1])
    assert t.attention == Attention.WAITING_ANSWER and t.detail == "Shall I add div() as well?"
    assert t.request is not None and t.request.is_question and t.request.questions() == ["Shall I add div() as well?"]
    assert t.entries[-1].line() == "· asks you: Shall I add div() as well?"
    t.feed(recorded[asked_at + 1])  # the answer came back as the tool's result
    assert (t.attention, t.request) == (Attention.WORKING, None)
    for line in recorded[asked_at + 2 :]:
        t.feed(line)
    assert t.attention == Attention.FINISHED and t.turns == 1


def test_a_request_for_another_tool_waits_for_a_permission_until_refused() -> None:
    t = Transcript()
    request = {"subtype": "can_use_tool", "tool_name": "WebFetch", "input": {"url": "https://x"}, "tool_use_id": "t1"}
    t.feed(json.dumps({"type": "control_request", "request_id": "r1", "request": request}))
    assert (t.attention, t.detail) == (Attention.WAITING_PERMISSION, "asks to use WebFetch(url=https://x)")
    refused = {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "WebFetch is not allowed"}
    t.feed(json.dumps({"type": "user", "message": {"content": [refused]}}))
    assert t.attention == Attention.WORKING and t.request is None
    t.feed(json.dumps({"type": "result", "subtype": "success", "is_error": False}))
    assert (t.attention, t.detail) == (Attention.WAITING_PERMISSION, "WebFetch was refused: WebFetch is not allowed")


def test_claude_plain_stream_finishes() -> None:
    t = read(lines("claude-code-2.1.197.jsonl"))
    assert t.harness_session_id == "37e39a05-d73a-448f-9eb4-762d05e29211"
    assert [e.line() for e in t.entries if e.kind == Kind.MESSAGE] == ["agent: done"]
    assert t.attention == Attention.FINISHED and t.ended(0) == Attention.FINISHED


def test_codex_stream_in_words_with_its_thread_id() -> None:
    t = read(lines("codex-0.171.0-shell-and-asks.jsonl"))
    assert t.harness_session_id == "01a2379f-e368-7c60-8e76-cc0261954f1f"
    words = [e.line() for e in t.entries]
    assert words[0] == "· session 01a2379f-e368-7c60-8e76-cc0261954f1f started"
    assert words[1].startswith("error: Model metadata for `stub-model` not found")
    assert words[2:6] == [
        "→ shell(/bin/bash -lc 'echo hello from codex')",
        "← shell: exit 0 · hello from codex",
        "→ shell(/bin/bash -lc 'ls /nonexistent-dir')",
        "✗ shell: exit 2 · ls: cannot access '/nonexistent-dir': No such file or directory",
    ]
    assert words[6] == "agent: Listed nothing. Do you want me to create the directory?"
    assert t.attention == Attention.WAITING_ANSWER
    # A question the stream ended on still waits after a clean exit.
    assert t.ended(0) == Attention.WAITING_ANSWER


def test_codex_resumed_stream_is_the_same_thread() -> None:
    first = read(lines("codex-0.171.0-shell-and-asks.jsonl"))
    again = read(lines("codex-0.171.0-resumed.jsonl"))
    assert again.harness_session_id == first.harness_session_id


def test_codex_plain_stream_finishes_and_a_bad_exit_fails() -> None:
    t = read(lines("codex-0.171.0.jsonl"))
    assert t.attention == Attention.FINISHED
    assert t.ended(1) == Attention.FAILED and t.detail == "the harness exited with 1"


def _codex_item(kind: str, item: dict[str, object]) -> str:
    return json.dumps({"type": kind, "item": item})


def test_codex_mcp_call_refused_for_approval_waits_for_a_permission() -> None:
    t = Transcript()
    t.feed(json.dumps({"type": "turn.started"}))
    call = {
        "id": "item_4",
        "type": "mcp_tool_call",
        "server": "roundtable",
        "tool": "vote_cast",
        "arguments": {"vote": "approve"},
    }
    t.feed(_codex_item("item.started", {**call, "status": "in_progress"}))
    t.feed(
        _codex_item(
            "item.completed",
            {
                **call,
                "status": "failed",
                "error": {"message": "MCP tool call requires approval, but approval policy is never"},
            },
        )
    )
    t.feed(json.dumps({"type": "turn.completed", "usage": {}}))
    assert [e.line() for e in t.entries[:2]] == [
        "→ roundtable.vote_cast(vote=approve)",
        "✗ roundtable.vote_cast: MCP tool call requires approval, but approval policy is never",
    ]
    assert t.attention == Attention.WAITING_PERMISSION
    assert t.detail.startswith("roundtable.vote_cast was refused: MCP tool call requires approval")


def test_codex_turn_failure_and_claude_error_result_fail() -> None:
    t = Transcript()
    t.feed(json.dumps({"type": "turn.failed", "error": {"message": "stream disconnected before completion"}}))
    assert t.attention == Attention.FAILED and t.entries[-1].line() == "error: stream disconnected before completion"
    c = Transcript()
    c.feed(json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": "x"}))
    assert c.attention == Attention.FAILED and c.harness_session_id == "x"
    assert c.ended(1) == Attention.FAILED and c.detail == "error_during_execution"


def test_agent_text_is_cleaned_redacted_and_bounded() -> None:
    t = Transcript()
    evil = "\x1b]2;pwned\x07\x1b[31mred\x1b[0m [bold]not markup[/bold] key sk-ant-api03-" + "A" * 90
    message = {"type": "assistant", "message": {"content": [{"type": "text", "text": evil + " x" * 5000}]}}
    (entry,) = t.feed(json.dumps(message))
    assert "\x1b" not in entry.text and "pwned" not in entry.text
    assert entry.text.startswith("red [bold]not markup[/bold]")  # kept as plain text, not read
    assert "A" * 90 not in entry.text and "[REDACTED]" in entry.text
    assert len(entry.text) <= MESSAGE_LIMIT
    big = {
        "type": "assistant",
        "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {"content": "y" * 10_000}}]},
    }
    (call,) = t.feed(json.dumps(big))
    assert len(call.text) <= ARGUMENTS_LIMIT and call.text.endswith("…")


def test_lines_that_are_not_events_are_output_and_mcp_names_read_well() -> None:
    t = Transcript()
    assert t.feed("") == []
    (plain,) = t.feed("WARNING: proceeding\x07 anyway")
    assert plain == Entry(Kind.OUTPUT, "WARNING: proceeding anyway")
    assert t.feed('{"type": "stream_event"}') == []  # an event of no interest says nothing
    tool = {"type": "tool_use", "id": "t2", "name": "mcp__roundtable__task_get", "input": {"task_id": "T-1"}}
    (call,) = t.feed(json.dumps({"type": "assistant", "message": {"content": [tool]}}))
    assert call.line() == "→ roundtable.task_get(task_id=T-1)"
    result = {
        "type": "tool_result",
        "tool_use_id": "t2",
        "content": [{"type": "text", "text": '{"task": {"id": "T-1"}}'}],
    }
    (back,) = t.feed(json.dumps({"type": "user", "message": {"content": [result]}}))
    assert back.line() == '← roundtable.task_get: {"task": {"id": "T-1"}}'


def test_the_operator_message_is_an_entry_and_sets_the_session_working() -> None:
    t = read(lines("claude-code-2.1.197-resumed.jsonl"))
    assert t.attention == Attention.WAITING_ANSWER
    (entry,) = t.feed(operator_line("yes, go on\x1b[2J"))
    assert entry.line() == "operator: yes, go on" and t.attention == Attention.WORKING
    assert t.entries[-1] == entry


def test_roundtable_tool_calls_of_both_harnesses_in_supervised_sessions() -> None:
    # Recorded by tests/e2e_harness/test_resume.py: each harness as a supervised implementer calling
    # roundtable's task_get through its MCP client, then ending its turn on a question.
    for name, harness_id in (
        ("claude-code-2.1.197-mcp-and-asks.jsonl", "c3883069-5c74-4041-8db3-70cdaf09cb6f"),
        ("codex-0.171.0-mcp-and-asks.jsonl", "01a237d9-ea20-7932-9ac2-eede910b024f"),
    ):
        t = read(lines(name))
        calls = [e for e in t.entries if e.kind in (Kind.TOOL_CALL, Kind.TOOL_RESULT)]
        assert [e.line() for e in calls][:1] == ["→ roundtable.task_get()"], name
        assert calls[1].tool == "roundtable.task_get" and not calls[1].failed and "Add mul()" in calls[1].text
        assert calls[1].call_id == calls[0].call_id
        assert t.harness_session_id == harness_id
        assert (t.attention, t.detail) == (Attention.WAITING_ANSWER, "I read the task. Shall I add div() as well?")
