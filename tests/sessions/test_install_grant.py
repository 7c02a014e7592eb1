"""What a session is given of its harness's install: exactly the install tree, resolved, and
never a directory that is the home, holds another project's `.roundtable/` or a credential, or
is a `bin/` shared with other programs. An install that cannot be granted alone refuses the
launch (and `doctor`'s preflight says so first) with the path and what to do; when the owner is
root, an install the sandbox's user cannot run is named too.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from roundtable.config import Config
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.services.sessions import adapters, preflight
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio
TOKEN = "rtagent_q2-implementer-secret"
# The harness: a shell script that tries to read the file it is given and prints what happened.
HARNESS = '#!/bin/sh\nif cat "$1" >/dev/null 2>&1; then echo "HARNESS read"; else echo "HARNESS denied"; fi\n'


def open_to_all(path: Path) -> None:
    """Every directory from `path` up to / passable by the sandbox's user (the owner may be root)."""
    for place in (path, *path.parents):
        mode = place.stat().st_mode
        place.chmod(mode | stat.S_IXOTH | stat.S_IROTH)


def other_project(parent: Path) -> Path:
    """A second project beside the harness, with an agent's credential in its `.roundtable/`."""
    q2 = parent / "q2"
    token = q2 / ".roundtable" / "credentials" / "agents" / "implementer-1.token"
    token.parent.mkdir(parents=True)
    token.write_text(TOKEN)
    token.chmod(0o644)
    for place in token.parents:
        if place == parent:
            break
        place.chmod(0o755)
    return token


def write_program(path: Path, text: str = HARNESS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def npm_install(prefix: Path) -> Path:
    """A harness installed the way npm does: `node_modules/.bin/harness` -> `../harness/cli.sh`."""
    cli = write_program(prefix / "node_modules" / "harness" / "cli.sh")
    (prefix / "node_modules" / ".bin").mkdir()
    link = prefix / "node_modules" / ".bin" / "harness"
    link.symlink_to(Path("..") / "harness" / "cli.sh")
    for place in (prefix, prefix / "node_modules", prefix / "node_modules" / ".bin", cli.parent):
        place.chmod(0o755)
    return link


def use_harness(monkeypatch: pytest.MonkeyPatch, program: Path) -> None:
    monkeypatch.setattr(
        adapters, "SCRIPTED_ADAPTER", adapters.SCRIPTED_ADAPTER.__class__(command=str(program), supports_mcp=True)
    )


def test_a_bare_program_beside_another_project_is_refused_naming_the_path(tmp_path: Path) -> None:
    shared = tmp_path / "work"
    token = other_project(shared)
    program = write_program(shared / "harness")
    grant = runner.program_grant(str(program), "")
    assert grant.paths == ()
    assert f"{program} cannot be granted to the sandbox" in grant.problem
    assert f"its install directory {shared.resolve()} is not its own" in grant.problem
    assert ".roundtable" in grant.problem and "sessions.read_paths" in grant.problem
    with pytest.raises(runner.ProgramRefused, match=r"tests\.read_paths"):
        runner.build_spec("landlock", [str(program)], tmp_path, root=tmp_path / "p", profile="test")
    # The operator's own grant of the program file alone is taken as is.
    alone = runner.program_grant(str(program), "", read_paths=[str(program)])
    assert alone.problem == "" and alone.paths == ()
    assert token.exists()


def test_a_program_in_the_home_or_a_shared_bin_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    bare = write_program(home / "harness")
    grant = runner.program_grant("harness", str(home))
    assert grant.paths == () and "it is the home directory" in grant.problem
    local_bin = home / ".local" / "bin"
    write_program(local_bin / "harness")
    write_program(local_bin / "deploy-tool")
    shared = runner.program_grant("harness", str(local_bin))
    assert shared.paths == () and "a bin/ directory shared with other programs" in shared.problem
    # A link in the shared bin to an install of its own: the install, run by its resolved path.
    (local_bin / "harness").unlink()
    real = write_program(home / ".local" / "share" / "harness" / "versions" / "1.0" / "harness")
    (local_bin / "harness").symlink_to(real)
    linked = runner.program_grant("harness", str(local_bin))
    assert linked.problem == "" and linked.paths == (str(real.parent.resolve()),)
    assert linked.program == str(real.resolve())
    spec = runner.build_spec("landlock", ["harness", "x"], tmp_path, root=tmp_path / "p", search_path=str(local_bin))
    granted = {m.dst for m in spec.mounts if m.op in ("ro", "rw")}
    assert str(local_bin.resolve()) not in granted and str(home.resolve()) not in granted
    assert spec.argv == [str(real.resolve()), "x"]
    assert bare.exists()


def test_a_virtualenv_or_npm_tree_is_granted_whole_and_alone(tmp_path: Path) -> None:
    venv = runner.program_grant(sys.executable, "")
    assert venv.problem == ""
    assert venv.paths[0] == str(Path(sys.prefix).resolve())
    link = npm_install(tmp_path / "tools")
    other_project(tmp_path)
    npm = runner.program_grant("harness", str(link.parent))
    assert npm.problem == "" and npm.paths == (str((tmp_path / "tools" / "node_modules").resolve()),)
    assert npm.program == "harness"  # found through node_modules/.bin, which is granted


@pytest.mark.skipif(os.getuid() != 0, reason="the sandbox's user differs from the owner only when the owner is root")
def test_as_root_an_install_the_sandbox_user_cannot_enter_is_named(tmp_path: Path) -> None:
    link = npm_install(tmp_path / "tools")
    (tmp_path / "tools" / "node_modules" / "harness").chmod(0o700)
    grant = runner.program_grant(str(link), "")
    assert grant.paths == ()
    assert f"uid {runner.SANDBOX_UID} cannot enter" in grant.problem
    assert str((tmp_path / "tools" / "node_modules" / "harness").resolve()) in grant.problem
    assert "chmod" in grant.problem


def venv_install(prefix: Path) -> tuple[Path, Path]:
    """A harness installed as a virtualenv entry point (the system's Python as the base, so the
    sandbox's user can run it): `bin/harness` imports its package from site-packages."""
    base = Path("/usr/bin/python3")
    if not base.exists():
        pytest.skip("no system Python to base a virtualenv the sandbox's user can run on")
    venv = prefix / "venv"
    made = [str(base), "-m", "venv", "--without-pip", "--copies", str(venv)]  # its own interpreter
    subprocess.run(made, check=True, capture_output=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "harnesspkg").mkdir()
    (site / "harnesspkg" / "__init__.py").write_text("print('HARNESS ran')\n")
    script = write_program(venv / "bin" / "harness", f"#!{venv}/bin/python\nimport harnesspkg\n")
    open_to_all(site / "harnesspkg" / "__init__.py")
    return script, site


def as_sandbox_user(program: Path) -> subprocess.CompletedProcess[str]:
    ids = [f"--reuid={runner.SANDBOX_UID}", f"--regid={runner.SANDBOX_GID}", "--clear-groups"]
    return subprocess.run(["setpriv", *ids, str(program)], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(os.getuid() != 0, reason="the sandbox's user differs from the owner only when the owner is root")
@pytest.mark.parametrize("closed", ["site-packages", "package", "pyvenv.cfg", "interpreter"])
def test_as_root_a_virtualenv_harness_whose_packages_the_sandbox_user_cannot_read_is_named(
    short_tmp: Path, closed: str
) -> None:
    """The entry point itself is readable, but its Python cannot start or import as uid 65534:
    doctor and the launch say which place, as running it as that uid shows."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed")
    script, site = venv_install(short_tmp / "tools")
    assert runner.program_grant(str(script), "").problem == ""
    assert as_sandbox_user(script).stdout == "HARNESS ran\n"
    venv = site.parents[2]
    place = {
        "site-packages": site,
        "package": site / "harnesspkg",
        "pyvenv.cfg": venv / "pyvenv.cfg",
        "interpreter": venv / "bin" / "python",
    }
    # (A file is closed with 0600: this kernel lets any uid run a file with an x bit for anyone.)
    place[closed].chmod(0o600 if closed in ("pyvenv.cfg", "interpreter") else 0o700)
    grant = runner.program_grant(str(script), "")
    assert grant.paths == ()
    assert f"{script} cannot run in the sandbox: uid {runner.SANDBOX_UID} cannot" in grant.problem
    assert str(place[closed]) in grant.problem and "chmod" in grant.problem
    assert "HARNESS ran" not in as_sandbox_user(script).stdout  # what the check foresaw
    assert preflight.install_problem(Config(), str(script)) == grant.problem  # what doctor says
    with pytest.raises(runner.ProgramRefused, match=r"cannot run in the sandbox"):
        runner.build_spec("landlock", [str(script)], short_tmp, root=short_tmp / "p", profile="session")


async def test_doctor_preflight_names_an_install_in_the_home(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    program = write_program(home / "harness")
    use_harness(monkeypatch, program)
    problem, fix = preflight.adapter_problem(runtime.config, "scripted")
    assert f"{program} cannot be granted to the sandbox" in problem and "it is the home directory" in problem
    assert "sessions.read_paths" in fix


async def test_a_launch_of_a_harness_in_the_home_is_refused_and_recorded(
    kind: str, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    program = write_program(home / "harness")
    use_harness(monkeypatch, program)
    _run_id, task_id = await make_task(runtime)
    base = tmp_path / "s"
    base.mkdir()
    sup = await start_supervisor(runtime, base_dir=base)
    try:
        with pytest.raises(
            ToolError, match=r"launch refused: .*harness cannot be granted to the sandbox.*home directory"
        ):
            await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"))
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        assert await sessions.list_sessions(r) == []
        refusal = await r.fetchone("SELECT payload_json FROM events WHERE type = 'session.launch_refused'")
    assert refusal is not None and "sessions.read_paths" in json.loads(refusal["payload_json"])["reason"]
    assert list(base.iterdir()) == []


async def test_a_harness_installed_beside_another_project_cannot_read_its_credential(
    kind: str, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare harness in a directory that also holds another project is refused (its directory
    would expose that project's credential); installed in a tree of its own beside that project,
    it runs and cannot read the credential."""
    shared = tmp_path / "work"
    token = other_project(shared)
    bare = write_program(shared / "harness")
    link = npm_install(shared / "tools")
    open_to_all(shared)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        use_harness(monkeypatch, bare)
        with pytest.raises(
            ToolError, match=r"launch refused: .* is not its own \(it holds a roundtable project's state"
        ):
            await sup.launch(
                LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=(str(token),)
            )
        use_harness(monkeypatch, link)
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=(str(token),)
        )
        session_id = res["session"]["id"]
        await sup.wait(session_id, 30)
    finally:
        await sup.close()
    log = sup.log_path(session_id).read_text()
    assert "HARNESS denied" in log, log
    assert TOKEN not in log
