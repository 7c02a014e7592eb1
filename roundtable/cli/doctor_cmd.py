"""Checks `doctor` runs about the owner's identity: is the program answering at this project's
HTTP address this project's owner (its `/healthz` names the project id `init` gave it)?

Kept apart from the rest of `doctor` (in `connect_cmd`) because it shares its rule with the
stdio bridge: the same comparison decides whether a bridge may send the project's credential.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from roundtable import credentials


def fetch_health(address: str, *, tls: bool = False, timeout: float = 1.0) -> dict[str, Any] | None:
    """The JSON of `http(s)://address/healthz`, {} when something answers without it, None when
    nothing answers."""
    scheme = "https" if tls else "http"
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    # No proxies from the environment (this is a loopback check) and no certificate check: only
    # public facts are read here and no credential is sent.
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if tls:
        handlers.append(urllib.request.HTTPSHandler(context=ssl._create_unverified_context()))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(f"{scheme}://{host}:{port}/healthz", timeout=timeout) as resp:
            body = json.loads(resp.read(65536) or b"null")
    except urllib.error.HTTPError:
        return {}
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else {}


def identity_finding(root: Path, address: str, *, tls: bool = False) -> tuple[bool, str, str] | None:
    """(ok, what, fix) about who answers at `address`, or None when nothing answers there."""
    health = fetch_health(address, tls=tls)
    if health is None:
        return None
    from roundtable.server.stdio import Identity

    theirs = health.get("project_id")
    fix_address = f"stop it, or give this project another mcp.http_address in {root}/.roundtable/config.yaml"
    if not isinstance(theirs, str):
        return (False, f"something that is not a roundtable owner answers at {address}", fix_address)
    their_root = str(health.get("root") or "?")
    identity = Identity(os.path.realpath(root), credentials.read_project_id(root))
    same = identity.same_project(theirs, their_root)
    if same:
        return (True, f"the owner at {address} serves this project ({theirs}, pid {health.get('pid', '?')})", "")
    return (
        False,
        f"the owner at {address} serves project {their_root} (pid {health.get('pid', '?')}), not this one; "
        "bridges of this project refuse it",
        fix_address,
    )
