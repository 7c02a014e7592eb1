"""Linux namespaces and mounts through ctypes (Python 3.11 has no `os.unshare`).

`enter` moves the calling (single-threaded) process into new user, mount, network, PID and IPC
namespaces, mapping its own uid and gid to themselves (after denying `setgroups`), and makes
every mount private so nothing done here propagates to the host. `hide` mounts an empty tmpfs
over a directory; `bind_fd` binds back a directory through a descriptor opened before it was
hidden; `loopback_up` brings up the namespace's own `lo`.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import socket
import struct

CLONE_NEWNS = 0x00020000
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
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

FLAGS = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC


@functools.cache
def _libc() -> ctypes.CDLL:
    # The process's own symbols (libc is loaded): `ctypes.util.find_library` would fork
    # `ldconfig`, and after unshare(CLONE_NEWPID) that child would become the namespace's init.
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter(flags: int = FLAGS) -> None:
    """unshare(2) into new namespaces, then map uid/gid to themselves and make mounts private.
    With `CLONE_NEWPID` only the next child is in the new PID namespace (it becomes its init)."""
    uid, gid = os.getuid(), os.getgid()
    libc = _libc()
    _check(libc.unshare(ctypes.c_int(flags)), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    mount(None, "/", None, MS_REC | MS_PRIVATE)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    libc = _libc()
    _check(
        libc.mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {target}",
    )


def hide(path: str, *, size_bytes: int = 0) -> None:
    """An empty, private tmpfs over `path` (the host's content is unreachable below it)."""
    data = "mode=0755" + (f",size={size_bytes}" if size_bytes else "")
    mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, data)


def mask_file(path: str) -> None:
    """`/dev/null` bound over a file: it reads as empty."""
    mount("/dev/null", path, None, MS_BIND)


def bind_fd(fd: int, target: str, *, read_only: bool) -> None:
    """Bind the directory `fd` refers to (opened before a tmpfs hid it) onto `target`,
    creating `target`'s missing directories first."""
    os.makedirs(target, exist_ok=True)
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def mount_proc() -> bool:
    """A fresh /proc for the current PID namespace; False when the kernel refuses."""
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        return False
    return True


def loopback_up() -> None:
    """Bring up `lo` of the (new) network namespace: the command may still serve itself on
    127.0.0.1, but nothing outside the namespace is reachable."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def die_with_parent(signal_number: int) -> None:
    _check(_libc().prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
