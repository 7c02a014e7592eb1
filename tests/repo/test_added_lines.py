"""One diff model: `ParsedPatch.added_lines()` gives each added line with its number in the new
file, read by the same parser the gates and the transaction use; the security scan reads its
lines there (both sides of a rename are its paths, a renamed file's secret is found on its line)."""

from __future__ import annotations

from roundtable.services.governance.security_scan import scan_patch
from roundtable.services.repository.patches import Allowances, parse_patch

EVERYTHING = Allowances(symlinks=True, submodules=True, mode_changes=True)


def test_added_lines_are_numbered_in_the_new_file_across_hunks_and_files() -> None:
    patch = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
        "@@ -1,2 +1,3 @@\n a\n+b\r\n c\n"
        "@@ -10,2 +11,2 @@\n-z\n+y\n keep\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
        "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        "\\ No newline at end of file\n"
    )
    parsed = parse_patch(patch, None, EVERYTHING)
    found = [(change.new or change.old, number, text) for change, number, text in parsed.added_lines()]
    assert found == [("x.py", 2, "b"), ("x.py", 11, "y"), ("n.txt", 1, "one"), ("n.txt", 2, "two")]


def test_the_scan_reads_a_renamed_files_lines_under_its_new_name() -> None:
    patch = (
        "diff --git a/old/conf.py b/new/conf.py\nsimilarity index 80%\nrename from old/conf.py\n"
        "rename to new/conf.py\n--- a/old/conf.py\n+++ b/new/conf.py\n@@ -3,2 +3,3 @@\n a\n"
        "+api_key = 'AKIAABCDEFGHIJKLMNOP'\n b\n"
    )
    result = scan_patch(patch)
    assert result.touched == ("new/conf.py", "old/conf.py")
    secrets = [f for f in result.findings if f.line]
    assert secrets and {(f.path, f.line) for f in secrets} == {("new/conf.py", 4)}


def test_the_review_views_files_are_the_parsers_files_headers_included() -> None:
    """What the console shows and comments anchor to come from the same reading: a quoted name with
    a space and a rename are found where a `diff --git a/X b/Y` pattern would split them wrongly."""
    patch = (
        'diff --git "a/my b/x.py" "b/my b/x.py"\n--- "a/my b/x.py"\n+++ "b/my b/x.py"\n@@ -1 +1,2 @@\n a\n+b\n'
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
        "--- a/old.py\n+++ b/new.py\n@@ -4,2 +4,2 @@\n-z\n+y\n keep\n"
    )
    parsed = parse_patch(patch, None, EVERYTHING)
    parts = parsed.file_parts()
    assert list(parts) == ["my b/x.py", "new.py"]
    assert parts["new.py"].startswith("diff --git a/old.py b/new.py\n") and parts["new.py"].endswith(" keep\n")
    lines = parsed.file_lines()
    assert [(d.kind, d.old, d.new) for d in lines["new.py"] if d.kind != "header"] == [
        ("hunk", 0, 0),
        ("removed", 4, 0),
        ("added", 0, 4),
        ("context", 5, 5),
    ]
    numbered = [(path, d.new, d.text[1:]) for path, found in lines.items() for d in found if d.kind == "added"]
    assert numbered == [(c.new, n, text) for c, n, text in parsed.added_lines()]
