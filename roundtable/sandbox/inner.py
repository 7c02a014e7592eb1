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
5. The process limit.
6. With a gateway port: the loopback relay (`start_relay`), a forked child of the init, confined
   like the command (the sandbox's user, Landlock). It listens on `127.0.0.1:PORT` of the
   sandbox's own network namespace and copies each connection byte for byte to and from the
   gateway's Unix socket; it reads nothing it relays, so it can reach nothing but that socket. One
   selector loop serves every connection (no thread per connection: threads count against the
   process limit); a connection waiting for room in the gateway's backlog is retried, never
   blocking the others. It dies with the init (`PR_SET_PDEATHSIG`) and is killed once the command exits.
7. Fork and exec the command in the working directory and reap every child until the command
   exits; its status is the sandbox's.
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
TYPE_CHECKING = False  # `typing` itself is not imported either
if TYPE_CHECKING:
    import selectors
    import socket

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


# --- the gateway relay ------------------------------------------------------------------------

RELAY_CHUNK = 65536
RELAY_BUFFER = 1 << 18  # bytes in flight one way before the relay stops reading that side
RELAY_LINKS = 400  # open connections at most (two descriptors each, within the usual 1024)
RELAY_CONNECT_TIMEOUT = 10.0  # seconds a client waits for room in the gateway's backlog
RELAY_RETRY = 0.02


class _Link:
    """One relayed connection: the client's TCP socket and the gateway's Unix socket, and the
    bytes on their way to each."""

    def __init__(self, relay: _Relay, client: socket.socket, gateway: socket.socket) -> None:
        self.relay = relay
        self.socks = (client, gateway)
        self.pending = {id(client): bytearray(), id(gateway): bytearray()}  # to be written to it
        self.eof = {id(client): False, id(gateway): False}  # it will send nothing more
        self.shut = {id(client): False, id(gateway): False}  # we have shut its writing side
        self.mask = {id(client): 0, id(gateway): 0}
        self.closed = False

    def peer(self, sock: socket.socket) -> socket.socket:
        return self.socks[1] if sock is self.socks[0] else self.socks[0]

    def handle(self, sock: socket.socket, events: int) -> None:
        import selectors
        import socket

        peer = self.peer(sock)
        try:
            if events & selectors.EVENT_READ:
                data = sock.recv(RELAY_CHUNK)
                if data:
                    self.pending[id(peer)] += data
                    self._flush(peer)  # at once: a streamed event should not wait a turn
                else:
                    self.eof[id(sock)] = True
            if events & selectors.EVENT_WRITE:
                self._flush(sock)
            for side in self.socks:
                if self.eof[id(self.peer(side))] and not self.pending[id(side)] and not self.shut[id(side)]:
                    self.shut[id(side)] = True
                    side.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close()
            return
        if all(self.shut.values()):
            self.close()
        else:
            self._watch()

    def _flush(self, sock: socket.socket) -> None:
        buffer = self.pending[id(sock)]
        if buffer:
            try:
                sent = sock.send(buffer)
            except (BlockingIOError, InterruptedError):
                return
            del buffer[:sent]

    def _watch(self) -> None:
        """Register each socket for what it can do now: read while its peer's buffer has room,
        write while bytes wait for it."""
        import selectors

        selector = self.relay.selector
        for sock in self.socks:
            want = 0
            if not self.eof[id(sock)] and len(self.pending[id(self.peer(sock))]) < RELAY_BUFFER:
                want |= selectors.EVENT_READ
            if self.pending[id(sock)]:
                want |= selectors.EVENT_WRITE
            have = self.mask[id(sock)]
            if want == have:
                continue
            if not have:
                selector.register(sock, want, self)
            elif not want:
                selector.unregister(sock)
            else:
                selector.modify(sock, want, self)
            self.mask[id(sock)] = want

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in self.socks:
            if self.mask[id(sock)]:
                self.relay.selector.unregister(sock)
            sock.close()
        self.relay.closed(self)


class _Relay:
    """The relay's loop: accept on the loopback listener, connect each client to the gateway."""

    def __init__(self, listener: socket.socket, socket_path: str) -> None:
        import selectors

        self.listener = listener
        self.socket_path = socket_path
        self.selector: selectors.BaseSelector = selectors.DefaultSelector()
        self.links: set[_Link] = set()
        # Clients whose gateway connection waits for room in the gateway's backlog, with their
        # deadline: retried every RELAY_RETRY seconds, never blocking the other connections.
        self.waiting: list[tuple[socket.socket, float]] = []
        self.listening = False
        self.warned = False

    def _listen(self, on: bool) -> None:
        import selectors

        on = on and len(self.links) + len(self.waiting) < RELAY_LINKS
        if on and not self.listening:
            self.selector.register(self.listener, selectors.EVENT_READ, None)
        elif not on and self.listening:
            self.selector.unregister(self.listener)
        self.listening = on

    def closed(self, link: _Link) -> None:
        self.links.discard(link)
        self._listen(True)

    def _accept(self) -> None:
        import time

        while len(self.links) + len(self.waiting) < RELAY_LINKS:
            try:
                client, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break  # out of descriptors: the backlog waits for a link to close
            client.setblocking(False)
            if not self._join(client):
                self.waiting.append((client, time.monotonic() + RELAY_CONNECT_TIMEOUT))
        self._listen(True)

    def _join(self, client: socket.socket) -> bool:
        """Connect `client` to the gateway: True when done (linked, or given up and closed),
        False when the gateway's backlog is full for now."""
        import errno
        import socket

        gateway = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        gateway.setblocking(False)
        code = gateway.connect_ex(self.socket_path)
        if code in (errno.EAGAIN, errno.EINPROGRESS):
            gateway.close()
            return False
        if code:
            gateway.close()
            client.close()
            if not self.warned:
                self.warned = True
                reason = os.strerror(code)
                os.write(2, f"{MARKER} the gateway at {self.socket_path} is unreachable ({reason})\n".encode())
            return True
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = _Link(self, client, gateway)
        self.links.add(link)
        link._watch()
        return True

    def _retry(self) -> None:
        import time

        now = time.monotonic()
        still: list[tuple[socket.socket, float]] = []
        for client, deadline in self.waiting:
            if now >= deadline:
                client.close()
            elif not self._join(client):
                still.append((client, deadline))
        self.waiting = still
        self._listen(True)

    def serve(self) -> None:
        self._listen(True)
        while True:
            for key, events in self.selector.select(RELAY_RETRY if self.waiting else None):
                if key.data is None:
                    self._accept()
                else:
                    link: _Link = key.data
                    if not link.closed:
                        link.handle(key.fileobj, events)  # type: ignore[arg-type]  # always a socket here
            if self.waiting:
                self._retry()


def start_relay(cfg: dict[str, object]) -> int:
    """Listen on the gateway port of the sandbox's own loopback and fork the relay; its pid (0
    when the sandbox has no gateway). The port is listening before the command starts."""
    port = int(cfg.get("gateway_port", 0) or 0)  # type: ignore[call-overload]
    if port <= 0:
        return 0
    if not cfg.get("loopback"):
        raise OSError(22, "the gateway relay needs a network namespace of the sandbox's own")
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        listener.setblocking(False)
    except OSError as exc:
        listener.close()
        raise OSError(exc.errno, f"the gateway relay cannot listen on 127.0.0.1:{port} ({exc.strerror})") from None
    pid = os.fork()
    if pid == 0:
        try:
            libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            _Relay(listener, str(cfg["gateway_socket"])).serve()
        finally:
            os._exit(0)
    listener.close()
    return pid


def stop_relay(pid: int, reaped: set[int]) -> None:
    """Kill the relay and collect it (unless the init's reaping already has)."""
    if pid <= 0 or pid in reaped:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


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


def run_command(cfg: dict[str, object], relay: int = 0) -> int:
    """Fork and exec the command; forward termination signals; reap until it exits; then stop
    the relay (it never outlives the command)."""
    argv = [str(a) for a in cfg["argv"]]  # type: ignore[attr-defined]
    os.chdir(str(cfg["workdir"]))
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    reaped: set[int] = set()
    try:
        return supervise(child, reap_all=True, reaped=reaped)
    finally:
        stop_relay(relay, reaped)


def supervise(child: int, *, reap_all: bool, reaped: set[int] | None = None) -> int:
    """Pass SIGTERM, SIGINT and SIGHUP on to `child` and wait for it; its status is returned.
    PID 1 (`reap_all`) also reaps every orphan the namespace hands it meanwhile (their pids are
    added to `reaped`)."""

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
        if reaped is not None:
            reaped.add(pid)


def init(cfg: dict[str, object]) -> int:
    """The whole of PID 1: confine, then run the command. A setup failure is one line starting
    with `roundtable-sandbox:` and status 125 — never an unconfined run."""
    try:
        confine(cfg)
        relay = start_relay(cfg)
    except BaseException as exc:  # report any setup failure
        os.write(2, f"{MARKER} {exc}\n".encode())
        return SETUP_FAILED
    return run_command(cfg, relay)


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
