"""The path guard, the guarded walk, sensitive paths and content hashes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.services.repository import hashing
from roundtable.services.repository.pathguard import (
    clean_rel_path,
    is_sensitive_path,
    resolve_repo_path,
    walk_repo_files,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (root / "src" / "deep" / "b.py").write_text("b\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "sub" / ".git").mkdir(parents=True)
    (root / "sub" / ".git" / "x").write_text("x\n")
    (root / ".roundtable").mkdir()
    (root / ".roundtable" / "db").write_text("db\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s\n")
    os.symlink(outside / "secret", root / "src" / "out_link")
    os.symlink(outside, root / "out_dir")
    os.symlink(root / "src", root / "in_dir")  # a directory symlink inside: not followed
    os.symlink(root / ".roundtable" / "db", root / "db_link")
    os.symlink(root / "src" / "a.py", root / "a_link.py")
    os.symlink(root / "missing", root / "dangling")
    os.mkfifo(root / "fifo")
    return root


def test_resolve_accepts_inside_paths(tree: Path) -> None:
    assert resolve_repo_path(tree, "src/a.py") == (tree.resolve() / "src/a.py", "src/a.py")
    assert resolve_repo_path(tree, "src/deep/../a.py")[1] == "src/a.py"
    assert resolve_repo_path(tree, str(tree / "src" / "a.py"))[1] == "src/a.py"
    assert resolve_repo_path(tree, "a_link.py") == (tree.resolve() / "src/a.py", "a_link.py")
    assert resolve_repo_path(tree, "src/not_yet.py")[1] == "src/not_yet.py"
    assert resolve_repo_path(tree, ".")[1] == "."


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "path is required"),
        ("  ", "path is required"),
        ("a\x00", "NUL"),
        ("..", "outside"),
        ("../outside/secret", "outside"),
        ("src/../../outside/secret", "outside"),
        ("/etc/passwd", "outside"),
        ("src/out_link", "outside"),
        ("out_dir/secret", "outside"),
        (".git/HEAD", "inside .git/"),
        ("sub/.git/x", "inside .git/"),
        (".roundtable/db", "inside .roundtable/"),
        ("db_link", "inside .roundtable/"),
    ],
)
def test_resolve_refuses(tree: Path, path: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        resolve_repo_path(tree, path)


def test_walk_skips_hidden_dirs_fifos_and_symlinks_out(tree: Path) -> None:
    rels = [rel for _abs, rel in walk_repo_files(tree)]
    assert sorted(rels) == ["a_link.py", "src/a.py", "src/deep/b.py"]
    assert [rel for _abs, rel in walk_repo_files(tree, "src/deep")] == ["src/deep/b.py"]
    for absolute, rel in walk_repo_files(tree):
        assert str(absolute).startswith(str(tree.resolve()))
        resolve_repo_path(tree, rel)  # every walked path passes the guard


@pytest.mark.parametrize(
    ("rel", "sensitive"),
    [
        (".env", True),
        ("config/.env.production", True),
        (".ssh/id_rsa", True),
        ("keys/server.pem", True),
        ("deploy/tls.KEY", True),
        ("home/id_ed25519.pub", True),
        (".aws/credentials", True),
        ("app/secrets.yaml", True),
        ("x/MyCredentialStore.py", True),
        (".netrc", True),
        (".npmrc", True),
        (".git", True),
        ("sub/.git/config", True),
        (".roundtable/roundtable.db", True),
        (".claude/settings.json", True),
        ("src/app.py", False),
        ("docs/keyboard.md", False),
        ("environment.py", False),
        ("src/.gitignore", False),
    ],
)
def test_sensitive_paths(rel: str, sensitive: bool) -> None:
    assert is_sensitive_path(rel) is sensitive


def test_clean_rel_path() -> None:
    assert clean_rel_path("./src//a.py") == "src/a.py"
    assert clean_rel_path(".") == "" and clean_rel_path("") == ""
    with pytest.raises(ToolError, match="outside"):
        clean_rel_path("src/../../x")
    with pytest.raises(ToolError, match="must be relative"):
        clean_rel_path("/abs")


def test_hashes(tree: Path) -> None:
    assert hashing.file_hash(tree, "src/a.py") == hashlib.sha256(b"a\n").hexdigest()
    assert hashing.file_hash(tree, "src/none.py") == ""
    with pytest.raises(ToolError, match="is a directory"):
        hashing.file_hash(tree, "src")
    with pytest.raises(ToolError, match="outside"):
        hashing.file_hash(tree, "src/out_link")
    expected = hashlib.sha256(b"src/a.py\0a\n\0src/deep/b.py\0b\n\0").hexdigest()
    assert hashing.directory_hash(tree, "src") == expected
    assert hashing.directory_hash(tree, "nowhere") == ""
    with pytest.raises(ToolError, match="is not a directory"):
        hashing.directory_hash(tree, "src/a.py")
    whole = hashing.directory_hash(tree, "")
    (tree / ".git" / "HEAD").write_text("changed\n")
    assert hashing.directory_hash(tree, "") == whole  # .git is not part of the repository's hash
    (tree / "src" / "code.py").write_text("def f():\n    return 1\n\n\ndef g():\n    pass\n")
    g_hash = hashing.resource_hash(tree, "symbol", "src/code.py", "g")
    assert g_hash == hashlib.sha256(b"def g():\n    pass").hexdigest()
    assert hashing.line_range_hash(tree, "src/code.py", 0, 3) == ""
    assert hashing.line_range_hash(tree, "src/code.py", 50, 60) == ""
    assert hashing.line_range_hash(tree, "src/code.py", 5, 99) == hashlib.sha256(b"def g():\n    pass\n").hexdigest()
    # An unparseable file falls back to the stored span.
    (tree / "src" / "code.py").write_text("def g(:\n  x\n")
    assert hashing.resource_hash(tree, "symbol", "src/code.py", "g", (1, 1)) == hashlib.sha256(b"def g(:").hexdigest()
    assert hashing.resource_hash(tree, "service", "x") == ""


def test_a_root_swapped_for_a_symlink_elsewhere_is_resolved_again(tmp_path: Path) -> None:
    """The resolved root is cached per (device, inode): once the root's path leads to another
    directory, paths resolve under the new one, never the cached string."""
    first, second = tmp_path / "first", tmp_path / "second"
    for d in (first, second):
        (d / "src").mkdir(parents=True)
        (d / "src" / "a.py").write_text(d.name)
    root = tmp_path / "root"
    root.symlink_to(first)
    assert resolve_repo_path(root, "src/a.py")[0] == (first / "src" / "a.py").resolve()
    root.unlink()
    root.symlink_to(second)
    assert resolve_repo_path(root, "src/a.py")[0] == (second / "src" / "a.py").resolve()


def test_a_root_renamed_under_a_link_resolves_afresh_and_still_refuses_escapes(tmp_path: Path) -> None:
    real = tmp_path / "proj"
    (real / "src").mkdir(parents=True)
    assert resolve_repo_path(real, "src")[1] == "src"
    moved = tmp_path / "moved"
    real.rename(moved)
    real.symlink_to(moved)  # the same directory (inode) now reached through a link
    assert resolve_repo_path(real, "src")[0] == (moved / "src").resolve()
    (moved / "out").symlink_to(tmp_path)
    (tmp_path / "first").mkdir()
    with pytest.raises(ToolError):
        resolve_repo_path(real, "out/first")
