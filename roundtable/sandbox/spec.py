"""What one sandboxed command gets, as the JSON the launcher reads from a file descriptor.

A `Spec` is built by the parent (`runner.build_spec`) and never travels on a command line. Its
`mounts` are the whole filesystem the command will see, in order, built up from an empty root
(`layout.plan`): nothing that is not listed exists inside. Both kinds (bubblewrap and the
Landlock launcher) execute the same list.

Mount operations (`Mount.op`):

* `dir` — an empty directory, mode 0755 (a parent of a grant: `/root` when only the interpreter
  below it is granted);
* `ro` — bind `src` read-only at `dst`;
* `rw` — bind `src` writable at `dst`;
* `symlink` — a symbolic link at `dst` whose target is `src` (merged-/usr systems);
* `tmpfs` — an empty tmpfs at `dst` (writable when `dst` is `/tmp`, read-only otherwise: used to
  hide a secret directory that a granted path contains).

A sandbox never has the host's network: its network namespace holds only its own loopback. With
`gateway_port` set, the sandbox's init also listens on `127.0.0.1:gateway_port` there and relays
each connection to the Unix socket `gateway_socket` (roundtable's gateway, in a writable grant):
the one way out of a session.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

KINDS = ("bwrap", "landlock")
PROFILES = ("test", "session")
OPS = ("dir", "ro", "rw", "symlink", "tmpfs")
# Exit status of the launcher when it could not set the sandbox up (as `env` and `timeout` use).
SETUP_FAILED = 125
MARKER = "roundtable-sandbox:"


@dataclass(frozen=True)
class Mount:
    op: str
    dst: str
    src: str = ""


@dataclass(frozen=True)
class Spec:
    kind: str
    profile: str
    argv: list[str]
    workdir: str
    mounts: list[Mount] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)  # every writable place inside (Landlock rules)
    network: bool = False  # the host's network; never set by `runner.build_spec` (a loopback of its own)
    memory_bytes: int = 0
    max_processes: int = 0
    tmp_bytes: int = 0  # size of the private /tmp (0: the kernel's default)
    uid: int = -1  # when the launcher runs as root: the user the command runs as (-1: keep)
    gid: int = -1
    bwrap: str = "bwrap"
    bwrap_size: bool = False  # this bubblewrap knows `--size` (0.8 and later)
    gateway_socket: str = ""  # the gateway's Unix socket, relayed from 127.0.0.1:gateway_port inside
    gateway_port: int = 0  # 0: no relay

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("spec must be a JSON object")
        mounts = [Mount(**m) for m in data.pop("mounts", [])]
        spec = cls(mounts=mounts, **data)
        if spec.kind not in KINDS:
            raise ValueError(f"unknown sandbox kind {spec.kind!r}")
        if spec.profile not in PROFILES:
            raise ValueError(f"unknown sandbox profile {spec.profile!r}")
        if not spec.argv or not all(isinstance(a, str) for a in spec.argv):
            raise ValueError("argv must be a non-empty list of strings")
        if any(m.op not in OPS or not m.dst.startswith("/") for m in spec.mounts):
            raise ValueError("mounts must have a known op and an absolute destination")
        if spec.gateway_port:
            if not 0 < spec.gateway_port < 65536 or not spec.gateway_socket.startswith("/"):
                raise ValueError("the gateway relay needs a port (1-65535) and an absolute socket path")
            if spec.network:
                # On the host's network the relay would listen on the host's loopback.
                raise ValueError("the gateway relay is only for a sandbox without the host's network")
        return spec

    def init_settings(self, *, landlock_required: bool) -> dict[str, object]:
        """What PID 1 (`inner.init`) needs."""
        return {
            "argv": self.argv,
            "workdir": self.workdir,
            "writable": self.writable,
            "uid": self.uid,
            "gid": self.gid,
            "max_processes": self.max_processes,
            "loopback": not self.network,
            "gateway_socket": self.gateway_socket,
            "gateway_port": self.gateway_port,
            "landlock_required": landlock_required,
        }


def below(path: str, parent: str) -> bool:
    """Is `path` equal to or inside `parent` (both absolute and normalised)?"""
    return path == parent or parent == "/" or path.startswith(parent.rstrip("/") + "/")
