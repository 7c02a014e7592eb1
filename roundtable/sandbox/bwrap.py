"""The bubblewrap command line for a `Spec` (mount operations apply in order).

New user, network, PID, IPC and UTS namespaces, all capabilities dropped, a new terminal
session, and the sandbox dies with its launcher. `/` read-only, a fresh `/dev` and `/proc`, empty
tmpfs over `/tmp`, `/run`, the user's home, the project root and the socket's directory; the
kept paths bound back read-only, the secret directories hidden again, the worktree writable.
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
    """(hidden, kept, secret) directories, in mount order, for either kind: a directory already
    inside a hidden one is not hidden twice; kept paths are bound back only when hidden; secret
    directories are hidden again only when a kept path or the worktree brought them back."""
    hidden: list[str] = []
    for path in ["/tmp", "/run", "/dev/shm", *spec.hide]:
        if os.path.isdir(path) and not any(below(path, h) for h in hidden):
            hidden.append(path)
    kept: list[str] = []
    for path in sorted(set(spec.keep), key=len):
        if any(below(path, h) for h in hidden) and not any(below(path, k) for k in kept) and os.path.exists(path):
            kept.append(path)
    secret = [s for s in spec.secret if os.path.isdir(s) and any(below(s, k) for k in [*kept, spec.workdir])]
    return hidden, kept, secret


def argv(spec: Spec) -> list[str]:
    hidden, kept, secret = mount_plan(spec)
    out = [spec.bwrap, *NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        if path != "/dev/shm":  # --dev already made a private /dev
            out += ["--tmpfs", path]
    for path in kept:
        out += ["--ro-bind", path, path]
    out += ["--bind", spec.workdir, spec.workdir]
    for path in secret:
        out += ["--tmpfs", path]
    out += ["--chdir", spec.workdir, "--", *spec.argv]
    return out
