"""Namespaces and a root built from nothing, through ctypes (Python 3.11 has no `os.unshare`).

`enter` moves the calling (single-threaded) process into new mount, PID, IPC and UTS
namespaces (and a network namespace unless the host's is kept); an unprivileged caller also
enters a new user namespace mapping its own uid and gid to themselves. Every mount is made
private, so nothing done here propagates to the host.

`build_root` (run by the namespace's PID 1) then does what bubblewrap does: an empty tmpfs becomes the new root through
`pivot_root`, the old root stays reachable at `/oldroot` just long enough to bind the spec's
mounts from it, a minimal `/dev` is made of bind-mounted device nodes, and the old root is
detached. After it, nothing of the host exists but what the spec lists.
"""

from __future__ import annotations

import ctypes
import os
import platform

from roundtable.sandbox.inner import check, libc
from roundtable.sandbox.spec import Mount, Spec

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
DEVICE_NODES = ("null", "zero", "full", "random", "urandom", "tty")
BASE = "/tmp"  # where the new root's tmpfs is mounted before it becomes the root


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter(*, network: bool) -> None:
    """unshare(2); with `CLONE_NEWPID` only the next child is in the new PID namespace."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (0 if network else CLONE_NEWNET)
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    check(libc().unshare(ctypes.c_int(flags)), "unshare")
    if uid != 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    mount(None, "/", None, MS_REC | MS_PRIVATE)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    check(
        libc().mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {target}",
    )


def _pivot_root(new_root: str, put_old: str) -> None:
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: unknown syscall number on {platform.machine()}")
    lib = libc()
    check(lib.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


def _umount(target: str) -> None:
    check(libc().umount2(target.encode(), ctypes.c_int(MNT_DETACH)), f"umount {target}")


def _tmpfs(target: str, *, size_bytes: int = 0, mode: str = "0755") -> None:
    data = f"mode={mode}" + (f",size={size_bytes}" if size_bytes else "")
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, data)


def _bind(source: str, target: str, *, read_only: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _apply(item: Mount, new: str, old: str, spec: Spec) -> None:
    target = new + item.dst
    if item.op == "dir":
        os.makedirs(target, exist_ok=True)
        os.chmod(target, 0o755)
    elif item.op in ("ro", "rw"):
        _bind(old + item.src, target, read_only=item.op == "ro")
    elif item.op == "symlink":
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(item.src, target)
    elif item.op == "tmpfs":
        os.makedirs(target, exist_ok=True)
        writable = item.dst in ("/tmp", "/dev/shm")
        _tmpfs(target, size_bytes=spec.tmp_bytes if writable else 0, mode="1777" if writable else "0755")
        if not writable:
            mount(None, target, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _devices(new: str, old: str) -> None:
    os.makedirs(new + "/dev", exist_ok=True)
    _tmpfs(new + "/dev")
    for name in DEVICE_NODES:
        if os.path.exists(f"{old}/dev/{name}"):
            _bind(f"{old}/dev/{name}", f"{new}/dev/{name}", read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1")):
        os.symlink(target, f"{new}/dev/{name}")
    os.symlink("/proc/self/fd/2", f"{new}/dev/stderr")
    os.makedirs(new + "/dev/shm", exist_ok=True)
    os.makedirs(new + "/dev/pts", exist_ok=True)
    os.makedirs(new + "/proc", exist_ok=True)


def build_root(spec: Spec) -> None:
    """Make the spec's mounts the whole filesystem of this mount namespace."""
    _tmpfs(BASE)
    os.chdir(BASE)
    os.mkdir("newroot", 0o755)
    os.mkdir("oldroot", 0o755)
    _pivot_root(BASE, "oldroot")  # `/` is now the tmpfs; the host's root is /oldroot
    os.chdir("/")
    _tmpfs("/newroot")
    _devices("/newroot", "/oldroot")
    for item in spec.mounts:
        _apply(item, "/newroot", "/oldroot", spec)
    # The PID namespace's own /proc, mounted while the host's is still attached below /oldroot
    # (in a user namespace the kernel allows a new proc only where one is fully visible).
    mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount(None, "/newroot", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _umount("/oldroot")
    os.chdir("/newroot")
    _pivot_root(".", ".")  # newroot becomes `/`; the base tmpfs is stacked below it
    _umount(".")
    os.chdir("/")
