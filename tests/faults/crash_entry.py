"""Test-only entry point: `python tests/faults/crash_entry.py POINT ARGS...` runs the `roundtable`
command line with ARGS in a process whose failpoint hook ends it at POINT (exit status 86).

The fault tests use it for the children they crash (a direct `mcp call`, an owner serving the
socket); production entry points never install a hook.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # The repository instead of this script's directory, so `tests.` imports and nothing here
    # shadows a module.
    sys.path[0] = str(Path(__file__).resolve().parents[2])

    from roundtable.entry import main
    from roundtable.services.applying.failpoints import install
    from tests.faults.failpoints import CrashAt

    install(CrashAt(sys.argv[1]))
    sys.argv = ["roundtable", *sys.argv[2:]]
    main()
