"""A pyenv shim (`~/.pyenv/shims/python3`) runs pyenv, which a sandbox does not see: the
program is resolved to the interpreter the shim would run when that is unambiguous (one version
from `PYENV_VERSION`, the project's `.python-version` or the global `version` file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.sandbox import runner

SHIM = '#!/usr/bin/env bash\nexec "/x/.pyenv/libexec/pyenv" exec "${0##*/}" "$@"\n'


def fake_pyenv(base: Path, *versions: str) -> Path:
    root = base / ".pyenv"
    (root / "shims").mkdir(parents=True)
    (root / "shims" / "python3").write_text(SHIM)
    (root / "shims" / "python3").chmod(0o755)
    for version in versions:
        interpreter = root / "versions" / version / "bin" / "python3"
        interpreter.parent.mkdir(parents=True)
        interpreter.write_text("#!/bin/sh\necho real\n")
        interpreter.chmod(0o755)
        stdlib = root / "versions" / version / "lib" / f"python{version.rsplit('.', 1)[0]}"
        stdlib.mkdir(parents=True)
        (stdlib / "os.py").write_text("")
    return root


def test_a_shim_resolves_to_the_version_it_would_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYENV_VERSION", raising=False)
    pyenv = fake_pyenv(tmp_path / "tools", "3.12.1", "3.13.0")
    (pyenv / "version").write_text("3.12.1\n")
    shims = str(pyenv / "shims")
    grant = runner.program_grant("python3", shims)
    assert grant.problem == "" and grant.program == str(pyenv / "versions" / "3.12.1" / "bin" / "python3")
    assert grant.paths == (str((pyenv / "versions" / "3.12.1").resolve()),)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".python-version").write_text("3.13.0\n")
    assert runner.program_grant("python3", shims, root=str(project)).program.endswith("3.13.0/bin/python3")
    monkeypatch.setenv("PYENV_VERSION", "3.12.1")
    assert runner.program_grant("python3", shims, root=str(project)).program.endswith("3.12.1/bin/python3")
    # Two versions at once, or one that is not installed: ambiguous, the shim stays as it is.
    monkeypatch.setenv("PYENV_VERSION", "3.12.1:3.13.0")
    assert runner.program_grant("python3", shims).program == "python3"
    monkeypatch.setenv("PYENV_VERSION", "3.9.0")
    assert runner.program_grant("python3", shims).program == "python3"
    spec = runner.build_spec("landlock", ["python3", "-V"], tmp_path, root=tmp_path / "p", search_path=shims)
    assert spec.argv == ["python3", "-V"]
    monkeypatch.setenv("PYENV_VERSION", "3.13.0")
    spec = runner.build_spec("landlock", ["python3", "-V"], tmp_path, root=tmp_path / "p", search_path=shims)
    assert spec.argv == [str(pyenv / "versions" / "3.13.0" / "bin" / "python3"), "-V"]
    granted = {m.dst for m in spec.mounts if m.op == "ro"}
    assert str(pyenv / "shims") not in granted
