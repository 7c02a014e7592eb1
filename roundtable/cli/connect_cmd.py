"""`roundtable connect codex|claude|cursor` and `roundtable doctor`.

`connect` adds (or replaces) the `roundtable` entry in the project-local MCP configuration a
harness reads — `.codex/config.toml`, `.mcp.json` or `.cursor/mcp.json` — editing the file
structurally, so the user's other servers, settings and (TOML) comments stay. The entry runs
`roundtable mcp stdio --root <absolute project> [--agent ID]`. No secret is ever written into a
harness file: with `--agent ID` it makes sure that agent's credential exists in
`.roundtable/credentials/agents/ID.token` (0600; its hash in the database) and the bridge reads
it from there. Without `--agent` the harness uses the unbound project credential: anonymous,
read-only tools only. Replacing an entry that differs (another agent, another project) needs
`--force`; a file it cannot parse is never overwritten.

Each harness needs one more step before it starts a project's server, and `connect` prints it:
Codex reads a project's `.codex/config.toml` only when `~/.codex/config.toml` trusts the project
(`--trust` adds that, the only time roundtable touches a user's global file); Claude Code keeps a
project server pending until approved (`--approve` writes `.claude/settings.local.json`).

`doctor` checks what new users trip over — including starting each configured bridge the way
its harness would and listing the tools through it — and prints each problem with its fix.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import call, read
from roundtable.cli.common import fail, handle_errors, json_option, print_json, root_option, run_async

# sockaddr_un.sun_path holds 108 bytes on Linux including the terminating NUL.
MAX_SOCKET_PATH = 107
HARNESS_NAMES = {"codex": "Codex", "claude": "Claude Code", "cursor": "Cursor"}


@click.command()
@click.argument("harness", type=click.Choice(["codex", "claude", "cursor"]))
@root_option
@click.option("--force", is_flag=True, help="Replace a roundtable entry that binds another agent or project.")
@click.option(
    "--agent",
    "agent_id",
    default="",
    help="Bind the harness to this configured agent (e.g. implementer-1); without it the harness is read-only.",
)
@click.option(
    "--trust",
    is_flag=True,
    help="Codex: mark the project trusted in ~/.codex/config.toml (or $CODEX_HOME), so Codex reads .codex/config.toml.",
)
@click.option(
    "--approve",
    is_flag=True,
    help="Claude Code: approve the project's roundtable server in .claude/settings.local.json.",
)
@click.option(
    "--workspace",
    is_flag=True,
    help="Set the harness up in the agent's workspace (a git worktree outside the project) instead of the project.",
)
@click.option("--task", "task_id", default="", help="With --workspace: the task (its workspace is made if needed).")
@handle_errors
def connect(
    harness: str, root: Path, force: bool, agent_id: str, trust: bool, approve: bool, workspace: bool, task_id: str
) -> None:
    """Add this project's roundtable server to HARNESS's project-local MCP configuration."""
    from roundtable.config import load_config
    from roundtable.services.coordination.agents import configured_agents
    from roundtable.services.sessions import adapters

    if trust and harness != "codex":
        raise click.UsageError("--trust is for codex (Codex trusts projects; other harnesses do not need it)")
    if approve and harness != "claude":
        raise click.UsageError("--approve is for claude (Claude Code approves project servers)")
    root = root.resolve()
    config = load_config(root)  # the project must be initialised
    if agent_id:
        known = [a.id for a in configured_agents(config)]
        if agent_id not in known:
            fail(f"agent {agent_id} is not configured; choose one of: {', '.join(known)}")
    if task_id and not workspace:
        raise click.UsageError("--task goes with --workspace")
    place = root
    ws: Any = None
    if workspace:
        if not agent_id:
            raise click.UsageError("--workspace needs --agent (a workspace belongs to one agent)")
        ws = _workspace_of(root, agent_id, task_id)
        place = Path(ws.path)
    tools = adapters.WORKSPACE_TOOLS if workspace else ""  # its listing: what its own tools do not do
    edit = adapters.connect_edit(harness, root, agent_id, at=place, tools=tools)  # parses; writes nothing
    if edit.action == "replaced" and not force and _binding(edit.previous or {}) != _binding_of(root, agent_id):
        was = _describe_binding(edit.previous or {})
        fail(
            f"{root / edit.rel} already has a roundtable entry ({was}); rerun with --force to replace "
            "that entry (the rest of the file is kept)"
        )
    if trust:  # check the files the flags edit before writing anything: a refusal changes nothing
        adapters.trust_codex(place, dry_run=True)
    if approve:
        adapters.approve_claude(place, dry_run=True)
    if agent_id:
        path = _ensure_agent_credential(root, agent_id)
        click.echo(f"credential for {agent_id}: {path} (0600; the harness file names the agent, never the secret)")
    if ws is not None:
        from roundtable.services.workspaces import worktrees as workspaces

        # The harness's own files in the workspace are never part of what it proposes.
        workspaces.mark_local(ws, [edit.rel, *([adapters.CLAUDE_SETTINGS] if harness == "claude" else [])])
    target = adapters.write_connect_edit(place, edit)
    if ws is None:
        written = [edit.rel, *([adapters.CLAUDE_SETTINGS] if approve else [])]
        excluded = _keep_out_of_git(place, written)
        if excluded:
            click.echo(f"kept out of git (local paths, per machine): {', '.join(excluded)} in .git/info/exclude")
    said = {
        "created": f"created {target} with the roundtable server",
        "added": f"added the roundtable server to {target} (its other entries are unchanged)",
        "replaced": f"replaced the roundtable entry in {target} (was: {_describe_binding(edit.previous or {})}; "
        "its other entries are unchanged)",
        "unchanged": f"{target} already has this roundtable entry; nothing changed",
    }[edit.action]
    click.echo(said)
    entry = adapters.connect_entry(harness, root, agent_id, tools)
    click.echo(f"  command: {' '.join([entry['command'], *entry['args']])}")
    if agent_id:
        click.echo(f"{HARNESS_NAMES[harness]} acts as {agent_id}: every call it makes is recorded as agent:{agent_id}.")
    else:
        click.echo(
            f"note: without --agent, {harness} is anonymous and may call read-only tools only; "
            f"to let it act, bind it to an agent: `roundtable connect {harness} --agent implementer-1 --force`"
        )
    steps = _remaining_steps(harness, place, trust=trust, approve=approve)
    if ws is not None:
        click.echo(
            f"workspace {ws.id} of {agent_id} for task {ws.task_id}: {place} (a git worktree outside the project; "
            "its edits reach the table only through workspace_propose)"
        )
        steps.append(f"run {harness} in the workspace: cd {place}")
    running = _owner_pid(root)
    if running:
        click.echo(f"the owner is running (pid {running}); the bridge relays to it")
    else:
        steps.append(f"start the owner (the bridge relays to it): roundtable start --root {root}")
    steps.append(f"check the whole path: roundtable doctor --root {root}")
    click.echo("next:")
    for number, step in enumerate(steps, 1):
        click.echo(f"  {number}. {step}")


def _keep_out_of_git(root: Path, rels: list[str]) -> list[str]:
    """Add the harness files `connect` wrote to the repository's `.git/info/exclude` (not the
    shared `.gitignore`: they name this machine's paths, and the choice stays the user's); those
    git already ignores are left alone. Returns what was added ('' outside a git repository)."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)

    try:
        found = git("rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
        if found.returncode != 0 or not found.stdout.strip():
            return []
        exclude = Path(found.stdout.strip())
        # The top directory of each file (`.codex/`, `.claude/`), or the file itself (`.mcp.json`).
        patterns = list(dict.fromkeys(f"/{rel.split('/')[0]}/" if "/" in rel else f"/{rel}" for rel in rels))
        wanted = [p for p in patterns if git("check-ignore", "-q", "--no-index", p.strip("/")).returncode != 0]
        if not wanted:
            return []
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        lines = text.splitlines()
        added = [p for p in wanted if p not in lines]
        if added:
            prefix = "" if not text or text.endswith("\n") else "\n"
            exclude.write_text(text + prefix + "".join(f"{p}\n" for p in added), encoding="utf-8")
        return added
    except (OSError, subprocess.TimeoutExpired):
        return []


def _binding(entry: dict[str, Any]) -> tuple[str, str]:
    from roundtable.services.sessions.adapters import entry_option

    return entry_option(entry, "--root"), entry_option(entry, "--agent")


def _binding_of(root: Path, agent_id: str) -> tuple[str, str]:
    return str(root), agent_id


def _describe_binding(entry: dict[str, Any]) -> str:
    where, agent = _binding(entry)
    return f"project {where or '(none)'}, " + (f"agent {agent}" if agent else "no agent")


def _remaining_steps(harness: str, root: Path, *, trust: bool, approve: bool) -> list[str]:
    """Do what --trust/--approve ask; return the steps still left for the user, in order."""
    from roundtable.services.sessions import adapters

    steps: list[str] = []
    if harness == "codex":
        home = adapters.codex_home() / "config.toml"
        if trust:
            path, changed = adapters.trust_codex(root)
            click.echo(f"{'marked' if changed else 'already marked'} {adapters.codex_project(root)} trusted in {path}")
        elif adapters.codex_trusts(root):
            click.echo(f"Codex already trusts {root} ({home})")
        else:
            snippet = adapters.codex_trust_snippet(root).replace("\n", "\n       ")
            steps.append(
                f"Codex ignores .codex/config.toml until it trusts the project: rerun with --trust, or add to "
                f"{home}:\n       {snippet}\n     (`codex mcp list` then lists roundtable)"
            )
    elif harness == "claude":
        if approve:
            path, changed = adapters.approve_claude(root)
            click.echo(f"{'approved' if changed else 'already approved'} the roundtable server in {path}")
        elif adapters.claude_approval(root) == "approved":
            click.echo(f"Claude Code already has the roundtable server approved ({root / adapters.CLAUDE_SETTINGS})")
        else:
            steps.append(
                "Claude Code keeps a project server pending until it is approved: rerun with --approve (writes "
                f'{{"enabledMcpjsonServers": ["roundtable"]}} into {root / adapters.CLAUDE_SETTINGS}), or approve '
                "it when Claude Code asks"
            )
        steps.append(f"run claude from {root} itself (the approval is not found from a subdirectory)")
    else:
        steps.append("in Cursor, open this project and enable the roundtable server under Settings → MCP")
    return steps


def _workspace_of(root: Path, agent_id: str, task_id: str) -> Any:
    """The agent's workspace for `task_id` (made now if needed), or its only live one."""
    from roundtable.services.workspaces import worktrees as workspaces

    if task_id:
        made = call(root, "workspace.create", {"agent_id": agent_id, "task_id": task_id})
        return read(root, lambda r: workspaces.require_live(r, agent_id, made["workspace"]["task_id"]))
    found = read(root, lambda r: workspaces.listing(r, workspaces.ListArgs(agent_id=agent_id)))
    if len(found) != 1:
        which = ", ".join(f"{w.id} (task {w.task_id})" for w in found) or "none"
        fail(f"{agent_id} has {len(found)} live workspaces ({which}); name the task with --task")
    return found[0]


def _ensure_agent_credential(root: Path, agent_id: str) -> Path:
    return Path(call(root, "token.ensure", {"principal": "agent", "agent_id": agent_id})["path"])


@dataclass(frozen=True)
class Finding:
    """One line of `doctor`: ok, a problem (with its fix), or a note (not a problem)."""

    ok: bool
    what: str
    fix: str = ""
    note: bool = False


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
    host = host.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except (OSError, ValueError):
        return False


def _git_findings(root: Path) -> list[Finding]:
    if shutil.which("git") is None:
        return [Finding(False, "git is not installed", "install git; patches are applied with `git apply`")]
    inside = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, check=False
    )
    if inside.returncode != 0:
        return [Finding(False, f"{root} is not a git repository", f"run `git init` in {root}")]
    return [Finding(True, "git is installed and the project is a git repository")]


def _policy_finding(root: Path) -> Finding:
    from roundtable.errors import ConfigError
    from roundtable.services.policy.engine import POLICY_FILE, load_policy

    try:
        load_policy(root)
    except ConfigError as exc:
        return Finding(
            False,
            f"{POLICY_FILE} is invalid, so `roundtable start` refuses to run: {exc}",
            f"fix {root / POLICY_FILE} (or restore the starter file with `roundtable init --force`)",
        )
    return Finding(True, f"{POLICY_FILE} is valid" if (root / POLICY_FILE).exists() else "no policy file: defaults")


def _executable_problem(command: str) -> str:
    """Why a harness could not start `command` ('' when it can)."""
    if not command:
        return "the entry names no command"
    if os.sep in command:
        if not os.path.exists(command):
            return f"{command} does not exist"
        if not os.access(command, os.X_OK) or os.path.isdir(command):
            return f"{command} is not executable"
        return ""
    return "" if shutil.which(command) else f"{command} is not on PATH"


def _credential_findings(root: Path, harness: str, agent: str, owner_running: bool, configured: set[str]) -> Finding:
    from roundtable import credentials

    try:
        path = credentials.credential_path(root, agent_id=agent)
    except ValueError:
        return Finding(
            False,
            f"{harness}: --agent {agent!r} is not a valid agent id",
            f"run `roundtable connect {harness} --agent implementer-1 --force`",
        )
    who = f"agent {agent}'s credential" if agent else "the project credential"
    fix = (
        f"run `roundtable connect {harness} --agent {agent} --force --root {root}`"
        if agent
        else f"start the owner (`roundtable start --root {root}`); it writes the project credential"
    )
    if not path.exists():
        if not owner_running and (not agent or agent in configured):
            return Finding(True, f"{harness}: {who} ({path}) is written when the owner starts", note=True)
        if agent and agent not in configured:
            return Finding(
                False,
                f"{harness}: the entry binds agent {agent}, which is not configured, and it has no credential",
                f"bind a configured agent: `roundtable connect {harness} --agent implementer-1 --force --root {root}`",
            )
        return Finding(False, f"{harness}: {who} is missing ({path}); the bridge cannot authenticate", fix)
    if not os.access(path, os.R_OK) or credentials.read_credential(root, agent_id=agent) is None:
        return Finding(
            False,
            f"{harness}: {who} ({path}) is unreadable or empty; the bridge cannot authenticate",
            f"make it readable by you (chmod 600 {path}), or {fix}",
        )
    return Finding(True, f"{harness}: {who} is present ({path})")


def _harness_env(harness: str, entry: dict[str, Any]) -> dict[str, str]:
    """The environment `harness` gives its MCP server: Codex passes a small default set plus
    what the entry lists in `env_vars` (and `env`); Claude Code and Cursor pass their own."""
    if harness != "codex":
        return dict(os.environ)
    keep = ("HOME", "PATH", "LANG", "LC_ALL", "USER", "LOGNAME", "SHELL", "TMPDIR", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    for name in entry.get("env_vars") or []:
        if isinstance(name, str) and name in os.environ:
            env[name] = os.environ[name]
    extra = entry.get("env")
    if isinstance(extra, dict):
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


async def bridge_round_trip(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    """Start `argv` as an MCP stdio server, `initialize` and page through `tools/list`.
    Returns (number of tools, '') or (-1, why it failed)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return -1, f"cannot start {argv[0]}: {exc.strerror}"
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def request(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode() + b"\n"
        )
        await proc.stdin.drain()
        while True:
            line = await proc.stdout.readline()
            if not line:
                raise EOFError
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(str(msg["error"].get("message", msg["error"])))
                return dict(msg.get("result") or {})

    async def talk() -> int:
        assert proc.stdin is not None
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "roundtable-doctor", "version": "1"},
        }
        await request(1, "initialize", hello)
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        count, cursor, msg_id = 0, None, 2
        while True:
            page = await request(msg_id, "tools/list", {"cursor": cursor} if cursor else {})
            count += len(page.get("tools") or [])
            cursor = page.get("nextCursor")
            msg_id += 1
            if not cursor or msg_id > 100:
                return count

    try:
        return await asyncio.wait_for(talk(), timeout), ""
    except (EOFError, RuntimeError, ValueError, TimeoutError, ConnectionError) as exc:
        why = f"no answer within {timeout:.0f}s" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        if proc.returncode is None:
            proc.kill()
        err = (await proc.stderr.read(4096)).decode("utf-8", "replace").strip().splitlines()
        return -1, (err[-1] if err else why)
    finally:
        if proc.returncode is None:
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def _harness_findings(root: Path, owner_ok: bool, owner_running: bool, configured: set[str]) -> list[Finding]:
    from roundtable.errors import ValidationError
    from roundtable.services.sessions import adapters

    found: list[Finding] = []
    for harness in adapters.CONNECT_TARGETS:
        rel = adapters.CONNECT_PATHS[harness]
        name = HARNESS_NAMES[harness]
        try:
            entry = adapters.configured_entry(harness, root)
        except ValidationError as exc:
            found.append(
                Finding(False, f"{harness}: {exc}", f"fix {root / rel}, then run `roundtable connect {harness}`")
            )
            continue
        if entry is None:
            found.append(
                Finding(
                    True, f"{harness}: no roundtable entry in {rel}; `roundtable connect {harness}` adds one", note=True
                )
            )
            continue
        pointed, agent = _binding(entry)
        reconnect = f"run `roundtable connect {harness}{' --agent ' + agent if agent else ''} --force --root {root}`"
        if not pointed or Path(pointed).resolve() != root:
            found.append(Finding(False, f"{harness}: {rel} points at {pointed or 'no --root'}, not {root}", reconnect))
            continue
        command = str(entry.get("command") or "")
        problem = _executable_problem(command)
        if problem:
            found.append(Finding(False, f"{harness}: {rel} starts a missing program: {problem}", reconnect))
            continue
        found.append(
            Finding(True, f"{harness}: {rel} points at this project" + (f" as {agent}" if agent else " (read-only)"))
        )
        found.append(_credential_findings(root, harness, agent, owner_running, configured))
        if harness == "codex":
            if adapters.TOKEN_ENV not in (entry.get("env_vars") or []):
                found.append(
                    Finding(
                        True,
                        f"codex: the entry does not forward {adapters.TOKEN_ENV} (env_vars); a token set in "
                        "the environment would not reach the bridge",
                        note=True,
                    )
                )
            if adapters.codex_trusts(root):
                found.append(Finding(True, f"codex: {adapters.codex_home() / 'config.toml'} trusts this project"))
            else:
                found.append(
                    Finding(
                        False,
                        f"codex: {name} does not trust {root}, so it ignores {rel} (`codex mcp list` says no servers)",
                        f"run `roundtable connect codex{' --agent ' + agent if agent else ''} --trust --root {root}` (adds "
                        f"{adapters.codex_trust_snippet(root).replace(chr(10), ' ')} to "
                        f"{adapters.codex_home() / 'config.toml'})",
                    )
                )
        if harness == "claude":
            approval = adapters.claude_approval(root)
            if approval == "approved":
                found.append(Finding(True, f"claude: the roundtable server is approved ({adapters.CLAUDE_SETTINGS})"))
            elif approval == "disabled":
                found.append(
                    Finding(
                        False,
                        "claude: the roundtable server is disabled (disabledMcpjsonServers)",
                        f"run `roundtable connect claude{' --agent ' + agent if agent else ''} --approve --root {root}`",
                    )
                )
            else:
                found.append(
                    Finding(
                        False,
                        f"claude: {name} keeps the roundtable server pending until it is approved",
                        f"run `roundtable connect claude{' --agent ' + agent if agent else ''} --approve --root {root}` "
                        "(or approve it when Claude Code asks)",
                    )
                )
        argv = [command, *[str(a) for a in entry.get("args") or []]]
        if not owner_running:
            found.append(
                Finding(
                    True,
                    f"{harness}: bridge round trip not tried: no owner is running; start one with "
                    f"`roundtable start --root {root}`",
                    note=True,
                )
            )
        elif owner_ok:
            count, why = run_async(bridge_round_trip(argv, _harness_env(harness, entry), root))
            if count >= 0:
                found.append(
                    Finding(
                        True,
                        f"{harness}: the bridge answered: {count} tools listed through `{' '.join(argv[:1])} {' '.join(argv[1:3])} …`",
                    )
                )
            else:
                found.append(Finding(False, f"{harness}: the bridge {name} would start failed: {why}", reconnect))
        else:
            found.append(
                Finding(
                    True, f"{harness}: bridge round trip not tried: this project's owner does not answer", note=True
                )
            )
    return found


def diagnose(root: Path) -> list[Finding]:
    """Every check `doctor` makes, in order."""
    from roundtable.config import load_config
    from roundtable.errors import ConfigError, ConfigMissing
    from roundtable.services.coordination.agents import configured_agents

    root = root.resolve()
    if not root.is_dir():
        return [Finding(False, f"{root} is not a directory", "pass the project root with --root")]
    found = _git_findings(root)
    try:
        config = load_config(root)
    except ConfigError as exc:
        fix = (
            f"run `roundtable init --root {root}`"
            if isinstance(exc, ConfigMissing)
            else f"fix {root / '.roundtable' / 'config.yaml'} (the message names the line)"
        )
        found.append(Finding(False, f"configuration is invalid: {exc}", fix))
        return found
    found.append(Finding(True, "configuration is valid"))
    found.append(_policy_finding(root))
    from roundtable.cli.doctor_cmd import isolation_findings

    found += [Finding(ok, what, fix, note) for ok, what, fix, note in isolation_findings(root, config)]
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
    from roundtable.endpoint import override_address, running_address

    address = override_address() or running_address(root) or config.mcp.http_address
    in_use = _port_in_use(address)
    owner_ok = False
    who: tuple[bool, str, str] | None = None
    if in_use:  # project identity: the same check the stdio bridge makes before sending a credential
        from roundtable.cli.doctor_cmd import identity_finding

        tls = bool(config.mcp.tls_cert_file and config.mcp.tls_key_file)
        who = identity_finding(root, address, tls=tls)
    if pid:
        found.append(Finding(True, f"an owner is running (pid {pid})"))
    else:
        found.append(Finding(True, f"no owner is running; start one with `roundtable start --root {root}`", note=True))
        if in_use and who is None:  # what answers there says it better (once) when anything does
            found.append(
                Finding(
                    False,
                    f"port {address} is used by another program",
                    "stop that program or set mcp.http_address in .roundtable/config.yaml",
                )
            )
    if pid or not in_use:
        found.append(Finding(True, f"HTTP address {address} is free or ours"))
    if who is not None:
        found.append(Finding(*who))
        owner_ok = who[0]
    elif pid and not in_use:
        found.append(
            Finding(
                True,
                f"the process holding the project (pid {pid}) does not answer at {address} (a headless run "
                f"has no listeners); harnesses need `roundtable start --root {root}` or the console",
                note=True,
            )
        )
    found += _agent_findings(config, root)
    found += _tests_findings(root)
    configured = {spec.id for spec in configured_agents(config)}
    found += _harness_findings(root, owner_ok, bool(pid) or owner_ok, configured)
    from roundtable.cli.doctor_cmd import notify_findings

    found += [Finding(ok, what, fix, note=note) for ok, what, fix, note in notify_findings(root, config)]
    return found


def _tests_findings(root: Path) -> list[Finding]:
    """Whether the test command inferred for a Python project runs the project's interpreter."""
    from roundtable.errors import RoundtableError
    from roundtable.services.policy.engine import load_policy
    from roundtable.services.testing import test_suggest

    try:
        if load_policy(root).tests.commands:
            return []
    except RoundtableError:
        return []  # the policy finding already says what is wrong
    bare = [s for s in test_suggest.suggest(root) if s.language == "python" and s.command.split()[0] == "pytest"]
    if not bare:
        return []
    return [
        Finding(
            True,
            "tests: the inferred command `pytest` runs whatever pytest the test sandbox finds on PATH, not this "
            "project's interpreter (there is no .venv/bin/python); create the project's .venv, or set "
            "tests.commands in POLICIES.ROUNDTABLE.md",
            note=True,
        )
    ]


def _agent_findings(config: Any, root: Path) -> list[Finding]:
    """Can each launchable agent's harness run under this owner (program, model credential)?
    A problem when the autopilot launches them (`autopilot.mode: auto`), else a note."""
    from roundtable.services.sessions import preflight

    unready = preflight.unready_agents(config)
    if not unready:
        return [Finding(True, "every agent's harness is installed and has its model credential")]
    auto = config.autopilot.mode == "auto"
    out = []
    for item in unready:
        if auto:
            out.append(Finding(False, item.line(), item.fix))
        else:
            out.append(Finding(True, f"{item.line()} (fix: {item.fix})", note=True))
    return out


@click.command()
@root_option
@json_option
@handle_errors
def doctor(root: Path, as_json: bool) -> None:
    """Check git, configuration, policy, socket path, port, owner, credentials and each harness's
    configuration (starting its bridge when an owner runs); print fixes. Exit 1 only for problems."""
    problems = 0
    findings = diagnose(root)
    if as_json:
        rows = [
            {"status": "note" if f.note else "ok" if f.ok else "problem", "what": f.what, "fix": f.fix}
            for f in findings
        ]
        problems = sum(1 for row in rows if row["status"] == "problem")
        print_json({"ok": not problems, "problems": problems, "findings": rows})
        if problems:
            sys.exit(1)
        return
    for finding in findings:
        if finding.note:
            click.echo(f"note     {finding.what}")
        elif finding.ok:
            click.echo(f"ok       {finding.what}")
        else:
            problems += 1
            click.echo(f"PROBLEM  {finding.what}")
            click.echo(f"         fix: {finding.fix}")
    if problems:
        fail(f"{problems} problem(s) found")
    click.echo("no problems found")
