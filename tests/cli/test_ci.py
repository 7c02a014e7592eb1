"""CI: `wait --ready` (this project's owner, identity checked), `--http-address` /
`ROUNDTABLE_HTTP_ADDRESS`, `.roundtable/owner.json` (where the owner listens, 0600), the default
port giving way to a free one when another project's owner holds it (an explicit address is
honoured exactly), `run --headless --json` and `doctor --json`. Real owners on ephemeral ports."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from roundtable import credentials, endpoint
from roundtable.cli import cli
from roundtable.errors import RoundtableError
from roundtable.owner import Owner
from tests.support.owners import free_port, set_http_address
from tests.support.projects import initialised_project

pytestmark = pytest.mark.anyio


@pytest.fixture
def pair(short_tmp: Path) -> tuple[Path, Path]:
    """Two initialised projects (copies of the initialised template)."""
    roots = (short_tmp / "one", short_tmp / "two")
    for root in roots:
        initialised_project(root)
    return roots


async def _cli(*args: str) -> tuple[int, str]:
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, list(args)))
    return result.exit_code, result.output


async def test_wait_ready_checks_identity_and_follows_owner_json(short_tmp: Path, pair: tuple[Path, Path]) -> None:
    mine, other = pair
    port = free_port()
    set_http_address(mine, port)
    set_http_address(other, port)
    code, out = await _cli("wait", "--ready", "--timeout", "300ms", "--root", str(mine))
    assert code == 1 and "did not answer within 300ms: nothing answers at 127.0.0.1:" in out
    async with Owner(other, socket_path=short_tmp / "o.sock", chair=False):
        code, out = await _cli("wait", "--ready", "--timeout", "300ms", "--root", str(mine))
        assert code == 1 and "serves another project (project id " in out  # not fooled by another owner
        # This project's owner elsewhere (an override): owner.json says where; wait finds it.
        async with Owner(mine, http_address="127.0.0.1:0", socket_path=short_tmp / "m.sock", chair=False) as owner:
            record = json.loads((mine / ".roundtable" / "owner.json").read_text())
            assert record == {"pid": os.getpid(), "http_address": owner.http_address, "url": owner.http_url}
            assert stat.S_IMODE((mine / ".roundtable" / "owner.json").stat().st_mode) == 0o600
            assert endpoint.bridge_url(mine) == owner.http_url  # what the bridge connects to
            code, out = await _cli("wait", "--ready", "--timeout", "5s", "--root", str(mine))
            assert code == 0 and "ready: the owner at" in out and "serves this project" in out
        assert not (mine / ".roundtable" / "owner.json").exists()  # removed when the owner stops


async def test_the_default_port_gives_way_but_an_explicit_address_does_not(
    short_tmp: Path, pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    default = f"127.0.0.1:{port}"
    monkeypatch.setattr(endpoint, "DEFAULT_HTTP_ADDRESS", default)  # stands for 127.0.0.1:7117
    first, second = pair
    for root in (first, second):
        set_http_address(root, port)
    async with Owner(first, socket_path=short_tmp / "1.sock", chair=False) as one:
        assert one.http_address == default and not one.address_note
        async with Owner(second, socket_path=short_tmp / "2.sock", chair=False) as two:
            assert two.http_address != default
            assert two.address_note == (
                f"{default} is held by a roundtable owner (project {credentials.read_project_id(first)}), "
                "so this owner took a free port"
            )
            assert endpoint.bridge_url(second) == two.http_url and endpoint.bridge_url(first) == one.http_url
        monkeypatch.setattr(endpoint, "DEFAULT_HTTP_ADDRESS", "127.0.0.1:1")  # now the address is explicit
        with pytest.raises(RoundtableError, match=f"{re.escape(default)} is held by a roundtable owner \\(project "):
            async with Owner(second, socket_path=short_tmp / "3.sock", chair=False):
                pass


async def test_start_takes_the_http_address_flag_and_says_so(project: Path) -> None:
    root = project
    env = {**os.environ, "ROUNDTABLE_HTTP_ADDRESS": "127.0.0.1:0", "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "start",
        "--root",
        str(root),
        "--goal",
        "from CI",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert "roundtable coordinator ready" in first and "http=http://127.0.0.1:" in first
        assert ":0/" not in first
        code, out = await _cli("wait", "--ready", "--timeout", "20s", "--root", str(root))
        assert code == 0, out
        code, out = await _cli("runs", "list", "--json", "--root", str(root))
        assert [r["goal"] for r in json.loads(out)["runs"]] == ["from CI"]
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def test_headless_json_and_doctor_json(project: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "run",
        "--headless",
        "--ticks",
        "1",
        "--goal",
        "g",
        "--json",
        "--root",
        str(project),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    summary = json.loads(out)  # stdout is only the summary; progress went to stderr
    assert summary["status"] == "active" and summary["exit_code"] == 0 and summary["run_id"].startswith("RUN-")
    assert "created run" in err.decode()
    code, text = await _cli("doctor", "--json", "--root", str(project))
    report = json.loads(text)
    assert code == (1 if report["problems"] else 0)
    assert {"status", "what", "fix"} <= set(report["findings"][0])
    assert any(f["what"] == "configuration is valid" and f["status"] == "ok" for f in report["findings"])


def test_the_bridge_follows_the_address_override(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROUNDTABLE_HTTP_ADDRESS", raising=False)
    assert endpoint.bridge_url(project) == "http://127.0.0.1:7117/mcp"
    monkeypatch.setenv("ROUNDTABLE_HTTP_ADDRESS", "127.0.0.1:45678")
    assert endpoint.bridge_url(project) == "http://127.0.0.1:45678/mcp"
