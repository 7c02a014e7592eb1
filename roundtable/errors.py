"""The error types every layer raises, each with a stable, human-readable message.

A tool failure is a `ToolError`; its text is what the caller sees (after redaction), so
messages are part of the interface. Lookups of missing rows use `NotFound`, whose text is
`get <kind> <id>: not found` as the spec fixes it.
"""

from __future__ import annotations


class RoundtableError(Exception):
    """Base class: an error whose message is safe and meant for the user."""

    @property
    def message(self) -> str:
        return str(self)


class ConfigError(RoundtableError):
    """The configuration file is missing, malformed or invalid."""


class ConfigMissing(ConfigError):
    """The project has no configuration file (it was never initialised)."""


class StoreError(RoundtableError):
    """The database could not be opened or migrated."""


class ToolError(RoundtableError):
    """A tool call was refused or failed; state is unchanged unless the tool says otherwise."""


class NotYet(ToolError):
    """The call is right but early (a turn not scheduled yet): waiting, not a mistake — it does
    not count as a refusal toward a session's limit."""


class NotFound(ToolError):
    """A referenced record does not exist."""

    def __init__(self, kind: str, record_id: object) -> None:
        super().__init__(f"get {kind} {record_id}: not found")
        self.kind = kind
        self.record_id = record_id


class ValidationError(ToolError):
    """Arguments did not match the tool's schema or a handler rule."""


class PatchDoesNotApply(ValidationError):
    """A patch does not apply to the tree it is meant for (git's dry run or apply refused it)."""


class PermissionDenied(ToolError):
    """The caller may not perform this operation."""


class LimitReached(PermissionDenied):
    """A configured limit refused the call (a quota). `Runtime.call` records `event_type` with
    `payload` in `run_id` after the refused call's transaction is rolled back."""

    def __init__(self, message: str, *, run_id: str, event_type: str, payload: dict[str, object]) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.event_type = event_type
        self.payload = payload


class LockError(RoundtableError):
    """Another process owns the project."""
