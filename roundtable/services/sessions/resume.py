"""Resuming a harness's own session: its argv, and the state it keeps in its private home.

Claude Code and Codex keep each conversation in their home (`~/.claude/projects/<cwd>/<id>.jsonl`,
`$CODEX_HOME/sessions/…/rollout-…-<id>.jsonl`, CODEX_HOME being the home's `.codex-home`) and continue it by id: `claude --resume ID -p`,
`codex exec resume ID -`. A supervised session's home lives in its private directory, which is
removed when the session ends; so the supervisor keeps the harness's state (`save_state`) under
`.roundtable/sessions/<session id>/` (0700, never inside a sandbox), and a resumed session starts
with it in its own new home (`restore_state`). Claude Code files a conversation under its
working directory's path with every character but letters and digits made `-` (measured on
2.1.197): a conversation begun in one home is moved to the new one's name.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from roundtable.credentials import ensure_private_dir
from roundtable.services.sessions.adapters import CODEX_SESSION_HOME

RESUMABLE = frozenset({"claude", "codex"})
# How each continues its session, in the operator's words.
RESUME_HOW = {"claude": "claude --resume", "codex": "codex exec resume"}
# What of a harness's home is its conversation state (relative to the home).
STATE = (".claude", ".claude.json", CODEX_SESSION_HOME, ".codex")
# Parts of that state the harness makes again itself (copies of its bundled skills, scratch), and
# Codex's index of its threads, which holds each rollout's absolute path in the old home: without
# it Codex finds a thread by scanning its rollouts (with it, a moved home's thread is "not found").
_SKIP = shutil.ignore_patterns("skills", ".tmp", "shell_snapshots", "node_modules", "state_*.sqlite*")


def state_dir(root: Path, session_id: str) -> Path:
    """Where a session's harness state is kept once it has ended."""
    return root / ".roundtable" / "sessions" / session_id


def claude_project_name(cwd: str) -> str:
    """The directory name Claude Code files a working directory's conversations under."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def save_state(home: Path, dest: Path) -> bool:
    """Copy the harness's state from `home` to `dest` (replacing an older copy); False when the
    home holds none. Blocking: call it in a thread."""
    found = [name for name in STATE if (home / name).exists()]
    if not found:
        return False
    ensure_private_dir(dest.parent.parent)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(mode=0o700, parents=True)
    for name in found:
        source = home / name
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, dest / name, symlinks=True, ignore=_SKIP)
        elif source.is_file():
            shutil.copy2(source, dest / name)
    return True


def restore_state(source: Path, home: Path, old_cwd: str, new_cwd: str) -> bool:
    """Copy kept state from `source` into a new session's `home`, Claude Code's conversations
    refiled under the new working directory; False when there is none. Blocking."""
    found = [name for name in STATE if (source / name).exists()]
    for name in found:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, home / name, symlinks=True, ignore=_SKIP, dirs_exist_ok=True)
        else:
            shutil.copy2(src, home / name)
    projects = home / ".claude" / "projects"
    old, new = projects / claude_project_name(old_cwd), projects / claude_project_name(new_cwd)
    if old_cwd != new_cwd and old.is_dir() and not new.exists():
        old.rename(new)
    return bool(found)


def resume_argv(adapter: str, argv: list[str], harness_session_id: str) -> list[str]:
    """The start argv of `adapter` (`adapters.start_plan`) turned into the one that continues the
    harness's session `harness_session_id`, with the message on standard input."""
    if adapter == "claude":
        at = argv.index("-p") + 1
        return [*argv[:at], "--resume", harness_session_id, *argv[at:]]
    if adapter == "codex":
        # `codex exec resume` takes no -C (the working directory is the process's) and its sandbox
        # mode as a setting; the session id goes before the `-` that reads standard input.
        at = argv.index("exec") + 1
        rest: list[str] = []
        items = iter(argv[at:])
        for arg in items:
            if arg == "-C":
                next(items, None)
            elif arg == "--sandbox":
                rest += ["-c", f'sandbox_mode="{next(items, "")}"']
            elif arg != "-":
                rest.append(arg)
        return [*argv[:at], "resume", *rest, harness_session_id, "-"]
    raise ValueError(f"adapter {adapter} cannot resume a session")
