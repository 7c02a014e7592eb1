"""Initialised projects for tests: `roundtable init` runs once per test process, into a template,
and every test gets a copy of it with a project id of its own.

`init` costs a quarter of a second (the registry's schemas rendered, nine files written and
fsynced, the database created and migrated); a copy of the result costs a few milliseconds and is
the same tree, byte for byte — the database included, so each copy starts from the schema `init`
made, not from a hand-built one. `tests/cli/test_init.py` keeps running `init` itself.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from roundtable.credentials import ensure_project_id, project_id_path
from roundtable.scaffold import init_project

_lock = threading.Lock()
_template: Path | None = None


def _build_template() -> Path:
    root = Path(tempfile.mkdtemp(prefix="rt-template-", dir="/tmp")) / "project"
    root.mkdir()
    # `init_project` runs an event loop of its own: on a thread, so an async test may ask too.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(init_project, root).result()
    return root


def template() -> Path:
    """This process's initialised template project (built on first use, removed at exit)."""
    global _template
    with _lock:
        if _template is None:
            _template = _build_template()
            import atexit

            atexit.register(shutil.rmtree, _template.parent, True)
        return _template


def initialised_project(root: Path) -> Path:
    """Give `root` (created when missing; it may hold a repository already, but no starter file)
    what `roundtable init` writes, with a fresh random project id; returns `root`."""
    shutil.copytree(template(), root, symlinks=True, dirs_exist_ok=True)
    project_id_path(root).unlink()
    ensure_project_id(root)
    return root
