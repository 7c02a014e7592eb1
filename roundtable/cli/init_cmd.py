"""`roundtable init`: scaffold a project (private `.roundtable/`, its project id, starter files),
keep `.roundtable/` out of git, warn outside a git repository and print the next steps."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from roundtable.cli.common import fail, find_project, handle_errors


def in_git_work_tree(root: Path) -> bool:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def next_steps(root: Path, *, git: bool) -> list[str]:
    """What to do after `init`, in order, with the exact commands."""
    at = f" --root {root}" if root != Path.cwd().resolve() else ""
    steps = [] if git else [f"git init {root}   (patches are applied with git; commit the starter files)"]
    steps += [
        "read PROJECT.ROUNDTABLE.md and POLICIES.ROUNDTABLE.md; adjust .roundtable/config.yaml (agents, adapters)",
        f"connect a harness as an agent: roundtable connect claude --agent implementer-1 --approve{at}\n"
        f"     or: roundtable connect codex --agent implementer-1 --trust{at}",
        f"start the owner (HTTP, socket, Chair): roundtable start{at}",
        f"check the whole path: roundtable doctor{at}",
    ]
    return steps


@click.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory to make a project of.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Overwrite existing starter files (the project id and database are kept); "
    "also create a project nested inside another one.",
)
@handle_errors
def init(root: Path, force: bool) -> None:
    """Scaffold .roundtable/, the config, policies, protocol files and MCP assets."""
    from roundtable.scaffold import ignore_state_dir, init_project

    enclosing = find_project(root.absolute().parent)
    if enclosing is not None and not force:
        fail(
            f"{root.absolute()} is inside the roundtable project {enclosing.resolve()}: commands run here already "
            f"use it; run `roundtable init --force` to create a separate project nested in it"
        )
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    git = in_git_work_tree(root)
    init_project(root, force=force)
    click.echo(f"initialized roundtable in {root}")
    if ignore_state_dir(root):
        click.echo("added .roundtable/ to .gitignore (its database and credentials must never be committed)")
    if not git:
        click.echo(
            f"warning: {root} is not inside a git repository; roundtable applies patches with git "
            f"(run `git init {root}`)",
            err=True,
        )
    click.echo("next:")
    for number, step in enumerate(next_steps(root, git=git), 1):
        click.echo(f"  {number}. {step}")
