"""`roundtable run` (interactive): take ownership of the project, select or create the run, and
run the console on the same event loop as the Chair and the HTTP and socket listeners.

Order: the owner (lock, runtime, interrupted-apply recovery, agents, listeners, Chair and the
autopilot's dispatcher) starts
first; then the run is created or resumed; then the app runs until the operator quits; leaving
the owner context stops the listeners and the Chair, closes the runtime and releases the lock.
`--read-only` takes no owner at all: it opens the database `mode=ro` and shows the existing run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable.errors import LockError
from roundtable.runtime import Runtime
from roundtable.services.views import entity as views
from roundtable.tui.widgets.header import OwnerInfo

if TYPE_CHECKING:
    from roundtable.autopilot import Overrides
    from roundtable.owner import Owner

log = logging.getLogger("roundtable.tui")

# What `run --demo` hands the console: started with the owner, it returns the function that stops
# what it started (or None). The console never imports the demo package; the CLI passes it in.
DemoStart = Callable[["Owner"], Awaitable[Callable[[], Awaitable[None]] | None]]


def run_console(
    *,
    root: Path,
    goal: str | None = None,
    resume: bool = False,
    read_only: bool = False,
    demo: DemoStart | None = None,
    run_id: str = "",
    autopilot: bool | None = None,
    autopilot_overrides: Overrides | None = None,
) -> None:
    """Blocking entry point used by `roundtable run` (`autopilot` None follows the config)."""
    asyncio.run(
        console_main(
            root=Path(root),
            goal=goal or "",
            resume=resume,
            read_only=read_only,
            demo=demo,
            run_id=run_id,
            autopilot=autopilot,
            autopilot_overrides=autopilot_overrides,
        )
    )


def _log_to_file(root: Path) -> None:
    """While the console owns the terminal, log lines go to `.roundtable/logs/console.log`."""
    path = root / ".roundtable" / "logs" / "console.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("roundtable")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


class _Relay:
    """Owner messages: kept until the app runs, then shown as notifications."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.app: Any = None

    def __call__(self, line: str) -> None:
        log.info("%s", line)
        if self.app is not None and self.app.is_running:
            self.app.notify(line, title="owner")
        else:
            self.lines.append(line)


async def console_main(
    *,
    root: Path,
    goal: str,
    resume: bool,
    read_only: bool,
    demo: DemoStart | None,
    run_id: str = "",
    autopilot: bool | None = None,
    autopilot_overrides: Overrides | None = None,
) -> int:
    """Run the console; returns the app's exit status (non-zero if it crashed)."""
    from roundtable.tui.app import RoundtableApp

    if read_only:
        return await _read_only_console(root, run_id)
    from roundtable.owner import Owner

    _log_to_file(root)
    relay = _Relay()
    owning = Owner(
        root,
        http=True,
        socket=True,
        chair=True,
        log=relay,
        autopilot=autopilot,
        autopilot_overrides=autopilot_overrides,
    )
    try:
        owner = await owning.__aenter__()
    except LockError as exc:
        # Another console (or `start`) owns the project: say how to watch it instead.
        raise LockError(f"{exc}; to watch it, run: roundtable run --root {root} --read-only") from None
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_exit(owning)
        runtime = owner.runtime
        for line in owner.preflight_lines:
            relay(line)
        run = await select_run(runtime, goal=goal, resume=resume, run_id=run_id)
        info = OwnerInfo(
            project=runtime.config.project_name,
            http_url=owner.http_url or "",
            socket_path=str(owner.socket_path or ""),
        )
        app = RoundtableApp(
            runtime,
            run_id=run,
            chair=owner.chair,
            dispatcher=owner.dispatcher,
            owner_info=info,
            notifier=owner.notifier,
        )
        await _run_app(app, relay, demo, owner)
    return int(app.return_code or 0)


async def _read_only_console(root: Path, run_id: str) -> int:
    """`run --read-only`: no owner lock, no Chair, no listeners, no supervisor, no recovery; the
    database is opened `mode=ro`, so anything that would write fails instead."""
    from roundtable.tui.app import RoundtableApp

    runtime = await Runtime.open(root, read_only=True)
    try:
        run = await existing_run(runtime, run_id)
        note = "read-only: no Chair, no listeners, nothing is written"
        info = OwnerInfo(project=runtime.config.project_name, note=note if run else f"{note}; no run yet")
        app = RoundtableApp(runtime, run_id=run, owner_info=info, read_only=True)
        await _run_app(app, _Relay(), None, None)
    finally:
        await runtime.close()
    return int(app.return_code or 0)


async def existing_run(runtime: Runtime, run_id: str = "") -> str:
    """The run a read-only console shows: `run_id` if it exists, else the latest active run,
    else the latest run of any status, else "" (nothing is created)."""
    async with runtime.db.read() as reader:
        return await views.run_to_show(reader, run_id)


async def _run_app(app: Any, relay: _Relay, demo: DemoStart | None, owner: Owner | None) -> None:
    relay.app = app
    stop_demo: Callable[[], Awaitable[None]] | None = None
    if demo is not None and owner is not None:
        try:
            stop_demo = await demo(owner)
        except Exception as exc:
            relay(f"demo agents failed to start: {exc}")
    app.startup_notes = list(relay.lines)
    try:
        await app.run_async()
    finally:
        relay.app = None
        if stop_demo is not None:
            await stop_demo()


async def select_run(runtime: Runtime, *, goal: str, resume: bool, run_id: str = "") -> str:
    """Resume (the given, else the latest active run) or create a run (the operations
    `run.resume` / `run.create`); returns its id."""
    from roundtable.owner import select_run as select

    run = await select(runtime, goal=goal, resume=resume, run_id=run_id)
    return str(run["id"])
