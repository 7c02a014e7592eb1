"""repo.read_file, repo.search and repo.symbols through Runtime.call, including escape attempts
through `..`, absolute paths and symlinks (file and directory) pointing out of the root."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the project holding a passwd-like file that must never leak."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "passwd").write_text(f"root:x:0:0:{SECRET}:/root:/bin/sh\n")
    return out


@pytest.fixture
async def rt(project: Path, outside: Path) -> AsyncIterator[Runtime]:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("import os\n\ndef main():\n    return 'Hello World'\n")
    (project / "src" / "util.go").write_text("package util\n\n// hello from go\nfunc Hello() {}\n")
    (project / "docs").mkdir()
    (project / "docs" / "notes.md").write_text("hello docs\nHELLO again\nnothing\n")
    (project / "blob.bin").write_bytes(b"hello\x00\x01\x02binary")
    (project / "latin1.txt").write_bytes("hello caf\xe9".encode("latin-1"))
    (project / ".git").mkdir(exist_ok=True)
    (project / ".git" / "config").write_text("hello from git config\n")
    os.symlink(outside / "passwd", project / "src" / "leak.txt")
    os.symlink(outside, project / "linked_dir")
    os.symlink(project / "src" / "app.py", project / "alias.py")
    runtime = await Runtime.open(project)
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_read_file_text(rt: Runtime) -> None:
    out = await rt.call("repo.read_file", {"path": "src/app.py"})
    assert out == {
        "path": "src/app.py",
        "binary": False,
        "size": len((rt.root / "src/app.py").read_bytes()),
        "content": (rt.root / "src/app.py").read_text(),
    }
    assert (await rt.call("repo.read_file", {"path": "./src//app.py"}))["path"] == "src/app.py"
    absolute = str((rt.root / "src" / "app.py").resolve())
    assert (await rt.call("repo.read_file", {"path": absolute}))["path"] == "src/app.py"
    inside_link = await rt.call("repo.read_file", {"path": "alias.py"})
    assert inside_link["path"] == "alias.py" and "Hello World" in inside_link["content"]


async def test_read_file_binary_is_reported_not_dumped(rt: Runtime) -> None:
    assert await rt.call("repo.read_file", {"path": "blob.bin"}) == {
        "path": "blob.bin",
        "binary": True,
        "size": 14,
        "content": "",
    }
    latin = await rt.call("repo.read_file", {"path": "latin1.txt"})
    assert latin["binary"] is True and latin["content"] == ""


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/passwd", "path is outside the repository root"),
        ("src/../../outside/passwd", "path is outside the repository root"),
        ("/etc/passwd", "path is outside the repository root"),
        ("src/leak.txt", "path is outside the repository root"),
        ("linked_dir/passwd", "path is outside the repository root"),
        (".git/config", "path is inside .git/"),
        (".roundtable/config.yaml", "path is inside .roundtable/"),
        ("src/../.roundtable/roundtable.db", "path is inside .roundtable/"),
        ("src/missing.py", "read src/missing.py: no such file or directory"),
        ("src", "read src: is a directory"),
        ("a\x00b", "must not contain NUL bytes"),
        ("   ", "argument path must not be empty"),
    ],
)
async def test_read_file_refusals(rt: Runtime, path: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        await rt.call("repo.read_file", {"path": path})
    assert message in str(info.value)
    assert SECRET not in str(info.value)


async def test_read_file_absolute_path_to_outside_file(rt: Runtime, outside: Path) -> None:
    with pytest.raises(ToolError, match="path is outside the repository root"):
        await rt.call("repo.read_file", {"path": str(outside / "passwd")})


async def test_read_file_size_cap(rt: Runtime) -> None:
    cap = rt.config.repo.max_read_bytes
    (rt.root / "big.txt").write_bytes(b"a" * (cap + 1))
    (rt.root / "edge.txt").write_bytes(b"a" * cap)
    with pytest.raises(ToolError, match=rf"big.txt: file is {cap + 1} bytes, over the read limit of {cap} bytes"):
        await rt.call("repo.read_file", {"path": "big.txt"})
    assert (await rt.call("repo.read_file", {"path": "edge.txt"}))["size"] == cap


async def test_read_file_refuses_fifo(rt: Runtime) -> None:
    os.mkfifo(rt.root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await rt.call("repo.read_file", {"path": "pipe"})


async def test_search_whole_tree_is_guarded(rt: Runtime) -> None:
    out = await rt.call("repo.search", {"query": "HELLO"})
    hits = [(m["path"], m["line"]) for m in out["matches"]]
    assert ("docs/notes.md", 1) in hits and ("docs/notes.md", 2) in hits
    assert ("src/app.py", 4) in hits and ("src/util.go", 3) in hits and ("src/util.go", 4) in hits
    assert ("alias.py", 4) in hits  # a symlink inside the root is fine
    paths = {m["path"] for m in out["matches"]}
    assert not any(p.startswith((".git", ".roundtable", "linked_dir")) for p in paths)
    assert "src/leak.txt" not in paths and "blob.bin" not in paths and "latin1.txt" not in paths
    assert all(SECRET not in m["content"] for m in out["matches"])
    assert out["truncated"] is False
    assert (await rt.call("repo.search", {"query": "root:x:0"}))["matches"] == []


async def test_search_with_path(rt: Runtime) -> None:
    one = await rt.call("repo.search", {"query": "hello", "path": "docs/notes.md"})
    assert one["matches"] == [
        {"path": "docs/notes.md", "line": 1, "content": "hello docs"},
        {"path": "docs/notes.md", "line": 2, "content": "HELLO again"},
    ]
    subtree = await rt.call("repo.search", {"query": "hello", "path": "src"})
    assert {m["path"] for m in subtree["matches"]} == {"src/app.py", "src/util.go"}
    for bad in ("src/leak.txt", "linked_dir", "../outside/passwd", ".git"):
        with pytest.raises(ToolError, match=r"outside the repository root|inside \.git/"):
            await rt.call("repo.search", {"query": "root", "path": bad})


async def test_search_cap_and_truncation(rt: Runtime) -> None:
    cap = rt.config.repo.max_search_matches
    (rt.root / "many.txt").write_text("needle\n" * (cap + 5))
    out = await rt.call("repo.search", {"query": "NEEDLE"})
    assert len(out["matches"]) == cap and out["truncated"] is True
    (rt.root / "many.txt").write_text("needle\n" * cap)
    exact = await rt.call("repo.search", {"query": "needle"})
    assert len(exact["matches"]) == cap and exact["truncated"] is False


async def test_search_validation(rt: Runtime) -> None:
    with pytest.raises(ToolError, match="missing required argument query"):
        await rt.call("repo.search", {})
    with pytest.raises(ToolError, match="argument query must not be empty"):
        await rt.call("repo.search", {"query": "  "})
    with pytest.raises(ToolError, match="argument query must be a string"):
        await rt.call("repo.search", {"query": 7})


async def test_symbols_tool(rt: Runtime) -> None:
    out = await rt.call("repo.symbols", {"path": "src/app.py"})
    assert out["symbols"] == [
        {
            "resource_id": "symbol:src/app.py#main",
            "path": "src/app.py",
            "language": "python",
            "kind": "function",
            "name": "main",
            "start_line": 3,
            "end_line": 4,
        }
    ]
    go = await rt.call("repo.symbols", {"path": str((rt.root / "src/util.go").resolve())})
    assert [(s["kind"], s["name"], s["path"]) for s in go["symbols"]] == [("function", "Hello", "src/util.go")]
    assert (await rt.call("repo.symbols", {"path": "src/app.py", "language": "go"}))["symbols"] == []
    assert (await rt.call("repo.symbols", {"path": "docs/notes.md"}))["symbols"] == []
    with pytest.raises(ToolError, match="language must be one of python, go, typescript, javascript"):
        await rt.call("repo.symbols", {"path": "src/app.py", "language": "cobol"})
    with pytest.raises(ToolError, match="path is outside the repository root"):
        await rt.call("repo.symbols", {"path": "src/leak.txt"})
    with pytest.raises(ToolError, match=r"read file src/nope\.py"):
        await rt.call("repo.symbols", {"path": "src/nope.py"})
    (rt.root / "src" / "broken.py").write_text("def broken(:\n")
    with pytest.raises(ToolError, match=r"parse python file src/broken\.py: syntax tree contains ERROR or MISSING"):
        await rt.call("repo.symbols", {"path": "src/broken.py"})
    with pytest.raises(ToolError, match="missing required argument path"):
        await rt.call("repo.symbols", {})


async def test_dependency_context_stays_unimplemented(rt: Runtime) -> None:
    with pytest.raises(ToolError, match=r"^tool not implemented: repo\.dependency_context$"):
        await rt.call("repo.dependency_context", {"path": "src/app.py"})
    assert "repo.dependency_context" not in {s.name for s in rt.registry.exposed()}
