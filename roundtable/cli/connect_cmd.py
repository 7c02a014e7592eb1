"""`roundtable connect codex|claude|cursor` and `roundtable doctor`.

`connect` writes the project-local MCP configuration a harness reads, pointing at
`roundtable mcp stdio --root <absolute project> [--agent ID]` with absolute paths. It never
touches global configuration and never writes a secret into a harness file: with `--agent ID` it
makes sure that agent's credential exists in `.roundtable/credentials/agents/ID.token` (0600; its
hash in the database), and the bridge reads it from there. Without `--agent` the harness uses the
unbound project credential: anonymous, read-only tools only. It refuses to overwrite an existing
file without `--force`. `doctor` checks what new users trip over and prints each problem with its
fix.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import click

from roundtable.cli.common import fail, handle_errors, root_option, run_async

# sockaddr_un.sun_path holds 108 bytes on Linux including the terminating NUL.
MAX_SOCKET_PATH = 107


@click.command()
@click.argument("harness", type=click.Choice(["codex", "claude", "cursor"]))
@root_option
@click.option("--force", is_flag=True, help="Overwrite an existing configuration file.")
@click.option(
    "--agent",
    "agent_id",
    default="",
    help="Bind the harness to this configured agent (e.g. implementer-1); without it the harness is read-only.",
)
@handle_errors
def connect(harness: str, root: Path, force: bool, agent_id: str) -> None:
    """Write HARNESS's project-local MCP configuration for this project."""
    from roundtable.config import load_config
    from roundtable.services.adapters import connect_files
    from roundtable.services.agents import configured_agents

    root = root.resolve()
    config = load_config(root)  # the project must be initialised
    if agent_id:
        known = [a.id for a in configured_agents(config)]
        if agent_id not in known:
            fail(f"agent {agent_id} is not configured; choose one of: {', '.join(known)}")
    files = connect_files(harness, root, agent_id)
    for rel in files:
        if (root / rel).exists() and not force:
            fail(f"{root / rel} already exists; rerun with --force to overwrite it")
    if agent_id:
        path = run_async(_ensure_agent_credential(root, agent_id))
        click.echo(f"credential for {agent_id}: {path} (0600; the harness file names the agent, never the secret)")
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        click.echo(f"wrote {target}")
        click.echo(text.rstrip("\n"))
    bound = f" --agent {agent_id}" if agent_id else ""
    click.echo(f"{harness} will start `roundtable mcp stdio --root {root}{bound}`; run `roundtable start` first.")
    if agent_id:
        click.echo(f"{harness} acts as {agent_id}: every call it makes is recorded as agent:{agent_id}.")
    else:
        click.echo(
            f"note: without --agent, {harness} is anonymous and may call read-only tools only; "
            f"to let it act, bind it to an agent: `roundtable connect {harness} --agent implementer-1 --force`"
        )


async def _ensure_agent_credential(root: Path, agent_id: str) -> Path:
    from roundtable.config import load_config
    from roundtable.services import tokens
    from roundtable.store.db import Database

    config = load_config(root)
    db = await Database.open(config.sqlite_path(root), readers=1)
    try:
        return await tokens.ensure_credential(db, root, principal=tokens.AGENT, agent_id=agent_id)
    finally:
        await db.close()


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""


def _owner_pid(root: Path) -> int:
    """The pid recorded in the owner lock when that process is alive (0 otherwise).
    Read-only: taking the lock to test it could race an owner that is starting."""
    try:
        text = (root / ".roundtable" / "owner.lock").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    if not text.isdigit():
        return 0
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        return pid
    return pid


def _port_in_use(address: str) -> bool:
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except (OSError, ValueError):
        return False


def diagnose(root: Path) -> list[Finding]:
    from roundtable.config import load_config
    from roundtable.errors import ConfigError
    from roundtable.services.adapters import CONNECT_TARGETS, configured_root, connect_files

    root = root.resolve()
    found: list[Finding] = []
    if shutil.which("git") is None:
        found.append(Finding(False, "git is not installed", "install git; patches are applied with `git apply`"))
    else:
        inside = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, check=False
        )
        if inside.returncode != 0:
            found.append(Finding(False, f"{root} is not a git repository", f"run `git init` in {root}"))
        else:
            found.append(Finding(True, "git is installed and the project is a git repository"))
    try:
        config = load_config(root)
    except ConfigError as exc:
        found.append(
            Finding(False, f"configuration is invalid: {exc}", "fix .roundtable/config.yaml or run `roundtable init`")
        )
        return found
    found.append(Finding(True, "configuration is valid"))
    sock = config.socket_path(root)
    length = len(os.fsencode(str(sock)))
    if length > MAX_SOCKET_PATH:
        found.append(
            Finding(
                False,
                f"socket path is {length} bytes, over the Unix limit of {MAX_SOCKET_PATH}: {sock}",
                "set mcp.socket_path in .roundtable/config.yaml to a shorter path (e.g. /tmp/<project>.sock)",
            )
        )
    else:
        found.append(Finding(True, f"socket path length is fine ({length} bytes)"))
    pid = _owner_pid(root)
    in_use = _port_in_use(config.mcp.http_address)
    if pid:
        found.append(Finding(True, f"an owner is running (pid {pid})"))
    else:
        found.append(Finding(False, "no owner is running", f"start one with `roundtable start --root {root}`"))
        if in_use:
            found.append(
                Finding(
                    False,
                    f"port {config.mcp.http_address} is used by another program",
                    "stop that program or set mcp.http_address in .roundtable/config.yaml",
                )
            )
    if pid or not in_use:
        found.append(Finding(True, f"HTTP address {config.mcp.http_address} is free or ours"))
    if in_use:  # project identity: the same check the stdio bridge makes before sending a credential
        from roundtable.cli.doctor_cmd import identity_finding

        tls = bool(config.mcp.tls_cert_file and config.mcp.tls_key_file)
        who = identity_finding(root, config.mcp.http_address, tls=tls)
        if who is not None:
            found.append(Finding(*who))
    for harness in CONNECT_TARGETS:
        rel = next(iter(connect_files(harness, root)))
        pointed = configured_root(harness, root)
        if pointed is None:
            found.append(
                Finding(True, f"{harness}: no project configuration ({rel}); `roundtable connect {harness}` adds one")
            )
        elif pointed and Path(pointed).resolve() == root:
            found.append(Finding(True, f"{harness}: {rel} points at this project"))
        else:
            found.append(
                Finding(
                    False,
                    f"{harness}: {rel} points at {pointed or 'no --root'}, not {root}",
                    f"run `roundtable connect {harness} --force --root {root}`",
                )
            )
    return found


@click.command()
@root_option
@handle_errors
def doctor(root: Path) -> None:
    """Check git, configuration, socket path, port, owner and harness configs; print fixes."""
    problems = 0
    for finding in diagnose(root):
        if finding.ok:
            click.echo(f"ok       {finding.what}")
        else:
            problems += 1
            click.echo(f"PROBLEM  {finding.what}")
            click.echo(f"         fix: {finding.fix}")
    if problems:
        fail(f"{problems} problem(s) found")
    click.echo("no problems found")
