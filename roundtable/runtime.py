"""The runtime: configuration, store and services for one project root, and `call()`.

Every caller — an agent over any transport, the console, the CLI, the Chair — goes through
`Runtime.call(tool, args, caller)`: the tool is looked up by either spelling, the caller's
authority is checked, the arguments are validated through its `Args` model (the one declaration
its advertised schema is generated from; the handler gets the typed model), and the handler
runs inside one write transaction (or one read snapshot), so a failed call changes nothing.
Committed changes are announced on the change bus by the store.

Authority is decided here, once, for every transport:
- an anonymous caller (an unbound credential or the no-auth opt-out) may call read-only tools only;
- for a caller bound to one agent, every argument that names who acts (`agent_id`, `actor_id`,
  `decided_by`, `requested_by`, `reviewer_id`, `applied_by`) is filled from the principal when
  absent and refused when it names someone else — identity is never taken from the arguments;
- free-text arguments of state-changing tools pass the secrets redactor before anything stores
  them (a patch stays byte-exact: git applies it, and the security scan flags secrets in it);
- a write is refused once the database file was removed or replaced under the process.

Opening a runtime never recovers an interrupted apply: only an owner does, under its lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError as ModelError

from roundtable.bus import ChangeBus
from roundtable.config import Config, load_config
from roundtable.errors import LimitReached, PermissionDenied, RoundtableError, ToolError, ValidationError
from roundtable.services.args import Args
from roundtable.services.policy.engine import Policy
from roundtable.services.policy.watch import LivePolicy
from roundtable.services.redact import redact
from roundtable.store.db import ACTING, BUSY_TIMEOUT_MS, Database
from roundtable.tools.context import OPERATOR, Call, Caller
from roundtable.tools.refusals import refusal
from roundtable.tools.registry import Registry, ToolSpec, get_registry
from roundtable.tools.sessions_ops import SessionControl

log = logging.getLogger("roundtable.runtime")
A = TypeVar("A", bound=Args)

# Arguments that name who acts. For a caller bound to an agent they are filled from the principal
# when absent and refused when they differ; `_CHECK_ONLY` ones are never filled, because their
# presence means something (a `decided_by` asks to decide; a `reviewer_id` asks for a manual review).
IDENTITY_ARGS: tuple[str, ...] = ("agent_id", "actor_id", "decided_by", "requested_by", "reviewer_id", "applied_by")
_CHECK_ONLY: frozenset[tuple[str, str]] = frozenset(
    {("human.request_approval", "decided_by"), ("security.review", "reviewer_id")}
)
# Arguments stored or used verbatim: ids and hashes (validated elsewhere), repository paths, and
# patches — git applies a patch byte for byte, and the security scan flags secrets in it.
_VERBATIM_ARGS = frozenset(
    {"patch", "path", "paths", "readable_paths", "affected_resources", "resource_id", "base_hash", "revision", "symbol"}
)
ANONYMOUS_REFUSAL = (
    "{tool} changes state, and this connection is anonymous (no credential or an unbound one, such as "
    "the project credential: read-only tools only). Bind the client to an agent identity: "
    "`roundtable connect --agent ID` for a harness, or `roundtable tokens create --agent ID` for a bearer token."
)


class Runtime:
    """One project's configuration, database and services. Use `await Runtime.open(root)`."""

    def __init__(self, root: Path, config: Config, db: Database, registry: Registry, policy: LivePolicy) -> None:
        self.root = root
        self.config = config
        self.db = db
        self.registry = registry
        self._policy = policy
        self._policy_watch: tuple[asyncio.Event, asyncio.Task[None]] | None = None
        self.owner = False
        # The session supervisor, provided by the owner that hosts one (`tools/sessions_ops.py`).
        self.supervisor: SessionControl | None = None

    @property
    def bus(self) -> ChangeBus:
        return self.db.bus

    @property
    def policy(self) -> Policy:
        """`POLICIES.ROUNDTABLE.md` as it is now: a valid edit applies from the next call, an
        invalid one is logged and ignored (`services/policy/watch.py`). The one place every
        layer reads the current policy from."""
        return self._policy.current()

    @policy.setter
    def policy(self, value: Policy) -> None:
        self._policy.replace(value)

    @classmethod
    async def open(
        cls,
        root: Path | str,
        *,
        bus: ChangeBus | None = None,
        read_only: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> Runtime:
        """Load the config, open and migrate the database, load the policy. `read_only=True`
        opens the existing database without creating, migrating or writing anything;
        `busy_timeout_ms` bounds a write's wait for another process's write lock."""
        root = Path(root)
        config = load_config(root)
        db = await Database.open(
            config.sqlite_path(root), bus=bus, read_only=read_only, busy_timeout_ms=busy_timeout_ms
        )
        try:
            policy = LivePolicy.load(root)
        except BaseException:
            await db.close()
            raise
        return cls(root, config, db, get_registry(), policy)

    def watch_policy(self) -> None:
        """Follow `POLICIES.ROUNDTABLE.md` from now until `close()` (a long-lived owner does this;
        a one-shot command keeps the policy it opened with)."""
        if self._policy_watch is not None:
            return
        stop = asyncio.Event()
        task = asyncio.create_task(self._policy.watch(stop), name="policy watch")
        task.add_done_callback(_report_watch_end)
        self._policy_watch = (stop, task)

    async def close(self) -> None:
        if self._policy_watch is not None:
            stop, task = self._policy_watch
            self._policy_watch = None
            stop.set()  # the watcher's thread sees it within one step; then the task ends
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5.0)
        await self.db.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- calls ------------------------------------------------------------------------------

    def resolve(self, tool: str, caller: Caller = OPERATOR) -> ToolSpec:
        """The operation named `tool` (either spelling) that has a handler and that `caller` can
        see, or `tool not implemented` (an `internal` operation does not exist for callers
        outside the process's own components)."""
        spec = self.registry.lookup(tool) if isinstance(tool, str) else None
        if spec is None or spec.handler is None or (spec.audience == "internal" and not caller.is_internal):
            raise ToolError(f"tool not implemented: {_clip(tool)}")
        return spec

    def validate(self, spec: ToolSpec, args: object) -> Args:
        """Check `args` through the operation's `Args` model; returns the validated model (the
        handler's `call.args`). A refusal is one sentence naming the first problem
        (`tools/refusals.py`)."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ValidationError(f"{spec.name}: arguments must be a JSON object")
        try:
            return spec.args.model_validate(args)
        except ModelError as exc:
            raise ValidationError(refusal(spec.name, spec.input_schema, exc)) from None

    def database_problem(self) -> str:
        """Why the database file no longer is the one this process opened ('' while it is)."""
        return self.db.file_problem()

    def authorise(self, spec: ToolSpec, args: object, caller: Caller) -> object:
        """Check the caller's authority for `spec` (its audience, then identity); returns the
        arguments with identity bound."""
        if spec.audience == "internal" and not caller.is_internal:
            raise PermissionDenied(f"{spec.name} is run only by the owner's own components")
        if spec.operator_only and not caller.is_operator:
            raise PermissionDenied(f"{spec.name} is reserved for the operator")
        if spec.audience == "session" and caller.capability is None:
            raise PermissionDenied(f"{spec.name} is only available to capability sessions whose role allows it")
        if caller.is_operator or spec.read_only:
            return args
        if caller.is_anonymous:
            raise PermissionDenied(ANONYMOUS_REFUSAL.format(tool=spec.name))
        if not isinstance(args, dict):
            return args  # validate() explains
        return bind_identity(spec, args, caller)

    async def _record_limit(self, exc: LimitReached, caller: Caller) -> None:
        """Put a limit's refusal on the record (its call's own transaction was rolled back)."""
        try:
            async with self.db.write(tool="limits", principal=caller.principal, transport=caller.transport) as tx:
                await tx.append_event(
                    exc.run_id, exc.event_type, {**exc.payload, "reason": redact(str(exc))}, actor_id=caller.actor
                )
        except Exception:  # the refusal stands even when its record cannot be written
            log.exception("could not record %s", exc.event_type)

    async def call(self, tool: str, args: object = None, caller: Caller = OPERATOR) -> dict[str, Any]:
        """Validate and run one tool call; raises `ToolError` with a redacted message on failure
        (every failure: refusals by lookup, authority and validation too)."""
        spec: ToolSpec | None = None
        acting = ACTING.set((caller.principal, caller.transport))
        try:
            spec = self.resolve(tool, caller)
            checked = self.validate(spec, self.authorise(spec, args, caller))
            if not spec.read_only:  # (a database file removed or replaced: `Database` refuses the write)
                checked = redact_args(checked)
            call = Call(runtime=self, tool=spec.name, args=checked, caller=caller)
            assert spec.handler is not None
            if spec.prepare is not None:
                await spec.prepare(call)
            if spec.mode == "write":
                async with self.db.write(
                    tool=spec.name, principal=caller.principal, transport=caller.transport, urgent=spec.urgent
                ) as tx:
                    call.tx = tx
                    return await spec.handler(call)
            if spec.mode == "read":
                if spec.point_read is not None:  # one hop: the whole read on a reader's thread
                    return await self.db.read_call(spec.point_read, call.args)
                async with self.db.read() as reader:
                    call.reader = reader
                    return await spec.handler(call)
            return await spec.handler(call)
        except LimitReached as exc:
            await self._record_limit(exc, caller)
            raise _redacted(exc) from None
        except RoundtableError as exc:
            raise type(exc)(redact(str(exc))) if type(exc) is ToolError else _redacted(exc) from None
        except Exception:
            name = spec.name if spec is not None else _clip(tool)
            log.exception("tool %s failed", name)
            raise ToolError(f"{name} failed with an internal error; the owner's log has details") from None
        finally:
            ACTING.reset(acting)


def bind_identity(spec: ToolSpec, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Fill the arguments naming who acts from `caller`'s agent; refuse ones naming another."""
    properties = spec.input_schema.get("properties", {})
    own = caller.agent_id
    out = args
    for name in IDENTITY_ARGS:
        if name not in properties:
            continue
        given = args.get(name)
        if given is None or (isinstance(given, str) and not given.strip()):
            if (spec.name, name) not in _CHECK_ONLY:
                out = {**out, name: own}
        elif given != own:
            shown = _clip(given) if isinstance(given, str) else type(given).__name__
            raise PermissionDenied(
                f"{spec.name}: argument {name} names {shown!r}, but this connection acts as {own} "
                f"({caller.principal}); identity comes from the credential, never from the arguments"
            )
    return out


def redact_args(args: A) -> A:
    """The arguments with credentials in free text replaced by `[REDACTED]` (ids, paths, hashes
    and patches verbatim), so nothing an agent sends stores a secret in the database."""
    changed: dict[str, Any] = {}
    for key in args._text_fields:
        if key in _VERBATIM_ARGS or key.endswith("_id"):
            continue
        value = getattr(args, key)
        cleaned = _redact_value(value)
        if cleaned is not value:
            changed[key] = cleaned
    return args.model_copy(update=changed) if changed else args


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        cleaned = redact(value)
        return value if cleaned == value else cleaned
    if isinstance(value, list):
        items = [_redact_value(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _redacted(exc: RoundtableError) -> RoundtableError:
    text = redact(str(exc))
    if text != str(exc):
        return ToolError(text)
    return exc


def _clip(value: object, limit: int = 64) -> str:
    """A caller-supplied name, cut for an error message (never echo a megabyte back)."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _report_watch_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the policy file is no longer watched: %s", task.exception())
