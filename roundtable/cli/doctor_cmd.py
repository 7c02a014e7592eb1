"""Checks `doctor` runs about the owner's identity: is the program answering at this project's
HTTP address this project's owner (its `/healthz` names the project id `init` gave it)? And about
notifications: what the owner last recorded of each webhook's deliveries, and `notify-send`.

Kept apart from the rest of `doctor` (in `connect_cmd`) because it shares its rule with the
stdio bridge: the same comparison decides whether a bridge may send the project's credential.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from roundtable import credentials


def fetch_health(
    address: str, *, tls: bool = False, timeout: float = 1.0, headers: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The JSON of `http(s)://address/healthz` ({} when something answers without it) and the
    response's headers (lower-cased names), or None when nothing answers."""
    scheme = "https" if tls else "http"
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    # No proxies from the environment (this is a loopback check) and no certificate check: a
    # credential is sent only to an owner that proved it knows it (see `identity_finding`).
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if tls:
        handlers.append(urllib.request.HTTPSHandler(context=ssl._create_unverified_context()))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(f"{scheme}://{host}:{port}/healthz", headers=headers or {})
    try:
        with opener.open(request, timeout=timeout) as resp:
            body = json.loads(resp.read(65536) or b"null")
            answered = {name.lower(): value for name, value in resp.headers.items()}
    except urllib.error.HTTPError:
        return {}, {}
    except (OSError, ValueError):
        return None
    return (body if isinstance(body, dict) else {}), answered


def identity_finding(root: Path, address: str, *, tls: bool = False) -> tuple[bool, str, str] | None:
    """(ok, what, fix) about who answers at `address`, or None when nothing answers there.

    As the stdio bridge does: the project id first (told to anyone), then a challenge the owner
    answers only if it knows this project's credential (the operator's, else the project's), and
    only then that credential, which makes the owner name its root and pid."""
    from roundtable.server.stdio import (
        CHALLENGE_HEADER,
        CREDENTIAL_HEADER,
        PROOF_HEADER,
        Identity,
        credential_id,
        credential_proof,
    )

    token = credentials.read_credential(root, operator=True) or credentials.read_credential(root) or ""
    digest = hashlib.sha256(token.encode()).hexdigest() if token else ""
    challenge = secrets.token_hex(16)
    asked = {CHALLENGE_HEADER: challenge, CREDENTIAL_HEADER: credential_id(digest)} if digest else {}
    answer = fetch_health(address, tls=tls, headers=asked)
    if answer is None:
        return None
    health, answered = answer
    theirs = health.get("project_id")
    fix_address = f"stop it, or give this project another mcp.http_address in {root}/.roundtable/config.yaml"
    if not isinstance(theirs, str):
        return (False, f"something that is not a roundtable owner answers at {address}", fix_address)
    identity = Identity(os.path.realpath(root), credentials.read_project_id(root))
    if identity.project_id is not None and theirs != identity.project_id:
        return (
            False,
            f"the owner at {address} serves another project (project id {theirs}), not this one; "
            "bridges of this project refuse it",
            fix_address,
        )
    if digest:
        proof = answered.get(PROOF_HEADER, "")
        if not hmac.compare_digest(proof.encode(), credential_proof(digest, challenge, theirs).encode()):
            return (
                False,
                f"the owner at {address} states this project's id but does not know its credential "
                "(not this project's owner, or the credential was replaced), so it was not sent",
                f"{fix_address}; or restart this project's owner (roundtable start --root {root})",
            )
        full = fetch_health(address, tls=tls, headers={"authorization": f"Bearer {token}"})
        if full is not None:
            health = full[0]
    if "root" not in health:
        return (True, f"the owner at {address} serves this project ({theirs}; no credential here to ask its root)", "")
    their_root = str(health.get("root") or "?")
    if identity.same_project(theirs, their_root):
        return (True, f"the owner at {address} serves this project ({theirs}, pid {health.get('pid', '?')})", "")
    return (
        False,
        f"the owner at {address} serves project {their_root} (pid {health.get('pid', '?')}), not this one "
        "(a copy of it?); bridges of this project refuse it",
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


def isolation_findings(root: Path, config: Any) -> list[tuple[bool, str, str, bool]]:
    """(ok, what, fix, note) for the sandboxes agents' code gets here: sessions and test runs,
    and who that code runs as. Runs the same probes the owner runs (a few hundred ms)."""
    import asyncio

    from roundtable.sandbox import runner
    from roundtable.sandbox import sessions as session_sandbox
    from roundtable.services.policy.engine import load_policy

    settings = config.sessions
    try:
        mode = session_sandbox.requested_mode(settings.sandbox)
    except ValueError as exc:
        return [(False, str(exc), f"unset {session_sandbox.ENV_VAR} or give it a valid value", False)]
    try:
        tests_mode = load_policy(root).tests.sandbox
    except Exception:  # the policy finding reports a broken policy file
        tests_mode = "auto"

    async def probe() -> tuple[session_sandbox.Launcher, runner.Sandbox]:
        launcher = await session_sandbox.choose(mode, allow_unsandboxed=settings.allow_unsandboxed)
        return launcher, await runner.choose(tests_mode)

    launcher, tests = asyncio.run(probe())
    fix = "install bubblewrap (Debian: apt-get install bubblewrap) or enable unprivileged user namespaces and Landlock"
    out: list[tuple[bool, str, str, bool]] = []
    if launcher.kind == session_sandbox.SUBPROCESS:
        out.append((True, f"agent sessions: {launcher.describe()}", "", True))
    elif launcher.usable:
        out.append((True, f"agent sessions run in {launcher.describe()}", "", False))
    else:
        out.append(
            (
                False,
                f"agent sessions cannot be launched: {launcher.reason}",
                f"{fix}, or set {session_sandbox.OPT_IN}",
                False,
            )
        )
    if tests.usable:
        out.append((True, f"test runs run in {tests.describe()}", "", False))
    else:
        out.append((False, f"test runs have no sandbox: {tests.reason}", fix, False))
    if os.getuid() == 0:
        note = (
            f"the owner runs as root: sandboxed code runs as uid {runner.SANDBOX_UID}, so the process limit "
            "(RLIMIT_NPROC) binds; no delegated cgroup is used. Paths in read_paths must be readable by that user"
        )
        out.append((True, note, "", True))
    return out
