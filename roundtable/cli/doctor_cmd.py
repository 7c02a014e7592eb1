"""Checks `doctor` runs about the owner's identity: is the program answering at this project's
HTTP address this project's owner (its `/healthz` names the project id `init` gave it)? And about
notifications: what the owner last recorded of each webhook's deliveries, and `notify-send`.

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


def notify_findings(root: Path, config: Any) -> list[tuple[bool, str, str, bool]]:
    """(ok, what, fix, note) about each configured webhook, from the state the owner keeps in
    `.roundtable/logs/notify-status.json`, and about `notify-send`."""
    from roundtable.notify import desktop
    from roundtable.notify.webhooks import display_url, read_status

    found: list[tuple[bool, str, str, bool]] = []
    notify = config.notify
    states = read_status(root).get("webhooks") or []
    for i, hook in enumerate(notify.webhooks):
        url = display_url(hook.url)
        state = states[i] if i < len(states) and isinstance(states[i], dict) and states[i].get("url") == url else {}
        if state.get("failing_since"):
            found.append(
                (
                    False,
                    f"webhook {url} ({hook.format}) failing since {state['failing_since']}: {state.get('last_error', '?')}",
                    f"check notify.webhooks[{i}].url and that the service answers (each notification is tried "
                    f"{notify.retries + 1} times)",
                    False,
                )
            )
        elif state.get("last_success_at"):
            found.append(
                (True, f"webhook {url} ({hook.format}) delivers (last at {state['last_success_at']})", "", False)
            )
        else:
            found.append((True, f"webhook {url} ({hook.format}): nothing sent yet", "", True))
    if notify.desktop:
        program = desktop.available()
        what = (
            f"desktop notifications through {program}"
            if program
            else "no desktop notifications: notify-send is not installed or there is no desktop session"
        )
        found.append((True, what, "", True))
    return found
