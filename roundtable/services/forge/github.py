"""GitHub (and GitHub Enterprise Server) over its REST API, version 2022-11-28, through httpx2.

The endpoints used, and nothing else:

| what | endpoint |
|---|---|
| open / read / update / close a pull request | `POST /repos/{o}/{r}/pulls`, `GET`/`PATCH /repos/{o}/{r}/pulls/{n}` |
| its reviews and review comments | `GET /repos/{o}/{r}/pulls/{n}/reviews`, `GET /repos/{o}/{r}/pulls/{n}/comments` |
| the checks of one commit | `GET /repos/{o}/{r}/commits/{sha}/check-runs`, `GET /repos/{o}/{r}/commits/{sha}/status` |
| a job's log (Actions) | `GET /repos/{o}/{r}/actions/jobs/{id}/logs` (a redirect to the log) |
| merge | `PUT /repos/{o}/{r}/pulls/{n}/merge` with the head `sha` it must still have |

The API base URL is configurable (`https://HOST/api/v3` for Enterprise Server). The token goes
only into the `Authorization` header of requests to that base; httpx2 drops the header when the
log download is redirected to another host. Every error message passes the redactor, and the
token itself is removed from it whatever shape it has.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx2

from roundtable.domain import ForgeState
from roundtable.services.forge.base import Check, ForgeError, MergeResult, PullRequest, Review, ReviewComment
from roundtable.services.redact import MARK, redact

API_VERSION = "2022-11-28"
PER_PAGE = 100
MAX_PAGES = 10
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


def _pull(data: dict[str, Any]) -> PullRequest:
    head = data.get("head") or {}
    base = data.get("base") or {}
    return PullRequest(
        number=int(data["number"]),
        url=str(data.get("html_url") or ""),
        state=str(data.get("state") or ""),
        merged=bool(data.get("merged") or data.get("merged_at")),
        head_ref=str(head.get("ref") or ""),
        head_sha=str(head.get("sha") or ""),
        base_ref=str(base.get("ref") or ""),
        title=str(data.get("title") or ""),
    )


def _login(data: dict[str, Any]) -> str:
    user = data.get("user") or {}
    return str(user.get("login") or "")


def _check_run(data: dict[str, Any]) -> Check:
    status = str(data.get("status") or "")
    conclusion = str(data.get("conclusion") or "") if status == ForgeState.COMPLETED else ForgeState.PENDING
    return Check(
        "check_run",
        int(data["id"]),
        str(data.get("name") or ""),
        str(data.get("head_sha") or ""),
        conclusion or ForgeState.PENDING,
        str(data.get("html_url") or data.get("details_url") or ""),
    )


_STATUS_CONCLUSION: dict[str, str] = {
    ForgeState.SUCCESS: ForgeState.SUCCESS,
    ForgeState.FAILURE: ForgeState.FAILURE,
    ForgeState.ERROR: ForgeState.FAILURE,
    ForgeState.PENDING: ForgeState.PENDING,
}


class GitHub:
    """`Forge` over GitHub's REST API for one repository (`owner/name`)."""

    def __init__(self, *, api_url: str, repository: str, token: str, timeout: float = 15.0) -> None:
        if not token:
            raise ForgeError("no forge token: set the environment variable landing.forge.token_env names")
        self._token = token
        self._repo = f"/repos/{repository}"
        self.owner = repository.split("/", 1)[0]
        self.base_url = api_url.rstrip("/")
        self._client = httpx2.AsyncClient(
            base_url=self.base_url,
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "Authorization": f"Bearer {token}",
                "User-Agent": "roundtable",
            },
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- plumbing --------------------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        return redact(text.replace(self._token, MARK))[:500]

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> httpx2.Response:
        try:
            response = await self._client.request(method, path, json=json, params=params)
        except httpx2.HTTPError as exc:
            raise ForgeError(f"GitHub {method} {path}: {self._clean(str(exc)) or type(exc).__name__}") from None
        if response.status_code not in ok:
            try:
                message = str(response.json().get("message") or "")
            except (ValueError, AttributeError):
                message = response.text
            raise ForgeError(f"GitHub {method} {path}: {response.status_code} {self._clean(message)}".rstrip())
        return response

    async def _list(self, path: str, params: dict[str, Any] | None = None, key: str = "") -> list[dict[str, Any]]:
        """Every page of a list (at most MAX_PAGES of PER_PAGE), or of `key` in each page's object."""
        out: list[dict[str, Any]] = []
        url: str | None = path
        query: dict[str, Any] | None = {"per_page": PER_PAGE, **(params or {})}
        for _ in range(MAX_PAGES):
            if url is None:
                break
            response = await self._request("GET", url, params=query)
            body = response.json()
            items = body.get(key, []) if key else body
            out.extend(item for item in items if isinstance(item, dict))
            found = _NEXT.search(response.headers.get("link", ""))
            url = found.group(1) if found else None
            if url is not None and url.startswith(self.base_url):
                url = url[len(self.base_url) :]
            query = None  # the next link carries the query
        return out

    # --- pull requests ---------------------------------------------------------------------------

    async def open_pull_request(
        self, *, head_ref: str, base_ref: str, title: str, body: str, draft: bool
    ) -> PullRequest:
        response = await self._request(
            "POST",
            f"{self._repo}/pulls",
            json={"title": title, "head": head_ref, "base": base_ref, "body": body, "draft": draft},
            ok=(201,),
        )
        return _pull(response.json())

    async def update_pull_request(self, number: int, *, title: str, body: str) -> PullRequest:
        response = await self._request("PATCH", f"{self._repo}/pulls/{number}", json={"title": title, "body": body})
        return _pull(response.json())

    async def close_pull_request(self, number: int) -> PullRequest:
        response = await self._request("PATCH", f"{self._repo}/pulls/{number}", json={"state": ForgeState.CLOSED})
        return _pull(response.json())

    async def get_pull_request(self, number: int) -> PullRequest:
        return _pull((await self._request("GET", f"{self._repo}/pulls/{number}")).json())

    async def reviews(self, number: int) -> list[Review]:
        return [
            Review(
                int(r["id"]),
                _login(r),
                str(r.get("state") or ""),
                str(r.get("commit_id") or ""),
                str(r.get("body") or ""),
            )
            for r in await self._list(f"{self._repo}/pulls/{number}/reviews")
        ]

    async def review_comments(self, number: int) -> list[ReviewComment]:
        return [
            ReviewComment(
                id=int(c["id"]),
                author=_login(c),
                path=str(c.get("path") or ""),
                line=int(c.get("line") or c.get("original_line") or 0),
                side=str(c.get("side") or "RIGHT"),
                commit_sha=str(c.get("commit_id") or ""),
                body=str(c.get("body") or ""),
                url=str(c.get("html_url") or ""),
            )
            for c in await self._list(f"{self._repo}/pulls/{number}/comments")
        ]

    # --- CI --------------------------------------------------------------------------------------

    async def checks(self, sha: str) -> list[Check]:
        """Check runs and commit statuses of exactly `sha` (each as GitHub reports it for that
        commit; a status's id is its own)."""
        ref = quote(sha, safe="")
        runs = [_check_run(r) for r in await self._list(f"{self._repo}/commits/{ref}/check-runs", key="check_runs")]
        combined = (
            await self._request("GET", f"{self._repo}/commits/{ref}/status", params={"per_page": PER_PAGE})
        ).json()
        statuses = [
            Check(
                "status",
                int(s.get("id") or 0),
                str(s.get("context") or ""),
                str(combined.get("sha") or sha),
                _STATUS_CONCLUSION.get(str(s.get("state") or ""), ForgeState.FAILURE),
                str(s.get("target_url") or ""),
            )
            for s in combined.get("statuses") or []
            if isinstance(s, dict)
        ]
        return runs + statuses

    async def job_log(self, job_id: int, *, tail_bytes: int) -> str:
        """The last `tail_bytes` of a GitHub Actions job's log (GitHub answers with a redirect to
        a short-lived download URL on another host; the token is not sent there)."""
        response = await self._request("GET", f"{self._repo}/actions/jobs/{job_id}/logs", ok=(200, 302))
        if response.status_code == 302:
            location = response.headers.get("location", "")
            try:
                async with httpx2.AsyncClient(timeout=self._client.timeout, trust_env=False) as plain:
                    response = await plain.get(location)
            except httpx2.HTTPError as exc:
                raise ForgeError(f"GitHub job log download: {self._clean(str(exc))}") from None
            if response.status_code != 200:
                raise ForgeError(f"GitHub job log download: {response.status_code}")
        return response.content[-tail_bytes:].decode("utf-8", errors="replace")

    # --- merge -----------------------------------------------------------------------------------

    async def merge(self, number: int, *, sha: str, method: str, title: str, message: str) -> MergeResult:
        """Merge only if the head is still `sha` (GitHub answers 409 otherwise)."""
        response = await self._request(
            "PUT",
            f"{self._repo}/pulls/{number}/merge",
            json={"sha": sha, "merge_method": method, "commit_title": title, "commit_message": message},
            ok=(200, 405, 409, 422),
        )
        body = response.json()
        merged = response.status_code == 200 and bool(body.get("merged"))
        return MergeResult(merged, str(body.get("sha") or ""), self._clean(str(body.get("message") or "")))
