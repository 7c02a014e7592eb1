"""`init`, `mcp inspect`, `table` and direct `mcp call`, run as a user would (subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from roundtable.config import Config
from roundtable.scaffold import DIRECTORIES, starter_files


def rt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roundtable", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_init_scaffolds_everything_and_never_overwrites(tmp_path: Path) -> None:
    root = tmp_path / "p"
    out = rt("init", "--root", str(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"initialized roundtable in {root}"
    for rel in DIRECTORIES:
        assert (root / rel).is_dir()
    for rel in starter_files(Config()):
        assert (root / rel).is_file(), rel
    assert (root / ".roundtable/roundtable.db").stat().st_mode & 0o777 == 0o600
    (root / "AGENTS.ROUNDTABLE.md").write_text("mine\n")
    (root / "PROJECT.ROUNDTABLE.md").unlink()
    again = rt("init", "--root", str(root))
    assert again.returncode == 1
    assert again.stderr.strip().startswith("refusing to overwrite existing file: AGENTS.ROUNDTABLE.md; ")
    assert "rerun with --force" in again.stderr
    assert (root / "AGENTS.ROUNDTABLE.md").read_text() == "mine\n"
    assert not (root / "PROJECT.ROUNDTABLE.md").exists()  # nothing written on refusal
    forced = rt("init", "--root", str(root), "--force")
    assert forced.returncode == 0
    assert (root / "AGENTS.ROUNDTABLE.md").read_text() != "mine\n"


def test_mcp_inspect_lists_38_sorted_and_writes_assets(tmp_path: Path) -> None:
    root = tmp_path / "p"
    assert rt("init", "--root", str(root)).returncode == 0
    for rel in (".roundtable/mcp/tools.schema.json", ".roundtable/mcp/server.json"):
        (root / rel).unlink()
    out = rt("mcp", "inspect", "--root", str(root), "--write")
    assert out.returncode == 0, out.stderr
    names = out.stdout.split()
    assert len(names) == 42 and names == sorted(names)
    schema = json.loads((root / ".roundtable/mcp/tools.schema.json").read_text())
    assert len(schema["tools"]) == 42
    first = schema["tools"][0]
    assert first["name"] == "decision.record" and first["mcp_name"] == "decision_record"
    assert all(t["input_schema"]["type"] == "object" for t in schema["tools"])
    server = json.loads((root / ".roundtable/mcp/server.json").read_text())
    assert server["transports"]["streamable_http"]["url"] == "http://127.0.0.1:7117/mcp"
    assert server["socket_path"] == ".roundtable/mcp/roundtable.sock"
    manifest = (root / ".roundtable/mcp/AGENT_MCP_MANIFEST.md").read_text()
    assert "Mandatory Rules" in manifest and "table_get_state" in manifest


def test_bad_input_is_one_line_and_exit_1(tmp_path: Path) -> None:
    root = tmp_path / "p"
    missing = rt("table", "--root", str(root))
    assert missing.returncode == 1 and "roundtable init" in missing.stderr
    assert rt("init", "--root", str(root)).returncode == 0
    (root / ".roundtable/config.yaml").write_text("mcp:\n  tool_names: [\n")
    broken = rt("table", "--root", str(root))
    assert broken.returncode == 1 and "config.yaml" in broken.stderr and "invalid YAML" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1


def test_mcp_call_direct_errors(tmp_path: Path) -> None:
    root = tmp_path / "p"
    assert rt("init", "--root", str(root)).returncode == 0
    out = rt("mcp", "call", "--root", str(root), "--tool", "no.such", "--args", "{}")
    assert out.returncode == 1 and out.stderr.strip() == "unknown tool: no.such"
    out = rt("mcp", "call", "--root", str(root), "--tool", "task.list", "--args", "[1]")
    assert out.returncode == 1 and out.stderr.strip() == "args: must be a JSON object"
    out = rt("mcp", "call", "--root", str(root), "--tool", "task.list", "--args", "{bad")
    assert out.returncode == 1 and "invalid JSON" in out.stderr


def test_help_and_usage_exit_codes() -> None:
    assert rt("--help").returncode == 0
    assert rt("mcp", "-h").returncode == 0
    assert rt("bogus").returncode == 2
