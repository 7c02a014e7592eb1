"""The GitHub client against the fake GitHub, whose answers are checked against GitHub's
published response schemas: pull requests, reviews and review comments, the checks of exactly
one SHA, a job's log (the token never follows the redirect), a merge bound to the head SHA, and
errors that never show the token."""

from __future__ import annotations

import pytest

from roundtable.services.forge.base import ForgeError
from roundtable.services.forge.github import GitHub
from tests.forge.fake_github import SUBSET, FakeGitHub, schema_errors

pytestmark = pytest.mark.anyio
SHA = "a" * 40
OTHER = "b" * 40


def client(fake: FakeGitHub, token: str = "") -> GitHub:
    return GitHub(api_url=fake.api_url, repository=fake.repository, token=token or fake.token, timeout=10)


def test_the_schema_subset_rejects_what_github_could_not_send() -> None:
    good = {"sha": SHA, "merged": True, "message": "ok"}
    assert schema_errors("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", 200, good) == []
    assert schema_errors("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", 200, {"merged": "yes"})
    run_without_name = {"total_count": 1, "check_runs": [{"id": 1}]}
    assert schema_errors("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", 200, run_without_name)
    assert set(SUBSET["responses"]) >= {
        "POST /repos/{owner}/{repo}/pulls",
        "GET /repos/{owner}/{repo}/commits/{ref}/status",
    }


async def test_pull_request_lifecycle_and_reviews() -> None:
    fake = FakeGitHub()
    async with fake.serve():
        gh = client(fake)
        try:
            pr = await gh.open_pull_request(
                head_ref="roundtable/P-1", base_ref="main", title="T", body="B", draft=False
            )
            assert (pr.number, pr.state, pr.head_ref, pr.base_ref) == (1, "open", "roundtable/P-1", "main")
            assert pr.url == "https://github.test/team/app/pull/1"
            updated = await gh.update_pull_request(1, title="T2", body="B2")
            assert updated.title == "T2" and fake.pulls[1]["body"] == "B2"
            fake.add_review_comment(1, login="rita", path="src/app.py", line=1, sha=SHA, body="why v2?")
            (comment,) = await gh.review_comments(1)
            assert (comment.author, comment.path, comment.line, comment.side, comment.commit_sha) == (
                "rita",
                "src/app.py",
                1,
                "RIGHT",
                SHA,
            )
            assert await gh.reviews(1) == []
            closed = await gh.close_pull_request(1)
            assert closed.state == "closed"
        finally:
            await gh.aclose()
    sent = fake.requests[0]
    assert sent["headers"]["x-github-api-version"] == "2022-11-28"
    assert sent["json"] == {"title": "T", "head": "roundtable/P-1", "base": "main", "body": "B", "draft": False}


async def test_checks_are_those_of_exactly_one_sha() -> None:
    fake = FakeGitHub()
    fake.add_check(SHA, "test", "success")
    fake.add_check(SHA, "lint", None)
    fake.add_check(OTHER, "test", "failure")
    fake.add_status(SHA, "ci/legacy", "error")
    async with fake.serve():
        gh = client(fake)
        try:
            checks = await gh.checks(SHA)
        finally:
            await gh.aclose()
    assert {(c.kind, c.name, c.sha, c.conclusion) for c in checks} == {
        ("check_run", "test", SHA, "success"),
        ("check_run", "lint", SHA, "pending"),
        ("status", "ci/legacy", SHA, "failure"),
    }


async def test_job_log_follows_the_redirect_without_the_token() -> None:
    fake = FakeGitHub()
    fake.logs[42] = b"x" * 5000 + b"\nFAILED tests/test_app.py::test_v2\n"
    async with fake.serve():
        gh = client(fake)
        try:
            tail = await gh.job_log(42, tail_bytes=100)
        finally:
            await gh.aclose()
    assert tail.endswith("FAILED tests/test_app.py::test_v2\n") and len(tail) == 100
    download = next(r for r in fake.requests if r["path"].startswith("/download/"))
    assert "authorization" not in download["headers"]


async def test_merge_is_bound_to_the_head_sha() -> None:
    fake = FakeGitHub()
    async with fake.serve():
        gh = client(fake)
        try:
            await gh.open_pull_request(head_ref="roundtable/P-1", base_ref="main", title="T", body="B", draft=False)
            fake.set_head(1, SHA)
            moved = await gh.merge(1, sha=OTHER, method="squash", title="T (#1)", message="m")
            assert not moved.merged and "modified" in moved.message
            done = await gh.merge(1, sha=SHA, method="squash", title="T (#1)", message="m")
            assert done.merged and done.sha and (await gh.get_pull_request(1)).merged
        finally:
            await gh.aclose()
    merge = [r for r in fake.requests if r["path"].endswith("/merge")][-1]
    assert merge["json"] == {"sha": SHA, "merge_method": "squash", "commit_title": "T (#1)", "commit_message": "m"}


async def test_errors_never_show_the_token() -> None:
    fake = FakeGitHub()
    wrong = "ghp_" + "w" * 36
    async with fake.serve():
        gh = client(fake, token=wrong)
        try:
            with pytest.raises(ForgeError, match="401 Bad credentials") as caught:
                await gh.get_pull_request(1)
        finally:
            await gh.aclose()
    assert wrong not in str(caught.value)
    with pytest.raises(ForgeError, match="no forge token"):
        GitHub(api_url=fake.api_url, repository=fake.repository, token="")
