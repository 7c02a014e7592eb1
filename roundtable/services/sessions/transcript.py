"""A session's transcript in words, read from its harness's own machine-readable stream.

The supervisor writes every line a harness prints to the session's log (`logs/sessions/<id>.log`,
redacted). `Transcript.feed` turns those lines, one at a time, into `Entry`s: what the agent said,
each tool call with its arguments, a short result, errors, and the harness's own notes (its session
started, a turn ended). Shapes, as measured on the harnesses' own output (pinned by tests on
recorded streams in `tests/sessions/streams/`):

- Claude Code (`-p --output-format stream-json --verbose`): `system`/`init` (the harness's
  `session_id`, model, tools), `assistant` messages whose content blocks are `text`, `thinking` and
  `tool_use` (`id`, `name`, `input`), `user` messages carrying `tool_result` blocks (`tool_use_id`,
  `content` as text or text parts, `is_error`), and a closing `result` (`subtype`, `is_error`,
  `result`, `permission_denials`: the tools it was not allowed to use, `errors`).
- Codex (`exec --json`): `thread.started` (`thread_id`, the id `codex exec resume` takes),
  `turn.started`, `turn.completed`, `turn.failed` (`error.message`), `error` (`message`), and
  `item.started` / `item.completed` of an item whose `type` is `agent_message`, `reasoning`,
  `command_execution` (`command`, `aggregated_output`, `exit_code`, `status`), `mcp_tool_call`
  (`server`, `tool`, `arguments`, `result`, `error`, `status`), `file_change` (`changes`),
  `web_search`, `todo_list` or `error`.
- Roundtable's own lines (`{"type": "roundtable.operator", "text": …}`): a message the operator sent
  the session, written into its log by the supervisor before the harness receives it.
- Anything else (a harness without a JSON stream, a warning on standard error) is an `output` entry.

Every text is cleaned of control characters (a terminal escape in an agent's words must not reach
the operator's terminal), passed through the secrets redactor, and bounded; it is plain text —
whoever shows it must not read it as markup. The same pass classifies whether the session needs a
human (`Attention`): waiting for a permission it was refused, waiting for an answer to a question
it ended its turn on, finished, failed — from the stream alone; `idle` (no output for a while) is
the supervisor's to say, since only it knows the time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from roundtable.domain import Attention
from roundtable.domain import TranscriptKind as Kind
from roundtable.services.redact import redact

# A line longer than this is not read as an event (a harness can print whole files on one line).
MAX_LINE = 1 << 20
MESSAGE_LIMIT = 4000  # what the agent says, per message
ARGUMENTS_LIMIT = 300  # a tool call's arguments, on one line
RESULT_LIMIT = 300  # a tool call's result, on one line
DETAIL_LIMIT = 300  # why the session needs the operator
OPERATOR_EVENT = "roundtable.operator"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")


# The states only the operator can move on.
NEEDS_HUMAN = frozenset({Attention.WAITING_PERMISSION, Attention.WAITING_ANSWER, Attention.IDLE, Attention.FAILED})
ATTENTION_WORDS = {
    Attention.WORKING: "working",
    Attention.WAITING_PERMISSION: "waiting for a permission",
    Attention.WAITING_ANSWER: "waiting for an answer",
    Attention.IDLE: "idle",
    Attention.FINISHED: "finished",
    Attention.FAILED: "failed",
}


@dataclass(frozen=True)
class Entry:
    """One line of the transcript (plain text, cleaned, redacted, bounded)."""

    kind: Kind
    text: str
    tool: str = ""
    call_id: str = ""
    failed: bool = False

    def line(self) -> str:
        """The entry in words, as `sessions show --follow` prints it."""
        if self.kind == Kind.MESSAGE:
            return f"agent: {self.text}"
        if self.kind == Kind.THINKING:
            return f"thinking: {self.text}"
        if self.kind == Kind.TOOL_CALL:
            return f"→ {self.tool}({self.text})" if self.text else f"→ {self.tool}()"
        if self.kind == Kind.TOOL_RESULT:
            mark = "✗" if self.failed else "←"
            return f"{mark} {self.tool or 'result'}: {self.text}" if self.text else f"{mark} {self.tool or 'result'}"
        if self.kind == Kind.ERROR:
            return f"error: {self.text}"
        if self.kind == Kind.OPERATOR:
            return f"operator: {self.text}"
        if self.kind == Kind.STATUS:
            return f"· {self.text}"
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "text": self.text,
            "tool": self.tool,
            "call_id": self.call_id,
            "failed": self.failed,
        }


def clean(text: str, limit: int, *, one_line: bool = False) -> str:
    """`text` without terminal escapes and control characters, redacted, at most `limit` long
    (on one line when `one_line`)."""
    text = _ANSI.sub("", text)
    if one_line:
        text = " ".join(text.split())
    else:
        text = _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\t", "    ")).strip()
    text = _CONTROLS.sub("", text)
    if len(text) > limit * 4:  # the redactor's cost grows with the text: bound it first
        text = text[: limit * 4]
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value: Any, limit: int) -> str:
    """Arguments or a result on one line: `key=value` pairs for an object, else its JSON."""
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)
            parts.append(f"{key}={shown}")
        text = ", ".join(parts)
    elif isinstance(value, str):
        text = value
    elif value is None:
        text = ""
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return clean(text, limit, one_line=True)


def _text_of(content: Any) -> str:
    """The text of a tool result or message content (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(part.get("text", part.get("content", ""))) for part in content if isinstance(part, dict)
        )
    if isinstance(content, dict):
        return _text_of(content.get("content", content.get("text", "")))
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _tool_name(name: str) -> str:
    """`mcp__roundtable__task_get` → `roundtable.task_get`; native names as they are."""
    if name.startswith("mcp__"):
        server, _, tool = name[len("mcp__") :].partition("__")
        return f"{server}.{tool}" if tool else server
    return name


def _is_question(text: str) -> bool:
    """Did the agent end on a question to the operator?"""
    last = text.strip().splitlines()[-1].strip() if text.strip() else ""
    return last.endswith("?")


# What a harness says when a tool needs a permission it was not given.
_PERMISSION = re.compile(
    r"requested permissions? to use|haven't granted|has not been granted|requires approval|"
    r"approval policy|permission denied by|not allowed to use|was rejected by the user",
    re.IGNORECASE,
)
# Tools with which a harness asks the user something and waits.
_QUESTION_TOOLS = frozenset({"AskUserQuestion", "request_user_input"})


@dataclass(frozen=True)
class Request:
    """The harness asks the operator, and waits (Claude Code's `control_request` `can_use_tool`
    under `--permission-prompt-tool stdio`): to answer its question (`AskUserQuestion`) or to let
    it use a tool. `request_id` is what the answer (a `control_response`) names."""

    request_id: str
    tool: str
    tool_use_id: str
    input: dict[str, Any]

    @property
    def is_question(self) -> bool:
        return self.tool in _QUESTION_TOOLS

    def questions(self) -> list[str]:
        """The questions' texts (a question tool's `questions[].question`)."""
        asked = self.input.get("questions")
        items = asked if isinstance(asked, list) else []
        return [str(q["question"]) for q in items if isinstance(q, dict) and isinstance(q.get("question"), str)]


@dataclass
class Transcript:
    """One session's stream, read line by line; `entries` keeps the latest `keep` of them."""

    keep: int = 5000
    entries: list[Entry] = field(default_factory=list)
    harness_session_id: str = ""
    attention: Attention = Attention.WORKING
    detail: str = ""  # why, in words, when it needs the operator
    lines: int = 0
    turns: int = 0  # turns the harness said ended (a closing result, a completed or failed turn)
    request: Request | None = None  # what the harness asks the operator and waits for, if anything
    _calls: dict[str, str] = field(default_factory=dict)  # call id → tool name
    _refused: str = ""  # a tool refused for want of a permission, since the turn began
    _asked: str = ""  # the agent's last words, when they were a question
    _unanswered: str = ""  # a question it asked with its question tool that nobody answered
    _failure: str = ""

    def feed(self, line: str) -> list[Entry]:
        """Read one output line; returns the entries it added (often none)."""
        self.lines += 1
        text = line.rstrip("\r\n")
        if not text.strip():
            return []
        event: Any = None
        stripped = text.strip()
        if stripped.startswith("{") and len(stripped) <= MAX_LINE:
            try:
                event = json.loads(stripped)
            except ValueError:
                event = None
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            added = self._event(event)
        elif len(stripped) > MAX_LINE:
            added = [Entry(Kind.OUTPUT, f"(a line of {len(stripped):,} characters left out)")]
        else:
            added = [Entry(Kind.OUTPUT, clean(text, MESSAGE_LIMIT))]
        added = [e for e in added if e.text or e.kind in (Kind.TOOL_CALL, Kind.TOOL_RESULT)]
        self.entries.extend(added)
        if len(self.entries) > self.keep:
            del self.entries[: len(self.entries) - self.keep]
        return added

    def note_operator(self, message: str) -> Entry:
        """The operator's message to the session, as an entry of its transcript (`feed` adds it
        to `entries`)."""
        self._set(Attention.WORKING, "")
        return Entry(Kind.OPERATOR, clean(message, MESSAGE_LIMIT))

    def ended(self, exit_code: int) -> Attention:
        """The process exited: what that leaves the session as (a question or a refusal the
        stream ended on still waits for the operator; otherwise the exit code decides)."""
        if self.attention in (Attention.WAITING_PERMISSION, Attention.WAITING_ANSWER):
            return self.attention
        if exit_code != 0:
            self._set(Attention.FAILED, self._failure or f"the harness exited with {exit_code}")
        elif self.attention != Attention.FAILED:
            self._set(Attention.FINISHED, "")
        return self.attention

    def _set(self, state: Attention, detail: str) -> None:
        self.attention = state
        self.detail = clean(detail, DETAIL_LIMIT, one_line=True) if detail else ""

    # --- the two harnesses' events -----------------------------------------------------------

    def _event(self, event: dict[str, Any]) -> list[Entry]:
        kind = str(event["type"])
        if kind == OPERATOR_EVENT:
            return [self.note_operator(str(event.get("text") or ""))]
        if kind in ("system", "assistant", "user", "result"):
            return self._claude(kind, event)
        if kind == "control_request":
            return self._claude_request(event)
        if kind.startswith(("thread.", "turn.", "item.")) or kind == "error":
            return self._codex(kind, event)
        return []

    def _claude(self, kind: str, event: dict[str, Any]) -> list[Entry]:
        sid = event.get("session_id")
        if isinstance(sid, str) and sid and not self.harness_session_id:
            self.harness_session_id = sid
        if kind == "system":
            if event.get("subtype") != "init":
                return []
            self._turn_began()
            servers = event.get("mcp_servers") or []
            failed = [
                str(s.get("name"))
                for s in servers
                if isinstance(s, dict) and s.get("status") not in (None, "connected", "pending")
            ]
            tools = event.get("tools") or []
            note = f"session {sid or '?'} started · model {event.get('model') or '?'} · {len(tools)} tools"
            out = [Entry(Kind.STATUS, clean(note, DETAIL_LIMIT, one_line=True))]
            if failed:
                out.append(Entry(Kind.ERROR, clean(f"MCP server not connected: {', '.join(failed)}", DETAIL_LIMIT)))
            return out
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind == "assistant":
            return self._claude_assistant(content if isinstance(content, list) else [])
        if kind == "user":
            return self._claude_results(content if isinstance(content, list) else [])
        return self._claude_result(event)

    def _claude_assistant(self, blocks: list[Any]) -> list[Entry]:
        out: list[Entry] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                said = block["text"]
                self._asked = said if _is_question(said) else ""
                out.append(Entry(Kind.MESSAGE, clean(said, MESSAGE_LIMIT)))
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                out.append(Entry(Kind.THINKING, clean(block["thinking"], MESSAGE_LIMIT)))
            elif btype == "tool_use":
                name = _tool_name(str(block.get("name") or "?"))
                call_id = str(block.get("id") or "")
                self._calls[call_id] = name
                if str(block.get("name")) in _QUESTION_TOOLS:
                    self._asked = _compact(block.get("input"), DETAIL_LIMIT)
                out.append(Entry(Kind.TOOL_CALL, _compact(block.get("input"), ARGUMENTS_LIMIT), name, call_id))
        if out:
            self._set(Attention.WORKING, "")
        return out

    def _claude_request(self, event: dict[str, Any]) -> list[Entry]:
        """The harness asks the operator and waits: the stream says so explicitly."""
        request = event.get("request")
        if not isinstance(request, dict) or request.get("subtype") != "can_use_tool":
            return []
        tool_input = request.get("input")
        self.request = Request(
            str(event.get("request_id") or ""),
            str(request.get("tool_name") or "?"),
            str(request.get("tool_use_id") or ""),
            tool_input if isinstance(tool_input, dict) else {},
        )
        if self.request.is_question:
            asked = " / ".join(self.request.questions()) or _compact(tool_input, DETAIL_LIMIT)
            self._asked = asked
            self._set(Attention.WAITING_ANSWER, asked)
            return [Entry(Kind.STATUS, clean(f"asks you: {asked}", MESSAGE_LIMIT))]
        wanted = f"{_tool_name(self.request.tool)}({_compact(tool_input, 80)})"
        self._set(Attention.WAITING_PERMISSION, f"asks to use {wanted}")
        return [Entry(Kind.STATUS, clean(f"asks to use {wanted}", MESSAGE_LIMIT))]

    def _claude_results(self, blocks: list[Any]) -> list[Entry]:
        out: list[Entry] = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id") or "")
            if self.request is not None and call_id == self.request.tool_use_id:
                # What it asked was answered (or refused): it works on.
                if self.request.is_question and not block.get("is_error"):
                    self._asked = ""
                elif self.request.is_question:  # nobody answered it: it still waits for an answer
                    self._unanswered = " / ".join(self.request.questions()) or self._asked
                elif not self.request.is_question and block.get("is_error"):
                    self._refused = f"{_tool_name(self.request.tool)} was refused: {_text_of(block.get('content'))}"
                self.request = None
                self._set(Attention.WORKING, "")
            name = self._calls.get(call_id, "")
            failed = bool(block.get("is_error"))
            text = _text_of(block.get("content"))
            if failed and _PERMISSION.search(text):
                self._refused = f"{name or 'a tool'} was refused: {text}"
            out.append(Entry(Kind.TOOL_RESULT, clean(text, RESULT_LIMIT, one_line=True), name, call_id, failed))
        return out

    def _claude_result(self, event: dict[str, Any]) -> list[Entry]:
        self.turns += 1
        failed = bool(event.get("is_error")) or str(event.get("subtype", "success")) != "success"
        denials = event.get("permission_denials") or []
        out: list[Entry] = []
        if failed:
            errors = event.get("errors")
            why = "; ".join(str(e) for e in errors) if isinstance(errors, list) and errors else ""
            why = (
                why
                or (event.get("result") if isinstance(event.get("result"), str) else "")
                or str(event.get("subtype"))
            )
            self._failure = why
            self._set(Attention.FAILED, why)
            out.append(Entry(Kind.ERROR, clean(f"the turn failed: {why}", MESSAGE_LIMIT)))
            return out
        if isinstance(denials, list) and denials:
            names = []
            for d in denials:
                if isinstance(d, dict):
                    names.append(f"{d.get('tool_name', '?')}({_compact(d.get('tool_input'), 80)})")
            self._set(Attention.WAITING_PERMISSION, f"not allowed: {', '.join(names)}")
        elif self._refused:
            self._set(Attention.WAITING_PERMISSION, self._refused)
        elif self._asked or self._unanswered:
            self._set(Attention.WAITING_ANSWER, self._asked or self._unanswered)
        else:
            self._set(Attention.FINISHED, "")
        turns = event.get("num_turns")
        note = "turn ended" + (f" after {turns} model turns" if isinstance(turns, int) else "")
        out.append(Entry(Kind.STATUS, note))
        return out

    def _turn_began(self) -> None:
        self._refused = self._asked = self._unanswered = ""
        self.request = None
        self._set(Attention.WORKING, "")

    def _codex(self, kind: str, event: dict[str, Any]) -> list[Entry]:
        if kind == "thread.started":
            tid = event.get("thread_id")
            if isinstance(tid, str) and tid:
                self.harness_session_id = self.harness_session_id or tid
            return [Entry(Kind.STATUS, clean(f"session {tid or '?'} started", DETAIL_LIMIT, one_line=True))]
        if kind == "turn.started":
            self._turn_began()
            return []
        if kind == "turn.completed":
            self.turns += 1
            if self._refused:
                self._set(Attention.WAITING_PERMISSION, self._refused)
            elif self._asked:
                self._set(Attention.WAITING_ANSWER, self._asked)
            else:
                self._set(Attention.FINISHED, "")
            return [Entry(Kind.STATUS, "turn ended")]
        if kind in ("turn.failed", "error"):
            self.turns += kind == "turn.failed"
            error = event.get("error")
            why = error.get("message") if isinstance(error, dict) else event.get("message")
            why = str(why or kind)
            self._failure = why
            self._set(Attention.FAILED, why)
            return [Entry(Kind.ERROR, clean(why, MESSAGE_LIMIT))]
        item = event.get("item")
        if not isinstance(item, dict):
            return []
        return self._codex_item(kind, item)

    def _codex_item(self, kind: str, item: dict[str, Any]) -> list[Entry]:
        itype = item.get("type")
        item_id = str(item.get("id") or "")
        done = kind == "item.completed"
        if itype == "agent_message" and done:
            said = str(item.get("text") or "")
            self._asked = said if _is_question(said) else ""
            return [Entry(Kind.MESSAGE, clean(said, MESSAGE_LIMIT))]
        if itype == "reasoning" and done:
            return [Entry(Kind.THINKING, clean(str(item.get("text") or ""), MESSAGE_LIMIT))]
        if itype == "error" and done:
            return [Entry(Kind.ERROR, clean(str(item.get("message") or ""), MESSAGE_LIMIT))]
        if itype == "command_execution":
            if not done:
                return [
                    Entry(
                        Kind.TOOL_CALL,
                        clean(str(item.get("command") or ""), ARGUMENTS_LIMIT, one_line=True),
                        "shell",
                        item_id,
                    )
                ]
            code = item.get("exit_code")
            failed = item.get("status") == "failed" or (isinstance(code, int) and code != 0)
            output = str(item.get("aggregated_output") or "")
            if failed and _PERMISSION.search(output):
                self._refused = f"shell was refused: {output}"
            shown = f"exit {code}" + (f" · {output}" if output.strip() else "")
            return [Entry(Kind.TOOL_RESULT, clean(shown, RESULT_LIMIT, one_line=True), "shell", item_id, failed)]
        if itype == "mcp_tool_call":
            name = f"{item.get('server') or '?'}.{item.get('tool') or '?'}"
            if not done:
                return [Entry(Kind.TOOL_CALL, _compact(item.get("arguments"), ARGUMENTS_LIMIT), name, item_id)]
            error = item.get("error")
            why = error.get("message") if isinstance(error, dict) else (error if isinstance(error, str) else "")
            failed = bool(why) or item.get("status") == "failed"
            result = item.get("result")
            if isinstance(result, dict) and result.get("isError", result.get("is_error")):
                failed = True
            text = str(why) if why else _text_of(result.get("content") if isinstance(result, dict) else result)
            if failed and _PERMISSION.search(text):
                self._refused = f"{name} was refused: {text}"
            return [Entry(Kind.TOOL_RESULT, clean(text, RESULT_LIMIT, one_line=True), name, item_id, failed)]
        if itype == "file_change" and done:
            changes = item.get("changes") or []
            paths = [f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes if isinstance(c, dict)]
            failed = item.get("status") == "failed"
            return [
                Entry(Kind.TOOL_RESULT, clean(", ".join(paths), RESULT_LIMIT, one_line=True), "edit", item_id, failed)
            ]
        if itype == "web_search" and done:
            return [
                Entry(
                    Kind.TOOL_CALL,
                    clean(str(item.get("query") or ""), ARGUMENTS_LIMIT, one_line=True),
                    "web_search",
                    item_id,
                )
            ]
        if itype == "todo_list" and done:
            todo = item.get("items") or []
            steps = [
                ("[x] " if t.get("completed") else "[ ] ") + str(t.get("text", "")) for t in todo if isinstance(t, dict)
            ]
            return [Entry(Kind.STATUS, clean("plan: " + "; ".join(steps), MESSAGE_LIMIT, one_line=True))]
        return []


def operator_line(message: str) -> str:
    """The log line that records the operator's message to a session (one JSON line)."""
    return json.dumps({"type": OPERATOR_EVENT, "text": message}, ensure_ascii=False) + "\n"


def read(lines: list[str]) -> Transcript:
    """A transcript of these lines (tests, `sessions show`)."""
    transcript = Transcript()
    for line in lines:
        transcript.feed(line)
    return transcript
