"""`roundtable init`: the starter files and directories, written in one checked step.

Every target is checked before anything is written, so a refusal leaves the tree unchanged.
`.roundtable/` is private (0700) and gets the project's random id (`.roundtable/project_id`,
kept by `init --force`), which the owner states and the stdio bridge checks.
"""

from __future__ import annotations

import asyncio
import os
from importlib.resources import files
from pathlib import Path

from roundtable.assets import client_text, generated_assets
from roundtable.atomic import write_atomic
from roundtable.config import Config, default_config_yaml
from roundtable.credentials import ensure_private_dir, ensure_project_id, state_dir
from roundtable.errors import RoundtableError

DIRECTORIES = (
    ".roundtable",
    ".roundtable/mcp",
    ".roundtable/sessions",
    ".roundtable/sessions/agents",
    ".roundtable/sessions/runs",
    ".roundtable/memory",
    ".roundtable/patches",
    ".roundtable/logs",
    ".roundtable/runs",
    "TASKS.ROUNDTABLE",
)
PRIVATE_DIRECTORIES = (".roundtable/mcp",)


def _template(name: str) -> str:
    return files("roundtable.scaffold").joinpath(name).read_text(encoding="utf-8")


def starter_files(config: Config) -> dict[Path, str]:
    """The nine starter files, in the order init writes them."""
    out: dict[Path, str] = {
        Path("AGENTS.ROUNDTABLE.md"): client_text(_template("AGENTS.ROUNDTABLE.md"), config),
        Path("PROJECT.ROUNDTABLE.md"): _template("PROJECT.ROUNDTABLE.md"),
        Path("POLICIES.ROUNDTABLE.md"): _template("POLICIES.ROUNDTABLE.md"),
        Path("TASKS.ROUNDTABLE/0001-bootstrap.md"): _template("bootstrap-task.md"),
        Path(".roundtable/config.yaml"): default_config_yaml(config),
        Path(".roundtable/memory/README.md"): _template("memory-README.md"),
    }
    out.update(generated_assets(config))
    return out


GITIGNORE_LINE = ".roundtable/"
_IGNORED_SPELLINGS = {".roundtable", ".roundtable/", "/.roundtable", "/.roundtable/", ".roundtable/*", "/.roundtable/*"}


def ignore_state_dir(root: Path) -> bool:
    """Make sure `.gitignore` keeps `.roundtable/` out of git; True when a line was added.

    `.gitignore` rather than `.git/info/exclude`: the directory holds the database and every
    credential, and a committed `.gitignore` protects every clone and every collaborator's
    `git add -A`, while `info/exclude` protects only this one checkout (and does not exist before
    `git init`)."""
    path = root / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if any(line.strip() in _IGNORED_SPELLINGS for line in text.splitlines()):
        return False
    prefix = "" if not text or text.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}# roundtable's private state: database, credentials, logs\n{GITIGNORE_LINE}\n")
    return True


class InitRefused(RoundtableError):
    """A starter file exists and --force was not given."""


def init_project(root: Path, *, force: bool = False) -> list[Path]:
    """Scaffold `root`; returns the files written. Raises `InitRefused` before writing anything.
    (From async code, use `init_project_async`.)"""
    return asyncio.run(init_project_async(root, force=force))


async def init_project_async(root: Path, *, force: bool = False) -> list[Path]:
    """`init_project` for callers already on an event loop."""
    config = Config()
    targets = starter_files(config)
    if not force:
        for rel in targets:
            if (root / rel).exists() or (root / rel).is_symlink():
                raise InitRefused(
                    f"refusing to overwrite existing file: {rel}; the project is already initialised "
                    "(rerun with --force to restore the starter files; the project id, database and "
                    "credentials are kept)"
                )
    ensure_private_dir(state_dir(root))
    for directory in DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    for directory in PRIVATE_DIRECTORIES:
        os.chmod(root / directory, 0o700)
    ensure_project_id(root)
    written = []
    for rel, text in targets.items():
        write_atomic(root / rel, text)
        written.append(root / rel)
    await _init_database(root)
    return written


async def _init_database(root: Path) -> None:
    """Create and migrate the database, and record the built-in adapters through the operator
    operation (the one write path)."""
    from roundtable.runtime import Runtime

    async with await Runtime.open(root) as runtime:
        await runtime.call("adapters.record", {})
