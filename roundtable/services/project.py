"""What a service needs of the project it works on: its root, database, configuration and policy.

Services take this small context, never the whole `Runtime` (which sits above them: it
dispatches calls, checks authority and hosts the supervisor). `Runtime` satisfies it
structurally, and so can a test's or a tool's own object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from roundtable.config import Config
    from roundtable.services.policy.engine import Policy
    from roundtable.store.db import Database


class Project(Protocol):
    """One project's root directory, open database, configuration and loaded policy."""

    @property
    def root(self) -> Path: ...

    @property
    def db(self) -> Database: ...

    @property
    def config(self) -> Config: ...

    @property
    def policy(self) -> Policy: ...
