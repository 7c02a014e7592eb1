"""`roundtable doctor` names the project of the owner answering at this project's address (the
bridge's identity rule), run as a child process the way a user runs it."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from roundtable import credentials
from roundtable.owner import Owner
from tests.support.owners import free_port, set_http_address
from tests.support.projects import initialised_project

pytestmark = pytest.mark.anyio


async def _doctor(root: Path) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roundtable", "doctor", "--root", str(root), stdout=-1, stderr=-1
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return (out + err).decode()


async def test_doctor_tells_whose_owner_answers(tmp_path: Path, project: Path) -> None:
    other = initialised_project(tmp_path / "other")
    port = free_port()
    set_http_address(project, port)
    async with Owner(other, http_address=f"127.0.0.1:{port}", socket=False, chair=False):
        text = await _doctor(project)
    # Another project's owner does not tell this one its root (that needs its credential).
    assert (
        f"PROBLEM  the owner at 127.0.0.1:{port} serves another project (project id {credentials.read_project_id(other)})"
        in text
    )
    assert "mcp.http_address" in text and str(other) not in text
    async with Owner(project, http_address=f"127.0.0.1:{port}", socket=False, chair=False):
        text = await _doctor(project)
        # A copy of this project (same id, same credentials) is told apart by the owner's root,
        # which doctor asks for with the credential once the owner proved it knows it.
        copy = tmp_path / "copy"
        await asyncio.to_thread(shutil.copytree, project, copy)
        copied = await _doctor(copy)
    mine = credentials.read_project_id(project)
    # The pid is told only to a caller with the project's credential: doctor sent it.
    assert f"ok       the owner at 127.0.0.1:{port} serves this project ({mine}, pid {os.getpid()})" in text
    assert f"PROBLEM  the owner at 127.0.0.1:{port} serves project {project} (pid {os.getpid()}), not this one" in copied
