"""The owner process: one per project, holding the lock, the runtime and every listener.

`roundtable start`, `roundtable mcp serve` and the interactive console all run an `Owner` on
their event loop. Entering it takes the project lock, opens the runtime,
recovers an interrupted `patch.apply`, synchronises the agents, and starts the
legacy socket, the Streamable HTTP endpoint and (optionally) the Chair loop. Leaving it stops
accepting, lets in-flight calls finish (bounded), cancels the Chair, closes the runtime and
releases the lock — in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable import memory_tuning
from roundtable.chair import ChairLoop
from roundtable.clock import SYSTEM, Clock
from roundtable.credentials import ensure_private_dir
from roundtable.errors import LockError, RoundtableError, ToolError
from roundtable.services import redact

if TYPE_CHECKING:
    from roundtable.autopilot import Dispatcher, Overrides
    from roundtable.config import Config
    from roundtable.gateway import Gateway
    from roundtable.notify import Notifier
    from roundtable.runtime import Runtime
    from roundtable.server.http import HttpServer
    from roundtable.server.socket import SocketServer
    from roundtable.services.sessions.records import LaunchArgs
    from roundtable.supervisor import Supervisor

log = logging.getLogger("roundtable.owner")

LOCK_RELATIVE_PATH = Path(".roundtable") / "owner.lock"
DRAIN_TIMEOUT = 5.0
# How often the owner checks that its database file is still the one it opened.
DB_CHECK_INTERVAL = 1.0
NO_AUTH_WARNING = (
    "roundtable: WARNING: mcp.auth is none — the HTTP endpoint at {url} answers requests without a "
    "credential (as anonymous, read-only). Every local user can read the project's state through it."
)


def _holder_pid(fd: int) -> str:
    """The pid written by the current holder (best effort; empty when unreadable)."""
    try:
        data = os.pread(fd, 64, 0)
    except OSError:
        return ""
    text = data.decode("ascii", "replace").strip()
    return text if text.isdigit() else ""


@contextlib.contextmanager
def acquire_lock(root: Path | str) -> Iterator[Path]:
    """Hold `<canonical root>/.roundtable/owner.lock` exclusively; yields the lock path.

    Refuses a lock path that is not a regular file, never blocks, and on contention raises
    `LockError` naming the holder's pid (which each holder writes into the file).
    """
    try:
        canonical = Path(os.path.realpath(os.path.abspath(root)))
    except OSError as exc:
        raise LockError(f"resolve project root: {exc.strerror}") from None
    state_dir = canonical / ".roundtable"
    try:
        state_dir.mkdir(mode=0o700, exist_ok=True)
        ensure_private_dir(state_dir)  # 0700: credentials, logs and the database live here
    except OSError as exc:
        raise LockError(f"create {state_dir}: {exc.strerror}") from None
    path = state_dir / "owner.lock"
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise LockError(f"inspect project lock {path}: {exc.strerror}") from None
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise LockError(f'refusing non-regular project lock path "{path}"')
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LockError(f'refusing non-regular project lock path "{path}"') from None
        raise LockError(f"open project lock {path}: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        now = os.lstat(path)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (now.st_dev, now.st_ino):
            raise LockError("project lock path changed during open")
        os.fchmod(fd, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder_pid(fd)
            who = f" (pid {pid})" if pid else ""
            raise LockError(f"roundtable project is already owned by another process{who}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


async def select_run(runtime: Runtime, *, goal: str, resume: bool, run_id: str = "") -> dict[str, Any]:
    """Resume (`run_id`, else the latest active run) or create a run through the operator
    operations `run.resume` / `run.create`; returns the run's record."""
    if resume:
        result = await runtime.call("run.resume", {"run_id": run_id} if run_id else {})
    else:
        args = {k: v for k, v in (("goal", goal), ("run_id", run_id)) if v}
        result = await runtime.call("run.create", args)
    return dict(result["run"])


def _bindable(host: str, port: int) -> bool:
    """Whether `host:port` can be listened on now (as the HTTP server binds: SO_REUSEADDR)."""
    import socket as _socket

    sock = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def _check_initialised(root: Path) -> None:
    """Refuse a root that does not exist or was never initialised, creating nothing (taking the
    lock would create `.roundtable/owner.lock` in a project `init` has not set up)."""
    from roundtable.config import load_config
    from roundtable.errors import ConfigError

    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise ConfigError(f"project root {root} {what}; create a project there with `roundtable init --root {root}`")
    load_config(root)  # a missing config says "run `roundtable init` first"


class Owner:
    """The long-lived owner of one project. Use as `async with Owner(root) as owner:`.

    `http_address` / `socket_path` override the configured listeners (tests use
    `127.0.0.1:0` for an ephemeral port; the bound address is then `owner.http_address`).
    """

    def __init__(
        self,
        root: Path | str,
        *,
        http: bool = True,
        socket: bool = True,
        chair: bool = True,
        supervisor: bool | None = None,
        log: Callable[[str], None] | None = None,
        http_address: str | None = None,
        socket_path: Path | str | None = None,
        drain_timeout: float = DRAIN_TIMEOUT,
        chair_interval: float | None = None,
        autopilot: bool | None = None,
        autopilot_overrides: Overrides | None = None,
        dispatcher_options: dict[str, Any] | None = None,
        notify: bool | None = None,
        goal: str = "",
        clock: Clock = SYSTEM,
    ) -> None:
        self.root = Path(root)
        self.clock = clock  # what the Chair's and the dispatcher's periods and deadlines run on
        # `start --goal`: a run created before anything listens, so whoever sees this owner
        # answer (`roundtable wait --ready`) finds the run too.
        self._goal = goal.strip()
        self.created_run: dict[str, Any] = {}
        self._want_http = http
        self._want_socket = socket
        self._want_chair = chair
        # The supervisor launches agent sessions; `start` and the console host it, `mcp serve`
        # does not. By default it follows the Chair.
        self._want_supervisor = chair if supervisor is None else supervisor
        self.supervisor: Supervisor | None = None
        self.gateway: Gateway | None = None
        self.preflight_lines: list[str] = []  # agents that cannot run here (`_preflight`)
        self.address_note = ""  # why the HTTP listener is not on the default address
        self._owner_file: Path | None = None
        # The autopilot's dispatcher, beside the supervisor. `autopilot` True/False
        # forces it on or off at start; None follows `autopilot.mode` in the config.
        self.dispatcher: Dispatcher | None = None
        self._autopilot = autopilot
        self._autopilot_overrides = autopilot_overrides
        self._dispatcher_options = {"clock": clock, **(dispatcher_options or {})}
        self._dispatch_task: asyncio.Task[None] | None = None
        # The notifier tells the operator what needs them outside the console (`notify:`); by
        # default it runs where the Chair does (`start`, the console), not in `mcp serve`.
        self._want_notify = chair if notify is None else notify
        self.notifier: Notifier | None = None
        self._log = log or (lambda line: logging.getLogger("roundtable.owner").info("%s", line))
        self._http_address_override = http_address
        self._socket_path_override = Path(socket_path) if socket_path is not None else None
        self.drain_timeout = drain_timeout
        self.chair_interval = chair_interval
        self._runtime: Runtime | None = None
        self.chair: ChairLoop | None = None
        self.http: HttpServer | None = None
        self.socket: SocketServer | None = None
        self.lock_path: Path | None = None
        self._lock: contextlib.ExitStack | None = None
        self._chair_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._events_task: asyncio.Task[None] | None = None
        self._trim_task: asyncio.Task[None] | None = None
        self._landing_task: asyncio.Task[None] | None = None
        self._redactor_ready: asyncio.Future[int] | None = None
        self.db_check_interval = DB_CHECK_INTERVAL
        self.stopped = asyncio.Event()
        # Set when the owner must stop on its own (its database file vanished); `fatal_error` says why.
        self.failed = asyncio.Event()
        self.fatal_error = ""

    # --- public view ------------------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        """The project's runtime, open while the owner runs."""
        if self._runtime is None:
            raise RuntimeError("the owner is not running (use `async with Owner(root) as owner`)")
        return self._runtime

    @property
    def http_url(self) -> str:
        """`http(s)://host:port/mcp` of the bound HTTP listener ('' when HTTP is off)."""
        return self.http.url if self.http is not None else ""

    @property
    def http_address(self) -> str:
        return self.http.address if self.http is not None else ""

    @property
    def socket_path(self) -> Path | None:
        return self.socket.path if self.socket is not None else None

    def health(self) -> str:
        """Scheduler health: the Chair's when it reports one, else `ready`."""
        chair = self.chair
        if chair is not None:
            value = getattr(chair, "health", None)
            if callable(value):
                value = value()
            if isinstance(value, str) and value:
                return value
        if self._chair_task is not None and self._chair_task.done():
            return "degraded"
        return "ready"

    def say(self, line: str) -> None:
        self._log(line)

    # --- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Owner:
        _check_initialised(self.root)  # before the lock: a refused start leaves nothing behind
        stack = contextlib.ExitStack()
        self.lock_path = stack.enter_context(acquire_lock(self.root))
        self._lock = stack
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _start(self) -> None:
        from roundtable.runtime import Runtime

        # Before the store's threads start; at debug level: the first line on stdout is "ready".
        log.debug("memory: %s", memory_tuning.tune().detail)
        self._runtime = await Runtime.open(self.root)
        self.runtime.owner = True
        # The secrets redactor's rules compile on first use (a tenth of a second or more): do it
        # beside the start, not on the event loop at the first error an agent provokes.
        self._redactor_ready = asyncio.get_running_loop().run_in_executor(None, redact.warm_up)
        self.runtime.db.watch_commits()  # other processes' commits reach the change bus too
        self.runtime.watch_policy()  # edits to POLICIES.ROUNDTABLE.md apply from the next call
        config = self.runtime.config
        for line in (await self.runtime.call("transaction.recover", {}))["lines"]:
            self.say(line)
        await self.runtime.call("agents.sync", {})
        await self._ensure_credentials()
        if self._goal:
            self.created_run = await select_run(self.runtime, goal=self._goal, resume=False)
        if self._want_http:
            # Validate the HTTP options before anything listens.
            from roundtable.server.http import HttpServer, http_options

            address = await self._http_address(config)
            options = http_options(self.root, config, address=address)
            self.http = HttpServer(self.runtime, options, health=self.health, log=self.say)
        if self._want_socket:
            from roundtable.server.socket import SocketServer

            path = self._socket_path_override or config.socket_path(self.root)
            self.socket = SocketServer(self.runtime, path, log=self.say)
            await self.socket.start()
        if self.http is not None:
            await self.http.start()
            self._write_owner_file()
            if self.http.options.auth == "none":
                self.say(NO_AUTH_WARNING.format(url=self.http.url))
        self._watch_task = asyncio.create_task(self._watch_database(), name="roundtable-db-watch")
        self._events_task = asyncio.create_task(self._log_events(), name="roundtable-event-log")
        self._trim_task = asyncio.create_task(memory_tuning.trim_periodically(), name="roundtable-malloc-trim")
        if self._want_notify:
            from roundtable.notify import Notifier

            self.notifier = Notifier(self.runtime)
            await self.notifier.start()
        if self._want_chair:
            self.chair = ChairLoop(self.runtime, interval=self.chair_interval, clock=self.clock)
            self._chair_task = asyncio.create_task(self._run_chair(), name="roundtable-chair")
            self._landing_task = asyncio.create_task(self._follow_landings(), name="roundtable-landings")
        if self._want_supervisor:
            from roundtable.gateway import Gateway
            from roundtable.supervisor import start_supervisor

            # The sessions' one way out (model APIs, allowed hosts): a component of its own.
            self.gateway = Gateway(self.runtime)
            await self.gateway.start()
            supervisor = self.supervisor = await start_supervisor(self.runtime, gateway=self.gateway)
            self._log_launch_failures(supervisor)
            self._preflight()
            # Sessions a previous owner left running continue their own harness sessions, before
            # the dispatcher looks for work without a session.
            try:
                for session_id in await supervisor.resume_interrupted():
                    self.say(f"roundtable: resumed an interrupted session as {session_id}")
            except Exception:
                log.exception("resuming the sessions a previous owner left running failed")
            self._start_dispatcher(supervisor)
        # Everything made for the start lives as long as the owner: out of the collector's way.
        log.debug("memory: %d objects frozen", memory_tuning.freeze_startup_heap())

    async def _http_address(self, config: Config) -> str | None:
        """The address to listen on: the override (`--http-address`, `ROUNDTABLE_HTTP_ADDRESS`),
        else the config's. Only the built-in default gives way: when another program (another
        project's owner) holds it, a free loopback port is taken (`address_note` says so, and
        `.roundtable/owner.json` tells this project's bridges, CLI and doctor where it is).
        An address the config sets is honoured exactly."""
        from roundtable.endpoint import DEFAULT_HTTP_ADDRESS

        if self._http_address_override is not None or config.mcp.http_address != DEFAULT_HTTP_ADDRESS:
            return self._http_address_override
        host, _, port = DEFAULT_HTTP_ADDRESS.rpartition(":")
        if _bindable(host, int(port)):
            return None
        from roundtable.server.http import describe_holder

        holder = await describe_holder(host, int(port)) or "another program"
        self.address_note = f"{DEFAULT_HTTP_ADDRESS} is held by {holder}, so this owner took a free port"
        return f"{host}:0"

    def _write_owner_file(self) -> None:
        """`.roundtable/owner.json` (0600): where this owner listens, for the project's bridges,
        CLI and doctor; removed when the owner stops."""
        import json

        from roundtable.atomic import write_atomic_bytes
        from roundtable.endpoint import OWNER_FILE

        record = {"pid": os.getpid(), "http_address": self.http_address, "url": self.http_url}
        try:
            write_atomic_bytes(self.root / OWNER_FILE, json.dumps(record).encode(), 0o600, sync=False)
            self._owner_file = self.root / OWNER_FILE
        except OSError as exc:
            self.say(f"roundtable: cannot write {OWNER_FILE} ({exc.strerror}); bridges read the configured address")

    def _remove_owner_file(self) -> None:
        path, self._owner_file = self._owner_file, None
        if path is None:
            return
        import json

        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    def _preflight(self) -> None:
        """Which agents cannot run under this owner, and why (`preflight_lines`; whoever hosts the
        owner says them after its ready line, before anything is launched)."""
        from roundtable.services.sessions.preflight import unready_agents

        self.preflight_lines = [
            f"roundtable: WARNING: {item.line()}; fix: {item.fix}" for item in unready_agents(self.runtime.config)
        ]

    def _start_dispatcher(self, supervisor: Supervisor) -> None:
        """The autopilot's dispatcher beside the supervisor, on (auto) or off (manual)."""
        from roundtable.autopilot import Dispatcher, Overrides

        enabled = self._autopilot if self._autopilot is not None else self.runtime.config.autopilot.mode == "auto"
        self.dispatcher = Dispatcher(
            self.runtime,
            supervisor,
            enabled=enabled,
            overrides=self._autopilot_overrides or Overrides(),
            **self._dispatcher_options,
        )
        self._dispatch_task = asyncio.create_task(self._run_dispatcher(), name="roundtable-autopilot")

    async def _run_dispatcher(self) -> None:
        assert self.dispatcher is not None
        try:
            await self.dispatcher.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the autopilot stopped")
            self.say(f"roundtable: autopilot stopped ({type(exc).__name__})")

    async def _ensure_credentials(self) -> None:
        """The project credential and one per configured agent, each a live token in its file
        under `.roundtable/credentials/` (harness configs name the file's owner, never a secret)."""
        from roundtable.services.coordination.agents import configured_agents
        from roundtable.services.sessions import tokens

        db = self.runtime.db
        async with db.read() as reader:
            rows = await reader.fetchall("SELECT id FROM agents WHERE is_enabled = 1")
        enabled = {str(row[0]) for row in rows}
        wanted = [("", tokens.PROJECT)] + [
            (spec.id, tokens.AGENT) for spec in configured_agents(self.runtime.config) if spec.id in enabled
        ]
        for agent_id, principal in wanted:
            try:
                await self.runtime.call("token.ensure", {"principal": principal, "agent_id": agent_id})
            except ToolError as exc:  # e.g. a read-only checkout: in-process use still works
                self.say(f"roundtable: {exc}; harnesses cannot connect until it can")
                return

    async def _log_events(self) -> None:
        """One log line per meaningful committed event (launches, turns, applies, rollbacks),
        from the change bus: services never log these themselves, and whatever wrote the event
        (an agent, the Chair, the console, the CLI through the socket) it is logged here once."""
        from roundtable.logs import EVENTS_LOGGER, describe_event

        events_log = logging.getLogger(EVENTS_LOGGER)
        with self.runtime.bus.subscribe(maxsize=4096) as changes:
            async for change in changes:
                for event in change.events:
                    described = describe_event(event)
                    if described is not None:
                        events_log.log(*described)

    def _log_launch_failures(self, supervisor: Supervisor) -> None:
        """Log why a launch failed (`launch codex failed: No such file or directory`): the event
        log records only that the session failed (exit code -1), not the error text."""
        from roundtable.logs import EVENTS_LOGGER

        launch = getattr(supervisor, "launch", None)
        if launch is None:
            return
        events_log = logging.getLogger(EVENTS_LOGGER)

        async def logged_launch(args: LaunchArgs, **kwargs: Any) -> Any:
            try:
                return await launch(args, **kwargs)
            except RoundtableError as exc:
                who = f"agent {args.agent_id.strip() or '?'}, task {args.task_id.strip() or '-'}"
                text = str(exc)
                if text.startswith("launch "):  # `launch codex failed: No such file or directory`
                    events_log.warning("%s (%s)", text, who)
                else:
                    events_log.warning("launch refused (%s): %s", who, text)
                raise

        setattr(supervisor, "launch", logged_launch)  # noqa: B010 - an instance attribute, on purpose

    async def _follow_landings(self) -> None:
        """Keep `branch` and `pull-request` landings current (`landing.refresh`) every
        `landing.poll_interval`; a failure is said once per distinct text, and the loop goes on."""
        from roundtable.tools.context import Caller

        caller = Caller("internal", "landing")
        said: set[str] = set()
        while True:
            config = self.runtime.config.landing
            if config.mode in ("branch", "pull-request"):
                try:
                    out = await self.runtime.call("landing.refresh", {}, caller)
                    for error in out["errors"]:
                        line = f"landing {error['proposal_id']}: {error['error']}"
                        if line not in said:
                            said.add(line)
                            self.say(line)
                except Exception as exc:  # never stop the owner for the forge
                    log.warning("landing refresh failed: %s", exc)
            await asyncio.sleep(config.poll_interval)

    async def _watch_database(self) -> None:
        """Stop the owner when its database file is removed or replaced: writes would go to the
        unlinked file and be lost. (`Runtime.call` also refuses writes from that moment on.)"""
        while True:
            await asyncio.sleep(self.db_check_interval)
            problem = self._runtime.database_problem() if self._runtime is not None else ""
            if problem:
                self.fatal_error = (
                    f"{problem}; the owner stops (restore the file or run `roundtable init`, then start again)"
                )
                log.error("%s", self.fatal_error)
                self.say(f"roundtable: {self.fatal_error}")
                self.failed.set()
                return

    async def _run_chair(self) -> None:
        assert self.chair is not None
        try:
            await self.chair.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the Chair loop stopped")
            self.say(f"roundtable coordinator: Chair loop stopped ({type(exc).__name__})")

    async def _stop(self) -> None:
        """Stop in order; every step runs even if an earlier one failed."""
        if self._runtime is not None:
            self._runtime.bus.end_long_polls()  # answered now: the drain below need not wait for them
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(BaseException):
                await self._watch_task
            self._watch_task = None
        if self._landing_task is not None:
            self._landing_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._landing_task
            self._landing_task = None
        if self._trim_task is not None:
            self._trim_task.cancel()
            with contextlib.suppress(BaseException):
                await self._trim_task
            self._trim_task = None
        if self.socket is not None:
            await self._step(self.socket.close(drain_timeout=self.drain_timeout), "socket")
        if self.http is not None:
            self._remove_owner_file()
            await self._step(self.http.stop(drain_timeout=self.drain_timeout), "http")
        if self._chair_task is not None:
            self._chair_task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._chair_task), self.drain_timeout)
            self._chair_task = None
        if self.dispatcher is not None:  # before the supervisor: no launch while it stops
            await self._step(self.dispatcher.close(), "autopilot")
            if self._dispatch_task is not None:
                self._dispatch_task.cancel()
                with contextlib.suppress(BaseException):
                    await self._dispatch_task
                self._dispatch_task = None
        if self.supervisor is not None:
            await self._step(self.supervisor.close(), "supervisor")
            self.supervisor = None
        if self.gateway is not None:  # after the supervisor: its sessions are closed by then
            await self._step(self.gateway.aclose(), "gateway")
            self.gateway = None
        if self.notifier is not None:  # after the supervisor and the autopilot: what they record is told
            await self._step(self._close_notifier(), "notifier")
        if self._events_task is not None:  # after the supervisor: its sessions' exits are logged
            for _ in range(3):
                await asyncio.sleep(0)  # let the event log take what the last commits published
            self._events_task.cancel()
            with contextlib.suppress(BaseException):
                await self._events_task
            self._events_task = None
        if self._runtime is not None:
            await self._step(self._runtime.close(), "runtime")
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        self.stopped.set()

    async def _close_notifier(self) -> None:
        assert self.notifier is not None
        with contextlib.suppress(Exception):
            await self.notifier.catch_up()
        await self.notifier.webhooks.drained(2.0)  # a short wait for what is queued; never a hang
        await self.notifier.close()
        self.notifier = None

    async def _step(self, coro: Awaitable[object], what: str) -> None:
        try:
            await coro
        except RoundtableError as exc:
            self.say(f"roundtable: {exc}")
        except Exception:
            log.exception("stopping %s failed", what)
