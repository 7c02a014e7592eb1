"""The parent's side: which sandbox works here (`choose`, probed once per process and kind),
the `Spec` for one command (`build_spec`), and the launcher's command line (`launcher_argv`).

`choose("auto")` prefers bubblewrap, then Landlock plus namespaces; when neither works it
returns kind `none` with the reasons, and callers refuse agents' runs. The probe is a real trial:
the launcher runs `true` in a throwaway directory with the very setup a test run gets.
"""

from __future__ import annotations

import asyncio
import functools
import os
import pwd
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.sandbox import landlock
from roundtable.sandbox.spec import KINDS, Spec

MODES = ("auto", *KINDS)
NONE = "none"
PROBE_TIMEOUT_S = 15.0
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
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


_probed: dict[str, str] = {}


def launcher_argv(spec: Spec) -> list[str]:
    """`python -I -S` running the launcher (no site, no environment influence on the launcher)."""
    return [sys.executable, "-I", "-S", "-c", BOOTSTRAP, PACKAGE_PARENT, spec.to_json()]


def _real(path: str) -> str:
    return os.path.realpath(path)


def home_dirs() -> list[str]:
    homes = {os.path.expanduser("~")}
    try:
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return sorted({_real(h) for h in homes if h and _real(h) != "/"})


def python_paths() -> list[str]:
    """The Python in use and its import path: kept readable (tests often run this Python)."""
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    candidates += [p for p in sys.path if p]
    out: set[str] = set()
    for candidate in candidates:
        real = _real(candidate)
        if os.path.isdir(real) and real != "/":
            out.add(real)
    return sorted(out)


MASKED_TREES = ("/etc",)


@functools.cache
def root_private_paths() -> tuple[str, ...]:
    """Under /etc: regular files others may not read and directories others may not enter
    (marked with a trailing `/`). Masked in the sandbox when running as root, whom DAC would let
    read them as their owner even inside a user namespace. Walked once per process."""
    found: list[str] = []
    for tree in MASKED_TREES:
        for dirpath, dirnames, filenames in os.walk(tree):
            entered: list[str] = []
            for name in dirnames:
                path = os.path.join(dirpath, name)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                    found.append(path + "/")
                else:
                    entered.append(name)
            dirnames[:] = entered
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                    found.append(path)
    return tuple(found)


def build_spec(
    kind: str,
    argv: list[str],
    workdir: Path,
    *,
    root: Path,
    socket_dir: Path | None = None,
    memory_bytes: int = 0,
    max_processes: int = 0,
    read_paths: tuple[str, ...] = (),
    executable: str = "",
    bwrap_size: bool = False,
) -> Spec:
    root_real = _real(str(root))
    secret = [os.path.join(root_real, ".roundtable")]
    hide = [*home_dirs(), root_real]
    if socket_dir is not None:
        sock = _real(str(socket_dir))
        if sock != "/":
            secret.append(sock)
            hide.append(sock)
    keep = [*python_paths(), *(_real(p) for p in read_paths)]
    # Nothing kept may expose the secret directories' parents wholesale: a kept path that is the
    # project root or above it stays, but the secret directories are hidden again after it.
    return Spec(
        kind=kind,
        argv=list(argv),
        workdir=_real(str(workdir)),
        hide=[h for h in hide if h != "/"],
        secret=secret,
        keep=sorted(set(keep)),
        memory_bytes=memory_bytes,
        max_processes=max_processes,
        tmp_bytes=memory_bytes,
        bwrap=executable or "bwrap",
        bwrap_size=bwrap_size,
        mask=list(root_private_paths()) if os.getuid() == 0 else [],
    )


async def _trial(kind: str, executable: str) -> str:
    """Empty when the launcher runs `true` in this kind of sandbox, else why not."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-probe-"))
    try:
        spec = build_spec(kind, ["true"], scratch, root=scratch / "root", executable=executable)
        try:
            done = await proc.run(
                launcher_argv(spec),
                env={"PATH": os.environ.get("PATH", os.defpath)},
                timeout=PROBE_TIMEOUT_S,
                merge_stderr=True,
                new_group=True,
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
        abi = await asyncio.to_thread(landlock.abi_version)
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
    if os.getuid() == 0:
        await asyncio.to_thread(root_private_paths)  # walk /etc once, off the event loop
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
