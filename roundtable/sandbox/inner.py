"""PID 1 of every sandbox: confine, drop to the sandbox's user, start the command, reap.

This module is self-contained (the standard library only, no other roundtable module): under
bubblewrap its source is handed to `python -I -S -c` as the command, so nothing of roundtable's
tree needs to be visible inside; the Landlock launcher (`launch.py`) imports it and calls `init`
in the process that became the namespace's PID 1. Its settings arrive (as `marshal` data) on a file
descriptor, never on the command line (`/proc/1/cmdline` shows only this code).

What `init` does, in order:

1. `PR_SET_DUMPABLE` 0: the command (same uid, no capability) can neither ptrace nor read the
   memory of its init; a signal from inside the PID namespace only reaches the init for the
   signals it handles (SIGTERM, SIGINT, SIGHUP, which it forwards to the command).
2. The network namespace's own loopback, when the sandbox has no network.
3. When the sandbox runs for root: drop every group and become the sandbox's user
   (`uid`/`gid`), so that `RLIMIT_NPROC` binds and no file is reachable by ownership alone.
4. Landlock: read and execute on the whole (already minimal) view, everything on the writable
   places, read and write on a few devices; from ABI 6 the process is also scoped (no signals
   out of the domain, no abstract Unix sockets outside it). Required by the Landlock launcher,
   defence in depth under bubblewrap (skipped only where the kernel lacks it).
5. The process limit, then fork and exec the command in the working directory and reap every
   child until the command exits; its status is the sandbox's.
"""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import signal
import stat
import sys

# Every import here is paid at each sandbox start (under bubblewrap this module is compiled and
# run by a fresh interpreter): only what PID 1 needs, the rest imported where it is used.

# Landlock syscalls share their numbers on every architecture that has them.
SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_EXEC = EXECUTE | READ_FILE | READ_DIR
DEVICE = READ_FILE | WRITE_FILE | IOCTL_DEV
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
MARKER = "roundtable-sandbox:"
SETUP_FAILED = 125


_LIBC: list[ctypes.CDLL] = []


def libc() -> ctypes.CDLL:
    # The process's own symbols: `ctypes.util.find_library` would fork `ldconfig`, and after
    # unshare(CLONE_NEWPID) that child would become the namespace's init.
    if not _LIBC:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        _LIBC.append(lib)
    return _LIBC[0]


def check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


# --- Landlock ---------------------------------------------------------------------------------


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if os.uname().sysname != "Linux":
        return 0
    version = libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(version) if version > 0 else 0


def full_rights(abi: int) -> int:
    """Every filesystem right the ABI handles (granted on the writable places)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(rules: list[tuple[str, int]], abi: int) -> None:
    """Restrict the calling process (and what it executes) to `rules`, (path, rights) pairs;
    missing paths are skipped, rights a file cannot have are dropped for files."""
    handled = full_rights(abi)
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(handled, 0, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    lib = libc()
    ruleset = check(
        lib.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
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
                if allowed:
                    beneath = _PathBeneath(allowed, fd)
                    check(
                        lib.syscall(
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
        check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        check(lib.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)


# --- the namespace's own loopback ---------------------------------------------------


def loopback_up() -> None:
    """Bring up `lo` of the new network namespace: the command may serve itself on 127.0.0.1,
    nothing outside the namespace is reachable."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


# --- init -------------------------------------------------------------------------------------


def become(uid: int, gid: int) -> None:
    """Drop every group and become uid/gid for good (real, effective and saved ids)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError(1, f"could not become uid {uid}")


def status_of(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def confine(cfg: dict[str, object]) -> None:
    """Steps 1-4 of the module docstring, in the calling process."""
    lib = libc()
    check(lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    if cfg.get("loopback"):
        try:
            loopback_up()
        except OSError:
            pass  # no loopback at all: still no network
    uid, gid = int(cfg.get("uid", -1)), int(cfg.get("gid", -1))  # type: ignore[call-overload]
    if uid >= 0:
        become(uid, gid)
        # A change of credentials clears both: the init must still die with its launcher.
        check(lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        check(lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    abi = abi_version()
    if abi >= 1:
        full = full_rights(abi)
        rules: list[tuple[str, int]] = [("/", READ_EXEC)]
        rules += [(str(p), full) for p in cfg.get("writable", [])]  # type: ignore[attr-defined]
        rules += [(d, DEVICE) for d in DEVICES]
        restrict(rules, abi)
    elif cfg.get("landlock_required"):
        raise OSError(38, "Landlock is not available on this kernel")
    else:
        check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    nproc = int(cfg.get("max_processes", 0))  # type: ignore[call-overload]
    if nproc > 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def run_command(cfg: dict[str, object]) -> int:
    """Fork and exec the command; forward termination signals; reap until it exits."""
    argv = [str(a) for a in cfg["argv"]]  # type: ignore[attr-defined]
    os.chdir(str(cfg["workdir"]))
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    return supervise(child, reap_all=True)


def supervise(child: int, *, reap_all: bool) -> int:
    """Pass SIGTERM, SIGINT and SIGHUP on to `child` and wait for it; its status is returned.
    PID 1 (`reap_all`) also reaps every orphan the namespace hands it meanwhile."""

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            pid, wait_status = os.wait() if reap_all else os.waitpid(child, 0)
        except ChildProcessError:
            return 127
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if pid == child:
            return status_of(wait_status)


def init(cfg: dict[str, object]) -> int:
    """The whole of PID 1: confine, then run the command. A setup failure is one line starting
    with `roundtable-sandbox:` and status 125 — never an unconfined run."""
    try:
        confine(cfg)
    except BaseException as exc:  # report any setup failure
        os.write(2, f"{MARKER} {exc}\n".encode())
        return SETUP_FAILED
    return run_command(cfg)


def encode_config(cfg: dict[str, object]) -> bytes:
    """The settings as `marshal` data: the same interpreter writes and reads them, and reading
    needs no import (json would cost PID 1 a few milliseconds at every start)."""
    return marshal.dumps(cfg)


def read_config(fd: int) -> dict[str, object]:
    with os.fdopen(fd, "rb") as handle:
        handle.seek(0)
        data = marshal.loads(handle.read())
    if not isinstance(data, dict):
        raise ValueError("sandbox init settings must be a JSON object")
    return data


def main(argv: list[str]) -> int:
    """`python -I -S -c <this source> FD` under bubblewrap (the command is PID 1 there)."""
    try:
        cfg = read_config(int(argv[0]))
    except (IndexError, ValueError, OSError) as exc:
        os.write(2, f"{MARKER} bad init settings ({exc})\n".encode())
        return SETUP_FAILED
    return init(cfg)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
