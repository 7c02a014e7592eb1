"""The scripted implementer works on a task whose readable path is a directory (the New-task
form offers directories): it edits the directory's first file instead of failing on the
directory."""

from __future__ import annotations

from pathlib import Path

from roundtable.demo.scripted import file_in


def test_a_directory_stands_for_its_first_file(tmp_path: Path) -> None:
    (tmp_path / "calc" / ".hidden").mkdir(parents=True)
    (tmp_path / "calc" / ".hidden" / "a.py").write_text("")
    (tmp_path / "calc" / "ops.py").write_text("")
    (tmp_path / "calc" / "__init__.py").write_text("")
    (tmp_path / "empty").mkdir()
    assert file_in(tmp_path, "calc") == "calc/__init__.py"
    assert file_in(tmp_path, "calc/ops.py") == "calc/ops.py"
    assert file_in(tmp_path, "new.py") == "new.py"  # a file still to be created
    assert file_in(tmp_path, "empty") == "empty"
