"""`proposal.list` pages: `limit` rows, `has_more` and a cursor that continues after the last one."""

from __future__ import annotations

import pytest

from roundtable.errors import ValidationError
from roundtable.runtime import Runtime
from tests.governance.conftest import Flow, make_patch

pytestmark = pytest.mark.anyio


async def test_proposal_list_pages(rt: Runtime) -> None:
    flow = Flow(rt)
    task = await flow.task()
    await flow.claim("src/app.py")
    await flow.claim("README.txt")
    made = [
        (await flow.propose(make_patch("src/app.py", "print('v1')", "print('v2')")))["id"],
        (await flow.propose(make_patch("README.txt", "hello", "hi")))["id"],
    ]
    first = await flow.call("proposal.list", {"task_id": task, "limit": 1})
    assert [p["id"] for p in first["proposals"]] == made[:1] and first["has_more"] is True
    second = await flow.call("proposal.list", {"task_id": task, "limit": 1, "cursor": first["next_cursor"]})
    assert [p["id"] for p in second["proposals"]] == made[1:]
    assert second["has_more"] is False and second["next_cursor"] == ""
    everything = await flow.call("proposal.list", {})
    assert [p["id"] for p in everything["proposals"]] == made and everything["has_more"] is False
    with pytest.raises(ValidationError, match="other filters"):
        await flow.call("proposal.list", {"limit": 1, "cursor": first["next_cursor"]})
