"""The supervisor: launches agent sessions on operator request and looks after them.

For each launch it validates the request against persisted state, records the session, creates
a private directory (0700) holding the session's MCP socket (0600) and a private HOME, issues
the capability, serves the per-session endpoint, and starts the adapter's argv (no shell) with
a scrubbed environment: `PATH`, `LANG`, `TERM`, the private `HOME`, and the `ROUNDTABLE_*`
variables — the token travels only there, never in argv, files, logs or rows. Output goes to
`.roundtable/logs/sessions/<id>.log` through the redactor. While the process lives the session
is heartbeated and the capability extended; on exit (or revoke, or shutdown) the capability is
revoked, the endpoint closed and the directory removed.

Isolation (`sandbox/sessions.py`): the supervisor picks its launcher once, at its first launch —
the default-deny sandbox (bubblewrap when it works, else the Landlock launcher): the session sees
the system, its interpreter and harness, its working directory and its own directory, never the
project's working tree, `.roundtable/` or another project. Where no sandbox works, launches are
refused with the reason unless the operator set `sessions.allow_unsandboxed: true`. The choice and
the reason for passing over a stronger one are recorded in the session's metadata (`isolation`,
`isolation_reason`). The session's working directory is its own HOME until it is given a
workspace.

Operators reach a running supervisor through the operator operations `session.launch` /
`session.revoke` (`tools/sessions_ops.py`; the CLI sends them over the legacy socket), which the
owner hosting it provides as `runtime.supervisor`; the autopilot's dispatcher uses the same
operations as the internal caller `dispatcher`. Every write the supervisor makes is one of its
internal operations (`session.open`, `session.activate`, `session.keep_alive`,
`session.revoke_capabilities`, `session.record_exit`, `session.record_refusal` for a launch
refused before anything started), called as `SUPERVISOR`. Exit listeners
(`add_exit_listener`) hear of every session that ends (the dispatcher's retries).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.credentials import ensure_private_dir
from roundtable.domain import TERMINAL_TASK_STATUSES, Delivery, RunStatus, is_open
from roundtable.errors import RoundtableError, ToolError, ValidationError
from roundtable.sandbox import runner as sandbox_runner
from roundtable.sandbox import sessions as session_sandbox
from roundtable.sandbox.spec import Spec
from roundtable.services.redact import redact
from roundtable.services.repository import git
from roundtable.services.sessions import adapters, budgets, capabilities, preflight
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions import resume as harness_resume
from roundtable.services.sessions.records import LaunchArgs, SessionExit
from roundtable.services.sessions.transcript import Attention, Transcript
from roundtable.services.sessions.usage_stream import Meter
from roundtable.services.workspaces import workspace_git
from roundtable.services.workspaces import worktrees as workspaces
from roundtable.store.records import Agent, AgentSession, Proposal, Run, Task
from roundtable.tools.context import SUPERVISOR
from roundtable.tools.sessions_ops import NOT_RUNNING

if TYPE_CHECKING:
    from roundtable.gateway import Gateway, StopRequest
    from roundtable.runtime import Runtime
    from roundtable.server.sessions import SessionEndpoint

log = logging.getLogger("roundtable.supervisor")

HEARTBEAT_INTERVAL = 30.0
SIGNALLED = 128  # a sandboxed command killed by signal N exits 128+N (`sandbox.inner.status_of`)
REVOKE_GRACE = 5.0
# A session over its task's budget is stopped at its next tool call; one that makes none is
# stopped after this long.
BUDGET_GRACE = 30.0
# A running session that prints nothing for this long is `idle` (it needs the operator's look).
IDLE_AFTER = 300.0
# How long a harness that has exited may leave processes in its group (a background process it
# started, holding its output) before that group is killed, and how often each is looked at.
LINGER_AFTER_EXIT = 5.0
EXIT_POLL = 0.5
GROUP_POLL = 0.05
# What a session that was running when its owner stopped is told when it is resumed.
RESTART_MESSAGE = (
    "The Roundtable coordinator restarted while you were working. Continue where you left off: "
    "check the table's state (your task, your turn, your claims) before acting."
)
ACTOR = "supervisor"
BRIEFING_FILE = "BRIEFING.md"
_ENV_ALLOW = ("PATH", "LANG", "TERM")
# The roles whose sessions edit: each works in its own workspace (a git worktree), when the
# project is a git repository (otherwise in the project, as the other roles do).
WORKSPACE_ROLES = frozenset({"implementer"})


@dataclass
class _Live:
    """One running session."""

    session_id: str
    capability_id: str
    token: str
    directory: Path
    endpoint: SessionEndpoint
    role: str = ""
    work: tuple[str, str, str] = ("", "", "")  # agent, task, proposal
    workspace: str = ""  # the implementer's git worktree (its working directory), if any
    run_id: str = ""
    process: asyncio.subprocess.Process | None = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    revoked: bool = False
    no_credential: bool = False  # its output said it has no usable model credential
    done: asyncio.Event = field(default_factory=asyncio.Event)  # finishing has begun
    finished: asyncio.Event = field(default_factory=asyncio.Event)  # recorded and cleaned up
    spec: Spec | None = None  # its sandbox, when it runs in one
    adapter: str = ""
    # The operator's messages sent while it ran that its harness could not take: each resumes it
    # once it has ended.
    pending: list[tuple[str, str]] = field(default_factory=list)  # (message, sent by)
    # The harness's standard input while it takes messages there (`Plan.live_input`): closed at
    # the end of its first turn, which ends the harness once it has read what is there.
    stdin: asyncio.StreamWriter | None = None
    answered: set[str] = field(default_factory=set)  # the harness's requests answered (their ids)
    relay: session_sandbox.LoopbackRelay | None = None  # its way to the gateway when unsandboxed
    stop_reason: str = ""  # why the supervisor ended it ("budget: …", a refused credential)
    meter: Meter = field(default_factory=Meter)  # usage read from the harness's output
    metered: asyncio.Event = field(default_factory=asyncio.Event)  # the meter moved since the last record
    recorded_version: int = 0
    recording: asyncio.Lock = field(default_factory=asyncio.Lock)
    # What its stream says (its own session id, whether it needs the operator), and what of it
    # is recorded: (harness session id, attention, detail).
    transcript: Transcript = field(default_factory=lambda: Transcript(keep=0))
    observed: tuple[str, str, str] = ("", "", "")


def socket_base() -> Path:
    """Where per-session directories go: `$XDG_RUNTIME_DIR/roundtable/` or the temp dir (short)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isdir(xdg):
        base = Path(xdg) / "roundtable"
        base.mkdir(mode=0o700, exist_ok=True)
        return base
    return Path(tempfile.gettempdir())


def _no_active_run(run_id: str, run: Run | None) -> str:
    """Why a launch has no run to belong to, and how to get one."""
    if not run_id:
        return "no run is active; create one with `roundtable runs create --goal TEXT` (or `g` in the console)"
    if run is None:
        return f"run {run_id} does not exist; create one with `roundtable runs create --goal TEXT`"
    return f"run {run_id} is {run.status}, not active; resume it with `roundtable runs resume {run_id}`"


class Supervisor:
    """Launches and tracks agent sessions for one owner runtime."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        heartbeat_interval: float = HEARTBEAT_INTERVAL,
        revoke_grace: float = REVOKE_GRACE,
        base_dir: Path | None = None,
        gateway: Gateway | None = None,
        idle_after: float = IDLE_AFTER,
    ) -> None:
        self.runtime = runtime
        self.idle_after = idle_after
        # The owner's gateway (started and closed by the owner): a session's only way to its
        # model API and to the allowed hosts. Without one a session reaches no model at all.
        self.gateway = gateway
        if gateway is not None:
            gateway.on_stop = self._gateway_stop
        self.heartbeat_interval = heartbeat_interval
        self.revoke_grace = revoke_grace
        self.base_dir = base_dir
        self.live: dict[str, _Live] = {}
        self._closing = False
        self._launcher: session_sandbox.Launcher | None = None
        self._choosing = asyncio.Lock()
        self._listeners: list[Callable[[SessionExit], None]] = []

    async def launcher(self) -> session_sandbox.Launcher:
        """The launcher for this supervisor's sessions, chosen (with short probes) on first use."""
        async with self._choosing:
            if self._launcher is None:
                settings = self.runtime.config.sessions
                try:
                    mode = session_sandbox.requested_mode(settings.sandbox)
                except ValueError as exc:
                    raise ValidationError(str(exc)) from None
                self._launcher = await session_sandbox.choose(mode, allow_unsandboxed=settings.allow_unsandboxed)
            return self._launcher

    # --- launch -----------------------------------------------------------------------------

    async def _validate(
        self, agent_id: str, task_id: str, proposal_id: str, run_id: str, adapter_name: str
    ) -> tuple[Run, Agent, str, str]:
        async with self.runtime.db.read() as r:
            if run_id:
                run = await r.one(Run, "SELECT * FROM runs WHERE id = ?", (run_id,))
            else:
                run = await r.one(
                    Run, "SELECT * FROM runs WHERE status = 'active' ORDER BY started_at DESC, id DESC LIMIT 1"
                )
            if run is None or run.status != RunStatus.ACTIVE:
                raise ValidationError(_no_active_run(run_id, run))
            agent = await r.one(Agent, "SELECT * FROM agents WHERE id = ?", (agent_id,))
            if agent is None or not agent.is_enabled:
                raise ValidationError(f"agent {agent_id} is not an enabled agent")
            role = capabilities.role_for_agent(agent_id)
            if role is None:
                raise ValidationError(
                    f"agent {agent_id} is not of a launchable family"
                    " (implementer, reviewer, tester, security, architect)"
                )
            task = await r.one(Task, "SELECT * FROM tasks WHERE id = ?", (task_id,))
            if task is None or task.status in TERMINAL_TASK_STATUSES:
                raise ValidationError(f"task {task_id} does not exist or is closed")
            if role in capabilities.TASK_ROLES:
                if proposal_id:
                    raise ValidationError(f"a {role} session is bound to a task, not a proposal")
                if task.assigned_agent_id != agent_id:
                    raise ValidationError(f"task {task_id} is not assigned to {agent_id}")
            else:
                if not proposal_id:
                    raise ValidationError(f"a {role} session needs --proposal")
                proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
                if proposal is None or proposal.task_id != task_id or not is_open(proposal.status):
                    raise ValidationError(f"proposal {proposal_id} is not an open proposal of task {task_id}")
        name = adapter_name or agent.adapter
        adapter = adapters.get(self.runtime.config, name)
        if not adapter.supports_mcp:
            raise ValidationError(f"adapter {name} does not support MCP")
        problem, fix = preflight.adapter_problem(self.runtime.config, name)
        if (
            preflight.NO_CREDENTIAL in problem or preflight.NO_GATEWAY_ROUTE in problem
        ):  # a missing program fails at exec
            raise ValidationError(f"{agent_id} cannot run (adapter {name}): {problem}; {fix}")
        return run, agent, role, name

    async def launch(
        self,
        args: LaunchArgs,
        *,
        launched_by: str = "operator",
        extra_args: tuple[str, ...] = (),
        resume_of: AgentSession | None = None,
        message: str = "",
    ) -> dict[str, Any]:
        """Start the session `args` asks for (`session.launch`'s model); returns `{session: …}`
        (never the token). Its `briefing` (why it is launched) is written to `BRIEFING.md` in the
        session's home, named by `ROUNDTABLE_BRIEFING_FILE`; `launched_by` is the principal that
        asked for it; `extra_args` go to the harness. With `resume_of` (an ended session with its
        harness's own session id) the new session continues that harness session, with its kept
        state and workspace, and `message` is its prompt."""
        if self._closing:
            raise ToolError(NOT_RUNNING)
        agent_id, task_id, proposal_id = args.agent_id.strip(), args.task_id.strip(), args.proposal_id.strip()
        run_id, adapter, model, briefing = args.run_id.strip(), args.adapter.strip(), args.model.strip(), args.briefing
        refused = {"agent_id": agent_id, "task_id": task_id, "proposal_id": proposal_id, "launched_by": launched_by}
        try:
            run, agent, role, adapter_name = await self._validate(agent_id, task_id, proposal_id, run_id, adapter)
        except RoundtableError as exc:
            await self._record_refusal(run_id, refused, exc)
            raise
        try:
            launcher = await self.launcher()
            if not launcher.usable:
                raise ToolError(f"launch refused: {launcher.refusal()}")
            if launcher.sandbox is not None:
                harness = preflight.adapter_program(self.runtime.config, adapter_name)
                if problem := preflight.install_problem(self.runtime.config, harness, root=str(self.runtime.root)):
                    raise ToolError(f"launch refused: {problem}")
        except RoundtableError as exc:
            await self._record_refusal(run.id, refused, exc)
            raise
        session_id = clock.new_id("S")
        directory = Path(tempfile.mkdtemp(prefix="rt-", dir=self.base_dir or socket_base()))
        os.chmod(directory, 0o700)
        socket_path = directory / "s.sock"
        home = directory / "home"
        home.mkdir(mode=0o700)
        root = self.runtime.root.resolve()
        caller = SUPERVISOR.with_run(run.id)
        workspace = ""
        own_git: Path | None = None
        if role in WORKSPACE_ROLES and await git.head(root) != "not-git":
            try:
                made = await self.runtime.call("workspace.create", {"agent_id": agent_id, "task_id": task_id}, caller)
            except BaseException as exc:
                shutil.rmtree(directory, ignore_errors=True)
                if isinstance(exc, RoundtableError):
                    await self._record_refusal(run.id, refused, exc)
                raise
            workspace = str(made["workspace"]["path"])
            own_git = await self._own_git(root, made["workspace"], directory)
        workdir = Path(workspace) if workspace else home
        sandboxed = launcher.kind != session_sandbox.SUBPROCESS
        gateway_socket = directory / "g.sock"
        gateway_url = ""
        relay: session_sandbox.LoopbackRelay | None = None
        if self.gateway is not None:
            if sandboxed:
                gateway_url = f"http://127.0.0.1:{session_sandbox.GATEWAY_PORT}"
            else:
                relay = session_sandbox.LoopbackRelay(gateway_socket)
                gateway_url = f"http://127.0.0.1:{await relay.start()}"
        plan = adapters.start_plan(
            self.runtime.config,
            adapter_name,
            session_id=session_id,
            agent_id=agent_id,
            run_id=run.id,
            working_directory=str(workdir),
            role=role,
            task_id=task_id,
            proposal_id=proposal_id,
            model=model or agent.model,
            socket_path=str(socket_path),
            briefing=briefing,
            workspace=workspace,
            sandboxed=sandboxed,
            gateway_url=gateway_url,
        )
        start_argv = plan.argv
        prompt = plan.prompt
        if resume_of is not None:
            start_argv = harness_resume.resume_argv(adapter_name, plan.argv, resume_of.external_session_id)
            prompt = message
        try:
            opened = await self.runtime.call(
                "session.open",
                {
                    "session_id": session_id,
                    "agent_id": agent_id,
                    "run_id": run.id,
                    "adapter": adapter_name,
                    "working_directory": str(workdir),
                    "model": model or agent.model,
                    "mcp_socket": str(socket_path),
                    "role": role,
                    "task_id": task_id,
                    "proposal_id": proposal_id,
                    "launched_by": launched_by,
                    "metadata": {
                        "mode": "start",
                        "role": role,
                        "task_id": task_id,
                        "proposal_id": proposal_id,
                        "container_id": "",
                        "isolation": launcher.kind,
                        "isolation_reason": launcher.reason,
                        "launched_by": launched_by,
                        "workspace": workspace,
                        **({"mode": "resume", "resumed_from": resume_of.id} if resume_of is not None else {}),
                    },
                },
                caller,
            )
        except BaseException:
            if relay is not None:
                await relay.aclose()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        token = str(opened["token"])
        from roundtable.server.sessions import SessionEndpoint

        async def on_limit(reason: str) -> None:
            if reason.startswith(budgets.REASON_PREFIX):  # refused at its next call after its budget ran out
                self._stop_now(session_id, reason)
            else:
                await self._limit_reached(session_id, reason)

        endpoint = SessionEndpoint(self.runtime, str(opened["capability_id"]), socket_path, on_limit=on_limit)
        live = _Live(
            session_id,
            str(opened["capability_id"]),
            token,
            directory,
            endpoint,
            role=role,
            work=(agent_id, task_id, proposal_id),
            workspace=workspace,
            run_id=run.id,
            relay=relay,
            meter=Meter(harness=adapter_name),
            adapter=adapter_name,
        )
        self.live[session_id] = live
        try:
            await endpoint.start()
            gateway_env: dict[str, str] = {}
            if self.gateway is not None:
                # The socket is the session's alone; as root its sandbox's user must reach it.
                grant = await self.gateway.open_session(
                    session_id,
                    adapter=adapter_name,
                    socket_path=gateway_socket,
                    owner_uid=sandbox_runner.SANDBOX_UID if sandboxed and os.getuid() == 0 else -1,
                )
                gateway_env = {name: grant.token for name in plan.gateway_token}
                if sandboxed:  # unsandboxed, the process has the host's network anyway
                    gateway_env.update(_proxy_env(gateway_url))
            files = dict(plan.files)
            if briefing.strip():
                files[BRIEFING_FILE] = briefing.strip() + "\n"
            files[adapters.PROMPT_FILE] = prompt + "\n"
            if resume_of is not None:
                await self._restore(resume_of, home, str(workdir))
                await asyncio.to_thread(self._log_operator, session_id, message)
            for rel, text in files.items():
                target = home / rel
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                target.write_text(text, encoding="utf-8")
                os.chmod(target, 0o600)
            for name, script in plan.commands.items():  # `rt` for a session whose tools are commands
                target = home / adapters.COMMANDS_DIR / name
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                target.write_text(script, encoding="utf-8")
                os.chmod(target, 0o700)
            env = self._environment(
                home, plan.env, token, socket_path, session_id, agent_id, run.id, task_id, proposal_id
            )
            if plan.commands:
                env["PATH"] = os.pathsep.join([str(home / adapters.COMMANDS_DIR), env["PATH"]])
            env.update(plan.settings)
            # The harness's model choices from the owner's environment (by name; never a key).
            env.update({name: os.environ[name] for name in plan.inherit if name in os.environ})
            env.update(gateway_env)
            if briefing.strip():
                env["ROUNDTABLE_BRIEFING_FILE"] = str(home / BRIEFING_FILE)
            if workspace:
                env["ROUNDTABLE_WORKSPACE"] = workspace
            if own_git is not None:  # the harness's own `git status` and `git diff` in its workspace
                env["GIT_DIR"] = str(own_git)
            env["ROUNDTABLE_PROMPT_FILE"] = str(home / adapters.PROMPT_FILE)
            await self.runtime.call("session.activate", {"session_id": session_id}, caller)
            argv = [*start_argv, *extra_args]
            spec = launcher.spec(
                argv,
                workdir=workdir,
                session_dir=directory,
                root=root,
                socket_dir=self.runtime.config.socket_path(root).parent,
                search_path=env["PATH"],
                read_paths=self.runtime.config.sessions.read_paths,
                max_processes=self.runtime.config.sessions.max_processes,
                gateway_socket=gateway_socket if self.gateway is not None else None,
            )
            if spec is not None:
                live.spec = spec
                await sandbox_runner.hand_over(spec)
            # The prompt is the harness's standard input (never an argv string): the file, or the
            # first message on a pipe kept open for the operator's messages.
            prompt_in = -1 if plan.live_input else os.open(home / adapters.PROMPT_FILE, os.O_RDONLY | os.O_CLOEXEC)
            stdin = asyncio.subprocess.PIPE if plan.live_input else prompt_in
            try:
                if spec is None:
                    live.process = await self._spawn(argv, workdir, env, stdin)
                else:
                    with sandbox_runner.open_spec(spec) as fd:
                        program = sandbox_runner.launcher_argv(fd)
                        live.process = await self._spawn(program, workdir, env, stdin, (fd,))
            finally:
                if prompt_in >= 0:
                    os.close(prompt_in)
            if plan.live_input:
                live.stdin = live.process.stdin
                await self._write_input(live, prompt)
        except BaseException as exc:
            await self._finish(live, exit_code=-1, reason="launch_failed")
            if isinstance(exc, OSError):
                raise ToolError(f"launch {adapter_name} failed: {exc.strerror or type(exc).__name__}") from None
            if isinstance(exc, sandbox_runner.ProgramRefused):
                raise ToolError(f"launch {adapter_name} refused: {exc}") from None
            raise
        live.tasks.append(asyncio.create_task(self._pump(live), name=f"session-log:{session_id}"))
        live.tasks.append(asyncio.create_task(self._heartbeats(live), name=f"session-heartbeat:{session_id}"))
        live.tasks.append(asyncio.create_task(self._usage(live), name=f"session-usage:{session_id}"))
        live.tasks.append(asyncio.create_task(self._wait(live), name=f"session-wait:{session_id}"))
        async with self.runtime.db.read() as r:
            session = await sessions.get(r, session_id)
        return {"session": session.to_dict(), "pid": live.process.pid, "argv0": plan.argv[0]}

    async def _record_refusal(self, run_id: str, refused: dict[str, str], exc: RoundtableError) -> None:
        """A launch refused before anything started is recorded (`session.record_refusal`), in
        its own transaction, so the console lists it with its reason; the refusal itself
        stands whether or not the record could be written."""
        try:
            await self.runtime.call(
                "session.record_refusal",
                {**refused, "run_id": run_id, "reason": str(exc) or type(exc).__name__},
                SUPERVISOR.with_run(run_id),
            )
        except Exception as failed:
            log.warning("recording the refused launch of %r failed: %s", refused["agent_id"], failed)

    @staticmethod
    async def _spawn(
        argv: list[str], cwd: Path, env: dict[str, str], stdin: int, pass_fds: tuple[int, ...] = ()
    ) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=env,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )

    # --- for the dispatcher ----------------------------------------------------------------

    def add_exit_listener(self, listener: Callable[[SessionExit], None]) -> None:
        """Call `listener` (on the loop) for every session that ends, once it is recorded."""
        self._listeners.append(listener)

    def live_roles(self) -> dict[str, str]:
        """session id → capability role of every running session."""
        return {sid: live.role for sid, live in self.live.items()}

    def running(self, agent_id: str, task_id: str, proposal_id: str = "") -> bool:
        """A session of this agent for this task (and proposal) is running, whoever launched it."""
        return any(live.work == (agent_id, task_id, proposal_id) for live in self.live.values())

    async def missing_harness(self, agent_id: str, adapter: str = "") -> str:
        """Why the agent's harness cannot start here (`codex not found on PATH`), or ''."""
        async with self.runtime.db.read() as r:
            agent = await r.one(Agent, "SELECT * FROM agents WHERE id = ?", (agent_id,))
        name = adapter or (agent.adapter if agent is not None else "")
        problem, _fix = preflight.adapter_problem(self.runtime.config, name)
        return f"{problem} (adapter {name} of {agent_id})" if problem else ""

    def _environment(
        self,
        home: Path,
        extra: dict[str, str],
        token: str,
        socket_path: Path,
        session_id: str,
        agent_id: str,
        run_id: str,
        task_id: str,
        proposal_id: str,
    ) -> dict[str, str]:
        env = {name: os.environ[name] for name in _ENV_ALLOW if name in os.environ}
        env.setdefault("PATH", os.defpath)
        # The scripted agent and the bridge are Python: keep the interpreter's own directory first.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        env["HOME"] = str(home)
        for name, rel in extra.items():
            env[name] = str(home / rel)
        env.update(
            {
                "ROUNDTABLE_MCP_TOKEN": token,
                "ROUNDTABLE_MCP_SOCKET": str(socket_path),
                "ROUNDTABLE_SESSION_ID": session_id,
                "ROUNDTABLE_AGENT_ID": agent_id,
                "ROUNDTABLE_RUN_ID": run_id,
                "ROUNDTABLE_TASK_ID": task_id,
            }
        )
        if proposal_id:
            env["ROUNDTABLE_PROPOSAL_ID"] = proposal_id
        return env

    # --- while it runs --------------------------------------------------------------------------

    def log_path(self, session_id: str) -> Path:
        return self.runtime.root / ".roundtable" / "logs" / "sessions" / f"{session_id}.log"

    async def _pump(self, live: _Live) -> None:
        """Copy the process's output to its log, redacted (the token is masked explicitly too)."""
        assert live.process is not None and live.process.stdout is not None
        path = self.log_path(live.session_id)
        ensure_private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)  # a log left by an older version may be wider
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            while True:
                try:
                    line = await asyncio.wait_for(live.process.stdout.readline(), self.idle_after)
                except TimeoutError:  # silent for a while: the operator may want to look
                    request = live.transcript.request
                    if request is not None and request.is_question:
                        # Nobody answered its question (a headless run has nobody to): it goes on.
                        await self._answer_request(live, give_up=True)
                        continue
                    if live.transcript.attention == Attention.WORKING:
                        live.transcript.attention = Attention.IDLE
                        live.transcript.detail = f"no output for {self.idle_after:g} s"
                        live.metered.set()
                    continue
                if not line:
                    break
                text = line.decode("utf-8", "replace").replace(live.token, "[REDACTED]")
                if not live.no_credential and preflight.credential_failure(text):
                    live.no_credential = True
                out.write(redact(text))
                out.flush()
                if live.transcript.attention == Attention.IDLE:
                    live.transcript.attention, live.transcript.detail = Attention.WORKING, ""
                live.transcript.feed(text)
                if live.stdin is not None and live.transcript.turns:
                    self._close_input(live)
                elif live.transcript.request is not None and not live.transcript.request.is_question:
                    await self._answer_request(live)  # its turn ended: what it was sent meanwhile is read, then it ends
                if live.meter.feed(text) or self._stream_moved(live):
                    live.metered.set()

    async def _write_input(self, live: _Live, text: str) -> bool:
        """One user message on the harness's standard input; False when it takes none now."""
        return await self._write_line(live, adapters.input_message(text))

    async def _answer_request(self, live: _Live, message: str = "", *, give_up: bool = False) -> bool:
        """Answer what the harness asks and waits for (`Transcript.request`): its question with
        the operator's `message` (or, `give_up`, with the news that nobody answered within the
        idle time); a tool it may not use (no `message`) refused at once, as a supervised
        session's harness outside it would be."""
        request = live.transcript.request
        if request is None or request.request_id in live.answered:
            return False
        if request.is_question and give_up:
            refusal = (
                f"No one answered within {self.idle_after:g} s. Go on as you judge best, or end your turn "
                "with the question in your final answer (the operator can answer it then)."
            )
            line = adapters.input_answer(request.request_id, allow=False, message=refusal)
        elif request.is_question:
            if not message:
                return False
            answers = dict.fromkeys(request.questions() or ["?"], message)
            line = adapters.input_answer(
                request.request_id, allow=True, updated_input={**request.input, "answers": answers}
            )
        else:
            refusal = f"{request.tool} is not allowed in this supervised session; work with the tools you were given"
            line = adapters.input_answer(request.request_id, allow=False, message=refusal)
        if not await self._write_line(live, line):
            return False
        live.answered.add(request.request_id)
        return True

    async def _write_line(self, live: _Live, line: bytes) -> bool:
        writer = live.stdin
        if writer is None or writer.is_closing():
            return False
        try:
            writer.write(line)
            await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            live.stdin = None
            return False
        return True

    @staticmethod
    def _close_input(live: _Live) -> None:
        writer, live.stdin = live.stdin, None
        if writer is not None:
            writer.close()  # what is buffered is still written

    async def _usage(self, live: _Live) -> None:
        """Record the session's usage whenever its output moved the meter (one write in flight;
        lines arriving meanwhile are folded into the next). Ends, like the heartbeats, when the
        session is done; `_finish` records the last figures."""
        while not live.done.is_set():
            waiter = asyncio.ensure_future(live.metered.wait())
            stopper = asyncio.ensure_future(live.done.wait())
            try:
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pending in (waiter, stopper):
                    pending.cancel()
            if live.done.is_set():
                return
            live.metered.clear()
            await self._record_usage(live)
            await self._record_stream(live)

    @staticmethod
    def _stream_moved(live: _Live) -> bool:
        t = live.transcript
        return (t.harness_session_id, str(t.attention), t.detail) != live.observed

    async def _record_stream(self, live: _Live) -> None:
        """One `session.record_stream` when the harness's stream said something new: its own
        session id, or whether the session needs the operator."""
        async with live.recording:
            t = live.transcript
            seen = (t.harness_session_id, str(t.attention), t.detail)
            if seen == live.observed:
                return
            try:
                await self.runtime.call(
                    "session.record_stream",
                    {
                        "session_id": live.session_id,
                        "harness_session_id": seen[0],
                        "attention": seen[1],
                        "detail": seen[2],
                    },
                    SUPERVISOR,
                )
            except Exception:
                log.exception("recording what the stream of session %s said failed", live.session_id)
                return
            live.observed = seen

    async def _record_usage(self, live: _Live) -> None:
        """One `session.record_usage` with the meter's figures; a session over its task's budget
        (its capability already revoked by that call) is stopped."""
        async with live.recording:
            version = live.meter.version
            if version == live.recorded_version:
                return
            spent = live.meter.usage()
            args: dict[str, Any] = {
                "session_id": live.session_id,
                "input_tokens": spent.input_tokens,
                "cached_input_tokens": spent.cached_input_tokens,
                "output_tokens": spent.output_tokens,
                "model": spent.model,
            }
            if spent.cost_usd is not None:
                args["cost_usd"] = spent.cost_usd
            try:
                done = await self.runtime.call("session.record_usage", args, SUPERVISOR)
            except Exception:
                log.exception("recording the usage of session %s failed", live.session_id)
                return
            live.recorded_version = version
        if done.get("stop_reason") and not live.done.is_set() and not live.revoked:
            # Its capability is revoked: its next tool call is refused with the reason and stops
            # it (`on_limit`); one that calls no tool again is stopped after BUDGET_GRACE.
            live.revoked = True
            live.stop_reason = live.stop_reason or str(done["stop_reason"])
            log.warning("session %s over budget: %s", live.session_id, done["stop_reason"])
            live.tasks.append(
                asyncio.create_task(self._stop_later(live, BUDGET_GRACE), name=f"session-stop:{live.session_id}")
            )

    async def _heartbeats(self, live: _Live) -> None:
        # Stops cooperatively when the session is done: cancelling a task inside a write
        # transaction could leave the shared writer connection mid-transaction.
        while not live.done.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(live.done.wait(), self.heartbeat_interval)
                return
            try:
                await self.runtime.call(
                    "session.keep_alive",
                    {"session_id": live.session_id, "capability_id": live.capability_id},
                    SUPERVISOR,
                )
            except Exception:
                log.exception("heartbeat of session %s failed", live.session_id)

    async def _wait(self, live: _Live) -> None:
        assert live.process is not None
        code = await exit_status(live.process)
        if live.spec is not None and SIGNALLED < code <= SIGNALLED + 64:
            # The sandbox reports a command killed by signal N as 128+N, as a shell does; record
            # it as an unsandboxed process's -N, so "killed by SIGTERM" is said either way.
            code = SIGNALLED - code
        for task in live.tasks:
            if task is not asyncio.current_task() and task.get_name().startswith("session-log"):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 5)
        if live.workspace and not self._closing:
            await self._propose_leftovers(live)
        # A harness that says it is not logged in has no model credential here (a supervised
        # session never sees the user's own login): say that, not the harness's advice. One the
        # supervisor stopped (a budget reached, a credential refused) ended for that reason.
        reason = preflight.NO_CREDENTIAL if code != 0 and live.no_credential else "process_exited"
        await self._finish(live, exit_code=code, reason=live.stop_reason or reason)

    async def _own_git(self, root: Path, workspace: dict[str, Any], directory: Path) -> Path | None:
        """A repository of the session's own for its workspace (`workspace_git.private_repo`),
        in the session's directory: the project's repository does not exist in the sandbox.
        None, with a warning, when it cannot be made (the session runs without it)."""
        dest = directory / "git"
        try:
            await workspace_git.private_repo(root, str(workspace["base_tree"]), Path(workspace["path"]), dest)
        except (ToolError, OSError) as exc:
            log.warning("no git repository for the session in workspace %s: %s", workspace.get("id"), exc)
            shutil.rmtree(dest, ignore_errors=True)
            return None
        return dest

    async def _propose_leftovers(self, live: _Live) -> None:
        """A session that ended with changes in its workspace that are not its proposal's
        current revision: propose them for it (recorded as proposed by the supervisor), or
        record why that was refused."""
        agent_id, task_id, _proposal = live.work
        caller = SUPERVISOR.with_run(live.run_id)
        try:
            pending = await workspaces.leftover(self.runtime, agent_id, task_id)
            if pending is None:
                return
            await self.runtime.call(
                "workspace.propose",
                {
                    "agent_id": agent_id,
                    "task_id": task_id,
                    "title": f"Changes {agent_id} left in its workspace",
                    "summary_md": f"Session {live.session_id} ended without proposing these changes; "
                    "the supervisor proposed them.",
                },
                caller,
            )
        except (ToolError, ValidationError) as exc:
            log.warning("session %s left unproposed changes: %s", live.session_id, exc)
            async with self.runtime.db.read() as r:
                ws = await workspaces.live(r, agent_id, task_id)
            if ws is not None:
                with contextlib.suppress(Exception):
                    await self.runtime.call(
                        "workspace.record_unproposed",
                        {"workspace_id": ws.id, "session_id": live.session_id, "reason": str(exc)},
                        caller,
                    )
        except Exception:
            log.exception("proposing the workspace of session %s failed", live.session_id)

    async def _finish(self, live: _Live, *, exit_code: int, reason: str) -> None:
        """Record the end, revoke the capability, close the endpoint, remove the directory."""
        if live.done.is_set():
            return
        live.done.set()
        self._close_input(live)
        for task in live.tasks:
            # Only the log pump is cancelled (it never touches the database); the heartbeat
            # loop ends by itself once `done` is set.
            if task is not asyncio.current_task() and task.get_name().startswith("session-log"):
                task.cancel()
        if live.spec is not None:
            try:  # the workspace is the owner's again between sessions (as root: no longer nobody's)
                await sandbox_runner.hand_back(live.spec)
            except OSError:
                log.exception("handing the workspace of session %s back failed", live.session_id)
        await self._record_usage(live)
        if self.gateway is not None:  # its measured spend is complete when its end is recorded
            with contextlib.suppress(Exception):
                await self.gateway.flushed(live.session_id)
        live.transcript.ended(exit_code)
        await self._record_stream(live)
        try:
            await self.runtime.call(
                "session.record_exit",
                {"session_id": live.session_id, "exit_code": exit_code, "reason": reason},
                SUPERVISOR,
            )
        except Exception:
            log.exception("recording the end of session %s failed", live.session_id)
        with contextlib.suppress(Exception):
            await live.endpoint.close()
        if self.gateway is not None:  # its token revoked, its socket and connections closed
            try:
                await self.gateway.close_session(live.session_id)
            except Exception:
                log.exception("closing the gateway session of %s failed", live.session_id)
        if live.relay is not None:
            await live.relay.aclose()
        if live.adapter in harness_resume.RESUMABLE:
            try:  # its conversation outlives the directory: it can be resumed
                await asyncio.to_thread(
                    harness_resume.save_state,
                    live.directory / "home",
                    harness_resume.state_dir(self.runtime.root, live.session_id),
                )
            except OSError:
                log.exception("keeping the harness state of session %s failed", live.session_id)
        shutil.rmtree(live.directory, ignore_errors=True)
        self.live.pop(live.session_id, None)
        live.finished.set()
        ended = SessionExit(live.session_id, exit_code, reason)
        for listener in list(self._listeners):
            try:
                listener(ended)
            except Exception:
                log.exception("a session exit listener failed")
        if live.pending and not self._closing:
            text = "\n\n".join(m for m, _by in live.pending)
            sent_by = live.pending[-1][1]
            live.pending.clear()
            try:
                await self.send(live.session_id, text, sent_by)
            except RoundtableError as exc:
                log.warning("resuming session %s with the operator's message failed: %s", live.session_id, exc)

    # --- steer and resume -------------------------------------------------------------------

    async def send(self, session_id: str, message: str, sent_by: str = "operator") -> dict[str, Any]:
        """The operator's message to a session. A running one whose harness reads input while it
        works (Claude Code) gets it now, within its turn (`delivery: live`); one that takes none
        (Codex's `exec`, or a turn already over) gets it when its turn ends, by being resumed with
        it then (`when_turn_ends`: kept as pending on the session until then); an ended one is
        resumed now (`resumed`) — a new session continuing the same harness session, in the same
        workspace, its usage counted with the task's and run's. The message is an event
        (`session.message`, the sender its actor) and a transcript entry; `note` says in words how
        it reaches the agent."""
        if not message.strip():
            raise ValidationError("a message to a session needs text")
        async with self.runtime.db.read() as r:
            session = await r.one(AgentSession, "SELECT * FROM agent_sessions WHERE id = ?", (session_id,))
        if session is None:
            raise ValidationError(f"no session {session_id}")
        if session.adapter not in harness_resume.RESUMABLE:
            raise ValidationError(f"session {session_id} cannot be resumed: adapter {session.adapter} has no resume")
        live = self.live.get(session_id)
        if live is not None and not live.done.is_set():
            await asyncio.to_thread(self._log_operator, session_id, message)
            answer: dict[str, Any] = {"session_id": session_id, "resumed_in": ""}
            if await self._answer_request(live, message):
                await self._record_message(session, "", message, sent_by, Delivery.LIVE)
                note = f"{session_id} was waiting for an answer to its question: the message is its answer"
                return {**answer, "queued": False, "delivery": str(Delivery.LIVE), "note": note}
            if await self._write_input(live, message):
                await self._record_message(session, "", message, sent_by, Delivery.LIVE)
                note = f"{session_id} is running: its agent reads the message now, within its current turn"
                return {**answer, "queued": False, "delivery": str(Delivery.LIVE), "note": note}
            live.pending.append((message, sent_by))
            await self._record_message(session, "", message, sent_by, Delivery.WHEN_TURN_ENDS)
            how = harness_resume.RESUME_HOW.get(session.adapter, "its harness's resume")
            note = (
                f"{session_id} is running and its harness takes no message until its current turn ends: "
                f"the message is delivered then (the session is resumed with it: {how})"
            )
            return {**answer, "queued": True, "delivery": str(Delivery.WHEN_TURN_ENDS), "note": note}
        if not session.external_session_id:
            raise ValidationError(f"session {session_id} cannot be resumed: its harness reported no session id")
        meta = sessions.metadata(session)
        again = LaunchArgs(
            agent_id=session.agent_id,
            task_id=str(meta.get("task_id") or ""),
            proposal_id=str(meta.get("proposal_id") or ""),
            run_id=session.run_id,
            adapter=session.adapter,
            model=session.model or "",
        )
        started = await self.launch(
            again,
            launched_by=sent_by,
            resume_of=session,
            message=message,
        )
        new_id = str(started["session"]["id"])
        await self._record_message(session, new_id, message, sent_by, Delivery.RESUMED)
        note = f"{session_id} had ended: resumed as {new_id} with the message"
        return {
            "session_id": session_id,
            "queued": False,
            "delivery": str(Delivery.RESUMED),
            "resumed_in": new_id,
            "session": started["session"],
            "note": note,
        }

    async def _record_message(
        self, session: AgentSession, resumed_in: str, message: str, sent_by: str, delivery: Delivery
    ) -> None:
        await self.runtime.call(
            "session.record_message",
            {
                "session_id": session.id,
                "resumed_in": resumed_in,
                "message": message,
                "sent_by": sent_by,
                "delivery": str(delivery),
            },
            SUPERVISOR.with_run(session.run_id),
        )

    def _log_operator(self, session_id: str, message: str) -> None:
        """The operator's message as a line of the session's log (its transcript shows it)."""
        from roundtable.services.sessions.transcript import operator_line

        path = self.log_path(session_id)
        ensure_private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(redact(operator_line(message)))

    async def _restore(self, old: AgentSession, home: Path, cwd: str) -> None:
        """The harness state of the session being resumed, into the new session's home: the copy
        kept when it ended, else (its owner stopped without ending it) its own directory's."""
        kept = harness_resume.state_dir(self.runtime.root, old.id)
        source = kept if kept.is_dir() else Path(old.mcp_socket).parent / "home" if old.mcp_socket else kept
        if not await asyncio.to_thread(harness_resume.restore_state, source, home, old.working_directory, cwd):
            log.warning("session %s: no harness state of %s was found; its harness may not find it", old.id, old.id)

    async def resume_interrupted(self) -> list[str]:
        """At start-up: sessions a previous owner left running (no end recorded) are recorded as
        ended (`owner_restarted`), and each whose harness can continue its own session is resumed
        with it (same workspace, budgets counted across). Returns the new sessions' ids."""
        async with self.runtime.db.read() as r:
            left = await r.all(
                AgentSession,
                "SELECT * FROM agent_sessions WHERE ended_at IS NULL AND status IN ('starting', 'active')"
                " ORDER BY started_at, id",
            )
        resumed: list[str] = []
        for session in left:
            if session.id in self.live or not sessions.metadata(session).get("capability_id"):
                continue  # running here, or a session a harness registered itself
            try:
                await self.runtime.call(
                    "session.record_exit",
                    {"session_id": session.id, "exit_code": -1, "reason": "owner_restarted"},
                    SUPERVISOR,
                )
            except RoundtableError:
                log.exception("recording the end of interrupted session %s failed", session.id)
                continue
            if session.adapter not in harness_resume.RESUMABLE or not session.external_session_id:
                continue
            # What the operator sent it that was waiting for its turn to end goes with the note.
            waiting = [m["message"] for m in sessions.pending_messages(session)]
            note = "\n\n".join(
                [RESTART_MESSAGE, *(["The operator's messages meanwhile:", *waiting] if waiting else [])]
            )
            try:
                done = await self.send(session.id, note, "supervisor")
            except RoundtableError as exc:
                log.warning("session %s was not resumed after the restart: %s", session.id, exc)
                continue
            resumed.append(str(done["resumed_in"]))
        return resumed

    # --- revoke and shutdown ----------------------------------------------------------------

    async def revoke(self, session_id: str, reason: str = "operator") -> dict[str, Any]:
        """Revoke the session's capability now; the process is stopped after a short grace."""
        done = await self.runtime.call(
            "session.revoke_capabilities", {"session_id": session_id, "reason": reason}, SUPERVISOR
        )
        revoked = bool(done["revoked"])
        live = self.live.get(session_id)
        if live is not None and not live.revoked:
            live.revoked = True
            live.tasks.append(asyncio.create_task(self._stop_later(live), name=f"session-stop:{session_id}"))
        return {"session_id": session_id, "revoked": revoked, "running": live is not None}

    async def _limit_reached(self, session_id: str, reason: str) -> None:
        """The session passed one of its limits: record it (capability revoked, task blocked with
        the reason), then stop the process as a revoke does."""
        try:
            await self.runtime.call("session.limit_reached", {"session_id": session_id, "reason": reason}, SUPERVISOR)
        except RoundtableError:
            log.exception("recording the limit of session %s failed", session_id)
        with contextlib.suppress(RoundtableError):
            await self.revoke(session_id, reason=f"limit: {reason}")

    def _stop_now(self, session_id: str, reason: str = "") -> None:
        """Stop the session's process at once (SIGTERM, SIGKILL after 5 s); `reason` is recorded
        as how it ended."""
        live = self.live.get(session_id)
        if live is not None and not live.done.is_set():
            live.stop_reason = live.stop_reason or reason
            if live.revoked:
                return  # already being stopped
            live.revoked = True
            live.tasks.append(asyncio.create_task(self._stop_later(live, 0.0), name=f"session-stop:{session_id}"))

    async def _gateway_stop(self, request: StopRequest) -> None:
        """The gateway refused the session's model request for good (a budget reached, the
        operator's credential refused upstream): revoke its capability and stop it now, recorded
        with the gateway's message as how it ended."""
        live = self.live.get(request.session_id)
        if live is None or live.done.is_set():
            return
        log.warning("session %s stopped by the gateway: %s", request.session_id, request.message)
        with contextlib.suppress(RoundtableError):
            await self.runtime.call(
                "session.revoke_capabilities",
                {"session_id": request.session_id, "reason": request.message[:200]},
                SUPERVISOR,
            )
        self._stop_now(request.session_id, request.message)

    async def _stop_later(self, live: _Live, grace: float | None = None) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(live.done.wait(), self.revoke_grace if grace is None else grace)
            return
        self._signal(live, signal.SIGTERM)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(live.done.wait(), 5)
            return
        self._signal(live, signal.SIGKILL)

    @staticmethod
    def _signal(live: _Live, sig: int) -> None:
        # Its process group, even once the harness itself has exited: what it left running goes too.
        if live.process is not None and not live.finished.is_set():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(live.process.pid, sig)

    async def wait(self, session_id: str, timeout: float | None = None) -> None:
        """Wait until the session has finished (tests, demo); a timeout says where it stands."""
        live = self.live.get(session_id)
        if live is None:
            return
        try:
            await asyncio.wait_for(live.finished.wait(), timeout)
        except TimeoutError:
            process = live.process
            where = (
                "never started"
                if process is None
                else f"process {process.pid} still running"
                if process.returncode is None
                else f"process {process.pid} exited with {process.returncode}"
            )
            state = "finishing (recording its end)" if live.done.is_set() else "not finishing"
            raise TimeoutError(f"session {session_id} did not finish in {timeout:g} s: {where}; {state}") from None

    async def close(self) -> None:
        """Shutdown: revoke every capability, stop every process, clean up."""
        self._closing = True
        for live in list(self.live.values()):
            with contextlib.suppress(Exception):
                await self.runtime.call(
                    "session.revoke_capabilities", {"session_id": live.session_id, "reason": "shutdown"}, SUPERVISOR
                )
            self._signal(live, signal.SIGTERM)
        for live in list(self.live.values()):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(live.finished.wait(), 5)
            if not live.done.is_set():
                self._signal(live, signal.SIGKILL)
                await self._finish(live, exit_code=-9, reason="shutdown")
        if getattr(self.runtime, "supervisor", None) is self:
            self.runtime.supervisor = None


async def exit_status(process: asyncio.subprocess.Process, linger: float = LINGER_AFTER_EXIT) -> int:
    """The exit status of a session's process, once what it started has ended too. A session leads
    its own process group (it starts in a new session); a background process the harness started
    and left there (a server, a daemon; outside a sandbox, whose namespace dies with it) would keep
    the session's output open forever, so once the process itself has exited, what is left of its
    group gets `linger` seconds, then is killed.

    The group, not `Process.wait()`, says when that is over: asyncio's wait returns at once for a
    process it has already reaped, whether its pipes are still open or not."""
    waiting = asyncio.ensure_future(process.wait())
    try:
        while process.returncode is None:
            await asyncio.wait({waiting}, timeout=EXIT_POLL)
    finally:
        if not waiting.done():
            waiting.cancel()
    code = process.returncode
    assert code is not None
    deadline = asyncio.get_running_loop().time() + linger
    while _group_alive(process.pid):
        if asyncio.get_running_loop().time() >= deadline:
            log.warning("process %d exited but left its process group running: killing it", process.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            break
        await asyncio.sleep(GROUP_POLL)
    return code


def _group_alive(pgid: int) -> bool:
    """Whether process group `pgid` has a member left (a zombie not yet reaped counts)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member runs as another user: it exists
        return True
    return True


def _proxy_env(gateway_url: str) -> dict[str, str]:
    """A sandboxed session's HTTP(S) proxy: the gateway, which lets it reach only the hosts
    `sessions.network.allow` names. Its own loopback (where the gateway's model APIs are) is
    reached directly."""
    local = "127.0.0.1,localhost,::1"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return {**dict.fromkeys(names, gateway_url), "NO_PROXY": local, "no_proxy": local}


# --- hosting -------------------------------------------------------------------------------------


async def start_supervisor(runtime: Runtime, **options: Any) -> Supervisor:
    """Create the supervisor for an owner runtime and provide it to the session operations as
    `runtime.supervisor`; the owner calls `await supervisor.close()` before closing the runtime."""
    supervisor = Supervisor(runtime, **options)
    runtime.supervisor = supervisor
    return supervisor


def supervisor_for(runtime: Runtime) -> Supervisor | None:
    host = getattr(runtime, "supervisor", None)  # a runtime without an owner has none
    return host if isinstance(host, Supervisor) else None
