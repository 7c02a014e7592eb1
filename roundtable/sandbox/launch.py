"""The launcher: `python -I -S -m roundtable.sandbox.launch SPEC_JSON` (or the bootstrap that
`runner.launcher_argv` builds) runs one command in a sandbox and exits with its status.

It first sets the resource limits (address space, core dumps off), then:

* `bwrap`: executes bubblewrap with the command line of `bwrap.argv` (the limits are inherited;
  see `_bwrap_process_limit` for the process limit).
* `landlock`: opens the kept directories, enters new user, mount, network, PID and IPC
  namespaces, hides `/tmp`, `/run`, `/dev/shm`, the home, the project root and the socket's
  directory under empty tmpfs, binds the kept paths and the worktree back through the
  descriptors opened before, hides the secret directories again where a kept path brought them
  back, and forks the namespace's init. The init mounts a fresh `/proc`, brings up its own
  loopback, restricts itself with Landlock (read and execute on the system directories and the
  kept paths; everything on the worktree, `/tmp` and `/dev/shm`; read and write on a few
  devices; nothing else), sets the process limit, forks the command, and reaps until the
  command exits. When the init exits, the kernel kills everything left in the namespace; the
  init dies with the launcher (`PR_SET_PDEATHSIG`), so killing the launcher kills them all.

A setup failure prints one line starting with `roundtable-sandbox:` and exits 125.
"""

from __future__ import annotations

import os
import resource
import signal
import sys

from roundtable.sandbox import bwrap, landlock, namespaces
from roundtable.sandbox.spec import MARKER, SETUP_FAILED, Spec, below

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


class SetupError(Exception):
    pass


def set_limits(spec: Spec, *, processes: bool) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if spec.memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (spec.memory_bytes, spec.memory_bytes))
    if processes and spec.max_processes > 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (spec.max_processes, spec.max_processes))


def _user_tasks(uid: int) -> int:
    """Tasks (threads) whose real uid is `uid`: what the kernel counts against RLIMIT_NPROC."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1 0").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _bwrap_process_limit(spec: Spec) -> None:
    """RLIMIT_NPROC for bubblewrap, which creates its user namespace after this exec: the kernel
    then also checks the user's processes outside the namespace against the limit in force at
    creation, so a non-root user gets `max_processes` on top of what they already run (root's
    outer count is not enforced; inside the namespace the limit counts the sandbox's own)."""
    if spec.max_processes <= 0:
        return
    uid = os.getuid()
    limit = spec.max_processes if uid == 0 else _user_tasks(uid) + spec.max_processes
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))


def _status(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def _init(spec: Spec, abi: int) -> int:
    """PID 1 of the new namespace: confine, start the command, reap until it exits."""
    namespaces.die_with_parent(signal.SIGKILL)
    proc = namespaces.mount_proc()
    try:
        namespaces.loopback_up()
    except OSError:
        pass  # no loopback at all: still no network
    full = landlock.full_rights(abi)
    rules: list[tuple[str, int]] = [(p, landlock.READ_EXEC) for p in (*SYSTEM_DIRS, *spec.keep)]
    rules += [(spec.workdir, full), ("/tmp", full), ("/dev/shm", full)]
    rules += [(d, landlock.DEVICE) for d in DEVICES]
    if proc:
        rules.append(("/proc", landlock.READ_FILE | landlock.READ_DIR))
    landlock.restrict(rules, abi=abi)
    set_limits(spec, processes=True)
    os.chdir(spec.workdir)
    child = os.fork()
    if child == 0:
        try:
            os.execvp(spec.argv[0], spec.argv)
        except OSError as exc:
            os.write(2, f"{spec.argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 127
        if pid == child:
            return _status(status)


def run_landlock(spec: Spec) -> int:
    abi = landlock.abi_version()
    if abi < 1:
        raise SetupError("Landlock is not available on this kernel")
    hidden, kept, secret = bwrap.mount_plan(spec)
    try:
        namespaces.enter()
    except OSError as exc:
        raise SetupError(f"cannot create user and network namespaces ({exc.strerror})") from None
    # Descriptors opened in the new mount namespace (a bind source must belong to it), before
    # the tmpfs mounts hide their paths.
    held: list[tuple[str, int, bool]] = []
    for path in kept:
        held.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC), True))
    if any(below(spec.workdir, h) for h in hidden):
        held.append((spec.workdir, os.open(spec.workdir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), False))
    try:
        for path in hidden:
            namespaces.hide(path, size_bytes=spec.tmp_bytes if path in ("/tmp", "/dev/shm") else 0)
        for path, fd, read_only in held:
            namespaces.bind_fd(fd, path, read_only=read_only)
            os.close(fd)
        for path in secret:
            namespaces.hide(path)
        for path in spec.mask:
            if path.endswith("/"):
                namespaces.hide(path.rstrip("/"))
            else:
                namespaces.mask_file(path)
    except OSError as exc:
        raise SetupError(f"mount failed ({exc})") from None
    child = os.fork()
    if child == 0:
        try:
            code = _init(spec, abi)
        except BaseException as exc:  # report any setup failure; never run unconfined
            os.write(2, f"{MARKER} {exc}\n".encode())
            code = SETUP_FAILED
        os._exit(code)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    _, status = os.waitpid(child, 0)
    return _status(status)


def main(args: list[str]) -> int:
    try:
        if len(args) != 1:
            raise SetupError("usage: launch SPEC_JSON")
        spec = Spec.from_json(args[0])
        if spec.kind == "bwrap":
            set_limits(spec, processes=False)
            _bwrap_process_limit(spec)
            os.execv(spec.bwrap, bwrap.argv(spec))
        set_limits(spec, processes=False)  # the process limit is set inside the user namespace
        return run_landlock(spec)
    except (SetupError, OSError, ValueError, TypeError) as exc:
        sys.stderr.write(f"{MARKER} {exc}\n")
        sys.stderr.flush()
        return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
