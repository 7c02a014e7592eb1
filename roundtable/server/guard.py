"""Who is calling an HTTP endpoint: Starlette's authentication middleware with two backends.

Both endpoints read the credential the same way, in one place (`bearer_credential`): the
`Authorization` header's scheme is matched case-insensitively (RFC 7235 §2.1, RFC 9110 §11.1:
`Bearer`, `bearer`, `bEaReR`), followed by one credential without spaces. A missing header and a
malformed one are told apart (only a missing one may be anonymous). The credential is resolved
on every request — from the database whenever anyone committed since it was last read
(`server.tokencache`), so revoking it refuses the very next request — and never echoed or logged.

- `TokenBackend` guards `/mcp` of the shared endpoint. With `mcp.auth: token`
  (the default, on every bind: loopback TCP is reachable by every local uid) a request without
  a valid credential gets 401. A credential resolves to the principal it belongs to: an operator
  token → the operator; an agent token → that agent, while the agent is registered and enabled;
  an unbound credential (the project credential, the legacy shared `ROUNDTABLE_MCP_TOKEN`,
  compared in constant time) → anonymous, which `Runtime.call` limits to read-only tools; a
  session capability (`rtcap_…`) → 401, it is valid only on its own session socket.
  `mcp.auth: none` is the explicit opt-out: a request without a header is anonymous.
- `CapabilityBackend` guards every path of one session's endpoint: only that session's
  capability gets through (the token's hash names the capability, in any state: an expired or
  revoked one is refused call by call, with its own message, by `capabilities.check_call`).

A refusal is answered by the backend's `on_error` with the endpoint's 401 text; an accepted
request carries a `Principal` as `scope["user"]`.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Scope

from roundtable.server.tokencache import HTTP_CALLER, CredentialResolver
from roundtable.services.sessions import capabilities
from roundtable.tools.context import Caller

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.server.guard")

CAPABILITY_PREFIX = "rtcap_"
SESSION_CALLER = Caller("agent", "session")
UNAUTHORIZED = (
    "unauthorized: this endpoint needs a bearer credential (Authorization: Bearer <token>); "
    "harnesses get one through `roundtable connect --agent ID` (the bridge reads it from .roundtable/), "
    "other clients from `roundtable tokens create --agent ID`"
)
SESSION_UNAUTHORIZED = "unauthorized"

TokenResolver = Callable[[str], Awaitable[Caller | None]]


def bearer_credential(header: str | None) -> str | None:
    """The credential of an `Authorization` header value: None without the header, "" when it
    is not a well-formed bearer credential (another scheme, no credential, or a credential with
    spaces). The scheme is case-insensitive; spaces around the credential are ignored."""
    if header is None:
        return None
    scheme, _, rest = header.strip().partition(" ")
    token = rest.strip()
    if scheme.lower() != "bearer" or not token or " " in token or "\t" in token:
        return ""
    return token


class Principal(BaseUser):
    """An authenticated request's caller (`scope["user"]`) and the credential it presented."""

    def __init__(self, caller: Caller, credential: str = "") -> None:
        self.caller = caller
        self.credential = credential

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.caller.principal


def caller_of(scope: Scope | None, default: Caller = HTTP_CALLER) -> Caller:
    """The caller the authentication middleware put on a request's scope."""
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.caller if isinstance(user, Principal) else default


def credential_of(scope: Scope | None) -> str:
    """The credential an authenticated request presented ('' for none)."""
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.credential if isinstance(user, Principal) else ""


class TokenBackend(AuthenticationBackend):
    """The shared endpoint's backend: bearer tokens on `path`; other paths are open."""

    def __init__(
        self, resolve: TokenResolver | None, *, token: str = "", require_tokens: bool = True, path: str = "/mcp"
    ) -> None:
        self._resolve = resolve
        self._token = token.encode("utf-8")
        # Without a credential a request is refused unless the operator opted out (`mcp.auth: none`
        # and no shared token configured).
        self._require = require_tokens or bool(token)
        self._path = path

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if conn.scope.get("path") != self._path:
            return None
        caller, credential = await self.identify(conn.headers.get("authorization"))
        if caller is None:
            raise AuthenticationError(UNAUTHORIZED)
        return AuthCredentials(["mcp"]), Principal(caller, credential)

    async def identify(self, header: str | None) -> tuple[Caller | None, str]:
        """The caller an `Authorization` header value names (None: refuse) and its credential."""
        presented = bearer_credential(header)
        if presented is None:
            return (None if self._require else HTTP_CALLER), ""
        if not presented:
            return None, ""  # a malformed Authorization header is never anonymous
        if self._token and hmac.compare_digest(presented.encode("latin-1"), self._token):
            return HTTP_CALLER, ""  # the legacy shared token names nobody: anonymous
        if self._resolve is None or not presented.isascii() or presented.startswith(CAPABILITY_PREFIX):
            return None, ""  # a session capability is valid only on its own session socket
        return await self._resolve(presented), presented

    @staticmethod
    def on_error(conn: HTTPConnection, exc: Exception) -> Response:
        return PlainTextResponse(
            UNAUTHORIZED + "\n", status_code=401, headers={"www-authenticate": 'Bearer realm="roundtable"'}
        )


class CapabilityBackend(AuthenticationBackend):
    """A session endpoint's backend: only its own capability's token, on every path."""

    def __init__(self, runtime: Runtime, capability_id: str) -> None:
        self.runtime = runtime
        self.capability_id = capability_id

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if not await self.accepts(conn.headers.get("authorization")):
            raise AuthenticationError(SESSION_UNAUTHORIZED)
        return AuthCredentials(["mcp"]), Principal(SESSION_CALLER)

    async def accepts(self, header: str | None) -> bool:
        """Whether an `Authorization` header value carries this session's capability."""
        token = bearer_credential(header)
        if not token:
            return False
        async with self.runtime.db.read() as reader:
            cap = await capabilities.lookup(reader, token)
        return cap is not None and cap.id == self.capability_id

    @staticmethod
    def on_error(conn: HTTPConnection, exc: Exception) -> Response:
        log.info("session endpoint refused a request: unauthorized")
        return PlainTextResponse(SESSION_UNAUTHORIZED, status_code=401)


def authenticated(app: ASGIApp, backend: TokenBackend | CapabilityBackend) -> ASGIApp:
    """`app` behind Starlette's authentication middleware with `backend` and its 401 answer."""
    return AuthenticationMiddleware(app, backend=backend, on_error=backend.on_error)


def db_token_resolver(runtime: Runtime) -> CredentialResolver:
    """Resolve a presented token through `access_tokens` (by its sha256): read again after any
    commit by anyone, so revocation refuses the next request (`server.tokencache`)."""
    return CredentialResolver(runtime)
