"""A workspace is held to cheap bounds read from the file system — files new or changed against
its base, their total size, the largest file — before git hashes or diffs any of it; git-ignored
files count for nothing, and neither do the base's own files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roundtable.config import load_config
from roundtable.errors import ToolError
from tests.workspaces.conftest import Work

pytestmark = pytest.mark.anyio


def _bound(work: Work, **limits: int) -> None:
    """Set `workspaces.max_*` in the project's configuration file and use it."""
    config = work.rt.root / ".roundtable" / "config.yaml"
    config.write_text(config.read_text() + "".join(f"  {key}: {value}\n" for key, value in limits.items()))
    work.rt.config = load_config(work.rt.root)


def _touch(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _many(directory: Path, count: int, content: str = "x\n") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (directory / f"f{i}.txt").write_text(content)


async def _refused(work: Work, match: str) -> None:
    before = await work.counts()
    with pytest.raises(ToolError, match=match) as info:
        await work.propose()
    assert await work.counts() == before
    assert "workspace refused" in str(info.value)


async def test_too_many_new_files_are_refused_by_count_before_git_reads_them(work: Work) -> None:
    (work.path / "src" / "app.py").write_text("print('version 2')\n")
    _many(work.path / "gen", 1200)
    # Named: the bound, the figure and the limit (the default of 1,000; 1,201 with app.py).
    await _refused(
        work,
        r"1,201 files are new or changed against its base \(not git-ignored\), "
        r"more than workspaces\.max_files \(1,000\)",
    )


async def test_too_many_bytes_are_refused_by_total_size(work: Work) -> None:
    _bound(work, max_bytes=1024 * 1024)
    for i in range(3):  # each under the per-file bound, together over the total
        os.truncate(_touch(work.path / f"blob{i}.bin"), 512 * 1024)
    await _refused(work, r"hold 1\.5 MiB, more than workspaces\.max_bytes \(1\.0 MiB\)")


async def test_the_largest_file_bound_is_configurable(work: Work) -> None:
    _bound(work, max_file_bytes=20_000)
    (work.path / "src" / "app.py").write_text("x" * 30_000)
    await _refused(work, r"src/app\.py is 29\.3 KiB, larger than 19\.5 KiB \(workspaces\.max_file_bytes\)")


async def test_ignored_files_and_the_base_do_not_count(work: Work) -> None:
    # The base's files (src/app.py, README.txt, .gitignore, notes.md, the project's policy) are
    # over the bound of two but are the project's own; ignored files are never proposed.
    _bound(work, max_files=2, max_bytes=64 * 1024)
    (work.path / ".gitignore").write_text(".roundtable/\n*.log\nnode_modules/\n")
    (work.path / "src" / "app.py").write_text("print('version 2')\n")
    _many(work.path / "node_modules" / "pkg", 300, "y" * 1000)  # 300 KB ignored as a directory
    _many(work.path / "logs", 50, "z" * 1000)
    for path in (work.path / "logs").iterdir():
        path.rename(path.with_suffix(".log"))  # ignored file by file inside a directory git sees
    out = await work.propose()
    assert out["proposal"]["revision_number"] == 1
    assert sorted(out["files"]) == [".gitignore +1 -0", "src/app.py +1 -1"]
    # One more new file than the bound allows is refused, ignored ones still not counted.
    (work.path / "extra.txt").write_text("x\n")
    await _refused(work, r"3 files are new or changed .* more than workspaces\.max_files \(2\)")


async def test_a_same_size_edit_of_a_base_file_is_still_proposed(work: Work) -> None:
    _bound(work, max_files=1)
    (work.path / "src" / "app.py").write_text("print('v3')\n")  # same size as the base's
    (work.path / "README.txt").write_text("changed, another size\n")
    out = await work.propose()
    assert sorted(out["files"]) == ["README.txt +1 -2", "src/app.py +1 -1"]
