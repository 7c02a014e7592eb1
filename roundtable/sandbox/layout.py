"""The filesystem a sandbox sees, built up from nothing: `plan` lists every mount in order.

Inside there is only:

* the system directories, read-only (`SYSTEM_DIRS`; a merged-/usr link such as `/bin -> usr/bin`
  stays a link);
* from `/etc`, the files a toolchain needs (`ETC_ENTRIES`: users and groups by name, name
  resolution, TLS roots, the dynamic linker's cache, time zone, alternatives) — never
  `/etc/shadow` and the like;
* the read-only grants (the interpreter and toolchain in use, the paths the configuration
  names, a harness's install directory) and the writable grants (the scratch worktree or the
  workspace, a session's own directory);
* a private `/tmp` and `/dev/shm`; a minimal `/dev` and the PID namespace's own `/proc` come from
  the launcher.

Everything else — the home, other projects, `/run`, `/srv`, `/opt`, `/var`, `/root`, every other
Unix socket — does not exist inside. A secret directory that a grant happens to contain (the
project's `.roundtable/`, the legacy socket's directory) is covered by an empty read-only tmpfs.

Runs in the parent (it looks at the host's filesystem), before the launcher starts.
"""

from __future__ import annotations

import os

from roundtable.sandbox.spec import Mount, below

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix/store")
ETC_ENTRIES = (
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "pki/ca-trust",
    "crypto-policies",
    "alternatives",
    "mime.types",
    "os-release",
    "debian_version",
    "gitconfig",
    "inputrc",
    "terminfo",
    "fonts",
    "locale.alias",
    "locale.gen",
)
WRITABLE_TMPFS = ("/tmp", "/dev/shm")


def _real(path: str) -> str:
    return os.path.realpath(path)


def _granted(path: str, trees: list[str]) -> bool:
    return any(below(path, tree) for tree in trees)


def _system_mounts() -> tuple[list[Mount], list[str]]:
    """The system directories and `/etc` entries that exist here, and the trees they make
    visible (a link is kept as a link only when its target is visible too)."""
    mounts: list[Mount] = []
    trees: list[str] = []
    links: list[tuple[str, str]] = []
    for path in (*SYSTEM_DIRS, *(f"/etc/{name}" for name in ETC_ENTRIES)):
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        elif os.path.exists(path):
            mounts.append(Mount("ro", path, path))
            trees.append(path)
    for path, target in links:
        resolved = _real(path)
        if _granted(resolved, trees):
            mounts.append(Mount("symlink", path, target))
        elif os.path.exists(resolved):
            # A link out of the visible trees (`/etc/resolv.conf -> /run/…`): its content only.
            mounts.append(Mount("ro", path, resolved))
    return mounts, trees


def _outermost(paths: list[str]) -> list[str]:
    out: list[str] = []
    for path in sorted(set(paths), key=lambda p: (p.count("/"), p)):
        if not any(below(path, kept) for kept in out):
            out.append(path)
    return out


def plan(
    *,
    readable: list[str],
    writable: list[str],
    hidden: list[str] | tuple[str, ...] = (),
) -> list[Mount]:
    """Every mount of the sandbox, in the order they must be made. `readable` and `writable`
    are host paths granted at the same path inside (resolved here; missing ones are skipped);
    `hidden` are secret directories covered wherever a grant contains them."""
    mounts: list[Mount] = [Mount("tmpfs", "/tmp"), Mount("tmpfs", "/dev/shm")]
    system, trees = _system_mounts()
    mounts += system
    grants: list[tuple[str, str]] = []
    rw = [_real(p) for p in writable if p and os.path.exists(p)]
    for path in _outermost([_real(p) for p in readable if p and os.path.exists(p)]):
        if path == "/" or _granted(path, trees) or any(below(path, w) for w in rw):
            continue
        grants.append(("ro", path))
    for path in _outermost(rw):
        if path != "/":
            grants.append(("rw", path))
    for op, path in sorted(grants, key=lambda g: (g[1].count("/"), g[1])):
        mounts.append(Mount(op, path, path))
    mounts = _with_parents(mounts)
    visible = [path for _, path in grants]
    for secret in _outermost([_real(h) for h in hidden if h]):
        if _granted(secret, visible) and os.path.isdir(secret):
            mounts.append(Mount("tmpfs", secret))
    return mounts


def _with_parents(mounts: list[Mount]) -> list[Mount]:
    """Each mount preceded by the directories leading to it that nothing earlier creates, made
    0755 explicitly (bubblewrap would make them 0700, closed to the sandbox's user)."""
    made: set[str] = {"/"}
    out: list[Mount] = []
    for mount in mounts:
        parents: list[str] = []
        parent = os.path.dirname(mount.dst)
        while parent not in made and not any(below(parent, m.dst) for m in out if m.op in ("ro", "rw")):
            parents.append(parent)
            parent = os.path.dirname(parent)
        for path in reversed(parents):
            out.append(Mount("dir", path))
            made.add(path)
        out.append(mount)
        made.add(mount.dst)
    return out


def writable_places(mounts: list[Mount]) -> list[str]:
    """Every place the command may write: the writable binds and the private tmpfs."""
    return [m.dst for m in mounts if m.op == "rw" or (m.op == "tmpfs" and m.dst in WRITABLE_TMPFS)]
