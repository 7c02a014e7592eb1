"""repo.read_file line ranges and numbering, repo.search context: an agent reads only the lines it
needs and learns the numbers a hunk or an edit refers to."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime

pytestmark = pytest.mark.anyio

LINES = [f"line {n}" for n in range(1, 11)]


@pytest.fixture
def text_file(runtime: Runtime) -> Path:
    path = runtime.root / "ten.txt"
    path.write_text("\n".join(LINES) + "\n")
    return path


async def test_a_range_says_how_many_lines_the_file_has(runtime: Runtime, text_file: Path) -> None:
    out = await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 3, "end_line": 5})
    assert out["content"] == "line 3\nline 4\nline 5\n"
    assert (out["start_line"], out["end_line"], out["total_lines"]) == (3, 5, 10)
    tail = await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 9, "end_line": 400})
    assert tail["content"] == "line 9\nline 10\n" and tail["end_line"] == 10


async def test_numbered_lines(runtime: Runtime, text_file: Path) -> None:
    out = await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 9, "numbered": True})
    assert out["content"] == "9\tline 9\n10\tline 10\n"
    whole = await runtime.call("repo.read_file", {"path": "ten.txt", "numbered": True})
    assert whole["content"].splitlines()[0] == "1\tline 1" and "total_lines" not in whole


async def test_whole_file_answer_is_unchanged(runtime: Runtime, text_file: Path) -> None:
    out = await runtime.call("repo.read_file", {"path": "ten.txt"})
    text = "\n".join(LINES) + "\n"
    assert out == {"path": "ten.txt", "binary": False, "size": len(text), "content": text}


async def test_bad_ranges_are_refused(runtime: Runtime, text_file: Path) -> None:
    with pytest.raises(ToolError, match=r"start_line 11 is past the end of ten.txt \(10 lines\)"):
        await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 11})
    with pytest.raises(ToolError, match="end_line 2 is before start_line 4"):
        await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 4, "end_line": 2})
    with pytest.raises(ToolError, match="start_line must be at least 1"):
        await runtime.call("repo.read_file", {"path": "ten.txt", "start_line": 0})


async def test_search_gives_line_numbers_and_context(runtime: Runtime, text_file: Path) -> None:
    out = await runtime.call("repo.search", {"query": "line 5", "path": "ten.txt", "context_lines": 2})
    assert out["matches"] == [
        {
            "path": "ten.txt",
            "line": 5,
            "content": "line 5",
            "before": ["line 3", "line 4"],
            "after": ["line 6", "line 7"],
        }
    ]
    edge = await runtime.call("repo.search", {"query": "line 10", "path": "ten.txt", "context_lines": 3})
    assert edge["matches"][0]["after"] == [] and edge["matches"][0]["before"] == ["line 7", "line 8", "line 9"]
    plain = await runtime.call("repo.search", {"query": "line 1", "path": "ten.txt"})
    assert [m["line"] for m in plain["matches"]] == [1, 10] and "before" not in plain["matches"][0]
