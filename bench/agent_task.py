"""What one change costs an agent: calls and bytes read, per way of working, beside a shell.

`python -m bench agent_task` builds a small Python project (a package module, its tests, a
README), starts a real owner (`roundtable mcp serve`) and replays one scripted three-file change —
read, edit, propose, one revision after review, two reviews — the way an agent would, counting
every request it makes and the bytes of every result it has to read:

- **mcp**: through the MCP tools alone, over Streamable HTTP with the SDK client, each agent with
  its own credential (implementer-1; reviewer-1 and architect-1 review). Counted: every request
  after `initialize`, `tools/list` included — once per agent session, as a call and as bytes, as a
  harness reads it into its model's context — and the text of every tool result (every text block:
  what a harness shows the model). Every agent first does the briefing's start-up reads
  (`Agent.start_up`); each reviewer claims the touched files in review mode.
- **workspace**: the implementer edits in its own workspace (a git worktree the operator made for
  it, as the supervisor does for a session) with the shell-and-editor commands of the baseline,
  runs the tests there, and proposes what it changed with `workspace_propose`, which takes the
  claims and asks for review in the same call; it learns the verdict with `vote_list`. Reviews go
  through the MCP tools as in the mcp path (`proposal_get`, after the revision with
  `since_revision`, and `vote_cast`); the author gathers test evidence (`test_run`) for each
  revision, as the briefing asks.
- **shell**: the baseline — the same scenario by shell-and-editor agents sharing one git
  checkout, replayed with real commands and counting the commands and the bytes of their output.
  Nothing governs it, but a team still has to hand the change over and hear back: the author
  reads and edits as in the workspace path (`grep -n`, `sed -n`, an editor's string replacement,
  the test command) and hands the change over as a commit on a branch (`git commit` with the
  title and summary as its message; the revision is `git commit --amend`); each review is the
  commit as `git show` prints it (author, message, diff — what `proposal_get` gives), after the
  revision only what changed (`git diff work@{1} work`), and a verdict line appended to a shared
  review file (a command that prints nothing); the author reads the verdicts with `cat`.

Each way of working is one function in `PATHS` taking the prepared `Env` and returning a `Tally`;
every agent of the shell path starts with `git status` and `git log` (its table). Targets, as
multiples of the shell's calls and bytes (`FACTORS`): the MCP path 2x, the workspace path 1.2x.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.ownerproc import OwnerProcess
from bench.rows import row

BENCH = "agent_task"
# The targets, as a multiple of the shell's calls and bytes.
FACTORS = {"workspace": 1.2, "mcp": 2.0}
IMPLEMENTER = "implementer-1"
REVIEWERS = ("reviewer-1", "architect-1")
TEST_COMMAND = "unit"
TASK_TITLE = "natural_list: conjunction and Oxford comma"
# The test command runs in the sandbox, which shows the system's interpreter.
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable

# --- the project and the change ----------------------------------------------------------------


def _module() -> str:
    helpers = "".join(
        f'\n\ndef helper_{n}(value):\n    """Helper {n}: return the value with {n} added when it is a number."""\n'
        f"    if isinstance(value, int):\n        return value + {n}\n    return value\n"
        for n in range(1, 16)
    )
    return (
        '"""Lists in words."""\n\nfrom __future__ import annotations\n'
        + helpers
        + '\n\ndef natural_list(items):\n    """Join items in natural language: ["a", "b", "c"] -> "a, b and c".\n\n'
        "    >>> natural_list(['a', 'b', 'c'])\n    'a, b and c'\n    \"\"\"\n"
        "    words = [str(item) for item in items]\n"
        "    if len(words) <= 1:\n        return ''.join(words)\n"
        "    return ', '.join(words[:-1]) + ' and ' + words[-1]\n"
        + "".join(
            f'\n\ndef tail_{n}(items):\n    """The last {n} items."""\n    return list(items)[-{n}:]\n'
            for n in range(1, 11)
        )
    )


def _tests() -> str:
    cases = "".join(
        f"\n    def test_helper_{n}(self):\n        self.assertEqual(lists.helper_{n}(1), {1 + n})\n"
        for n in range(1, 11)
    )
    return (
        '"""Tests of pkg.lists."""\n\nimport unittest\n\nfrom pkg import lists\n\n\n'
        "class ListsTest(unittest.TestCase):\n" + cases + "\n    def test_natural_list(self):\n"
        "        self.assertEqual(lists.natural_list(['a', 'b', 'c']), 'a, b and c')\n"
        "\n\nif __name__ == '__main__':\n    unittest.main()\n"
    )


def _readme() -> str:
    sections = "".join(f"\n## Section {n}\n\nSome prose about part {n} of the package.\n" for n in range(1, 13))
    return (
        "# pkg\n\nSmall helpers for lists.\n"
        + sections
        + "\n## natural_list\n\n```python\nnatural_list(['a', 'b', 'c'])  # 'a, b and c'\n```\n"
    )


FILES: dict[str, str] = {
    "pkg/__init__.py": "",
    "pkg/lists.py": _module(),
    "tests/__init__.py": "",
    "tests/test_lists.py": _tests(),
    "README.md": _readme(),
}
CHANGED = ("pkg/lists.py", "tests/test_lists.py", "README.md")

OLD_DEF = "def natural_list(items):\n"
NEW_DEF = "def natural_list(items, conjunction='and', oxford=False):\n"
OLD_JOIN = "    return ', '.join(words[:-1]) + ' and ' + words[-1]\n"
NEW_JOIN = (
    "    comma = ',' if oxford and len(words) > 2 else ''\n"
    "    return ', '.join(words[:-1]) + comma + ' ' + conjunction + ' ' + words[-1]\n"
)
OLD_TEST = "        self.assertEqual(lists.natural_list(['a', 'b', 'c']), 'a, b and c')\n"
NEW_TEST = OLD_TEST + (
    "\n    def test_natural_list_conjunction(self):\n"
    "        self.assertEqual(lists.natural_list(['a', 'b', 'c'], 'or', oxford=True), 'a, b, or c')\n"
)
OLD_README = "natural_list(['a', 'b', 'c'])  # 'a, b and c'\n"
NEW_README = OLD_README + "natural_list(['a', 'b', 'c'], 'or', oxford=True)  # 'a, b, or c'\n"
# The revision the review asks for: one token.
OLD_REV = "oxford=False"
NEW_REV = "oxford: bool = False"

EDITS: list[dict[str, str]] = [
    {"path": "pkg/lists.py", "old_string": OLD_DEF, "new_string": NEW_DEF},
    {"path": "pkg/lists.py", "old_string": OLD_JOIN, "new_string": NEW_JOIN},
    {"path": "tests/test_lists.py", "old_string": OLD_TEST, "new_string": NEW_TEST},
    {"path": "README.md", "old_string": OLD_README, "new_string": NEW_README},
]
REVISION_EDITS: list[dict[str, str]] = [{"path": "pkg/lists.py", "old_string": OLD_REV, "new_string": NEW_REV}]
SUMMARY = "Adds conjunction and oxford to natural_list, with a test and README usage."
REVISE_REASON = "Annotate oxford: `oxford: bool = False`."


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def make_project(root: Path) -> None:
    """The project: FILES committed in a git repository, roundtable initialised, and a test
    command that takes paths (`unit`)."""
    from roundtable.scaffold import init_project

    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".roundtable/\n", encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    init_project(root)
    config = root / ".roundtable" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + f"workspaces:\n  dir: {root.parent / 'workspaces'}\n")
    policy = root / "POLICIES.ROUNDTABLE.md"
    text = policy.read_text(encoding="utf-8")
    argv = f'["{PYTHON}", "-m", "unittest", "-q", "{{paths}}"]'
    policy.write_text(text.replace("  commands: {}\n", f"  commands:\n    {TEST_COMMAND}: {argv}\n"), encoding="utf-8")


async def create_task(root: Path) -> str:
    """The operator's task, created before the agents start (their briefing names it)."""
    from roundtable.runtime import Runtime

    async with await Runtime.open(root) as runtime:
        out = await runtime.call("task.create", {"title": TASK_TITLE, "body_md": "Add conjunction and oxford."})
    return str(out["task"]["id"])


# --- tallies --------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one way of working cost: requests made and bytes read (text results; `tools/list`
    on its own), with each step for the report."""

    calls: int = 0
    text_bytes: int = 0
    list_bytes: int = 0
    steps: list[tuple[str, int]] = field(default_factory=list)

    def add(self, name: str, size: int) -> None:
        self.calls += 1
        self.text_bytes += size
        self.steps.append((name, size))


@dataclass
class Env:
    """The prepared project, the running owner, and the credentials of each agent."""

    root: Path
    url: str
    auth: Callable[[str], dict[str, str]]
    task_id: str = ""


class Agent:
    """One agent's MCP session (SDK client, Streamable HTTP, its own bearer credential); every
    request is counted on the shared tally."""

    def __init__(self, env: Env, agent_id: str, tally: Tally, stack: AsyncExitStack) -> None:
        self.env, self.agent_id, self.tally, self.stack = env, agent_id, tally, stack
        self.session: Any = None

    async def open(self) -> Agent:
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers=self.env.auth(self.agent_id), timeout=httpx2.Timeout(60.0, read=600.0))
        read, write = await self.stack.enter_async_context(streamable_http_client(self.env.url, http_client=client))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        listed = await self.session.list_tools()
        size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
        # Read into the model's context once per agent session: a call and its bytes.
        self.tally.add(f"{self.agent_id} tools/list", size)
        self.tally.list_bytes += size
        return self

    async def start_up(self, task_id: str) -> None:
        """The briefing's start-up checklist: the table, memory, the task, one's own claims."""
        await self.call("table_get_state", {})
        await self.call("memory_query", {"query": ""})
        await self.call("task_get", {"task_id": task_id})
        await self.call("resource_claim_status", {"agent_id": self.agent_id})

    async def claim_for_review(self, task_id: str) -> None:
        """The reviewer's briefing: claim the touched files in review mode."""
        for path in CHANGED:
            await self.call(
                "resource_claim", {"resource_type": "file", "claim_type": "review", "task_id": task_id, "path": path}
            )

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        import yaml

        result = await self.session.call_tool(tool, args)
        # What the harness shows the model: every text block (JSON first; a diff may follow).
        texts = [getattr(part, "text", "") for part in result.content]
        self.tally.add(f"{self.agent_id} {tool}", sum(len(text.encode("utf-8")) for text in texts))
        if result.is_error:
            raise RuntimeError(f"{tool} refused: {''.join(texts)}")
        if result.structured_content is not None:
            return dict(result.structured_content)
        return yaml.safe_load(texts[0])  # type: ignore[no-any-return]  # an agent's compact rendering


# --- the ways of working ----------------------------------------------------------------------------


async def reviewers_start(first: Agent, second: Agent, task_id: str) -> None:
    """What each reviewer's briefing asks before it reads the change: start-up reads, review claims."""
    for reviewer in (first, second):
        await reviewer.start_up(task_id)
        await reviewer.claim_for_review(task_id)


async def mcp_path(env: Env) -> Tally:
    """The change through the MCP tools alone."""
    tally = Tally()
    async with AsyncExitStack() as stack:
        me = await Agent(env, IMPLEMENTER, tally, stack).open()
        task_id = env.task_id
        await me.start_up(task_id)
        found = await me.call("repo_search", {"query": "natural_list", "context_lines": 2})
        line = next(m["line"] for m in found["matches"] if m["path"] == "pkg/lists.py" and "def " in m["content"])
        await me.call("repo_read_file", {"path": "pkg/lists.py", "start_line": line, "end_line": line + 12})
        for path in CHANGED:
            await me.call(
                "resource_claim",
                {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": path},
            )
        created = await me.call(
            "proposal_create",
            {
                "task_id": task_id,
                "title": TASK_TITLE,
                "summary_md": SUMMARY,
                "edits": EDITS,
            },
        )
        pid = created["proposal"]["id"]
        await me.call("test_run", {"command": TEST_COMMAND, "proposal_id": pid, "paths": ["tests/test_lists.py"]})
        await me.call("proposal_request_review", {"proposal_id": pid})

        first, second = [await Agent(env, who, tally, stack).open() for who in REVIEWERS]
        await reviewers_start(first, second, env.task_id)
        await first.call("proposal_get", {"proposal_id": pid})
        await first.call(
            "vote_cast",
            {
                "proposal_id": pid,
                "vote": "revise",
                "reason_md": REVISE_REASON,
                "confidence": 0.9,
            },
        )
        await me.call("vote_list", {"proposal_id": pid})
        await me.call("proposal_attach_patch", {"proposal_id": pid, "edits": REVISION_EDITS})  # stays in review
        await me.call("test_run", {"command": TEST_COMMAND, "proposal_id": pid, "paths": ["tests/test_lists.py"]})
        await first.call("proposal_get", {"proposal_id": pid, "since_revision": 1})
        await first.call(
            "vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Thanks.", "confidence": 0.9}
        )
        await second.call("proposal_get", {"proposal_id": pid})
        await second.call("vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Fits.", "confidence": 0.8})
        await me.call("patch_validate", {"proposal_id": pid})
    return tally


def _run(root: Path, argv: list[str], tally: Tally, name: str) -> str:
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True)
    output = done.stdout + done.stderr
    tally.add(name, len(output.encode("utf-8")))
    return output


def _edit(root: Path, edit: dict[str, str], tally: Tally) -> None:
    """An editor's string replacement (Claude Code's Edit, say): it answers with a short note."""
    path = root / edit["path"]
    text = path.read_text(encoding="utf-8")
    assert text.count(edit["old_string"]) == 1, edit
    path.write_text(text.replace(edit["old_string"], edit["new_string"]), encoding="utf-8")
    tally.add("edit", len(f"The file {edit['path']} has been updated.".encode()))


def _say(root: Path, line: str, tally: Tally, name: str) -> None:
    """Append one line to the shared review file, as a shell-world reviewer records its verdict
    (and as nothing else would reach the author): a real command, which prints nothing."""
    _run(root, ["sh", "-c", f"printf '%s\\n' {shlex.quote(line)} >> ../reviews.txt"], tally, name)


async def shell_path(env: Env) -> Tally:
    """The baseline: the same scenario by shell-and-editor agents sharing one checkout.

    A proposal is a commit on a branch (`work`, made with the checkout and not counted, as the
    workspace is not) and a revision is that commit amended: the author hands the change over
    with `git commit` (title and summary as its message) and the revision with `git commit
    --amend`, and reads the verdicts with `cat`. A reviewer reads the proposal as git shows a
    commit (`git show`: author, message and diff — what `proposal_get` gives), after a revision
    only what changed (`git diff work@{1} work`, as `since_revision` gives it), and writes its
    verdict as one line of a shared review file."""
    tally = Tally()
    root = env.root.parent / "shell-checkout"
    _git(env.root.parent, "clone", "-q", str(env.root), str(root))
    _git(root, "switch", "-q", "-c", "work")
    test = [PYTHON, "-m", "unittest", "-q", "tests/test_lists.py"]
    commit = ["git", "-c", f"user.name={IMPLEMENTER}", "-c", f"user.email={IMPLEMENTER}@localhost", "commit", "-a"]
    # Each agent's start-up: where the work stands (the shell's table is git).
    for who in (IMPLEMENTER, *REVIEWERS):
        _run(root, ["git", "status", "--short", "--branch"], tally, f"{who} git status")
        _run(root, ["git", "log", "--oneline", "-5"], tally, f"{who} git log")
    # implementer-1: read, edit, test, hand over.
    grep = _run(root, ["grep", "-rn", "natural_list", "pkg", "tests", "README.md"], tally, "grep -rn")
    line = next(int(x.split(":")[1]) for x in grep.splitlines() if x.startswith("pkg/lists.py") and "def " in x)
    _run(root, ["sed", "-n", f"{line},{line + 12}p", "pkg/lists.py"], tally, "sed -n")
    for edit in EDITS:
        _edit(root, edit, tally)
    _run(root, test, tally, "unittest")
    _run(root, [*commit, "-m", TASK_TITLE, "-m", SUMMARY], tally, "git commit")
    # reviewer-1 reads the change and asks for a revision.
    first, second = REVIEWERS
    _run(root, ["git", "show", "work"], tally, f"{first} git show")
    _say(root, f"{first} revise: {REVISE_REASON}", tally, f"{first} verdict")
    # implementer-1 reads the verdict, revises, tests, hands the revision over.
    _run(root, ["cat", "../reviews.txt"], tally, "cat reviews")
    for edit in REVISION_EDITS:
        _edit(root, edit, tally)
    _run(root, test, tally, "unittest")
    _run(root, [*commit, "--amend", "--no-edit"], tally, "git commit --amend")
    # reviewer-1 reads what changed; architect-1 reads the whole change; both approve.
    _run(root, ["git", "diff", "work@{1}", "work"], tally, f"{first} git diff (revision)")
    _say(root, f"{first} approve: Thanks.", tally, f"{first} verdict")
    _run(root, ["git", "show", "work"], tally, f"{second} git show")
    _say(root, f"{second} approve: Fits.", tally, f"{second} verdict")
    return tally


async def make_workspace(root: Path, task_id: str) -> Path:
    """The implementer's workspace for the task, made by the operator (not counted: the shell's
    checkout is not counted either)."""
    from roundtable.runtime import Runtime

    async with await Runtime.open(root) as runtime:
        out = await runtime.call("workspace.create", {"agent_id": IMPLEMENTER, "task_id": task_id})
    return Path(out["workspace"]["path"])


async def workspace_path(env: Env) -> Tally:
    """The change edited natively in the implementer's workspace and proposed from it."""
    tally = Tally()
    ws = await make_workspace(env.root, env.task_id)
    test = [PYTHON, "-m", "unittest", "-q", "tests/test_lists.py"]
    async with AsyncExitStack() as stack:
        me = await Agent(env, IMPLEMENTER, tally, stack).open()
        await me.start_up(env.task_id)
        grep = _run(ws, ["grep", "-rn", "natural_list", "pkg", "tests", "README.md"], tally, "grep -rn")
        line = next(int(x.split(":")[1]) for x in grep.splitlines() if x.startswith("pkg/lists.py") and "def " in x)
        _run(ws, ["sed", "-n", f"{line},{line + 12}p", "pkg/lists.py"], tally, "sed -n")
        for edit in EDITS:
            _edit(ws, edit, tally)
        _run(ws, test, tally, "unittest")
        proposed = await me.call(
            "workspace_propose",
            {
                "task_id": env.task_id,
                "title": TASK_TITLE,
                "summary_md": SUMMARY,
            },
        )
        pid = proposed["proposal"]["id"]  # and its review requested
        evidence = {"command": TEST_COMMAND, "proposal_id": pid, "paths": ["tests/test_lists.py"]}
        await me.call("test_run", evidence)  # the briefing's evidence, bound to the revision

        first, second = [await Agent(env, who, tally, stack).open() for who in REVIEWERS]
        await reviewers_start(first, second, env.task_id)
        await first.call("proposal_get", {"proposal_id": pid})
        await first.call(
            "vote_cast",
            {
                "proposal_id": pid,
                "vote": "revise",
                "reason_md": REVISE_REASON,
                "confidence": 0.9,
            },
        )
        await me.call("vote_list", {"proposal_id": pid})
        for edit in REVISION_EDITS:
            _edit(ws, edit, tally)
        _run(ws, test, tally, "unittest")
        await me.call("workspace_propose", {"task_id": env.task_id})
        await me.call("test_run", evidence)
        await first.call("proposal_get", {"proposal_id": pid, "since_revision": 1})
        await first.call(
            "vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Thanks.", "confidence": 0.9}
        )
        await second.call("proposal_get", {"proposal_id": pid})
        await second.call("vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Fits.", "confidence": 0.8})
    return tally


PATHS: dict[str, Callable[[Env], Awaitable[Tally]]] = {
    "mcp": mcp_path,
    "workspace": workspace_path,
    "shell": shell_path,
}


# --- running ------------------------------------------------------------------------------------------


def measure(selected: tuple[str, ...] = tuple(PATHS), port: int = 0) -> dict[str, Tally]:
    """Run each selected way of working on a fresh project with its own owner."""
    out: dict[str, Tally] = {}
    for name in selected:
        tmp = Path(tempfile.mkdtemp(prefix="rtat", dir="/tmp"))
        try:
            root = tmp / "project"
            root.mkdir()
            make_project(root)
            task_id = asyncio.run(create_task(root))
            if name == "shell":
                out[name] = asyncio.run(PATHS[name](Env(root, "", lambda _agent: {})))
                continue
            owner = OwnerProcess(root).start(port=port)
            try:
                out[name] = asyncio.run(PATHS[name](Env(root, owner.url, owner.auth_for, task_id)))
            finally:
                owner.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def rows_of(tallies: dict[str, Tally]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    shell = tallies.get("shell")
    if shell is not None:
        rows.append(
            row(
                BENCH,
                "shell calls",
                shell.calls,
                "calls",
                "replayed: grep, sed -n, edits, tests, git commit/--amend, git show/diff, verdict lines, cat",
            )
        )
        rows.append(row(BENCH, "shell output", round(shell.text_bytes / 1024, 1), "KB", "bytes the commands printed"))
    for name, tally in tallies.items():
        if name == "shell":
            continue
        factor = FACTORS[name]
        calls_target = bytes_target = f"<= {factor:g}x shell"
        if shell is not None:
            calls_target = f"<= {factor * shell.calls:g} ({factor:g}x shell)"
            bytes_target = f"<= {factor * shell.text_bytes / 1024:.1f} ({factor:g}x shell)"
        rows.append(row(BENCH, f"{name} calls", tally.calls, "calls", "tools/list included", target=calls_target))
        rows.append(
            row(
                BENCH,
                f"{name} bytes read",
                round(tally.text_bytes / 1024, 1),
                "KB",
                "every tools/list, every tool result's text (and, in a workspace, every command's output)",
                target=bytes_target,
            )
        )
        rows.append(
            row(
                BENCH,
                f"{name} tools/list",
                round(tally.list_bytes / 1024, 1),
                "KB",
                "all agents' listings, counted above",
            )
        )
        if shell is not None:
            rows.append(row(BENCH, f"{name} calls ratio", round(tally.calls / shell.calls, 2), "x shell", ""))
            rows.append(row(BENCH, f"{name} bytes ratio", round(tally.text_bytes / shell.text_bytes, 2), "x shell", ""))
    return rows


def run() -> list[dict[str, Any]]:
    """For `python -m bench agent_task [--port N]` (the port comes as `BENCH_PORT`)."""
    import os

    return rows_of(measure(port=int(os.environ.get("BENCH_PORT") or 0)))


def main(argv: list[str]) -> None:
    """`python -m bench.agent_task [--port N] [PATH ...]`: every step of each path, then the ratios."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.agent_task")
    parser.add_argument("--port", type=int, default=0, help="the owner's HTTP port (default: a free one)")
    parser.add_argument("paths", nargs="*", help=f"ways of working among {', '.join(PATHS)} (default: all)")
    args = parser.parse_args(argv)
    tallies = measure(tuple(args.paths) or tuple(PATHS), port=args.port)
    for name, tally in tallies.items():
        print(f"== {name}: {tally.calls} calls, {tally.text_bytes} bytes read, tools/list {tally.list_bytes} bytes")
        for step, size in tally.steps:
            print(f"   {step:<40} {size:>7}")
    shell = tallies.get("shell")
    if shell is not None:
        for name, tally in tallies.items():
            if name != "shell":
                print(
                    f"{name}: {tally.calls / shell.calls:.2f}x the shell's calls, "
                    f"{tally.text_bytes / shell.text_bytes:.2f}x its bytes (target {FACTORS[name]:g}x)"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
