"""A local stand-in for a model API that scripts a harness's tool calls.

It speaks the two wires the harnesses use — Anthropic's Messages API (`POST /v1/messages`,
streamed as server-sent events; Claude Code) and OpenAI's Responses API (`POST /v1/responses`,
streamed as server-sent events; Codex) — and answers each request from a `Script`: a function of
the tools the harness offered and the tool calls already made in the conversation (with their
results). Deciding from the transcript, not from a request counter, keeps the script right when a
harness sends side requests (titles, token counts, warm-ups): a request that offers none of the
script's tools gets a short text answer.

Only the model is stubbed: the harness, its MCP client, the bridge and the owner are real. Every
request is kept (`StubServer.requests`) so a test can show what the harness sent. For the
gateway's tests a stub can also answer the next requests with errors (`faults`: a 401, a 429 with
`retry-after`) and hold a streamed answer after its first event until the test lets it go (`hold`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.owners import free_port


@dataclass(frozen=True)
class Exchange:
    """One tool call the harness made for the model, and what came back."""

    tool: str  # the tool's name without the harness's prefix (`agent_turn_request`)
    arguments: dict[str, Any]
    result: str
    is_error: bool


@dataclass(frozen=True)
class ToolCall:
    tool: str  # unprefixed; the stub finds the harness's name for it in the offered tools
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    text: str


Step = ToolCall | Answer
Script = Callable[[list[Exchange]], Step]


@dataclass(frozen=True)
class Seen:
    """One request the stub received: its kind (`messages`, `responses`, `count_tokens`, or the
    method and path of anything else), JSON body and headers (names lower-cased)."""

    kind: str
    body: dict[str, Any]
    headers: dict[str, str]


def bare(name: str) -> str:
    """`mcp__roundtable__task_get` / `mcp__roundtable.task_get` / `task_get` → `task_get`."""
    return name.rsplit(".", 1)[-1].rsplit("__", 1)[-1]


def _text_of(content: Any) -> str:
    """The text of a tool result in either wire's shapes (string, list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text_of(part.get("text", part.get("content", ""))) for part in content if isinstance(part, dict)
        )
    return json.dumps(content) if content is not None else ""


# --- the Anthropic Messages API ---------------------------------------------------------------------


def anthropic_tools(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]


def anthropic_history(body: dict[str, Any]) -> list[Exchange]:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    history: list[Exchange] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (bare(str(block.get("name", ""))), dict(block.get("input") or {}))
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                tool, arguments = calls[str(block.get("tool_use_id"))]
                history.append(Exchange(tool, arguments, _text_of(block.get("content")), bool(block.get("is_error"))))
    return history


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


@dataclass(frozen=True)
class Usage:
    """The token counts the stub reports for every answer (both wires), so a test can check that
    what roundtable records equals what the model reported. Any JSON value may stand in for a
    count (a hostile upstream: `float("inf")`, `-5`, `10**30`)."""

    input_tokens: Any = 10
    output_tokens: Any = 5
    cached_tokens: Any = 0  # Anthropic: cache reads (beside input_tokens); OpenAI: part of input_tokens
    cache_creation_tokens: Any = 0  # Anthropic only


@dataclass(frozen=True)
class Fault:
    """An error answer the stub gives instead of its script's (status, JSON body, headers)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


DEFAULT_USAGE = Usage()


def anthropic_stream(
    step: Step, offered: list[str], model: str, serial: int, spend: Usage = DEFAULT_USAGE
) -> list[str]:
    """The server-sent events of one streamed assistant message carrying `step`."""
    usage = {
        "input_tokens": spend.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": spend.cache_creation_tokens,
        "cache_read_input_tokens": spend.cached_tokens,
    }
    message: dict[str, Any] = {
        "id": f"msg_stub_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_sse("message_start", {"type": "message_start", "message": message})]
    if isinstance(step, ToolCall):
        name = next((n for n in offered if bare(n) == step.tool), step.tool)
        block = {"type": "tool_use", "id": f"toolu_stub_{serial}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.arguments)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": step.text}
        stop = "end_turn"
    events += [
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": spend.output_tokens},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_message(
    step: Step, offered: list[str], model: str, serial: int, spend: Usage = DEFAULT_USAGE
) -> dict[str, Any]:
    """The same message, not streamed."""
    if isinstance(step, ToolCall):
        name = next((n for n in offered if bare(n) == step.tool), step.tool)
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": f"toolu_stub_{serial}", "name": name, "input": step.arguments}
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": step.text}], "end_turn"
    return {
        "id": f"msg_stub_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": spend.input_tokens,
            "output_tokens": spend.output_tokens,
            "cache_creation_input_tokens": spend.cache_creation_tokens,
            "cache_read_input_tokens": spend.cached_tokens,
        },
    }


# --- the OpenAI Responses API -----------------------------------------------------------------------


def responses_tools(body: dict[str, Any]) -> list[str]:
    """Function tool names; a tool inside a namespace as `namespace.name` (Codex groups each MCP
    server's tools in a namespace `mcp__<server>`)."""
    names: list[str] = []
    tools = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools += list(item.get("tools") or [])
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    names.append(f"{tool.get('name')}.{inner['name']}")
        elif tool.get("name"):
            names.append(str(tool["name"]))
    return names


def responses_history(body: dict[str, Any]) -> list[Exchange]:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    history: list[Exchange] = []
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            calls[str(item.get("call_id"))] = (bare(str(item.get("name", ""))), arguments)
        elif item.get("type") == "function_call_output" and str(item.get("call_id")) in calls:
            tool, arguments = calls[str(item.get("call_id"))]
            output = item.get("output")
            text = _text_of(output.get("content") if isinstance(output, dict) else output)
            failed = isinstance(output, dict) and output.get("success") is False
            history.append(Exchange(tool, arguments, text, failed or '"isError": true' in text))
        elif item.get("type") == "custom_tool_call" and CODE_MARK in str(item.get("input", "")):
            marked = str(item["input"]).split(CODE_MARK, 1)[1].split("\n", 1)[0]
            call = json.loads(marked)
            calls[str(item.get("call_id"))] = (str(call["tool"]), dict(call["arguments"]))
        elif item.get("type") == "custom_tool_call_output" and str(item.get("call_id")) in calls:
            tool, arguments = calls[str(item.get("call_id"))]
            text = _text_of(item.get("output"))
            history.append(Exchange(tool, arguments, text, '"isError":true' in text or NO_TOOL in text))
    return history


# Code mode (Codex with its own models): MCP tools are not offered as functions but reached from
# JavaScript run by the `exec` tool (`tools.mcp__<server>__<tool>(args)`; `ALL_TOOLS` lists them).
# The stub writes that script, marking its first line with the call it stands for.
CODE_MARK = "// stub-call "
NO_TOOL = "stub: no such tool"


def exec_script(step: ToolCall) -> str:
    """JavaScript for Codex's `exec` tool making `step`'s call and printing its result."""
    mark = json.dumps({"tool": step.tool, "arguments": step.arguments})
    return (
        f"{CODE_MARK}{mark}\n"
        f"const wanted = {json.dumps(step.tool)};\n"
        "const found = ALL_TOOLS.map((t) => t.name).find((n) => n === wanted || n.endsWith('__' + wanted));\n"
        f"if (!found) {{ text({json.dumps(NO_TOOL)} + ': ' + wanted + ' in ' + ALL_TOOLS.map((t) => t.name).join(',')); exit(); }}\n"
        f"const result = await tools[found]({json.dumps(step.arguments)});\n"
        "text(JSON.stringify(result));\n"
    )


def responses_stream(step: Step, offered: list[str], serial: int, spend: Usage = DEFAULT_USAGE) -> list[str]:
    """The server-sent events of one streamed response carrying `step`."""
    response_id = f"resp_stub_{serial}"
    code = next((n for n in offered if bare(n) == "exec"), "")
    if isinstance(step, ToolCall) and code and not any(bare(n) == step.tool for n in offered):
        namespace, _, name = code.rpartition(".")
        item: dict[str, Any] = {
            "type": "custom_tool_call",
            "id": f"ctc_stub_{serial}",
            "call_id": f"call_stub_{serial}",
            "name": name,
            "input": exec_script(step),
        }
        if namespace:
            item["namespace"] = namespace
    elif isinstance(step, ToolCall):
        qualified = next((n for n in offered if bare(n) == step.tool), step.tool)
        namespace, _, name = qualified.rpartition(".")
        item = {
            "type": "function_call",
            "id": f"fc_stub_{serial}",
            "call_id": f"call_stub_{serial}",
            "name": name,
            "arguments": json.dumps(step.arguments),
        }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": f"msg_stub_{serial}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}],
        }
    usage = {
        "input_tokens": spend.input_tokens,
        "input_tokens_details": {"cached_tokens": spend.cached_tokens},
        "output_tokens": spend.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": spend.input_tokens + spend.output_tokens,
    }
    return [
        _sse("response.created", {"type": "response.created", "response": {"id": response_id}}),
        _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse(
            "response.completed",
            {"type": "response.completed", "response": {"id": response_id, "status": "completed", "usage": usage}},
        ),
    ]


# --- the server --------------------------------------------------------------------------------------


@dataclass
class StubServer:
    """The stub on a free loopback port, served by uvicorn on a thread of its own."""

    script: Script
    port: int = field(default_factory=free_port)
    requests: list[Seen] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    usage: Usage = DEFAULT_USAGE  # what every answer reports
    faults: list[Fault] = field(default_factory=list)  # the next model requests' answers, in order
    hold: threading.Event | None = None  # set: a streamed answer waits after its first event
    # The API keys it accepts (`x-api-key` or a bearer); a model request presenting another is
    # answered 401 as the vendor would. Empty: any.
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._serial = itertools.count(1)
        self._lock = threading.Lock()
        routes = [
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/{path:path}", self._other, methods=["GET", "POST", "HEAD", "PUT", "DELETE"]),
        ]
        config = uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="model-stub", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StubServer:
        self._thread.start()
        for _ in range(200):
            if self._server.started:
                return self
            threading.Event().wait(0.05)
        raise RuntimeError("the model stub did not start")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def _decide(self, history: list[Exchange], offered: list[str]) -> tuple[Step, int]:
        with self._lock:
            serial = next(self._serial)
            wanted = {bare(n) for n in offered}
            step: Step = self.script(history) if wanted else Answer("ok")
            if isinstance(step, ToolCall) and step.tool not in wanted and "exec" not in wanted:
                step = Answer(f"the harness did not offer the tool {step.tool}")
            self.steps.append(step)
            return step, serial

    async def _body(self, request: Request, kind: str) -> dict[str, Any]:
        body = json.loads(await request.body() or b"{}")
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            self.requests.append(Seen(kind, dict(body), headers))
        return dict(body)

    def _refused_key(self, request: Request) -> Response | None:
        presented = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if not self.keys or presented in self.keys:
            return None
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        return JSONResponse({"type": "error", "error": error}, status_code=401)

    def _fault(self) -> Response | None:
        with self._lock:
            fault = self.faults.pop(0) if self.faults else None
        if fault is None:
            return None
        return JSONResponse(fault.body, status_code=fault.status, headers=fault.headers)

    def _streamed(self, events: list[str]) -> StreamingResponse:
        return _streamed(events, self.hold)

    async def _count_tokens(self, request: Request) -> Response:
        await self._body(request, "count_tokens")
        return self._fault() or JSONResponse({"input_tokens": 100})

    async def _messages(self, request: Request) -> Response:
        body = await self._body(request, "messages")
        failed = self._refused_key(request) or self._fault()
        if failed is not None:
            return failed
        offered = anthropic_tools(body)
        step, serial = self._decide(anthropic_history(body), offered)
        model = str(body.get("model", "stub"))
        if not body.get("stream"):
            return JSONResponse(anthropic_message(step, offered, model, serial, self.usage))
        return self._streamed(anthropic_stream(step, offered, model, serial, self.usage))

    async def _responses(self, request: Request) -> Response:
        body = await self._body(request, "responses")
        failed = self._refused_key(request) or self._fault()
        if failed is not None:
            return failed
        offered = responses_tools(body)
        step, serial = self._decide(responses_history(body), offered)
        return self._streamed(responses_stream(step, offered, serial, self.usage))

    async def _other(self, request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            self.requests.append(Seen(f"{request.method} {request.url.path}", {}, headers))
        return JSONResponse({"error": {"type": "not_found", "message": "not stubbed"}}, status_code=404)


def _streamed(events: list[str], hold: threading.Event | None = None) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        for number, event in enumerate(events):
            yield event.encode()
            if number == 0 and hold is not None:
                await asyncio.to_thread(hold.wait, 30)
            await asyncio.sleep(0)

    return StreamingResponse(chunks(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def user_texts(seen: Seen) -> list[str]:
    """The texts the user (the harness's prompt, an operator's message) wrote in a recorded
    request, on either wire, oldest first."""
    texts: list[str] = []
    for message in seen.body.get("messages") or []:  # Anthropic
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    items = seen.body.get("input")
    for item in items if isinstance(items, list) else []:  # OpenAI Responses
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            parts = content if isinstance(content, list) else [{"text": content}]
            texts += [str(p.get("text", "")) for p in parts if isinstance(p, dict)]
    return texts
