"""The launcher: `python -I -S -c BOOTSTRAP PACKAGE_PARENT FD` runs one command in a sandbox and
exits with its status. The spec arrives as JSON on descriptor FD (never on a command line).

It sets the limits every process of the sandbox inherits (address space, no core dumps), then:

* `bwrap`: executes bubblewrap, its arguments on a descriptor (`--args`) and the init's settings
  on another; the command bubblewrap runs as PID 1 is `inner.py`'s source.
* `landlock`: enters the namespaces (`namespaces.enter`) and forks the namespace's init, which
  dies with the launcher (`PR_SET_PDEATHSIG`), builds the root from the spec's mounts and the
  namespace's own `/proc` (`namespaces.build_root`) and runs `inner.init`: its own loopback, the sandbox's
  user when the launcher is root, Landlock, the process limit, the command. SIGTERM to the
  launcher is passed on to the init, which passes it to the command; when the init exits the
  kernel kills everything left in the namespace.

A setup failure prints one line starting with `roundtable-sandbox:` and exits 125.
"""

from __future__ import annotations

import os
import resource
import signal
import sys

from roundtable.sandbox import bwrap, inner, namespaces
from roundtable.sandbox.spec import MARKER, SETUP_FAILED, Spec


class SetupError(Exception):
    pass


def set_limits(spec: Spec) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if spec.memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (spec.memory_bytes, spec.memory_bytes))


def _memfd(name: str, data: bytes) -> int:
    """An inheritable in-memory file holding `data` (rewound)."""
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def init_argv(fd: int) -> list[str]:
    """The command bubblewrap runs as PID 1: this Python running `inner.py`'s own source (read
    from its file: `inspect` would cost the launcher more than the whole sandbox start)."""
    with open(inner.__file__, encoding="utf-8") as handle:
        source = handle.read()
    return [os.path.realpath(sys.executable), "-I", "-S", "-c", source, str(fd)]


def run_bwrap(spec: Spec) -> None:
    settings = spec.init_settings(landlock_required=False)
    init_fd = _memfd("roundtable-init", inner.encode_config(settings))
    options = bwrap.options(spec, root=os.getuid() == 0)
    args_fd = _memfd("roundtable-bwrap-args", b"".join(a.encode() + b"\0" for a in options))
    os.execv(spec.bwrap, [spec.bwrap, "--args", str(args_fd), "--", *init_argv(init_fd)])


def _child(spec: Spec) -> int:
    """PID 1 of the new namespace: build the root (its `/proc` is this namespace's), then init."""
    inner.check(inner.libc().prctl(inner.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    try:
        namespaces.build_root(spec)
    except OSError as exc:
        raise SetupError(f"cannot build the sandbox's filesystem ({exc})") from None
    return inner.init(spec.init_settings(landlock_required=True))


def run_landlock(spec: Spec) -> int:
    if inner.abi_version() < 1:
        raise SetupError("Landlock is not available on this kernel")
    try:
        namespaces.enter(network=spec.network)
    except OSError as exc:
        raise SetupError(f"cannot create the sandbox's namespaces ({exc.strerror})") from None
    child = os.fork()
    if child == 0:
        try:
            code = _child(spec)
        except BaseException as exc:  # report any setup failure; never run unconfined
            os.write(2, f"{MARKER} {exc}\n".encode())
            code = SETUP_FAILED
        os._exit(code)

    return inner.supervise(child, reap_all=False)


def read_spec(fd: int) -> Spec:
    with os.fdopen(fd, "rb") as handle:
        return Spec.from_json(handle.read().decode("utf-8"))


def main(args: list[str]) -> int:
    try:
        if len(args) != 1 or not args[0].isdigit():
            raise SetupError("usage: launch FD (the spec as JSON on that descriptor)")
        spec = read_spec(int(args[0]))
        set_limits(spec)
        if spec.kind == "bwrap":
            run_bwrap(spec)
        return run_landlock(spec)
    except (SetupError, OSError, ValueError, TypeError) as exc:
        sys.stderr.write(f"{MARKER} {exc}\n")
        sys.stderr.flush()
        return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
