"""Bearer credentials resolved once per database state, not once per request.

Every request on the shared HTTP endpoint presents a credential, and resolving it is a database
read (`tokens.resolve_on`: the token's row joined with its agent's). Between two commits that
answer cannot change: a token is created or revoked, an agent registered, disabled or removed
only by a commit. `CredentialResolver` therefore keeps the answers it read, keyed by the credential's
sha256 (the credential itself is not kept), for as long as SQLite's `PRAGMA data_version` on one
dedicated connection stays the same. That number changes whenever any other connection commits
— this process's writer, the CLI in direct mode, another process — so the first request after
any commit, a revocation among them, reads the database again: revoking a credential still
refuses the very next request.

The version comes from the store's one `DataVersion` connection (`store/watch.py`). Asking costs one PRAGMA on the loop's thread (a few µs, no table read) on a read-only
connection that never waits for a lock; when it cannot answer (busy, no database file, another
thread), that request is resolved from the database as before. The cache holds at most `MAX_ENTRIES` answers
(unknown credentials included, so a client repeating a wrong one costs no read either).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundtable.services.sessions import tokens
from roundtable.store.watch import DataVersion
from roundtable.tools.context import Caller

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

MAX_ENTRIES = 1024
# An HTTP caller bound to no agent: `Runtime.call` lets it call read-only tools only.
HTTP_CALLER = Caller("agent", "http")


def caller_for(found: tuple[str, str] | None) -> Caller | None:
    """The HTTP caller a resolved token names (None: no live credential)."""
    if found is None:
        return None
    principal, agent_id = found
    if principal == tokens.OPERATOR:
        return Caller("operator", "http")
    if principal == tokens.AGENT:
        return Caller("agent", "http", agent_id=agent_id)
    return HTTP_CALLER  # the project credential: unbound, anonymous


class CredentialResolver:
    """`await resolver(token)`: the caller a presented token names, or None; from the database
    (`access_tokens` by the token's sha256, a point read) unless the same token was resolved
    since the last commit by anyone."""

    def __init__(self, runtime: Runtime, *, max_entries: int = MAX_ENTRIES) -> None:
        self.runtime = runtime
        self.max_entries = max_entries
        self.version: DataVersion = runtime.db.data_version  # the store's; it closes it
        self.lookups = 0  # answers read from the database (the others came from the cache)
        self._seen: int | None = None
        self._known: dict[str, Caller | None] = {}

    async def __call__(self, token: str) -> Caller | None:
        key = tokens.digest(token)
        version = self.version.current()  # asked before the read: a commit after it changes it
        if version is not None and version == self._seen and key in self._known:
            return self._known[key]
        self.lookups += 1
        caller = caller_for(await self.runtime.db.read_call(tokens.resolve_on, token))
        if version is not None:
            if version != self._seen:
                self._known.clear()
                self._seen = version
            if len(self._known) >= self.max_entries:
                del self._known[next(iter(self._known))]  # the oldest answer
            self._known[key] = caller
        return caller

    def close(self) -> None:
        self._known.clear()
