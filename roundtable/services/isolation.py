"""How a supervised session's process is confined (§8.4.2 step 5, DESIGN §4.12).

The supervisor picks one launcher the first time it starts a session and keeps it:

* `oci` — an OCI runtime (podman) is never used in this version. We only look for one and
  record why it was not used ("oci runtime not used: …"): no OCI path is implemented because none
  could be tested on the machines this was built on. A docker CLI alone does not count (no
  engine runs there).
* `bwrap` — bubblewrap, when `bwrap` is on PATH and a trial sandbox with the very flags we use
  starts. The adapter's argv is wrapped (no shell): `/` read-only, a private `/tmp`, the
  repository bound read-only, an empty read-only tmpfs over `<root>/.roundtable` (the database,
  patches and logs are not visible), the session directory (socket and private HOME) bound
  read-write, new PID and IPC namespaces, a new terminal session, and the sandbox dies with the
  supervisor. The network is shared: harnesses talk to their model APIs.
* `subprocess` — the fallback: a plain subprocess with the same scrubbed environment and private
  HOME; the repository is then writable to the process and the capability checks on the
  endpoint are the only enforcement.

The environment is never put on bwrap's command line: bwrap is started with the scrubbed
environment as its own and without `--clearenv`, so the sandboxed process inherits exactly that
environment and the token stays out of every argv (`--setenv NAME VALUE` would show it in
`/proc/<pid>/cmdline`).

Known limits of the bwrap launcher: everything outside `/tmp` that the operator can read stays
readable (read-only), including the operator's home; SIGTERM to a sandbox ends it at once (the
outer bwrap dies and the kernel kills the PID namespace), so the revoke grace only helps agents
that stop by themselves once their capability is revoked.

`ROUNDTABLE_SESSION_ISOLATION=auto|bwrap|subprocess` (default `auto`) overrides the choice:
`bwrap` fails the launch when bubblewrap is unusable instead of falling back silently.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.errors import ValidationError

ENV_VAR = "ROUNDTABLE_SESSION_ISOLATION"
MODES = ("auto", "bwrap", "subprocess")
TRIAL_TIMEOUT = 10.0
_NAMESPACE_FLAGS = ("--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session")


@dataclass(frozen=True)
class Launcher:
    """The chosen way to start session processes: `kind` is recorded as the session's isolation."""

    kind: str  # "bwrap" | "subprocess"
    reason: str  # why this one and not a stronger one ("" when nothing was passed over)
    executable: str = ""  # the bwrap binary

    def wrap(
        self, argv: list[str], *, root: Path, session_dir: Path, path: str, workdir: Path | None = None
    ) -> list[str]:
        """The argv to execute for `argv` (unchanged for a plain subprocess). `workdir` (the
        session's workspace) is bound writable and is the working directory.

        Under bwrap a missing program would only show as exit status 1 inside the sandbox, so
        it is looked up on the session's `path` first and raised like a failed exec.
        """
        if self.kind != "bwrap":
            return list(argv)
        found = shutil.which(argv[0], path=path) if argv else None
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0] if argv else "")
        # A harness installed below /tmp (npm into a temp prefix, as CI does) would vanish under
        # the private /tmp: its install directory and the PATH entries there are bound again.
        extra = [found, os.path.realpath(found), *path.split(os.pathsep)]
        prefix = bwrap_prefix(self.executable, root=root, session_dir=session_dir, also_keep=extra, workdir=workdir)
        return [*prefix, *argv]


def bwrap_prefix(
    executable: str,
    *,
    root: Path,
    session_dir: Path,
    also_keep: list[str] | tuple[str, ...] = (),
    workdir: Path | None = None,
) -> list[str]:
    """bwrap's options up to and including `--`; mount operations apply in this order.
    `also_keep` names paths (the program, PATH entries) whose install directories below /tmp
    stay visible read-only."""
    root, session_dir = root.resolve(), session_dir.resolve()
    out = [
        executable,
        "--ro-bind", "/", "/",
        "--proc", "/proc",
        "--dev", "/dev",
        # A private scratch /tmp: other sessions' directories and the operator's temp files
        # disappear (the repository or the session directory may live below /tmp: both are
        # bound again afterwards).
        "--tmpfs", "/tmp",
        "--ro-bind", str(root), str(root),
    ]  # fmt: skip
    for kept in _software_below_tmp(also_keep):
        out += ["--ro-bind", kept, kept]
    state = root / ".roundtable"
    if state.is_dir():
        out += ["--tmpfs", str(state.resolve())]
    out += ["--bind", str(session_dir), str(session_dir)]
    if workdir is not None:
        out += ["--bind", str(workdir.resolve()), str(workdir.resolve())]
    if state.is_dir():
        # Read-only after the session directory is bound (it might live below it).
        out += ["--remount-ro", str(state.resolve())]
    chdir = workdir.resolve() if workdir is not None else root
    out += [*_NAMESPACE_FLAGS, "--chdir", str(chdir), "--"]
    return out


def _software_below_tmp(programs: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Directories the agent needs (this Python, its packages, roundtable's own source for an
    editable install, the harness's install directory and PATH entries) that live below `/tmp`
    and would vanish under the private `/tmp`: they are bound again read-only. A checkout, a
    virtualenv or an npm prefix in /tmp is common in CI. A program's install directory is the
    top directory below /tmp that holds it (an npm prefix: `node_modules/.bin/…` links into it)."""
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, os.path.dirname(sys.executable)]
    candidates += [p for p in sys.path if p]
    candidates.append(str(Path(__file__).resolve().parents[2]))
    for program in programs:
        real = os.path.realpath(program) if program else ""
        parts = Path(real).parts
        if len(parts) > 2 and parts[:2] == ("/", "tmp"):
            candidates.append(str(Path(*parts[:3])))
    below: list[str] = []
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if (real == "/tmp" or real.startswith("/tmp/")) and os.path.isdir(real):
            below.append(real)
    kept: list[str] = []
    for path in sorted(set(below), key=len):
        if path != "/tmp" and not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept


def requested_mode(environ: dict[str, str] | None = None) -> str:
    """The mode from `ROUNDTABLE_SESSION_ISOLATION` (default `auto`); unknown values are refused."""
    env = os.environ if environ is None else environ
    mode = env.get(ENV_VAR, "").strip().lower() or "auto"
    if mode not in MODES:
        raise ValidationError(f"{ENV_VAR} must be one of {', '.join(MODES)} (got {env.get(ENV_VAR)!r})")
    return mode


async def _run(argv: list[str]) -> tuple[int, str]:
    """(exit code, first line of output) of a short probe; 127 when it cannot start."""
    try:
        done = await proc.run(
            argv, env={"PATH": os.environ.get("PATH", os.defpath)}, timeout=TRIAL_TIMEOUT, merge_stderr=True
        )
    except OSError as exc:
        return 127, exc.strerror or type(exc).__name__
    if done.timed_out:
        return 124, f"timed out after {TRIAL_TIMEOUT:g}s"
    lines = done.out.decode("utf-8", "replace").strip().splitlines()
    return done.code or 0, lines[-1] if lines else ""


async def oci_reason() -> str:
    """Why no OCI runtime is used (always a reason: the OCI path is not implemented)."""
    podman = shutil.which("podman")
    if podman is None:
        return "oci runtime not used: podman not found"
    code, line = await _run([podman, "info", "--format", "{{.Host.OCIRuntime.Name}}"])
    if code != 0:
        return f"oci runtime not used: podman info failed ({line or f'exit {code}'})"
    return "oci runtime not used: podman works but the OCI launcher is not implemented in this version"


async def bwrap_problem(executable: str | None) -> str:
    """ "" when a trial sandbox with our flags starts, else why not."""
    if executable is None:
        return "bwrap not found"
    probe = [executable, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    code, line = await _run([*probe, *_NAMESPACE_FLAGS, "--", "true"])
    return "" if code == 0 else f"bwrap unusable ({line or f'exit {code}'})"


async def choose(mode: str | None = None) -> Launcher:
    """Pick the launcher for `mode` (default: from the environment). Runs short probes."""
    mode = requested_mode() if mode is None else mode
    if mode not in MODES:
        raise ValidationError(f"{ENV_VAR} must be one of {', '.join(MODES)} (got {mode!r})")
    if mode == "subprocess":
        return Launcher("subprocess", f"{ENV_VAR}=subprocess")
    executable = shutil.which("bwrap")
    problem = await bwrap_problem(executable)
    if mode == "bwrap":
        if problem:
            raise ValidationError(f"{ENV_VAR}=bwrap but {problem}")
        assert executable is not None
        return Launcher("bwrap", f"{ENV_VAR}=bwrap", executable)
    oci = await oci_reason()
    if problem:
        return Launcher("subprocess", f"{oci}; {problem}")
    assert executable is not None
    return Launcher("bwrap", oci, executable)
