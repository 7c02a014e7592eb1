"""The HTTP authentication layer on its own: the one `Authorization` parser and both backends.

Table-driven, with real parts: tokens and capabilities stored in a real SQLite database, the
backends behind Starlette's real `AuthenticationMiddleware`, driven over an in-process ASGI
transport (no sockets needed to judge a header).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from roundtable.runtime import Runtime
from roundtable.server.guard import (
    SESSION_UNAUTHORIZED,
    UNAUTHORIZED,
    CapabilityBackend,
    TokenBackend,
    authenticated,
    bearer_credential,
    caller_of,
    db_token_resolver,
)
from roundtable.services.sessions import tokens
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio

LEGACY = "legacy-shared-Token.1"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),  # no header: the backend decides whether that is anonymous
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),  # RFC 7235: the scheme is case-insensitive
        ("BEARER abc", "abc"),
        ("bEaReR abc", "abc"),
        ("Bearer   abc  ", "abc"),  # spaces around the credential are not part of it
        ("  Bearer abc", "abc"),
        ("Bearer rtcap_x-Y.z~+/=", "rtcap_x-Y.z~+/="),
        ("", ""),  # present but malformed: never anonymous
        ("Bearer", ""),
        ("Bearer ", ""),
        ("Bearer a b", ""),
        ("Bearer a\tb", ""),
        ("Bearer\tabc", ""),
        ("Basic abc", ""),
        ("Bearerabc", ""),
        ("abc", ""),
        ("Token abc", ""),
    ],
)
def test_bearer_credential(header: str | None, expected: str | None) -> None:
    assert bearer_credential(header) == expected


@dataclass
class Creds:
    operator: str
    agent: str
    disabled_agent: str
    project: str
    capability: str
    other_capability: str
    capability_id: str


@pytest.fixture
async def creds(runtime: Runtime) -> Creds:
    run_id, task_id = await make_task(runtime)
    mine = await bind(runtime, "implementer-1", run_id, task_id)
    other = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.write() as tx:
        _, operator = await tokens.create(tx, tokens.TokenArgs(principal=tokens.OPERATOR))
        _, agent = await tokens.create(tx, tokens.TokenArgs(principal=tokens.AGENT, agent_id="implementer-1"))
        _, disabled = await tokens.create(tx, tokens.TokenArgs(principal=tokens.AGENT, agent_id="implementer-2"))
        _, project = await tokens.create(tx, tokens.TokenArgs(principal=tokens.PROJECT))
        await tx.execute("UPDATE agents SET is_enabled = 0 WHERE id = 'implementer-2'")
    return Creds(operator, agent, disabled, project, mine.token, other.token, mine.cap.id)


def _header(creds: Creds, name: str) -> str | None:
    """`name` is a header template: `-` (none), or text with `{credential}` placeholders."""
    if name == "-":
        return None
    return name.format(**{k: v for k, v in vars(creds).items()})


# (header, require_tokens, legacy token configured) → who the shared endpoint sees:
# "operator", "agent:<id>", "anonymous", or None for 401.
TOKEN_CASES: list[tuple[str, bool, bool, str | None]] = [
    ("-", True, False, None),
    ("-", False, False, "anonymous"),  # `mcp.auth: none`
    ("-", False, True, None),  # a configured shared token makes a credential required
    ("Bearer {operator}", True, False, "operator"),
    ("bearer {operator}", True, False, "operator"),
    ("BEARER {agent}", True, False, "agent:implementer-1"),
    ("Bearer {agent}", False, False, "agent:implementer-1"),
    ("Bearer {disabled_agent}", True, False, None),  # a disabled agent's token names nobody
    ("Bearer {project}", True, False, "anonymous"),  # the project credential is unbound
    ("Bearer {capability}", True, False, None),  # valid only on its own session socket
    ("Bearer rttok_unknown", True, False, None),
    ("Bearer rttok_unknown", False, False, None),  # a wrong credential is never anonymous
    ("Basic {agent}", False, False, None),
    ("Bearer {agent} x", True, False, None),
    ("Bearer", False, False, None),
    (f"Bearer {LEGACY}", True, True, "anonymous"),
    (f"bearer {LEGACY}", True, True, "anonymous"),
    (f"Bearer {LEGACY}x", True, True, None),
    (f"Bearer {LEGACY}", True, False, None),  # not configured: just an unknown token
    ("Bearer tökén", True, False, None),  # not ASCII: no stored token can match
]


@pytest.mark.parametrize(("header", "require", "legacy", "expected"), TOKEN_CASES)
async def test_token_backend_identifies(
    runtime: Runtime, creds: Creds, header: str, require: bool, legacy: bool, expected: str | None
) -> None:
    backend = TokenBackend(db_token_resolver(runtime), token=LEGACY if legacy else "", require_tokens=require)
    caller, _credential = await backend.identify(_header(creds, header))
    assert (caller.principal if caller is not None else None) == expected


# header → whether a session endpoint lets the request through.
CAPABILITY_CASES: list[tuple[str, bool]] = [
    ("Bearer {capability}", True),
    ("bearer {capability}", True),
    ("BeArEr   {capability} ", True),
    ("-", False),
    ("Bearer {other_capability}", False),  # another session's capability
    ("Bearer {agent}", False),  # an agent token is not a capability
    ("Bearer {operator}", False),
    ("Bearer rtcap_nope", False),
    ("Basic {capability}", False),
    ("Bearer {capability} x", False),
    ("{capability}", False),
]


@pytest.mark.parametrize(("header", "accepted"), CAPABILITY_CASES)
async def test_capability_backend_accepts(runtime: Runtime, creds: Creds, header: str, accepted: bool) -> None:
    backend = CapabilityBackend(runtime, creds.capability_id)
    assert await backend.accepts(_header(creds, header)) is accepted


async def _whoami(request: Request) -> JSONResponse:
    return JSONResponse({"principal": caller_of(request.scope).principal, "path": request.url.path})


@pytest.fixture
async def apps(runtime: Runtime, creds: Creds) -> AsyncIterator[dict[str, httpx2.AsyncClient]]:
    routes = [Route("/mcp", _whoami, methods=["GET", "POST"]), Route("/healthz", _whoami)]
    shared = authenticated(Starlette(routes=routes), TokenBackend(db_token_resolver(runtime)))
    session = authenticated(Starlette(routes=routes), CapabilityBackend(runtime, creds.capability_id))
    async with (
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=shared), base_url="http://t") as a,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=session), base_url="http://t") as b,
    ):
        yield {"shared": a, "session": b}


async def test_refusals_keep_each_endpoints_answer(apps: dict[str, httpx2.AsyncClient], creds: Creds) -> None:
    resp = await apps["shared"].post("/mcp", headers={"authorization": "Bearer nope"})
    assert resp.status_code == 401 and resp.text == UNAUTHORIZED + "\n"
    assert resp.headers["www-authenticate"] == 'Bearer realm="roundtable"'
    assert "nope" not in resp.text
    resp = await apps["session"].post("/mcp", headers={"authorization": f"Bearer {creds.agent}"})
    assert resp.status_code == 401 and resp.text == SESSION_UNAUTHORIZED
    assert creds.agent not in resp.text and "www-authenticate" not in resp.headers


async def test_which_paths_need_a_credential(apps: dict[str, httpx2.AsyncClient], creds: Creds) -> None:
    # The shared endpoint guards /mcp only (/healthz answers anyone); a session endpoint every path.
    assert (await apps["shared"].get("/healthz")).status_code == 200
    assert (await apps["session"].get("/healthz")).status_code == 401
    ok = await apps["session"].get("/healthz", headers={"authorization": f"bearer {creds.capability}"})
    assert ok.status_code == 200


async def test_accepted_request_carries_the_principal(apps: dict[str, httpx2.AsyncClient], creds: Creds) -> None:
    got: dict[str, Any] = (await apps["shared"].post("/mcp", headers={"authorization": f"bEaReR {creds.agent}"})).json()
    assert got == {"principal": "agent:implementer-1", "path": "/mcp"}
    got = (await apps["shared"].post("/mcp", headers={"authorization": f"Bearer {creds.operator}"})).json()
    assert got["principal"] == "operator"


async def test_revocation_refuses_the_next_request(
    runtime: Runtime, apps: dict[str, httpx2.AsyncClient], creds: Creds
) -> None:
    headers = {"authorization": f"Bearer {creds.agent}"}
    assert (await apps["shared"].post("/mcp", headers=headers)).status_code == 200
    async with runtime.db.read() as reader:
        listed = await tokens.list_tokens(reader)
    token_id = next(t.id for t in listed if t.agent_id == "implementer-1")
    async with runtime.db.write() as tx:
        await tokens.revoke(tx, token_id)
    assert (await apps["shared"].post("/mcp", headers=headers)).status_code == 401
    # A session endpoint re-reads its capability on every request too: a known token stays
    # accepted here (expiry and revocation are refused per call, with their own message) …
    session_headers = {"authorization": f"Bearer {creds.capability}"}
    assert (await apps["session"].post("/mcp", headers=session_headers)).status_code == 200
    # … and one whose hash no longer names this capability is refused at once.
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE session_capabilities SET token_sha256 = 'gone' WHERE id = ?", (creds.capability_id,))
    assert (await apps["session"].post("/mcp", headers=session_headers)).status_code == 401


async def test_a_credential_is_read_again_after_any_commit(runtime: Runtime, creds: Creds) -> None:
    resolve = db_token_resolver(runtime)
    try:
        first = await resolve(creds.agent)
        assert first is not None and first.principal == "agent:implementer-1"
        for _ in range(5):  # nothing committed since: answered without a read
            assert await resolve(creds.agent) == first
        assert await resolve("rttok_unknown") is None
        assert await resolve("rttok_unknown") is None
        assert resolve.lookups == 2
        await make_task(runtime)  # any commit, even one that changes no credential
        assert await resolve(creds.agent) == first
        assert resolve.lookups == 3
    finally:
        resolve.close()


def _write_elsewhere(path: str, statement: str, params: tuple[Any, ...]) -> None:
    """A commit on a connection of its own, as the CLI in direct mode or another process makes."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute(statement, params)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        ("UPDATE access_tokens SET revoked_at = '2026-01-01T00:00:00Z' WHERE token_sha256 = ?", "digest"),
        ("UPDATE agents SET is_enabled = 0 WHERE id = ?", ("implementer-1",)),
        ("DELETE FROM access_tokens WHERE token_sha256 = ?", "digest"),
    ],
)
async def test_a_change_by_another_connection_refuses_the_next_request(
    runtime: Runtime, apps: dict[str, httpx2.AsyncClient], creds: Creds, statement: str, params: Any
) -> None:
    headers = {"authorization": f"Bearer {creds.agent}"}
    for _ in range(3):  # known, and kept since nothing changed
        assert (await apps["shared"].post("/mcp", headers=headers)).status_code == 200
    bound = (tokens.digest(creds.agent),) if params == "digest" else params
    await asyncio.to_thread(_write_elsewhere, str(runtime.db.path), statement, bound)
    assert (await apps["shared"].post("/mcp", headers=headers)).status_code == 401
