"""Files under `.roundtable/` that identify the project and its principals.

- `.roundtable/` itself is private: mode 0700, so other local users cannot read anything in it.
- `.roundtable/project_id`: a random id given to the project by `init` (or by the first owner of an
  older project). The owner states it in `/healthz` and a response header; the stdio bridge and
  `doctor` compare it with their `--root` before relaying anything or presenting a credential.
- `.roundtable/credentials/` (0700) holds one bearer token per local principal, each file 0600:
  `agents/<agent_id>.token` for a harness bound to one agent (`connect --agent ID`),
  `project.token` for an unbound client (read-only tools), `operator.token` for the operator.
  Only the tokens' sha256 are in the database (`access_tokens`); harness configs hold no secret,
  the bridge reads the file named by its `--root` and `--agent`.

This module is imported by the stdio bridge, so it uses only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

STATE_DIR = ".roundtable"
PROJECT_ID_FILE = "project_id"
CREDENTIALS_DIR = "credentials"
PROJECT_ID_PREFIX = "rtp_"
_PROJECT_ID = re.compile(r"^rtp_[0-9a-f]{32}$")
_AGENT_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


def state_dir(root: Path | str) -> Path:
    return Path(root) / STATE_DIR


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) if needed and make it 0700; returns it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):  # not ours (e.g. a shared read-only checkout)
        if path.stat().st_mode & 0o777 != 0o700:
            path.chmod(0o700)
    return path


def write_private_file(path: Path, text: str) -> None:
    """Write `text` to `path` atomically with mode 0600 (the temporary file is 0600 from birth)."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


# --- project identity -------------------------------------------------------------------------


def project_id_path(root: Path | str) -> Path:
    return state_dir(root) / PROJECT_ID_FILE


def read_project_id(root: Path | str) -> str | None:
    """The project's id, or None when the file is missing or malformed."""
    try:
        text = project_id_path(root).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _PROJECT_ID.match(text) else None


def ensure_project_id(root: Path | str) -> str:
    """The project's id, created (randomly) if it does not exist yet."""
    existing = read_project_id(root)
    if existing is not None:
        return existing
    new = PROJECT_ID_PREFIX + secrets.token_hex(16)
    ensure_private_dir(state_dir(root))
    write_private_file(project_id_path(root), new + "\n")
    return new


# --- credentials ------------------------------------------------------------------------------


def credential_path(root: Path | str, *, agent_id: str = "", operator: bool = False) -> Path:
    """Where a principal's token lives: the operator's, one agent's, or the unbound project one."""
    base = state_dir(root) / CREDENTIALS_DIR
    if operator:
        return base / "operator.token"
    if agent_id:
        if not _AGENT_ID.match(agent_id):
            raise ValueError(f"invalid agent id: {agent_id!r}")
        return base / "agents" / f"{agent_id}.token"
    return base / "project.token"


def read_credential(root: Path | str, *, agent_id: str = "", operator: bool = False) -> str | None:
    """The token stored for that principal, or None if there is none (or it is unreadable)."""
    try:
        text = credential_path(root, agent_id=agent_id, operator=operator).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return text or None


def write_credential(root: Path | str, token: str, *, agent_id: str = "", operator: bool = False) -> Path:
    """Store a principal's token (0600, in 0700 directories); returns the file's path."""
    path = credential_path(root, agent_id=agent_id, operator=operator)
    ensure_private_dir(state_dir(root))
    ensure_private_dir(path.parent.parent if agent_id else path.parent)
    write_private_file(path, token + "\n")
    return path
