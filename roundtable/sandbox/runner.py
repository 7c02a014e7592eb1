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

A program outside the system directories is given exactly its install tree (`program_grant`):
its virtualenv, its `node_modules` tree, its runtime's prefix, else its own directory — resolved,
and never one that is or contains the home or the project, holds another project, a
`.roundtable/` or a credential file, or is a `bin/` shared with other programs. Such an install
is refused (`ProgramRefused`) with the path and what to do.

When the owner runs as root the command runs as `SANDBOX_UID` (nobody), so process and file
limits bind and ownership opens nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.sandbox import inner, layout
from roundtable.sandbox.spec import KINDS, PROFILES, Mount, Spec, below

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


class ProgramRefused(ValueError):
    """The program's install cannot be granted to a sandbox without exposing more than it: the
    message names the path and what to do."""


@dataclass(frozen=True)
class ProgramGrant:
    """What a sandbox is given for one program: `paths`, its install tree (resolved), and
    `program`, the name to run inside (its resolved path when the place it was found through a
    link is not itself granted). `problem` says why the install cannot be granted ("" when it
    can)."""

    program: str
    paths: tuple[str, ...] = ()
    problem: str = ""


# Names that mark a directory as more than an install: a project, a roundtable state directory,
# or a credential a user keeps.
_PROJECT_MARKERS = frozenset({".roundtable", ".git", ".hg", ".svn"})
_CREDENTIAL_NAMES = frozenset(
    {
        "credentials",
        ".git-credentials",
        ".netrc",
        ".pgpass",
        ".pypirc",
        ".npmrc",
        ".env",
        ".ssh",
        ".aws",
        ".gnupg",
        ".docker",
        ".kube",
        ".config",
        "id_rsa",
        "id_ecdsa",
        "id_ed25519",
    }
)
_CREDENTIAL_SUFFIXES = (".token", ".pem", ".key", ".p12", ".pfx")
# A directory that is only the program's own is small: looked at entry by entry up to this many
# (and this deep) before it is judged too big to know.
SCAN_ENTRIES = 2000
SCAN_DEPTH = 4


def _system(path: str) -> bool:
    return any(below(path, s) for s in layout.SYSTEM_DIRS)


def _marker(name: str) -> str:
    """Why an entry called `name` must not be granted ("" when it may)."""
    lowered = name.lower()
    if name in _PROJECT_MARKERS:
        return "a project" if name != ".roundtable" else "a roundtable project's state (.roundtable/)"
    if lowered in _CREDENTIAL_NAMES or lowered.endswith(_CREDENTIAL_SUFFIXES):
        return "a credential file"
    return ""


def _scan(tree: str, *, markers: bool) -> str:
    """Why `tree` holds more than an install ("" when nothing says so): a project, a
    `.roundtable/` or a credential anywhere below it, looked at without following links and up
    to `SCAN_ENTRIES` entries; a bigger directory (that is not a recognised install) is refused
    as too big to know."""
    seen = 0
    pending = [(tree, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > SCAN_ENTRIES:
                return f"it holds more than {SCAN_ENTRIES} entries (not a directory of its own)"
            why = _marker(entry.name) if markers else ""
            if why:
                return f"it holds {why}: {entry.path}"
            if depth + 1 < SCAN_DEPTH and entry.is_dir(follow_symlinks=False):
                pending.append((entry.path, depth + 1))
    return ""


def _unsafe(tree: str, *, root: str, homes: Sequence[str], install: bool) -> str:
    """Why granting `tree` would expose more than the program ("" when it would not)."""
    if tree == "/":
        return "it is the whole filesystem"
    for home in homes:
        if below(home, tree):
            return "it is the home directory" if home == tree else f"it contains the home directory {home}"
    if root and below(root, tree):
        return f"it contains the project {root}"
    if install:
        # A virtualenv or an npm tree is a package install by its shape: only what sits at its top
        # could be something else (a project's own state beside it).
        with contextlib.suppress(OSError), os.scandir(tree) as entries:
            for entry in entries:
                if why := _marker(entry.name):
                    if why != "a project":
                        return f"it holds {why}: {entry.path}"
        return ""
    return _scan(tree, markers=True)


def _runtime_prefix(prefix: str) -> bool:
    """Is `prefix` (the directory above a program's `bin/`) the prefix of one language runtime's
    install — a Python (`lib/pythonX.Y/os.py`) or a Node.js (`include/node`) — and not a shared
    one such as `~/.local`?"""
    lib = os.path.join(prefix, "lib")
    with contextlib.suppress(OSError):
        if any(
            name.startswith("python") and os.path.isfile(os.path.join(lib, name, "os.py")) for name in os.listdir(lib)
        ):
            return True
    return os.path.isdir(os.path.join(prefix, "include", "node"))


def _install_tree(found: str, real: str) -> tuple[str, bool, list[str]]:
    """The install tree of the program found at `found` (resolved: `real`): (tree, recognised
    install, trees it needs besides — a virtualenv's base interpreter)."""
    for candidate in (found, real):
        venv = os.path.dirname(os.path.dirname(candidate))
        if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            return _real(venv), True, _venv_home(venv)
    parts = Path(real).parts
    if "node_modules" in parts:
        return str(Path(*parts[: parts.index("node_modules") + 1])), True, []
    parent = os.path.dirname(real)
    if os.path.basename(parent) == "bin" and _runtime_prefix(os.path.dirname(parent)):
        return os.path.dirname(parent), True, []
    return parent, False, []


def _shared_bin(tree: str, real: str) -> bool:
    """A `bin/` directory holding other programs than this one (links to it aside)."""
    if os.path.basename(tree) != "bin":
        return False
    try:
        names = os.listdir(tree)
    except OSError:
        return False
    return any(_real(os.path.join(tree, name)) != real for name in names)


def _sandbox_user_cannot(place: str, need: int) -> str:
    """Why `SANDBOX_UID` cannot use `place` as `need` asks (permission bits: 1 enter a directory
    or run a binary, 4 read a file, 5 list a directory or read and run a program), '' when it can."""
    try:
        st = os.stat(place)
    except OSError:
        return f"{place} cannot be read"
    if st.st_uid == SANDBOX_UID:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == SANDBOX_GID:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    if bits & need == need:
        return ""
    is_dir = stat.S_ISDIR(st.st_mode)
    what = {1: "enter" if is_dir else "run", 4: "read"}.get(need, "list" if is_dir else "read and run")
    return f"uid {SANDBOX_UID} cannot {what} {place} (mode {stat.filemode(st.st_mode)}, owner uid {st.st_uid})"


def _sandbox_user_blocked(tree: str, real: str, *, need: int = 5) -> str:
    """When the sandbox runs as `SANDBOX_UID`: the first place from the grant down to the program
    that user cannot pass (a directory it cannot search, a program it cannot read and run — a
    script is read by its interpreter; `need` 1 for a binary it only runs)."""
    chain = [real]
    step = os.path.dirname(real)
    while below(step, tree):
        chain.append(step)
        if step == tree:
            break
        step = os.path.dirname(step)
    for place in reversed(chain):
        if blocked := _sandbox_user_cannot(place, need if place == real else 1):
            return blocked
    return ""


def _interpreter(real: str, path: str) -> str:
    """The interpreter the `#!` line of the script `real` names, resolved (`/usr/bin/env NAME`:
    NAME found on `path`); '' for a binary, or when none is found."""
    try:
        with open(real, "rb") as handle:
            head = handle.readline(512)
    except OSError:
        return ""
    words = head[2:].decode("utf-8", "replace").split() if head.startswith(b"#!") else []
    program = words[0] if words else ""
    if os.path.basename(program) == "env":
        names = [word for word in words[1:] if not word.startswith("-")]
        program = (shutil.which(names[0], path=path) or "") if names else ""
    return _real(program) if os.path.isabs(program) else ""


def _python_blocked(venv: str, bases: Sequence[str]) -> str:
    """What of a virtualenv and its base interpreter's prefix `SANDBOX_UID` cannot use for that
    Python to start and import: the venv's `pyvenv.cfg`, its `lib/pythonX.Y/site-packages` and
    what sits directly in it, and the base's standard library directory ('' when it can)."""
    if blocked := _sandbox_user_cannot(os.path.join(venv, "pyvenv.cfg"), 4):
        return blocked
    for prefix in (venv, *(base for base in bases if not _system(base))):
        lib = os.path.join(prefix, "lib")
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(lib)):
                if not name.startswith("python"):
                    continue
                versioned = os.path.join(lib, name)
                site = os.path.join(versioned, "site-packages")
                listed = site if prefix == venv else versioned
                if not os.path.isdir(listed):
                    continue
                if blocked := _sandbox_user_blocked(prefix, listed):
                    return blocked
                if prefix == venv and os.path.isdir(site):
                    with os.scandir(site) as entries:
                        for entry in list(entries)[:SCAN_ENTRIES]:
                            if not os.path.exists(entry.path):
                                continue  # a dangling link is nobody's problem here
                            need = 5 if entry.is_dir() else 4
                            if blocked := _sandbox_user_cannot(entry.path, need):
                                return blocked
    return ""


def _sandbox_user_problem(real: str, path: str, trees: Sequence[str]) -> str:
    """When the sandbox runs as `SANDBOX_UID`: what of the program `real` in its granted `trees`
    (its install first) that user cannot reach — the program itself, the interpreter its `#!`
    line names, and for a virtualenv its packages and its base's standard library ('' when
    nothing)."""
    holder = next((t for t in trees if below(real, t)), real)
    if blocked := _sandbox_user_blocked(holder, real):
        return blocked
    interpreter = _interpreter(real, path)
    inside = next((t for t in trees if interpreter and below(interpreter, t)), "")
    if inside and (blocked := _sandbox_user_blocked(inside, interpreter, need=1)):
        return f"{blocked}, its interpreter"
    if os.path.isfile(os.path.join(trees[0], "pyvenv.cfg")):
        return _python_blocked(trees[0], trees[1:])
    return ""


def _pyenv_target(shim: str, root: str) -> str:
    """The interpreter a pyenv shim would run, when that is unambiguous without running pyenv:
    the one version `PYENV_VERSION`, else the `.python-version` of the project (or a directory
    above it), else the pyenv root's global `version` file names, holding that program; ''
    otherwise (not a shim, several versions, `system`, no such program)."""
    shims = os.path.dirname(shim)
    pyenv_root = os.path.dirname(shims)
    if os.path.basename(shims) != "shims" or not os.path.isdir(os.path.join(pyenv_root, "versions")):
        return ""
    try:
        with open(shim, "rb") as handle:
            if b"pyenv" not in handle.read(4096):
                return ""
    except OSError:
        return ""
    named = os.environ.get("PYENV_VERSION", "").strip()
    sources = [os.path.join(str(d), ".python-version") for d in (root, *Path(root or "/").parents) if root]
    for source in (*sources, os.path.join(pyenv_root, "version")):
        if named:
            break
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(source, encoding="utf-8") as handle:
                named = " ".join(line.split("#", 1)[0].strip() for line in handle).strip()
    versions = named.replace(":", " ").split()
    if len(versions) != 1 or versions[0] == "system" or "/" in versions[0]:
        return ""
    target = os.path.join(pyenv_root, "versions", versions[0], "bin", os.path.basename(shim))
    return target if os.path.isfile(target) and os.access(target, os.X_OK) else ""


def program_grant(
    program: str,
    path: str,
    *,
    root: str = "",
    read_paths: Sequence[str] = (),
    setting: str = "sessions.read_paths",
) -> ProgramGrant:
    """What a sandbox gets for `program` (found on `path` unless it names a file): exactly its
    install tree, resolved (links followed) — its virtualenv and the interpreter that venv names,
    or the `node_modules` tree holding it, else its own directory — and nothing when it lives in
    the system directories or below `read_paths`. Never a tree that is or contains the home, the
    project `root`, another project, a `.roundtable/` or a credential file, nor a `bin/` shared
    with other programs: then `problem` names the path and what to do (`setting`, the operator's
    own grant, or installing the program in a directory of its own). When the owner is root, a
    program the sandbox's user cannot reach is a problem too."""
    found = program if os.sep in program else (shutil.which(program, path=path) or "")
    if not found or not os.path.isabs(found):
        return ProgramGrant(program)
    if target := _pyenv_target(found, root):
        # A pyenv shim runs pyenv, which the sandbox does not see: run the interpreter it names.
        found = program = target
    real = _real(found)
    if not os.path.exists(real):
        return ProgramGrant(program)  # fails to start inside, as a missing program does
    granted = [_real(p) for p in read_paths if p]
    if _system(real) or any(below(real, g) for g in granted):
        visible = _system(os.path.dirname(found)) or any(below(found, g) for g in granted)
        return ProgramGrant(program if visible else real)
    tree, install, besides = _install_tree(found, real)
    homes = home_dirs()
    why = "it is a bin/ directory shared with other programs" if not install and _shared_bin(tree, real) else ""
    for place in (tree, *besides):
        if why:
            break
        if not _system(place):
            why = _unsafe(place, root=root, homes=homes, install=install or place != tree)
            if why:
                tree = place
    if not why and os.getuid() == 0:
        blocked = _sandbox_user_problem(real, path, (tree, *besides))
        if blocked:
            return ProgramGrant(
                program,
                problem=(
                    f"{found} cannot run in the sandbox: {blocked} (the owner is root, so sandboxed code runs "
                    f"as uid {SANDBOX_UID}); make the install readable by others (chmod -R o+rX on it and "
                    "o+x on the directories above it), or install it elsewhere"
                ),
            )
    if why:
        return ProgramGrant(
            program,
            problem=(
                f"{found} cannot be granted to the sandbox: its install directory {tree} is not its own ({why}); "
                f"install it in a directory of its own (e.g. `npm install --prefix DIR`), or add a path that holds "
                f"only it (the program file itself when it is self-contained) to {setting}"
            ),
        )
    visible = below(_real(os.path.dirname(found)), tree)
    paths = [tree, *(b for b in besides if not _system(b))]
    return ProgramGrant(program if visible else real, tuple(paths))


def program_paths(program: str, path: str) -> list[str]:
    """The install tree `program_grant` gives `program` (empty when it cannot be granted)."""
    return list(program_grant(program, path).paths)


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


# A launcher's `exec /abs/path …` (a pyenv shim's `exec "/home/u/.pyenv/libexec/pyenv" exec …`).
_EXEC_TARGET = re.compile(r"""(?m)^\s*exec\s+(?:-\S+\s+)*["']?(/[^"'\s;|&)]+)""")
# What a shell or the kernel says of a path it could not run or read.
_MISSING_PATH = re.compile(
    r"""(/[^\s:'"`]+)['"`]?:?\s*(?:: )?(?:No such file or directory|Permission denied|not found|bad interpreter)"""
)
LAUNCH_FAILED = (126, 127)  # a shell's "cannot execute" and "not found"


def _visible(mounts: Sequence[Mount], path: str) -> bool:
    """Can the sandbox of `mounts` reach `path` as it is written (the system directories and the
    read-only and writable grants; a system link such as `/bin -> usr/bin` followed)?"""
    binds = [m.dst for m in mounts if m.op in ("ro", "rw")]
    if any(below(path, b) for b in binds):
        return True
    links = [m.dst for m in mounts if m.op == "symlink"]
    return any(below(path, link) for link in links) and any(below(_real(path), b) for b in binds)


def _grant_hint(path: str) -> str:
    """The directory to grant so that `path`, as it is written, is visible: its install tree
    (`_install_tree`, the link itself where it is one: its target may already be visible)."""
    tree, _install, _besides = _install_tree(path, path)
    return tree


def launcher_problem(program: str, mounts: Sequence[Mount], search_path: str, setting: str) -> str:
    """Why `program`, a `#!` launcher script, cannot work in a sandbox of `mounts` ("" when it
    can, or is no script): its interpreter (named, or found through `env` on `search_path`), or
    the absolute program it `exec`s, is outside the sandbox's view. Reads its first 4 KiB only."""
    found = program if os.sep in program else (shutil.which(program, path=search_path) or "")
    if not found:
        return ""
    try:
        with open(found, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return ""
    if not head.startswith(b"#!"):
        return ""
    text = head.decode("utf-8", "replace")
    words = text[2:].split("\n", 1)[0].split()
    needs: list[tuple[str, str]] = []
    if words and os.path.isabs(words[0]):
        interpreter, args = words[0], words[1:]
        if not _visible(mounts, interpreter):
            needs.append((interpreter, "its interpreter, named on its #! line"))
        elif os.path.basename(interpreter) == "env":
            name = next((a for a in args if not a.startswith("-")), "")
            if os.path.isabs(name):
                candidates = [name] if os.path.exists(name) else []
            else:
                candidates = [
                    c
                    for c in (os.path.join(d, name) for d in search_path.split(os.pathsep) if d and name)
                    if os.path.isfile(c) and os.access(c, os.X_OK)
                ]
            if candidates and not any(_visible(mounts, c) for c in candidates):
                needs.append((candidates[0], f"its interpreter {name}, found through {interpreter}"))
    for target in _EXEC_TARGET.findall(text):
        if os.path.exists(target) and not _visible(mounts, target):
            needs.append((target, "the program it runs (exec)"))
    if not needs:
        return ""
    path, what = needs[0]
    return (
        f"{found} is a launcher script the sandbox cannot follow: it needs {path} ({what}), which is "
        f"outside the sandbox's view; add {_grant_hint(path)} to {setting}, or run the program it "
        "launches directly"
    )


def explain_launch_failure(spec: Spec, code: int | None, output: str) -> str:
    """Roundtable's explanation of a command that failed to launch inside (exit 126 or 127)
    because it needs a path that exists here but is outside the sandbox's view (what a launcher
    script or a wrapper runs); "" when the output names no such path."""
    if code not in LAUNCH_FAILED:
        return ""
    setting = "sessions.read_paths" if spec.profile == "session" else "tests.read_paths"
    for path in _MISSING_PATH.findall(output[-16384:]):
        path = path.rstrip(".,")
        if os.path.lexists(path) and not _visible(spec.mounts, path):
            return (
                f"{spec.argv[0]} could not run in the sandbox (exit {code}): it needs {path}, which exists on "
                f"this machine but is outside the sandbox's view (a launcher or wrapper runs it); add "
                f"{_grant_hint(path)} to {setting}, or run the program it launches directly"
            )
    return ""


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
    Looks at the filesystem (a few dozen `stat`s, and the program's own directory). Raises
    `ProgramRefused` when the program's install cannot be granted safely (`program_grant`)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown sandbox profile {profile!r}")
    root_real = _real(str(root))
    hidden = [os.path.join(root_real, ".roundtable")]
    if socket_dir is not None and _real(str(socket_dir)) != "/":
        hidden.append(_real(str(socket_dir)))
    path = search_path or os.environ.get("PATH", os.defpath)
    setting = "sessions.read_paths" if profile == "session" else "tests.read_paths"
    program = program_grant(argv[0], path, root=root_real, read_paths=read_paths, setting=setting)
    if program.problem:
        raise ProgramRefused(program.problem)
    argv = [program.program, *argv[1:]]
    readable = [*python_paths(), *(_real(p) for p in read_paths), *program.paths]
    if profile == "session":
        readable.append(PACKAGE_DIR)
    work = _real(str(workdir))
    mounts = layout.plan(readable=readable, writable=[work, *writable], hidden=hidden)
    if why := launcher_problem(program.program, mounts, path, setting):
        raise ProgramRefused(why)
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
