"""Shared fixtures: an initialised project in a temp dir and an open runtime on it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from tests.support.projects import initialised_project

# Markers whose tests run only when `-m` names them: they download clients from npm, build a
# virtual environment or load both cores for a minute. Everything else runs by default.
OPT_IN_MARKERS = {
    "load": "load test: run with `pytest -m load` (a minute of both cores, 20,000 connections)",
    "real_client": "real-client test: run with `pytest -m real_client` (installs MCP clients and harnesses from npm)",
    "e2e_harness": "e2e-harness test: run with `make e2e-harness` (installs Claude Code and Codex from npm)",
    "install": "install test: run with `make test-install` (a fresh clone's `make install`, a venv from the index)",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the opt-in markers' tests unless the `-m` expression names their marker."""
    selected = config.getoption("markexpr", "") or ""
    for item in items:
        for marker, why in OPT_IN_MARKERS.items():
            if marker not in selected and item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.skip(reason=why))


def pytest_unconfigure(config: pytest.Config) -> None:
    """A database a test left open leaves its aiosqlite worker thread waiting, and that thread is
    not a daemon: the process would never exit (under `pytest -n` the whole run then waits on the
    worker). Such threads are ended here and counted aloud, and any other thread still running is
    named, so a run that will not end says why instead of hanging."""
    import sys
    import threading

    from aiosqlite import core

    leaked = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon or not thread.is_alive():
            continue
        if getattr(thread, "_target", None) is core._connection_worker_thread:
            thread._args[0].put_nowait((None, lambda: core._STOP_RUNNING_SENTINEL))  # type: ignore[attr-defined]
            leaked.append(thread.name)
        else:
            print(f"tests: thread {thread.name!r} is still running at the end of the run", file=sys.stderr)
    if leaked:
        print(
            f"tests: {len(leaked)} aiosqlite connection thread(s) were left open by the tests; stopped so the run can end",
            file=sys.stderr,
        )


@pytest.fixture(autouse=True, scope="session")
def _private_state_home() -> Iterator[None]:
    """Agents' workspaces default to `$XDG_STATE_HOME/roundtable/workspaces`: never the real home's."""
    import os

    path = tempfile.mkdtemp(prefix="rt-state-")
    previous = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = path
    yield
    if previous is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = previous
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["bwrap", "landlock"])
async def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each sandbox kind in turn (sessions are forced to it too). A kind that cannot start a
    sandbox here is skipped with the reason — except bubblewrap when CI made it available
    (`ROUNDTABLE_REQUIRE_BWRAP=1`, set by `.ci/run`): then a failed probe fails the test."""
    from roundtable.sandbox import runner
    from roundtable.sandbox.sessions import ENV_VAR

    why = await runner.problem(request.param)
    if why:
        if request.param == "bwrap" and os.environ.get("ROUNDTABLE_REQUIRE_BWRAP") == "1":
            pytest.fail(f"bubblewrap is required here but does not work: {why}")
        pytest.skip(why)
    monkeypatch.setenv(ENV_VAR, request.param)
    return str(request.param)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path under /tmp, removed afterwards. A Unix socket path
    holds at most 107 bytes: under pytest-xdist `tmp_path` gains a `popen-gwN/` level, which
    pushes a project's `.roundtable/mcp/roundtable.sock` past it for long test names."""
    path = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def project(short_tmp: Path) -> Path:
    """A fresh project root with `roundtable init` applied (in `short_tmp`, so its sockets fit):
    a copy of the test process's template with its own project id (`tests/support/projects.py`)."""
    return initialised_project(short_tmp / "project")


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    rt = await Runtime.open(project)
    try:
        yield rt
    finally:
        await rt.close()
