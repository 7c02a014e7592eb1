"""`roundtable workspaces list|create|remove|propose|sync`: agents' workspaces from the shell.

Each is one operation through `Runtime.call` as the operator (`workspace.list`,
`workspace.create`, `workspace.remove`, `workspace.propose`, `workspace.sync`): `create` prints
the workspace's path, so a harness the user runs by hand can be started there
(`roundtable connect HARNESS --agent ID --workspace`).
"""

from __future__ import annotations

from pathlib import Path

import click

from roundtable.cli.calls import call
from roundtable.cli.common import handle_errors, json_option, print_json, root_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def workspaces() -> None:
    """List, create, remove, propose or sync agents' workspaces (git worktrees outside the project)."""


@workspaces.command("list")
@root_option
@json_option
@click.option("--agent", default="", help="Only this agent's workspaces.")
@click.option("--task", default="", help="Only this task's workspaces.")
@click.option("--all", "include_removed", is_flag=True, help="Include removed workspaces.")
@handle_errors
def list_workspaces(root: Path, as_json: bool, agent: str, task: str, include_removed: bool) -> None:
    """Print workspaces: <id> <agent> <task> <state> <files> +<added> -<deleted> <path>."""
    args = {"agent_id": agent, "task_id": task, "all": include_removed, "diffstat": True}
    result = call(root, "workspace.list", args)
    if as_json:
        print_json(result)
        return
    if not result["workspaces"]:
        click.echo("no workspaces")
        return
    for ws in result["workspaces"]:
        stat = ws.get("diffstat") or {}
        change = f"{stat.get('files', 0)} files +{stat.get('added', 0)} -{stat.get('deleted', 0)}"
        if stat.get("error"):
            change = f"({stat['error']})"
        click.echo(f"{ws['id']} {ws['agent_id']} {ws['task_id']} {ws['state']} {change} {ws['path']}")


@workspaces.command("create")
@root_option
@json_option
@click.option("--agent", required=True, help="The agent that works there.")
@click.option("--task", required=True, help="The task it serves.")
@handle_errors
def create(root: Path, as_json: bool, agent: str, task: str) -> None:
    """Make (or find) the agent's workspace for the task and print its path."""
    result = call(root, "workspace.create", {"agent_id": agent, "task_id": task})
    if as_json:
        print_json(result)
        return
    click.echo(result["workspace"]["path"])


@workspaces.command("remove")
@root_option
@click.argument("workspace_id")
@click.option("--reason", default="", help="Why (recorded).")
@handle_errors
def remove(root: Path, workspace_id: str, reason: str) -> None:
    """Remove a workspace's directory; its record stays (state removed)."""
    result = call(root, "workspace.remove", {"workspace_id": workspace_id, "reason": reason})
    click.echo(f"removed {workspace_id}" if result["removed"] else f"{workspace_id} was already removed")


@workspaces.command("propose")
@root_option
@json_option
@click.option("--agent", required=True, help="The author.")
@click.option("--task", required=True, help="The task.")
@click.option("--title", default="", help="Title (a new proposal only).")
@click.option("--summary", default="", help="Summary in Markdown (a new proposal only).")
@handle_errors
def propose(root: Path, as_json: bool, agent: str, task: str, title: str, summary: str) -> None:
    """Propose the workspace's changes for the agent (a new proposal or a new revision)."""
    args = {"agent_id": agent, "task_id": task, "title": title, "summary_md": summary}
    result = call(root, "workspace.propose", args)
    if as_json:
        print_json(result)
        return
    p = result["proposal"]
    click.echo(f"{p['id']} revision {p['revision_number']} ({p['status']}): {', '.join(result['files'])}")


@workspaces.command("sync")
@root_option
@json_option
@click.option("--agent", required=True, help="The agent.")
@click.option("--task", required=True, help="The task.")
@handle_errors
def sync(root: Path, as_json: bool, agent: str, task: str) -> None:
    """Bring the workspace onto the current tree; print the conflicting paths."""
    result = call(root, "workspace.sync", {"agent_id": agent, "task_id": task})
    if as_json:
        print_json(result)
        return
    if not result["changed"]:
        click.echo("already on the current tree")
    for path in result["conflicts"]:
        click.echo(f"conflict: {path}")
