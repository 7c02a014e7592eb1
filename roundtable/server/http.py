"""Standard MCP over Streamable HTTP: uvicorn as a task on the owner's loop.

Routes: `/mcp` (the bearer guard, then the SDK's stateful session manager with SSE replies,
explicit Host/Origin settings and a body limit) and `/healthz` (no guard; `{"status": …}`).
Shutdown refuses new requests, lets in-flight POSTs finish (bounded), ends the MCP sessions so
their GET streams close, then stops uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Generator
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roundtable.errors import RoundtableError
from roundtable.server.guard import BearerGuard, HttpOptions, db_token_resolver, http_options
from roundtable.server.mcp_adapter import build_server

__all__ = ["HttpError", "HttpServer", "http_options", "security_settings"]

log = logging.getLogger("roundtable.server.http")


class HttpError(RoundtableError):
    """The HTTP listener could not start."""


def security_settings(options: HttpOptions, port: int) -> TransportSecuritySettings:
    """Host/Origin allow-lists: loopback names on a loopback bind, the bound host otherwise."""
    scheme = "https" if options.tls else "http"
    if options.loopback:
        hosts = ["127.0.0.1", "localhost", "[::1]"]
    else:
        hosts = [options.host if ":" not in options.host else f"[{options.host}]"]
    allowed_hosts = [f"{h}:{port}" for h in hosts]
    allowed_origins = [f"{scheme}://{h}:{port}" for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the owner decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpServer:
    """The MCP HTTP endpoint of one owner."""

    def __init__(
        self,
        runtime: Any,
        options: HttpOptions,
        *,
        health: Callable[[], str] = lambda: "ready",
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.options = options
        self._health = health
        self._say = log or (lambda line: None)
        self.mcp = build_server(runtime, tool_names=lambda: runtime.config.mcp.tool_names)
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[Any] | None = None
        self._guard: BearerGuard | None = None
        self.port = options.port
        self._stopped = False

    @property
    def address(self) -> str:
        host = self.options.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        scheme = "https" if self.options.tls else "http"
        return f"{scheme}://{self.address}/mcp"

    async def _healthz(self, request: Request) -> Response:
        try:
            status = self._health()
        except Exception:
            status = "degraded"
        return Response(json.dumps({"status": status}) + "\n", media_type="application/json")

    def _build_app(self, port: int) -> Any:
        app = self.mcp.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=False,
            stateless_http=False,
            transport_security=security_settings(self.options, port),
            max_request_body_size=self.options.max_body_bytes,
            host=self.options.host,
            custom_starlette_routes=[Route("/healthz", self._healthz, methods=["GET", "HEAD", "POST"])],
        )
        self._guard = BearerGuard(
            app,
            token=self.options.token,
            require_tokens=self.options.require_tokens,
            resolve=db_token_resolver(self.runtime),
        )
        return self._guard

    async def start(self) -> None:
        """Bind (port 0 → an ephemeral port) and serve until `stop()`."""
        import socket as _socket

        family = _socket.AF_INET6 if ":" in self.options.host else _socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP,
        # and without it every keep-alive reply stalls ~40 ms on Nagle + delayed ACK.
        sock = _socket.socket(family, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
        try:
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            sock.bind((self.options.host, self.options.port))
            sock.listen(2048)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise HttpError(f"listen for MCP HTTP: {exc.strerror or exc}") from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._build_app(self.port),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_keep_alive=120,
            timeout_graceful_shutdown=2,
            h11_max_incomplete_event_size=1024 * 1024,
            ssl_certfile=self.options.cert_file or None,
            ssl_keyfile=self.options.key_file or None,
            server_header=False,
        )
        try:
            self._server = _QuietServer(config)
        except Exception as exc:  # e.g. an unreadable key pair
            sock.close()
            raise HttpError(f"load MCP HTTP TLS certificate and key: {type(exc).__name__}") from None
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="roundtable-http")
        while not self._server.started:
            if self._task.done():
                sock.close()
                failure = self._task.exception() if not self._task.cancelled() else None
                raise HttpError(f"MCP HTTP server stopped: {type(failure).__name__ if failure else 'cancelled'}")
            await asyncio.sleep(0.005)

    @property
    def task(self) -> asyncio.Task[Any] | None:
        return self._task

    async def stop(self, drain_timeout: float = 5.0) -> None:
        if self._stopped or self._server is None or self._task is None:
            return
        self._stopped = True
        guard = self._guard
        if guard is not None:
            guard.closing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(guard.idle.wait(), drain_timeout)
        await self._end_sessions()
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), drain_timeout)
        except TimeoutError:
            self._server.force_exit = True
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        except Exception:
            log.exception("HTTP server stopped with an error")

    async def _end_sessions(self) -> None:
        """Terminate every MCP session so open GET streams end now, not at the grace deadline."""
        manager = getattr(self.mcp, "_session_manager", None)
        instances = getattr(manager, "_server_instances", None)
        if not isinstance(instances, dict):
            return
        for transport in list(instances.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(transport.terminate(), 1.0)
