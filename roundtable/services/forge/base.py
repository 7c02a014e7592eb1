"""The forge interface and its records, shaped by what the landing and the gates need.

A `Check` is one check run or one commit status, both read for one commit SHA: its name, the
SHA it ran on, whether it has finished and how (`conclusion`: `success`, `failure`, `neutral`,
`skipped`, `cancelled`, `timed_out`, `action_required`, or `pending` while it runs), and a link.
A GitLab implementation would map pipelines and jobs onto the same records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

from roundtable.domain import ForgeState
from roundtable.errors import ToolError

SUCCESS_CONCLUSIONS: frozenset[str] = frozenset({ForgeState.SUCCESS})


class ForgeError(ToolError):
    """The forge refused or could not be reached; the message never holds the token."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str  # the page a person opens
    state: str  # open | closed
    merged: bool
    head_ref: str
    head_sha: str
    base_ref: str
    title: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Review:
    id: int
    author: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    commit_sha: str
    body: str


@dataclass(frozen=True)
class ReviewComment:
    """A comment a reviewer left on a line of the pull request's diff."""

    id: int
    author: str
    path: str
    line: int  # 0 when the comment is on the file, not a line
    side: str  # RIGHT (the new file) | LEFT (the old one)
    commit_sha: str
    body: str
    url: str


@dataclass(frozen=True)
class Check:
    kind: str  # check_run | status
    id: int
    name: str
    sha: str
    conclusion: str
    url: str

    @property
    def succeeded(self) -> bool:
        return self.conclusion in SUCCESS_CONCLUSIONS

    @property
    def finished(self) -> bool:
        return self.conclusion != "pending"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(
            kind=str(data.get("kind", "")),
            id=int(data.get("id", 0)),
            name=str(data.get("name", "")),
            sha=str(data.get("sha", "")),
            conclusion=str(data.get("conclusion", "")),
            url=str(data.get("url", "")),
        )


@dataclass(frozen=True)
class MergeResult:
    merged: bool
    sha: str
    message: str


class Forge(Protocol):
    """What roundtable asks of a forge."""

    async def open_pull_request(
        self, *, head_ref: str, base_ref: str, title: str, body: str, draft: bool
    ) -> PullRequest: ...

    async def update_pull_request(self, number: int, *, title: str, body: str) -> PullRequest: ...

    async def close_pull_request(self, number: int) -> PullRequest: ...

    async def get_pull_request(self, number: int) -> PullRequest: ...

    async def reviews(self, number: int) -> list[Review]: ...

    async def review_comments(self, number: int) -> list[ReviewComment]: ...

    async def checks(self, sha: str) -> list[Check]: ...

    async def job_log(self, job_id: int, *, tail_bytes: int) -> str: ...

    async def merge(self, number: int, *, sha: str, method: str, title: str, message: str) -> MergeResult: ...

    async def aclose(self) -> None: ...
