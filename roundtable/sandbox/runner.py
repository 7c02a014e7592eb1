"""The parent's side: which sandbox works here (`choose`, probed once per process and kind), the
`Spec` of one command for a profile (`build_spec`), the launcher's command line and the
descriptor that carries the spec (`open_spec`), and handing the writable places to the
sandbox's user when the owner is root (`hand_over`) and back afterwards (`hand_back`).

`choose("auto")` prefers bubblewrap, then the Landlock launcher; when neither works it returns
kind `none` with the reasons, and callers refuse agents' code. The probe is a real trial: the
launcher runs `true` in a throwaway directory with the very setup a test run gets.

Profiles:

* `test` — a test run: no network (a loopback of its own), the scratch worktree writable, the
  interpreter in use, the program's own install directory and `tests.read_paths` readable.
* `session` — a supervised agent session: no network either (a loopback of its own, where the
  sandbox's init relays `127.0.0.1:gateway_port` to roundtable's gateway, its one way out), its
  workspace and its own directory (private HOME, the session's MCP and gateway sockets) writable,
  the interpreter in use, roundtable's own package (the stdio bridge) and the harness's install
  directory readable.

When the owner runs as root the command runs as `SANDBOX_UID` (nobody), so process and file
limits bind and ownership opens nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.sandbox import inner, layout
from roundtable.sandbox.spec import KINDS, PROFILES, Spec, below

MODES = ("auto", *KINDS)
NONE = "none"
PROBE_TIMEOUT_S = 15.0
PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # roundtable/
PACKAGE_PARENT = str(Path(PACKAGE_DIR).parent)
SANDBOX_UID = 65534
SANDBOX_GID = 65534
BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from roundtable.sandbox.launch import main; sys.exit(main(sys.argv[2:]))"
)


@dataclass(frozen=True)
class Sandbox:
    """The sandbox to use: `kind` is `bwrap`, `landlock` or `none`; `reason` says why a
    stronger choice was passed over (or, for `none`, why nothing works)."""

    kind: str
    reason: str = ""
    executable: str = ""
    bwrap_size: bool = False

    @property
    def usable(self) -> bool:
        return self.kind != NONE

    def describe(self) -> str:
        """One line for logs and `doctor`: the kind, who the code runs as, and why."""
        if not self.usable:
            return f"none ({self.reason})"
        who = f"as uid {SANDBOX_UID} (the owner is root)" if os.getuid() == 0 else "as the owner's uid"
        name = "bubblewrap" if self.kind == "bwrap" else "Landlock + namespaces"
        extra = f"; passed over: {self.reason}" if self.reason else ""
        return f"{self.kind} ({name}, default-deny filesystem, {who}{extra})"


_probed: dict[str, str] = {}


def launcher_argv(fd: int) -> list[str]:
    """`python -I -S` running the launcher (no site, no environment influence on the launcher);
    the spec is read from descriptor `fd`."""
    return [sys.executable, "-I", "-S", "-c", BOOTSTRAP, PACKAGE_PARENT, str(fd)]


@contextlib.contextmanager
def open_spec(spec: Spec) -> Iterator[int]:
    """An inheritable descriptor holding the spec, for the launcher's process (pass it in
    `pass_fds`); closed in the parent afterwards."""
    fd = os.memfd_create("roundtable-sandbox-spec", 0)
    try:
        os.write(fd, spec.to_json().encode("utf-8"))
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _real(path: str) -> str:
    return os.path.realpath(path)


def home_dirs() -> list[str]:
    import pwd

    homes = {os.path.expanduser("~")}
    try:
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return sorted({_real(h) for h in homes if h and _real(h) != "/"})


@functools.cache
def python_paths() -> tuple[str, ...]:
    """The Python in use — its prefixes and package directories — readable inside (tests often
    run this Python; the bridge of a session does). Fixed for the process: computed once."""
    paths = sysconfig.get_paths()
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    candidates += [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    return tuple(sorted({_real(c) for c in candidates if c and os.path.isdir(c) and _real(c) != "/"}))


def program_paths(program: str, path: str) -> list[str]:
    """Where `program` (found on `path` unless it names a file) lives, when that is outside the
    system directories: its virtualenv (a `pyvenv.cfg` beside its `bin/`) and the interpreter
    that venv names, or an npm install (the `node_modules` tree holding it), else its directory."""
    found = program if os.sep in program else (shutil.which(program, path=path) or "")
    if not found or not os.path.isabs(found):
        return []
    out: list[str] = []
    for candidate in {found, _real(found)}:
        parent = os.path.dirname(candidate)
        if any(below(parent, s) for s in layout.SYSTEM_DIRS):
            continue
        venv = os.path.dirname(parent)
        if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            out.append(venv)
            out += _venv_home(venv)
            continue
        parts = Path(candidate).parts
        if "node_modules" in parts:
            out.append(str(Path(*parts[: parts.index("node_modules") + 1])))
            continue
        out.append(parent)
    return out


def _venv_home(venv: str) -> list[str]:
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    return [os.path.dirname(_real(value.strip()))]
    except OSError:
        pass
    return []


def build_spec(
    kind: str,
    argv: list[str],
    workdir: Path,
    *,
    root: Path,
    profile: str = "test",
    socket_dir: Path | None = None,
    memory_bytes: int = 0,
    max_processes: int = 0,
    read_paths: Sequence[str] = (),
    writable: Sequence[str] = (),
    search_path: str = "",
    executable: str = "",
    bwrap_size: bool = False,
    gateway_socket: str = "",
    gateway_port: int = 0,
) -> Spec:
    """The spec of `argv` in `workdir` for `profile`. `root` is the project: its `.roundtable/`
    (and `socket_dir`) stay hidden even if a grant contains them. With `gateway_port`, the
    sandbox's loopback relays that port to `gateway_socket` (which a writable grant must hold).
    Looks at the filesystem (a few dozen `stat`s)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown sandbox profile {profile!r}")
    root_real = _real(str(root))
    hidden = [os.path.join(root_real, ".roundtable")]
    if socket_dir is not None and _real(str(socket_dir)) != "/":
        hidden.append(_real(str(socket_dir)))
    path = search_path or os.environ.get("PATH", os.defpath)
    readable = [*python_paths(), *(_real(p) for p in read_paths), *program_paths(argv[0], path)]
    if profile == "session":
        readable.append(PACKAGE_DIR)
    work = _real(str(workdir))
    mounts = layout.plan(readable=readable, writable=[work, *writable], hidden=hidden)
    as_root = os.getuid() == 0
    return Spec(
        kind=kind,
        profile=profile,
        argv=list(argv),
        workdir=work,
        mounts=mounts,
        writable=layout.writable_places(mounts),
        network=False,
        memory_bytes=memory_bytes,
        max_processes=max_processes,
        tmp_bytes=memory_bytes,
        uid=SANDBOX_UID if as_root else -1,
        gid=SANDBOX_GID if as_root else -1,
        bwrap=executable or "bwrap",
        bwrap_size=bwrap_size,
        gateway_socket=gateway_socket,
        gateway_port=gateway_port,
    )


def _chown_tree(path: str, uid: int, gid: int) -> None:
    if not os.path.isdir(path):
        return  # gone already (a session directory removed first)
    os.chown(path, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


async def _give_writable(spec: Spec, uid: int, gid: int) -> None:
    """Every writable bind of `spec` to uid/gid, when the sandbox runs as another user (off
    the event loop: a worktree may hold many files)."""
    if spec.uid < 0:
        return
    for mount in spec.mounts:
        if mount.op == "rw":
            await asyncio.to_thread(_chown_tree, mount.src, uid, gid)


async def hand_over(spec: Spec) -> None:
    """The owner is root: the command's user gets the writable binds."""
    await _give_writable(spec, spec.uid, spec.gid)


async def hand_back(spec: Spec) -> None:
    """The writable binds that outlive the sandbox (a workspace) belong to the owner again."""
    await _give_writable(spec, os.getuid(), os.getgid())


async def _trial(kind: str, executable: str) -> str:
    """Empty when the launcher runs `true` in this kind of sandbox, else why not."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-probe-"))
    try:
        spec = build_spec(kind, ["true"], scratch, root=scratch / "root", executable=executable)
        await hand_over(spec)
        try:
            with open_spec(spec) as fd:
                done = await proc.run(
                    launcher_argv(fd),
                    env={"PATH": os.environ.get("PATH", os.defpath)},
                    timeout=PROBE_TIMEOUT_S,
                    merge_stderr=True,
                    new_group=True,
                    pass_fds=(fd,),
                )
        except OSError as exc:
            return f"the launcher could not start ({exc.strerror})"
        if done.timed_out:
            return f"the trial timed out after {PROBE_TIMEOUT_S:g} s"
        if done.code == 0:
            return ""
        lines = done.out.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"the trial exited with status {done.code}"
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


_sizes: dict[str, bool] = {}


async def _bwrap_knows_size(executable: str) -> bool:
    """Does this bubblewrap take `--size` for a tmpfs (0.8 and later)? Asked once."""
    if executable not in _sizes:
        try:
            done = await proc.run([executable, "--help"], timeout=PROBE_TIMEOUT_S, merge_stderr=True)
            _sizes[executable] = not done.timed_out and b"--size" in done.out
        except OSError:
            _sizes[executable] = False
    return _sizes[executable]


async def problem(kind: str) -> str:
    """Why `kind` cannot be used here ("" when it works); probed once per process."""
    if kind in _probed:
        return _probed[kind]
    if kind == "bwrap":
        executable = shutil.which("bwrap")
        reason = "bwrap is not installed" if executable is None else await _trial("bwrap", executable)
        if reason and executable is not None:
            reason = f"bwrap does not work here: {reason}"
    elif kind == "landlock":
        abi = await asyncio.to_thread(inner.abi_version)
        if abi < 1:
            reason = "Landlock is not available on this kernel"
        else:
            reason = await _trial("landlock", "")
            if reason:
                reason = f"Landlock sandbox does not work here: {reason}"
    else:
        raise ValueError(f"unknown sandbox kind {kind!r}")
    _probed[kind] = reason
    return reason


async def choose(mode: str = "auto") -> Sandbox:
    """The sandbox for `mode` (`auto`, `bwrap`, `landlock`); kind `none` when it cannot be had."""
    if mode not in MODES:
        raise ValueError(f"sandbox must be one of {', '.join(MODES)} (got {mode!r})")
    kinds = KINDS if mode == "auto" else (mode,)
    reasons: list[str] = []
    for kind in kinds:
        why = await problem(kind)
        if not why:
            executable = (shutil.which("bwrap") or "") if kind == "bwrap" else ""
            sized = kind == "bwrap" and await _bwrap_knows_size(executable)
            return Sandbox(kind, "; ".join(reasons), executable, sized)
        reasons.append(why)
    return Sandbox(NONE, "; ".join(reasons))
