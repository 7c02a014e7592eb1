"""The bubblewrap command line for a `Spec`: the same mount list as the Landlock launcher.

bubblewrap starts from an empty root when no `/` is bound, so the sandbox holds exactly the
spec's mounts, a fresh `/dev` and the PID namespace's own `/proc`. New PID, IPC and UTS
namespaces (and a network namespace unless the profile keeps the host's network), a new
terminal session, and the sandbox dies with its launcher. The command is `inner.py`, which
confines itself further, drops to the sandbox's user when bubblewrap runs as root, and starts
the real command; it is PID 1 unless bubblewrap runs as root (see `options`).

As an unprivileged user bubblewrap enters a new user namespace and drops every capability. As
root it creates no user namespace (one would keep the command root outside) and keeps only
`CAP_SETUID`/`CAP_SETGID` for the init, which gives them up when it becomes the sandbox's user.
"""

from __future__ import annotations

from roundtable.sandbox.spec import Mount, Spec

COMMON = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session")


def _mount_args(mount: Mount, spec: Spec) -> list[str]:
    if mount.op == "dir":
        return ["--perms", "0755", "--dir", mount.dst]
    if mount.op == "ro":
        return ["--ro-bind", mount.src, mount.dst]
    if mount.op == "rw":
        return ["--bind", mount.src, mount.dst]
    if mount.op == "symlink":
        return ["--symlink", mount.src, mount.dst]
    size = ["--size", str(spec.tmp_bytes)] if spec.tmp_bytes and spec.bwrap_size and mount.dst == "/tmp" else []
    if mount.dst == "/dev/shm":
        return []  # `--dev` made a private /dev/shm
    if mount.dst == "/tmp":
        return [*size, "--perms", "1777", "--tmpfs", mount.dst]
    return ["--tmpfs", mount.dst, "--remount-ro", mount.dst]


def options(spec: Spec, *, root: bool) -> list[str]:
    """bubblewrap's options (given on a descriptor with `--args`; the command follows `--`)."""
    out: list[str] = []
    if root:
        # bubblewrap's own reaper stays PID 1 (root, no capability): the kernel's parent-death
        # signal reaches it from the launcher, and its exit kills the namespace; the init below
        # it becomes the sandbox's user, whom a capability-less root could not signal.
        out += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        out += ["--unshare-user", "--cap-drop", "ALL", "--as-pid-1"]
    out += list(COMMON)
    if not spec.network:
        out.append("--unshare-net")
    out += ["--dev", "/dev", "--proc", "/proc"]
    for mount in spec.mounts:
        out += _mount_args(mount, spec)
    out += ["--chdir", "/"]  # the init enters the workdir once it is the sandbox's user
    return out
