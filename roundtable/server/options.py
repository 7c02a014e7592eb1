"""The HTTP listener's options, validated before anything binds.

An address that splits into host and port, TLS certificate and key together, and — off
loopback — TLS plus token authentication. The legacy shared token comes from the environment
only (`ROUNDTABLE_MCP_TOKEN`), never from a file, and is never shown.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from roundtable.config import Config
from roundtable.errors import ConfigError

TOKEN_ENV = "ROUNDTABLE_MCP_TOKEN"


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int]:
    """`host:port` / `[v6]:port` / `:port` → (host, port); ConfigError otherwise."""
    text = address.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1 :].startswith(":"):
            raise ConfigError(f"invalid MCP HTTP address: {address!r} (expected [host]:port)")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ConfigError(f"invalid MCP HTTP address: {address!r} (expected host:port)")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"invalid MCP HTTP address: {address!r} (bad port)")
    return host, int(port_text)


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    loopback: bool
    cert_file: str
    key_file: str
    token: str
    max_body_bytes: int
    tool_names: str
    require_tokens: bool
    auth: str = "token"

    @property
    def tls(self) -> bool:
        return bool(self.cert_file and self.key_file)

    def __repr__(self) -> str:  # never show the token
        return f"HttpOptions(host={self.host!r}, port={self.port}, tls={self.tls}, token={'set' if self.token else 'unset'})"


def http_options(root: Path, config: Config, *, address: str | None = None) -> HttpOptions:
    """Validated listener options (the token comes from the environment only)."""
    mcp = config.mcp
    host, port = split_address(address if address is not None else mcp.http_address)
    cert = mcp.tls_cert_file.strip()
    key = mcp.tls_key_file.strip()
    if bool(cert) != bool(key):
        raise ConfigError("MCP HTTP TLS certificate and key must be configured together")
    cert_path = str(_rooted(root, cert)) if cert else ""
    key_path = str(_rooted(root, key)) if key else ""
    token = os.environ.get(TOKEN_ENV, "")
    loopback = bool(host) and is_loopback_host(host)
    authenticated = mcp.auth == "token" or mcp.require_tokens or bool(token)
    if not loopback and not (cert and key and authenticated):
        raise ConfigError("non-loopback MCP HTTP requires TLS certificate/key and bearer token")
    for path in (cert_path, key_path):
        if path and not os.path.isfile(path):
            raise ConfigError(f"load MCP HTTP TLS certificate and key: {path} does not exist")
    return HttpOptions(
        host=host or "0.0.0.0",
        port=port,
        loopback=loopback,
        cert_file=cert_path,
        key_file=key_path,
        token=token,
        max_body_bytes=mcp.http_max_body_bytes,
        tool_names=mcp.tool_names,
        require_tokens=authenticated,
        auth="token" if authenticated else "none",
    )


def _rooted(root: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(root) / path
