"""A GitHub REST stand-in for the endpoints roundtable calls, on a free loopback port.

Every JSON answer is checked against the response schema GitHub publishes for that endpoint
(`github_rest_subset.json`, a subset of github/rest-api-description) before it is sent: a reply
the real API could not give fails the test at once, so the fake cannot drift from the schema.
`schema_errors` converts OpenAPI 3.0's `nullable` into JSON Schema and validates with the
`jsonschema` package the MCP SDK already depends on.

State is plain data a test sets: pull requests, check runs and statuses per SHA, review
comments, job logs, and whether a merge is refused. Every request is kept (`requests`) with its
headers, so a test can show what was sent — and what was not (the token on the log redirect).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

SUBSET = json.loads((Path(__file__).parent / "github_rest_subset.json").read_text())
NOW = "2026-12-02T10:00:00Z"


def _to_json_schema(node: Any, schemas: dict[str, Any], skipped: set[str], depth: int = 0) -> Any:
    """OpenAPI 3.0 schema → JSON Schema: `$ref`s inlined (those not kept accept anything),
    `nullable: true` → also null."""
    if isinstance(node, list):
        return [_to_json_schema(n, schemas, skipped, depth) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in skipped or depth > 20:
            return {}
        return _to_json_schema(schemas[name], schemas, skipped, depth + 1)
    out = {k: _to_json_schema(v, schemas, skipped, depth) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return {"anyOf": [out, {"type": "null"}]}
    return out


def response_schema(operation: str, status: int) -> dict[str, Any]:
    schemas = SUBSET["components"]["schemas"]
    published = SUBSET["responses"][operation][str(status)]
    return _to_json_schema(published, schemas, set(SUBSET["not_followed"]))


def schema_errors(operation: str, status: int, body: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(response_schema(operation, status))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


def _user(login: str, uid: int = 1) -> dict[str, Any]:
    base = f"https://api.github.test/users/{login}"
    return {
        "name": None,
        "email": None,
        "login": login,
        "id": uid,
        "node_id": f"U_{uid}",
        "avatar_url": f"https://avatars.github.test/u/{uid}",
        "gravatar_id": "",
        "url": base,
        "html_url": f"https://github.test/{login}",
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": "User",
        "site_admin": False,
    }


@dataclass
class FakeGitHub:
    """The fake's state and its server. `owner/name` is the one repository it hosts."""

    repository: str = "team/app"
    token: str = "ghp_" + "t" * 36
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # sha -> runs
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # sha -> statuses
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pr -> review comments
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    logs: dict[int, bytes] = field(default_factory=dict)  # job id -> log
    refuse_merge: str = ""  # a message: the merge answers 405 with it
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v3"

    # --- building records ------------------------------------------------------------------------

    def _pr_record(self, number: int, *, title: str, body: str, head: str, base: str, draft: bool) -> dict[str, Any]:
        owner, name = self.repository.split("/")
        api = f"{self.api_url}/repos/{self.repository}"
        html = f"https://github.test/{self.repository}/pull/{number}"
        side = lambda ref, sha: {  # noqa: E731
            "label": f"{owner}:{ref}",
            "ref": ref,
            "repo": {"full_name": self.repository, "name": name},
            "sha": sha,
            "user": _user(owner, 2),
        }
        link = lambda href: {"href": href}  # noqa: E731
        return {
            "url": f"{api}/pulls/{number}",
            "id": 1000 + number,
            "node_id": f"PR_{number}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{number}",
            "commits_url": f"{api}/pulls/{number}/commits",
            "review_comments_url": f"{api}/pulls/{number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "statuses_url": f"{api}/statuses/0",
            "number": number,
            "state": "open",
            "locked": False,
            "title": title,
            "user": _user("roundtable-bot", 3),
            "body": body,
            "labels": [],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": NOW,
            "updated_at": NOW,
            "closed_at": None,
            "merged_at": None,
            "merge_commit_sha": None,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": side(head, "0" * 40),
            "base": side(base, "0" * 40),
            "_links": {
                k: link(f"{api}/pulls/{number}")
                for k in (
                    "comments",
                    "commits",
                    "statuses",
                    "html",
                    "issue",
                    "review_comments",
                    "review_comment",
                    "self",
                )
            },
            "author_association": "MEMBER",
            "auto_merge": None,
            "draft": draft,
            "merged": False,
            "mergeable": True,
            "rebaseable": True,
            "mergeable_state": "clean",
            "merged_by": None,
            "comments": 0,
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 1,
            "deletions": 1,
            "changed_files": 1,
        }

    def set_head(self, number: int, sha: str) -> None:
        """The pull request's head moved to `sha` (a push to its branch)."""
        self.pulls[number]["head"]["sha"] = sha

    def add_check(self, sha: str, name: str, conclusion: str | None, *, job_id: int = 0) -> int:
        """A check run on `sha`: `conclusion` None means still running."""
        run_id = job_id or 5000 + sum(len(v) for v in self.check_runs.values())
        api = f"{self.api_url}/repos/{self.repository}"
        self.check_runs.setdefault(sha, []).append(
            {
                "id": run_id,
                "head_sha": sha,
                "node_id": f"CR_{run_id}",
                "external_id": None,
                "url": f"{api}/check-runs/{run_id}",
                "html_url": f"https://github.test/{self.repository}/actions/runs/1/job/{run_id}",
                "details_url": f"https://github.test/{self.repository}/actions/runs/1/job/{run_id}",
                "status": "completed" if conclusion else "in_progress",
                "conclusion": conclusion,
                "started_at": NOW,
                "completed_at": NOW if conclusion else None,
                "output": {
                    "title": None,
                    "summary": None,
                    "text": None,
                    "annotations_count": 0,
                    "annotations_url": f"{api}/check-runs/{run_id}/annotations",
                },
                "name": name,
                "check_suite": {"id": 1},
                "app": None,
                "pull_requests": [],
            }
        )
        return run_id

    def add_status(self, sha: str, context: str, state: str) -> None:
        sid = 7000 + sum(len(v) for v in self.statuses.values())
        self.statuses.setdefault(sha, []).append(
            {
                "description": None,
                "id": sid,
                "node_id": f"ST_{sid}",
                "state": state,
                "context": context,
                "target_url": f"https://ci.test/{sid}",
                "avatar_url": None,
                "url": f"{self.api_url}/repos/{self.repository}/statuses/{sha}",
                "created_at": NOW,
                "updated_at": NOW,
            }
        )

    def add_review_comment(self, number: int, *, login: str, path: str, line: int, sha: str, body: str) -> int:
        cid = 9000 + sum(len(v) for v in self.comments.values())
        api = f"{self.api_url}/repos/{self.repository}"
        html = f"https://github.test/{self.repository}/pull/{number}#discussion_r{cid}"
        self.comments.setdefault(number, []).append(
            {
                "url": f"{api}/pulls/comments/{cid}",
                "pull_request_review_id": 1,
                "id": cid,
                "node_id": f"RC_{cid}",
                "diff_hunk": "@@ -1 +1 @@",
                "path": path,
                "commit_id": sha,
                "original_commit_id": sha,
                "user": _user(login, 4),
                "body": body,
                "created_at": NOW,
                "updated_at": NOW,
                "html_url": html,
                "pull_request_url": f"{api}/pulls/{number}",
                "author_association": "MEMBER",
                "_links": {k: {"href": html} for k in ("self", "html", "pull_request")},
                "line": line,
                "side": "RIGHT",
            }
        )
        return cid

    def add_review(self, number: int, *, login: str, state: str, sha: str, body: str) -> int:
        rid = 8000 + sum(len(v) for v in self.reviews.values())
        api = f"{self.api_url}/repos/{self.repository}"
        html = f"https://github.test/{self.repository}/pull/{number}#pullrequestreview-{rid}"
        self.reviews.setdefault(number, []).append(
            {
                "id": rid,
                "node_id": f"PRR_{rid}",
                "user": _user(login, 5),
                "body": body,
                "state": state,
                "html_url": html,
                "pull_request_url": f"{api}/pulls/{number}",
                "_links": {"html": {"href": html}, "pull_request": {"href": f"{api}/pulls/{number}"}},
                "submitted_at": NOW,
                "commit_id": sha,
                "author_association": "MEMBER",
            }
        )
        return rid

    # --- the HTTP side ---------------------------------------------------------------------------

    def _answer(self, operation: str, status: int, body: Any) -> JSONResponse:
        problems = schema_errors(operation, status, body)
        assert not problems, f"the fake's answer to {operation} breaks GitHub's schema: {problems[:3]}"
        return JSONResponse(body, status_code=status)

    async def _record(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        entry = {
            "method": request.method,
            "path": request.url.path,
            "query": dict(request.query_params),
            "headers": dict(request.headers),
            "json": json.loads(raw) if raw else None,
        }
        self.requests.append(entry)
        return entry

    def _authorised(self, entry: dict[str, Any]) -> bool:
        return entry["headers"].get("authorization") == f"Bearer {self.token}"

    async def _handle(self, request: Request) -> Response:
        entry = await self._record(request)
        path = request.url.path
        if path.startswith("/download/"):
            job = int(path.rsplit("/", 1)[-1])
            return PlainTextResponse(self.logs.get(job, b"").decode())
        if not self._authorised(entry):
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        prefix = f"/api/v3/repos/{self.repository}"
        if not path.startswith(prefix):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        rest = path[len(prefix) :].strip("/").split("/")
        method = request.method
        body = entry["json"] or {}
        if rest == ["pulls"] and method == "POST":
            number = len(self.pulls) + 1
            self.pulls[number] = self._pr_record(
                number,
                title=body["title"],
                body=body.get("body", ""),
                head=body["head"],
                base=body["base"],
                draft=bool(body.get("draft")),
            )
            return self._answer("POST /repos/{owner}/{repo}/pulls", 201, self.pulls[number])
        if len(rest) >= 2 and rest[0] == "pulls":
            number = int(rest[1])
            pr = self.pulls.get(number)
            if pr is None:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            if len(rest) == 2 and method == "GET":
                return self._answer("GET /repos/{owner}/{repo}/pulls/{pull_number}", 200, pr)
            if len(rest) == 2 and method == "PATCH":
                for key in ("title", "body", "state"):
                    if key in body:
                        pr[key] = body[key]
                pr["updated_at"] = NOW
                return self._answer("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", 200, pr)
            if rest[2:] == ["reviews"]:
                return self._answer(
                    "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", 200, self.reviews.get(number, [])
                )
            if rest[2:] == ["comments"]:
                return self._answer(
                    "GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", 200, self.comments.get(number, [])
                )
            if rest[2:] == ["merge"] and method == "PUT":
                if body.get("sha") and body["sha"] != pr["head"]["sha"]:
                    return JSONResponse(
                        {"message": "Head branch was modified. Review and try the merge again."}, status_code=409
                    )
                if self.refuse_merge:
                    return JSONResponse({"message": self.refuse_merge}, status_code=405)
                merge_sha = format(0xABC000 + number, "040x")
                pr.update(state="closed", merged=True, merged_at=NOW, closed_at=NOW, merge_commit_sha=merge_sha)
                return self._answer(
                    "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
                    200,
                    {"sha": merge_sha, "merged": True, "message": "Pull Request successfully merged"},
                )
        if len(rest) == 3 and rest[0] == "commits" and rest[2] == "check-runs":
            runs = self.check_runs.get(rest[1], [])
            return self._answer(
                "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
                200,
                {"total_count": len(runs), "check_runs": runs},
            )
        if len(rest) == 3 and rest[0] == "commits" and rest[2] == "status":
            sha = rest[1]
            found = self.statuses.get(sha, [])
            state = "success" if found and all(s["state"] == "success" for s in found) else "pending"
            if any(s["state"] in ("failure", "error") for s in found):
                state = "failure"
            combined = {
                "state": state,
                "statuses": found,
                "sha": sha,
                "total_count": len(found),
                "repository": {"full_name": self.repository},
                "commit_url": f"{self.api_url}/repos/{self.repository}/commits/{sha}",
                "url": f"{self.api_url}/repos/{self.repository}/commits/{sha}/status",
            }
            return self._answer("GET /repos/{owner}/{repo}/commits/{ref}/status", 200, combined)
        if len(rest) == 4 and rest[:2] == ["actions", "jobs"] and rest[3] == "logs":
            return RedirectResponse(f"http://127.0.0.1:{self.port}/download/{rest[2]}", status_code=302)
        return JSONResponse({"message": "Not Found"}, status_code=404)

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[FakeGitHub]:
        """Serve on an ephemeral loopback port (the socket is bound first: no port race)."""
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST", "PATCH", "PUT"])])
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
            yield self
        finally:
            server.should_exit = True
            await task
            sock.close()

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy({"pulls": self.pulls})
