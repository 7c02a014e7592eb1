"""Landlock through ctypes (Python 3.11 has no binding): the ABI version and one ruleset.

Only the filesystem is restricted here (network isolation comes from the network namespace).
The handled rights are every right the running kernel's ABI knows, so anything not granted by a
rule is denied; from ABI 6 the process is also scoped: it cannot signal processes outside its
domain nor connect to abstract Unix sockets outside it.

Landlock does not restrict `connect()` to pathname Unix sockets (up to ABI 7 at least), nor path
lookup: hiding sockets needs mounts (see `namespaces.py`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import stat
from collections.abc import Iterable

# Syscall numbers are the same on every architecture that has Landlock (new syscalls share them).
SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_EXEC = EXECUTE | READ_FILE | READ_DIR
DEVICE = READ_FILE | WRITE_FILE | IOCTL_DEV


def _all_fs(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    # The process's own symbols (libc is loaded): `ctypes.util.find_library` would fork
    # `ldconfig`, and after unshare(CLONE_NEWPID) that child would become the namespace's init.
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if platform.system() != "Linux":
        return 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(version) if version > 0 else 0


def restrict(rules: Iterable[tuple[str, int]], *, abi: int | None = None) -> int:
    """Restrict the calling thread (and what it executes) to `rules` — (path, rights) pairs;
    paths that do not exist are skipped, rights a file cannot have are dropped for files.
    Returns the ABI used. Raises `OSError` when Landlock is unavailable."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise OSError(38, "Landlock is not available on this kernel")
    handled = _all_fs(abi)
    attr = _RulesetAttr(handled, 0, (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    ruleset = _check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
        "landlock_create_ruleset",
    )
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                allowed = rights & handled
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    allowed &= FILE_ONLY
                if not allowed:
                    continue
                beneath = _PathBeneath(allowed, fd)
                _check(
                    libc.syscall(
                        SYS_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(RULE_PATH_BENEATH),
                        ctypes.byref(beneath),
                        ctypes.c_uint32(0),
                    ),
                    f"landlock_add_rule {path}",
                )
            finally:
                os.close(fd)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def full_rights(abi: int) -> int:
    """Every filesystem right the ABI handles (for the writable places)."""
    return _all_fs(abi)
