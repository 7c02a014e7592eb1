"""The gateway on real sockets: a session's Unix socket served by the owner's gateway, the model
stub of `tests/e2e_harness` on an ephemeral loopback port as the upstream, httpx2 over the Unix
socket as the harness. Shows the token swapped for the operator's key, streams passed on before
they end, usage recorded as the upstream reported it (and bounded when it is hostile), budgets
refusing the next request, a refused credential recorded at once, a rate limit retried, the
forward proxy's allow-list, and a closed session's socket gone."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from roundtable.config import BudgetsConfig, LimitConfig, NetworkConfig
from roundtable.gateway import Gateway, GatewayGrant, StopRequest
from roundtable.gateway.meter import TOKENS_MAX
from roundtable.runtime import Runtime
from roundtable.services.sessions import adapters, preflight, usage
from roundtable.tools.context import SUPERVISOR
from tests.e2e_harness.model_stub import Answer, Fault, StubServer, Usage
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio

OPERATOR_ANTHROPIC = "sk-ant-operator-key-0123456789"
OPERATOR_OPENAI = "sk-openai-operator-key-0123456789"
MESSAGE = {"model": "claude-stub", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
RESPONSE = {"model": "gpt-stub", "input": "hi", "stream": True}


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer(script=lambda _history: Answer("hello")).start()
    yield server
    server.stop()


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", OPERATOR_ANTHROPIC)
    monkeypatch.setenv("CODEX_API_KEY", OPERATOR_OPENAI)


@pytest.fixture
async def gateway(runtime: Runtime, stub: StubServer, credentials: None) -> AsyncIterator[Gateway]:
    stops: list[StopRequest] = []

    async def on_stop(request: StopRequest) -> None:
        stops.append(request)

    gw = Gateway(runtime, upstreams={"anthropic": stub.url, "openai": stub.url}, on_stop=on_stop)
    gw.stops = stops  # type: ignore[attr-defined]  # what the owner was asked, for the asserts
    await gw.start()
    try:
        yield gw
    finally:
        await gw.aclose()


async def _open(runtime: Runtime, gw: Gateway, where: Path, adapter: str = "claude") -> GatewayGrant:
    run_id, task_id = await make_task(runtime)
    bound = await bind(runtime, "implementer-1", run_id, task_id)
    return await gw.open_session(bound.session_id, adapter=adapter, socket_path=where / "gw.sock")


def _client(grant: GatewayGrant) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=httpx2.AsyncHTTPTransport(uds=str(grant.socket_path)), base_url="http://gateway", timeout=30
    )


def _anthropic_headers(token: str) -> dict[str, str]:
    return {"x-api-key": token, "anthropic-version": "2023-06-01", "content-type": "application/json"}


async def _recorded(runtime: Runtime, session_id: str, tokens: int | None = None) -> dict[str, Any]:
    """The session's usage row, once it shows `tokens` (recorded just after the answer ends)."""
    deadline = time.monotonic() + 10
    while True:
        async with runtime.db.read() as r:
            row = await usage.of_session(r, session_id)
        if row is not None and (tokens is None or row["tokens"] == tokens):
            return row
        if time.monotonic() > deadline:
            raise AssertionError(f"usage of {session_id} is {row}, not {tokens} tokens")
        await asyncio.sleep(0.01)


async def _events(runtime: Runtime, kind: str) -> list[dict[str, Any]]:
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = ? ORDER BY id", (kind,))
    return [json.loads(row[0]) for row in rows]


async def _until(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


# --- the model APIs ------------------------------------------------------------------------------------


async def test_the_token_is_checked_and_replaced_by_the_operator_key(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    grant = await _open(runtime, gateway, short_tmp)
    assert grant.token.startswith("rtgw_") and grant.socket_path.stat().st_mode & 0o777 == 0o600
    async with _client(grant) as http:
        answer = await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
        assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "ok"
        seen = stub.requests[-1]
        assert seen.headers["x-api-key"] == OPERATOR_ANTHROPIC
        assert all(grant.token not in value for value in seen.headers.values())

        before = len(stub.requests)
        wrong = await http.post("/anthropic/v1/messages", headers=_anthropic_headers("rtgw_wrong"), json=MESSAGE)
        assert wrong.status_code == 401
        assert wrong.json()["type"] == "error" and "token" in wrong.json()["error"]["message"]
        none = await http.post("/anthropic/v1/messages", json=MESSAGE)
        assert none.status_code == 401
        other_api = await http.post("/openai/v1/responses", headers={"authorization": f"Bearer {grant.token}"}, json={})
        assert other_api.status_code == 403  # a Claude Code session has the Anthropic API only
        assert len(stub.requests) == before  # nothing refused reached the upstream

        counted = await http.post(
            "/anthropic/v1/messages/count_tokens", headers=_anthropic_headers(grant.token), json=MESSAGE
        )
        assert counted.json() == {"input_tokens": 100}
    assert (await _recorded(runtime, grant.session_id, 15))["tokens"] == 15  # count_tokens is free


async def test_a_stream_is_passed_on_before_it_ends(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    grant = await _open(runtime, gateway, short_tmp)
    stub.hold = threading.Event()
    async with _client(grant) as http:
        async with http.stream(
            "POST", "/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json={**MESSAGE, "stream": True}
        ) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            chunks = answer.aiter_raw()
            first = await asyncio.wait_for(chunks.__anext__(), 10)
            assert b"message_start" in first and b"message_stop" not in first
            assert not stub.hold.is_set()  # the stub still holds the rest of the answer
            stub.hold.set()
            rest = b"".join([chunk async for chunk in chunks])
    assert b"message_stop" in rest and b"ok" in rest


async def test_usage_recorded_is_what_the_upstream_reported(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    stub.usage = Usage(input_tokens=1200, output_tokens=340, cached_tokens=800, cache_creation_tokens=60)
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        headers = _anthropic_headers(grant.token)
        streamed = await http.post(
            "/anthropic/v1/messages?beta=true", headers=headers, json={**MESSAGE, "stream": True}
        )
        assert streamed.status_code == 200
        row = await _recorded(runtime, grant.session_id, 2060 + 340)
        assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (2060, 800, 340)
        assert row["source"] == "gateway" and row["model"] == "claude-stub"
        whole = await http.post("/anthropic/v1/messages", headers=headers, json=MESSAGE)
        assert whole.status_code == 200
    row = await _recorded(runtime, grant.session_id, 4120 + 680)
    assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (4120, 1600, 680)


async def test_openai_responses_usage_is_recorded(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    stub.usage = Usage(input_tokens=2100, output_tokens=410, cached_tokens=1500)
    grant = await _open(runtime, gateway, short_tmp, adapter="codex")
    async with _client(grant) as http:
        answer = await http.post(
            "/openai/v1/responses", headers={"authorization": f"Bearer {grant.token}"}, json=RESPONSE
        )
        assert answer.status_code == 200 and b"response.completed" in answer.content
    assert stub.requests[-1].headers["authorization"] == f"Bearer {OPERATOR_OPENAI}"
    row = await _recorded(runtime, grant.session_id, 2100 + 410)
    assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (2100, 1500, 410)


def _codex_provider(home: Path, base_url: str, env_key: str = "MINE_KEY") -> None:
    """The operator's own Codex configuration selecting a provider of its own."""
    key = f'env_key = "{env_key}"\n' if env_key else ""
    (home / "config.toml").write_text(
        f'model = "gpt-stub"\nmodel_provider = "mine"\n\n[model_providers.mine]\nname = "mine"\n'
        f'base_url = "{base_url}"\nwire_api = "responses"\n{key}',
        encoding="utf-8",
    )


async def test_codex_requests_follow_the_operators_own_provider_and_its_env_key(
    runtime: Runtime, stub: StubServer, credentials: None, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider of the operator's Codex configuration: the session still talks to the gateway
    (its token), the gateway forwards to the provider's base_url with the key from the owner's
    variable the provider's env_key names — never CODEX_API_KEY, which is for OpenAI's own."""
    home = short_tmp / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("MINE_KEY", "sk-mine-provider-key-42")
    _codex_provider(home, f"{stub.url}/v1")
    async with Gateway(runtime, upstreams={"anthropic": stub.url}) as gw:
        grant = await _open(runtime, gw, short_tmp, adapter="codex")
        async with _client(grant) as http:
            answer = await http.post(
                "/openai/v1/responses", headers={"authorization": f"Bearer {grant.token}"}, json=RESPONSE
            )
            assert answer.status_code == 200 and b"response.completed" in answer.content
            seen = stub.requests[-1]
            assert seen.kind == "responses" and seen.headers["authorization"] == "Bearer sk-mine-provider-key-42"
            assert OPERATOR_OPENAI not in str(seen.headers) and grant.token not in str(seen.headers)
            await gw.flushed(grant.session_id)
            # Its host is a model API: never reached through the proxy.
            host, port = stub.url.removeprefix("http://").split(":")
            assert "never directly" in gw.refusal(host, int(port), gw._sessions[grant.session_id])

            # The owner without the provider's variable: refused at once, naming it.
            monkeypatch.delenv("MINE_KEY")
            before = len(stub.requests)
            refused = await http.post(
                "/openai/v1/responses", headers={"authorization": f"Bearer {grant.token}"}, json=RESPONSE
            )
            assert refused.status_code == 401 and "set MINE_KEY for the owner" in refused.json()["error"]["message"]
            assert len(stub.requests) == before

        # A base_url that does not end in /v1 stands for it (Codex asks `{base_url}/responses`);
        # a provider that names no key gets none, whatever the owner holds.
        _codex_provider(home, f"{stub.url}/compat", env_key="")
        (short_tmp / "b").mkdir()
        other = await _open(runtime, gw, short_tmp / "b", adapter="codex")
        async with _client(other) as http:
            await http.post("/openai/v1/responses", headers={"authorization": f"Bearer {other.token}"}, json=RESPONSE)
        seen = stub.requests[-1]
        assert seen.kind == "POST /compat/responses"
        assert "authorization" not in seen.headers and "x-api-key" not in seen.headers


async def test_codex_provider_that_is_not_defined_is_refused_by_preflight_and_gateway(
    runtime: Runtime, stub: StubServer, credentials: None, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = short_tmp / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    (home / "config.toml").write_text('model_provider = "elsewhere"\n', encoding="utf-8")
    assert "model_provider 'elsewhere'" in adapters.codex_operator_upstream().problem
    async with Gateway(runtime, upstreams={"anthropic": stub.url}) as gw:
        grant = await _open(runtime, gw, short_tmp, adapter="codex")
        async with _client(grant) as http:
            answer = await http.post(
                "/openai/v1/responses", headers={"authorization": f"Bearer {grant.token}"}, json=RESPONSE
            )
    assert answer.status_code == 401 and "is not defined under [model_providers.elsewhere]" in answer.text
    assert not [s for s in stub.requests if s.kind == "responses"]


async def test_hostile_usage_is_bounded_and_recording_goes_on(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    # Streamed (the stub's JSON answers cannot carry Infinity): message_start says 10**30 input,
    # -5 cache reads, "x" cache writes and 1 output; message_delta says Infinity output.
    stub.usage = Usage(input_tokens=10**30, output_tokens=float("inf"), cached_tokens=-5, cache_creation_tokens="x")
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        headers = _anthropic_headers(grant.token)
        streamed = {**MESSAGE, "stream": True}
        assert (await http.post("/anthropic/v1/messages", headers=headers, json=streamed)).status_code == 200
        row = await _recorded(runtime, grant.session_id, TOKENS_MAX + 1)
        assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (TOKENS_MAX, 0, 1)
        assert gateway.stats.usage_problems == 1
        stub.usage = Usage(input_tokens=7, output_tokens=3)
        assert (await http.post("/anthropic/v1/messages", headers=headers, json=streamed)).status_code == 200
    assert (await _recorded(runtime, grant.session_id, TOKENS_MAX + 1 + 10))["output_tokens"] == 4


async def test_without_a_budget_answers_are_written_together_not_one_transaction_each(
    runtime: Runtime, stub: StubServer, credentials: None, short_tmp: Path
) -> None:
    """Nothing waits on the written spend when no budget is set: answers are summed and written
    once per interval (here: only when asked), off the harness's next requests; closing the
    session writes what is left."""
    stub.usage = Usage(input_tokens=100, output_tokens=20)
    async with Gateway(runtime, upstreams={"anthropic": stub.url}, write_interval=60) as gw:
        grant = await _open(runtime, gw, short_tmp)
        with runtime.db.bus.subscribe() as commits:
            async with _client(grant) as http:
                for _ in range(3):
                    answer = await http.post(
                        "/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE
                    )
                    assert answer.status_code == 200
            await gw.flushed(grant.session_id)
            writes = [c for c in commits.drain() if "session_usage" in c.tables]
        assert len(writes) == 1
        row = await _recorded(runtime, grant.session_id)
        assert (row["input_tokens"], row["output_tokens"]) == (300, 60)
        async with _client(grant) as http:
            await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
        await gw.close_session(grant.session_id)
    row = await _recorded(runtime, grant.session_id)
    assert (row["input_tokens"], row["output_tokens"]) == (400, 80)


async def test_printed_usage_never_replaces_what_the_gateway_measured(
    runtime: Runtime, gateway: Gateway, short_tmp: Path
) -> None:
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
    await _recorded(runtime, grant.session_id, 15)
    for printed in (0, 155_000):  # lower, then higher: neither is taken
        await runtime.call(
            "session.record_usage",
            {"session_id": grant.session_id, "input_tokens": printed, "cost_usd": 1e9},
            SUPERVISOR,
        )
        row = await _recorded(runtime, grant.session_id)
        assert (row["tokens"], row["source"], row["printed_tokens"]) == (15, "gateway", printed)
        assert row["cost_usd"] == 0 and row["printed_cost_usd"] == 1e9


async def test_a_reached_budget_refuses_the_next_request_and_asks_to_stop(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    runtime.config = runtime.config.model_copy(update={"budgets": BudgetsConfig(task=LimitConfig(tokens=20))})
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        headers = _anthropic_headers(grant.token)
        for _ in range(2):  # 15 tokens each: the second crosses 20
            assert (await http.post("/anthropic/v1/messages", headers=headers, json=MESSAGE)).status_code == 200
        before = len(stub.requests)
        refused = await http.post("/anthropic/v1/messages", headers=headers, json={**MESSAGE, "stream": True})
    assert refused.status_code == 400
    error = refused.json()
    assert error["type"] == "error" and error["error"]["message"].startswith("budget reached: task ")
    assert len(stub.requests) == before
    await _until(lambda: gateway.stops, "the stop request")  # type: ignore[attr-defined]
    stop = gateway.stops[0]  # type: ignore[attr-defined]
    assert (stop.session_id, stop.kind) == (grant.session_id, "budget") and stop.message.startswith("budget:")
    assert (await _events(runtime, "gateway.budget_refused"))[0]["session_id"] == grant.session_id


async def test_an_answer_just_read_counts_before_the_next_request_is_judged(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    # A harness reads a streamed answer's last byte and asks again at once: the answer's usage
    # (15 tokens) must already count against the 10-token budget.
    runtime.config = runtime.config.model_copy(update={"budgets": BudgetsConfig(task=LimitConfig(tokens=10))})
    grant = await _open(runtime, gateway, short_tmp)
    streamed = {**MESSAGE, "stream": True}
    async with _client(grant) as http:
        headers = _anthropic_headers(grant.token)
        for _ in range(5):
            first = await http.post("/anthropic/v1/messages", headers=headers, json=streamed)
            if first.status_code != 200:
                break
        answered = len([r for r in stub.requests if r.kind == "messages"])
    assert first.status_code == 400 and "budget reached" in first.json()["error"]["message"]
    assert answered == 1


async def test_a_refused_credential_is_recorded_at_once(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    stub.faults.append(
        Fault(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    )
    grant = await _open(runtime, gateway, short_tmp)
    started = time.monotonic()
    async with _client(grant) as http:
        answer = await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
    assert time.monotonic() - started < 5
    assert answer.status_code == 401
    assert answer.json()["error"]["message"] == "the model API refused the credential (401, invalid x-api-key)"
    events = await _events(runtime, "gateway.credential_refused")
    assert [(e["session_id"], e["status"], e["message"]) for e in events] == [
        (grant.session_id, 401, "invalid x-api-key")
    ]
    await _until(lambda: gateway.stops, "the stop request")  # type: ignore[attr-defined]
    stop = gateway.stops[0]  # type: ignore[attr-defined]
    assert stop.kind == "credential_refused" and stop.message.startswith(preflight.CREDENTIAL_REFUSED)


async def test_no_operator_credential_is_refused_at_once(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        answer = await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
    assert answer.status_code == 401 and answer.json()["error"]["message"].startswith(preflight.NO_CREDENTIAL)
    assert not [s for s in stub.requests if s.kind == "messages"]


async def test_a_rate_limit_is_retried_after_retry_after(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    stub.faults += [Fault(429, limited, {"retry-after": "1"}), Fault(529, limited, {"retry-after-ms": "10"})]
    grant = await _open(runtime, gateway, short_tmp)
    started = time.monotonic()
    async with _client(grant) as http:
        answer = await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
    assert answer.status_code == 200
    assert time.monotonic() - started >= 1.0  # the upstream's retry-after was honoured
    assert [s.kind for s in stub.requests].count("messages") == 3 and gateway.stats.retried == 2


# --- the forward proxy ---------------------------------------------------------------------------------


async def _raw(grant: GatewayGrant, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_unix_connection(str(grant.socket_path))
    writer.write(head)
    await writer.drain()
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return reader, writer, answer


async def test_connect_to_an_allowed_listener_relays_bytes(runtime: Runtime, gateway: Gateway, short_tmp: Path) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    listener = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    sessions = runtime.config.sessions.model_copy(update={"network": NetworkConfig(allow=(f"127.0.0.1:{port}",))})
    runtime.config = runtime.config.model_copy(update={"sessions": sessions})
    grant = await _open(runtime, gateway, short_tmp)
    try:
        reader, writer, answer = await _raw(
            grant, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\nfirst ".encode()
        )
        assert answer.startswith(b"HTTP/1.1 200")
        writer.write(b"second")
        await writer.drain()
        got = b""
        while len(got) < len(b"FIRST SECOND"):
            got += await asyncio.wait_for(reader.read(100), 10)
        assert got == b"FIRST SECOND"
        writer.close()
    finally:
        listener.close()
    assert await _events(runtime, "gateway.connection_refused") == []


async def test_a_host_not_allowed_is_refused_and_recorded(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    grant = await _open(runtime, gateway, short_tmp)
    _reader, writer, answer = await _raw(grant, b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
    writer.close()
    assert answer.startswith(b"HTTP/1.1 403")
    async with _client(grant) as http:  # absolute-form plain HTTP, to the model upstream itself
        direct = await http.get(f"{stub.url}/v1/models", extensions={"target": f"{stub.url}/v1/models".encode()})
    assert direct.status_code == 403 and "through the gateway" in direct.text
    refused = await _events(runtime, "gateway.connection_refused")
    assert [(e["session_id"], e["host"], e["port"]) for e in refused] == [
        (grant.session_id, "example.org", 443),
        (grant.session_id, "127.0.0.1", stub.port),
    ]
    assert not [s for s in stub.requests if s.kind.startswith("GET")]


async def test_plain_http_to_an_allowed_host_is_forwarded(
    runtime: Runtime, gateway: Gateway, short_tmp: Path, credentials: None
) -> None:
    registry = StubServer(script=lambda _history: Answer("x")).start()
    try:
        allowed = NetworkConfig(allow=(f"127.0.0.1:{registry.port}",))
        sessions = runtime.config.sessions.model_copy(update={"network": allowed})
        runtime.config = runtime.config.model_copy(update={"sessions": sessions})
        grant = await _open(runtime, gateway, short_tmp)
        url = f"{registry.url}/simple/pkg/"
        async with _client(grant) as http:
            answer = await http.get(
                url, extensions={"target": url.encode()}, headers={"proxy-authorization": "Basic x"}
            )
        assert answer.status_code == 404  # the registry's own answer, passed on
        assert registry.requests[-1].kind == "GET /simple/pkg/"
        assert "proxy-authorization" not in registry.requests[-1].headers
    finally:
        registry.stop()


async def test_closing_a_session_revokes_its_socket(
    runtime: Runtime, gateway: Gateway, stub: StubServer, short_tmp: Path
) -> None:
    grant = await _open(runtime, gateway, short_tmp)
    async with _client(grant) as http:
        ok = await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
        assert ok.status_code == 200
        await gateway.close_session(grant.session_id)
        assert not grant.socket_path.exists() and not gateway.serves(grant.session_id)
        with pytest.raises(httpx2.TransportError):  # the kept-alive connection was cut, no new one
            await http.post("/anthropic/v1/messages", headers=_anthropic_headers(grant.token), json=MESSAGE)
    await gateway.close_session(grant.session_id)  # twice: no-op
