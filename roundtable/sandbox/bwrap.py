"""The bubblewrap command line for a `Spec` (mount operations apply in order).

New user, network, PID, IPC and UTS namespaces, all capabilities dropped, a new terminal
session, and the sandbox dies with its launcher. `/` read-only, a fresh `/dev` and `/proc`, empty
tmpfs over `/tmp`, `/run`, the user's home, the project root and the socket's directory (all but
`/tmp` then read-only); the kept paths bound back read-only, the secret directories hidden again,
the worktree writable.
"""

from __future__ import annotations

import os

from roundtable.sandbox.spec import Spec, below

NAMESPACES = (
    "--unshare-user",
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)


def mount_plan(spec: Spec) -> tuple[list[str], list[str], list[str]]:
    """(hidden, kept, secret) directories, in mount order, for either kind.

    A directory is hidden unless it is already inside a hidden one or is itself inside a kept
    path (the operator's `read_paths` may name the project root: it stays, minus its secrets).
    Kept paths are bound back only when a hidden directory covers them. A secret directory is
    hidden again wherever it is still visible."""
    keep = sorted(set(spec.keep), key=len)
    hidden: list[str] = []
    for path in ["/tmp", "/run", "/dev/shm", *spec.hide]:
        if any(below(path, h) for h in hidden) or any(below(path, k) for k in keep):
            continue
        if os.path.isdir(path):
            hidden.append(path)
    kept: list[str] = []
    for path in keep:
        if any(below(path, h) for h in hidden) and not any(below(path, k) for k in kept) and os.path.exists(path):
            kept.append(path)
    secret: list[str] = []
    for path in sorted(set(spec.secret), key=len):
        covered = any(below(path, h) for h in hidden)
        visible = not covered or any(below(path, k) for k in [*kept, spec.workdir])
        if visible and os.path.isdir(path) and not any(below(path, s) for s in secret):
            secret.append(path)
    return hidden, kept, secret


def argv(spec: Spec) -> list[str]:
    hidden, kept, secret = mount_plan(spec)
    out = [spec.bwrap, *NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        if path == "/tmp" and spec.tmp_bytes and spec.bwrap_size:
            out += ["--size", str(spec.tmp_bytes)]  # files in a tmpfs are memory the limit misses
        if path != "/dev/shm":  # --dev already made a private /dev
            out += ["--tmpfs", path]
    for path in kept:
        out += ["--ro-bind", path, path]
    out += ["--bind", spec.workdir, spec.workdir]
    for path in secret:
        out += ["--tmpfs", path]
    for path in spec.mask:
        out += ["--tmpfs", path.rstrip("/")] if path.endswith("/") else ["--ro-bind", "/dev/null", path]
    # The hidden directories are empty and read-only (only /tmp is the sandbox's to write).
    for path in [*hidden, *secret, *(m.rstrip("/") for m in spec.mask if m.endswith("/"))]:
        if path not in ("/tmp", "/dev/shm"):
            out += ["--remount-ro", path]
    out += ["--chdir", spec.workdir, "--", *spec.argv]
    return out
