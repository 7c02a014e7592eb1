"""What one sandboxed command needs, as JSON the launcher reads from its argument list.

Paths are absolute and resolved by the parent (`runner.build_spec`). `hide` are directories made
empty (the user's home, the project root, the legacy socket's directory); `secret` are
directories that must stay hidden even when a kept path contains them (the project's
`.roundtable/`, the socket's directory); `keep` are read-only paths bound back when a hidden
directory contains them (the Python in use, the operator's `read_paths`); `workdir` is the one
writable directory and the command's working directory.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

KINDS = ("bwrap", "landlock")
# Exit status of the launcher when it could not set the sandbox up (as `env` and `timeout` use).
SETUP_FAILED = 125
MARKER = "roundtable-sandbox:"


@dataclass(frozen=True)
class Spec:
    kind: str
    argv: list[str]
    workdir: str
    hide: list[str] = field(default_factory=list)
    secret: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    memory_bytes: int = 0
    max_processes: int = 0
    tmp_bytes: int = 0  # size of the private /tmp (0: the kernel's default)
    bwrap: str = "bwrap"
    bwrap_size: bool = False  # this bubblewrap knows `--size` (0.8 and later)
    # System files and directories only their owner may read, masked (empty) when running as root:
    # root inside a user namespace still owns them (`/etc/shadow`, `/etc/ssl/private`).
    mask: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("spec must be a JSON object")
        spec = cls(**data)
        if spec.kind not in KINDS:
            raise ValueError(f"unknown sandbox kind {spec.kind!r}")
        if not spec.argv or not all(isinstance(a, str) for a in spec.argv):
            raise ValueError("argv must be a non-empty list of strings")
        return spec


def below(path: str, parent: str) -> bool:
    """Is `path` equal to or inside `parent` (both absolute and normalised)?"""
    return path == parent or parent == "/" or path.startswith(parent.rstrip("/") + "/")
