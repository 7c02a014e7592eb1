"""The owner's MCP URL, read fast for the stdio bridge (and the CLI, `doctor`, `wait`).

Where the owner listens, in order: `ROUNDTABLE_HTTP_ADDRESS` (CI and scripts), the address a
running owner wrote to `.roundtable/owner.json` (0600: it may have taken a free port because the
default was held by another project's owner), then `mcp.http_address` in the config.

A harness starts a bridge (`roundtable mcp stdio`) for every agent session, and its start-up
budget is about 250 ms; importing pydantic and building the configuration models alone costs
more than half of that. So the bridge reads only what it needs — `mcp.http_address` and the two
TLS files — with the checks `config.py` applies to them, and leaves the rest of the file to the
owner, which validates all of it when it starts (a bridge then reaches the owner that runs,
whatever a later edit broke elsewhere in the file). Whenever these keys are not plainly valid,
or the file cannot be read, the bridge goes through `load_config` and reports its located error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

CONFIG_RELATIVE_PATH = Path(".roundtable") / "config.yaml"
OWNER_FILE = Path(".roundtable") / "owner.json"
DEFAULT_HTTP_ADDRESS = "127.0.0.1:7117"
ADDRESS_ENV = "ROUNDTABLE_HTTP_ADDRESS"


def override_address() -> str:
    """`ROUNDTABLE_HTTP_ADDRESS` when set (a `ConfigError`-free check: '' when unset)."""
    return os.environ.get(ADDRESS_ENV, "").strip()


def running_address(root: Path | str) -> str:
    """The address the project's running owner wrote to `.roundtable/owner.json`, or '' (no
    file, unreadable, or its process is gone)."""
    try:
        data = json.loads((Path(root) / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return ""
    if not isinstance(data, dict):
        return ""
    address, pid = data.get("http_address"), data.get("pid")
    if not isinstance(address, str) or address_problem(address) or not isinstance(pid, int) or pid <= 0:
        return ""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return ""
    except PermissionError:
        pass
    return address


def address_problem(address: str) -> str:
    """Why `address` is not `host:port`, `[v6]:port` or `:port` with a port from 0 to 65535
    ('' when it is). The same syntax the HTTP listener accepts; checked at load so the error
    names the file and the line instead of surfacing at `start`."""
    text = address.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1 :].startswith(":"):
            return "expected [host]:port"
        port_text = text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            return "expected host:port, e.g. 127.0.0.1:7117"
        if any(c.isspace() for c in host):
            return "the host must not contain spaces"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        return "the port must be a number from 0 to 65535"
    return ""


def http_url(address: str, tls_cert_file: str = "", tls_key_file: str = "") -> str:
    """`http(s)://<address>/mcp`: https when both TLS files are configured."""
    scheme = "https" if tls_cert_file and tls_key_file else "http"
    return f"{scheme}://{address}/mcp"


def bridge_url(root: Path | str) -> str:
    """The configured MCP URL of the owner of `root`; `ConfigError` (from `load_config`) when the
    file is missing, unreadable, or these keys are invalid."""
    mcp = _mcp_section(Path(root) / CONFIG_RELATIVE_PATH)
    if mcp is not None:
        address = override_address() or running_address(root) or mcp.get("http_address", DEFAULT_HTTP_ADDRESS)
        cert, key = mcp.get("tls_cert_file", ""), mcp.get("tls_key_file", "")
        if all(isinstance(v, str) for v in (address, cert, key)) and not address_problem(address):
            return http_url(address, cert, key)
    from roundtable.config import load_config  # the slow path, for its error message

    config = load_config(root)
    address = override_address() or running_address(root) or config.mcp.http_address
    return http_url(address, config.mcp.tls_cert_file, config.mcp.tls_key_file)


def _mcp_section(path: Path) -> dict[str, Any] | None:
    """The `mcp` mapping ({} when absent), or None when the file is not plainly readable."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        return None
    mcp = data.get("mcp")
    if mcp is None:
        return {}
    return mcp if isinstance(mcp, dict) else None
