"""Test command suggestions from the repository's own markers (the reference
always suggested `go test ./...`).

Markers and the command each implies (every command is runnable through `test.run`):
- `pytest.ini`, `pyproject.toml`, `setup.cfg`, `tox.ini`, `conftest.py` → the project's own
  interpreter, `<dir>/.venv/bin/python -m pytest` (or `venv/`), by its absolute path — the
  virtual environment is not in the revision the tests run on; without one, `pytest`
- `package.json` with a real `scripts.test` → `npm test` (`pnpm test` / `yarn test` when their
  lock file is present)
- `go.mod` → `go test ./...`;  `Cargo.toml` → `cargo test`
- a Makefile with a `test:` target → `make test`

`for_policy` proposes commands for the operator to enable under `tests.commands` in
`POLICIES.ROUNDTABLE.md`, parameterised where the tool takes paths (`{paths}`, `{k}`): pytest
from the Python markers, lint from `[tool.ruff]` (or a ruff/flake8 config), a type check from
`[tool.mypy]` (or `mypy.ini`), `tox -e ENV` for tox environments named for linting or typing,
and `npm run SCRIPT` for `package.json` scripts such as `lint` or `typecheck`. Nothing runs them
until the operator copies them into the policy.

Without a proposal the root's markers are used. With one, each touched file looks for the
nearest directory (itself up to the root) that has markers and keeps those of its own language
(plus `make test`), so a Go change in `svc/` suggests `go -C svc test ./...` and not the root's
`npm test`; when no touched file maps to a language the root's suggestions are returned.
Blocking file reads: call these from a worker thread.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PYTHON_MARKERS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py")
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_MAKE_TEST = re.compile(r"^test\s*:(?!=)", re.M)
_NPM_PLACEHOLDER = "no test specified"
_MAX_MARKER_BYTES = 1 << 20

LANGUAGE_OF_SUFFIX = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".js": "node",
    ".jsx": "node",
    ".mjs": "node",
    ".cjs": "node",
    ".ts": "node",
    ".tsx": "node",
    ".vue": "node",
    ".svelte": "node",
}


@dataclass(frozen=True)
class Suggestion:
    command: str
    marker: str
    language: str

    def to_dict(self) -> dict[str, str]:
        return {"command": self.command, "marker": self.marker, "language": self.language}


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(_MAX_MARKER_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _inside(root: Path, path: Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _marker(root: Path, rel_dir: str, name: str) -> Path | None:
    path = root / rel_dir / name if rel_dir else root / name
    if path.is_file() and _inside(root, path):
        return path
    return None


VENV_DIRS = (".venv", "venv")


def project_python(root: Path, rel_dir: str = "") -> str:
    """The absolute path of the project's own interpreter (`<dir>/.venv/bin/python`, else the
    root's), or ''. The path is the venv's own link, not what it points to: run through it, the
    interpreter finds the venv's packages."""
    for base in dict.fromkeys([rel_dir, ""]):
        for venv in VENV_DIRS:
            path = Path(os.path.abspath(root)) / base / venv / "bin" / "python"
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return ""


def venv_of(root: Path, argv: list[str]) -> tuple[str, ...]:
    """The project's virtual environment a test command runs the interpreter of (its directory),
    for the test sandbox to keep readable (it hides the project root otherwise); () for any
    other command."""
    if not argv:
        return ()
    program = Path(argv[0])
    base = Path(os.path.abspath(root))
    if not program.is_absolute() or program.parent.name != "bin":
        return ()
    venv = program.parent.parent
    if venv.name in VENV_DIRS and (venv.parent == base or base in venv.parent.parents) and ".." not in program.parts:
        return (str(venv),)
    return ()


def _rel(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


def markers_in(root: Path, rel_dir: str = "") -> list[Suggestion]:
    """The suggestions implied by the markers directly inside `rel_dir` ("" = the root)."""
    out: list[Suggestion] = []
    for name in PYTHON_MARKERS:
        if _marker(root, rel_dir, name):
            python = project_python(root, rel_dir)
            if python:
                command = shlex.join([python, "-m", "pytest", *([rel_dir] if rel_dir else [])])
            else:
                command = f"pytest {rel_dir}" if rel_dir else "pytest"
            out.append(Suggestion(command, _rel(rel_dir, name), "python"))
            break
    package = _marker(root, rel_dir, "package.json")
    if package is not None:
        try:
            scripts = json.loads(_read(package)).get("scripts") or {}
        except (ValueError, AttributeError):
            scripts = {}
        test = scripts.get("test") if isinstance(scripts, dict) else None
        if isinstance(test, str) and test.strip() and _NPM_PLACEHOLDER not in test:
            if _marker(root, rel_dir, "pnpm-lock.yaml"):
                command = f"pnpm --dir {rel_dir} test" if rel_dir else "pnpm test"
            elif _marker(root, rel_dir, "yarn.lock"):
                command = f"yarn --cwd {rel_dir} test" if rel_dir else "yarn test"
            else:
                command = f"npm --prefix {rel_dir} test" if rel_dir else "npm test"
            out.append(Suggestion(command, _rel(rel_dir, "package.json"), "node"))
    if _marker(root, rel_dir, "go.mod"):
        out.append(
            Suggestion(f"go -C {rel_dir} test ./..." if rel_dir else "go test ./...", _rel(rel_dir, "go.mod"), "go")
        )
    if _marker(root, rel_dir, "Cargo.toml"):
        command = f"cargo test --manifest-path {rel_dir}/Cargo.toml" if rel_dir else "cargo test"
        out.append(Suggestion(command, _rel(rel_dir, "Cargo.toml"), "rust"))
    for name in MAKEFILES:
        makefile = _marker(root, rel_dir, name)
        if makefile is not None and _MAKE_TEST.search(_read(makefile)):
            out.append(Suggestion(f"make -C {rel_dir} test" if rel_dir else "make test", _rel(rel_dir, name), "make"))
            break
    return out


def _safe_parts(rel: str) -> tuple[str, ...] | None:
    pure = PurePosixPath(rel)
    if pure.is_absolute() or any(p in ("..", "") for p in pure.parts):
        return None
    return pure.parts


def suggest(root: Path, touched: list[str] | None = None) -> list[Suggestion]:
    """Suggestions for the whole repository, or narrowed to the touched files."""
    if not touched:
        return sorted(markers_in(root), key=lambda s: s.command)
    found: dict[str, Suggestion] = {}
    cache: dict[str, list[Suggestion]] = {}
    for rel in touched:
        parts = _safe_parts(rel)
        language = LANGUAGE_OF_SUFFIX.get(PurePosixPath(rel).suffix)
        if parts is None or language is None:
            continue
        for depth in range(len(parts) - 1, -1, -1):
            rel_dir = "/".join(parts[:depth])
            if rel_dir not in cache:
                cache[rel_dir] = markers_in(root, rel_dir)
            relevant = [s for s in cache[rel_dir] if s.language in (language, "make")]
            if relevant:
                for s in relevant:
                    found.setdefault(s.command, s)
                break
    if not found:
        return sorted(markers_in(root), key=lambda s: s.command)
    return sorted(found.values(), key=lambda s: s.command)


_CHECK_SCRIPTS = ("lint", "typecheck", "type-check", "types", "check", "format:check")
_CHECK_ENVS = ("lint", "flake8", "ruff", "mypy", "type", "types", "typing", "typecheck")


@dataclass(frozen=True)
class PolicyCommand:
    """A command the operator could enable: its name, argv (with `{paths}`/`{k}` slots) and
    the marker that suggests it."""

    name: str
    argv: tuple[str, ...]
    source: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "argv": list(self.argv), "source": self.source}


def _toml(root: Path, name: str) -> dict[str, object]:
    path = _marker(root, "", name)
    if path is None:
        return {}
    try:
        return tomllib.loads(_read(path))
    except (tomllib.TOMLDecodeError, ValueError):
        return {}


def _ini_sections(root: Path, name: str) -> list[str]:
    path = _marker(root, "", name)
    if path is None:
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(_read(path))
    except configparser.Error:
        return []
    return parser.sections()


def for_policy(root: Path) -> list[PolicyCommand]:
    """Test, lint and type-check commands the repository's configuration implies, for the
    operator to enable (see the module docstring). Blocking reads: call from a worker thread."""
    out: list[PolicyCommand] = []
    pyproject = _toml(root, "pyproject.toml")
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    assert isinstance(tool, dict)
    setup_cfg = _ini_sections(root, "setup.cfg")
    if any(_marker(root, "", name) for name in PYTHON_MARKERS):
        source = next(name for name in PYTHON_MARKERS if _marker(root, "", name))
        out.append(PolicyCommand("unit", ("python", "-m", "pytest", "-q", "{paths}", "-k", "{k}"), source))
    if "ruff" in tool:
        out.append(PolicyCommand("lint", ("ruff", "check", "{paths}"), "pyproject.toml [tool.ruff]"))
    elif _marker(root, "", "ruff.toml") or _marker(root, "", ".ruff.toml"):
        out.append(PolicyCommand("lint", ("ruff", "check", "{paths}"), "ruff.toml"))
    elif "flake8" in setup_cfg or _marker(root, "", ".flake8"):
        out.append(PolicyCommand("lint", ("python", "-m", "flake8", "{paths}"), "setup.cfg [flake8]"))
    mypy = tool.get("mypy")
    if isinstance(mypy, dict):
        argv = ("python", "-m", "mypy", "{paths}") if mypy.get("files") else ("python", "-m", "mypy", ".")
        out.append(PolicyCommand("typecheck", argv, "pyproject.toml [tool.mypy]"))
    elif _marker(root, "", "mypy.ini") or "mypy" in setup_cfg:
        out.append(PolicyCommand("typecheck", ("python", "-m", "mypy", "."), "mypy.ini"))
    for section in _ini_sections(root, "tox.ini"):
        env = section.removeprefix("testenv:")
        if section.startswith("testenv:") and env in _CHECK_ENVS:
            out.append(PolicyCommand(f"tox-{env}", ("tox", "-e", env), f"tox.ini [{section}]"))
    package = _marker(root, "", "package.json")
    if package is not None:
        try:
            scripts = json.loads(_read(package)).get("scripts") or {}
        except (ValueError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict):
            for script in _CHECK_SCRIPTS:
                if isinstance(scripts.get(script), str):
                    out.append(PolicyCommand(f"npm-{script}", ("npm", "run", script), f"package.json scripts.{script}"))
    return out
