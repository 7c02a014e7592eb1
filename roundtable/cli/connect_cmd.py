"""`roundtable connect codex|claude|cursor` and `roundtable doctor`.

`connect` writes the project-local MCP configuration a harness reads, pointing at
`roundtable mcp stdio --root <absolute project>` with absolute paths. It never touches global
configuration, never writes a token, and refuses to overwrite an existing file without
`--force`. `doctor` checks what new users trip over and prints each problem with its fix.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import click

from roundtable.cli.common import fail, handle_errors, root_option

# sockaddr_un.sun_path holds 108 bytes on Linux including the terminating NUL.
MAX_SOCKET_PATH = 107


@click.command()
@click.argument("harness", type=click.Choice(["codex", "claude", "cursor"]))
@root_option
@click.option("--force", is_flag=True, help="Overwrite an existing configuration file.")
@handle_errors
def connect(harness: str, root: Path, force: bool) -> None:
    """Write HARNESS's project-local MCP configuration for this project."""
    from roundtable.config import load_config
    from roundtable.services.adapters import connect_files

    root = root.resolve()
    load_config(root)  # the project must be initialised
    files = connect_files(harness, root)
    for rel in files:
        if (root / rel).exists() and not force:
            fail(f"{root / rel} already exists; rerun with --force to overwrite it")
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        click.echo(f"wrote {target}")
        click.echo(text.rstrip("\n"))
    click.echo(f"{harness} will start `roundtable mcp stdio --root {root}`; run `roundtable start` first.")


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
