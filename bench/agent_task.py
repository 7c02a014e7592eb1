"""What one change costs an agent: calls and bytes read, per way of working, beside a shell.

`python -m bench agent_task` builds a small Python package the size of the reference change
(`wordsmith`: a 1 KB lists module, its 0.8 KB tests, a 5.4 KB README, another module and its
tests), starts a real owner (`roundtable mcp serve`) and replays one change — `natural_list` gets
a conjunction and an optional Oxford comma: three files, one revision after a review, two
approvals — the way agents would, counting every request they make and the bytes of every answer
they read:

- **shell**: the baseline — the same scenario by shell-and-editor agents sharing one git
  checkout, replayed with real commands. The author does what a competent developer does: finds
  the code (`grep -rn`), reads every file it changes in full (`cat -n`, as an editor's Read
  shows it; Claude Code's Edit refuses a file not read first), edits (an editor's string
  replacement, which answers with a one-line note), runs the tests, looks at its diff and
  commits on a branch (the revision: `git commit --amend`). Each reviewer reads the commit as
  `git show` prints it (after the revision only what changed, `git diff work@{1} work`) and
  appends a verdict line to a shared review file; the author reads the verdicts with `cat`.
  Every agent starts with `git status` and `git log` (its table).
- **workspace**: the author is a harness with its own editor, shell and search in its workspace
  (a git worktree; `?tools=workspace`, the listing a supervised session in a workspace gets):
  it reads, edits, tests and diffs there with the shell path's commands, proposes with
  `workspace_propose` (claims and review request in the same call), gathers the test evidence
  the briefing asks for (`test_run` on each revision) and learns the verdict with `vote_list`.
- **mcp**: the author has no editor: it finds and reads the same files through `repo_search`
  and `repo_read_file`, claims them in one `resource_claim`, proposes them as `edits` (the answer
  shows the diff it built), runs `test_run`, asks for review; the revision is
  `proposal_attach_patch` (review stays requested).

On both tools paths each agent (implementer-1; reviewer-1 and architect-1 review, the approvals
the policy asks for) has its own credential and MCP session (SDK client, Streamable HTTP), and
does what the briefing asks: its start-up read (`table_watch`: what concerns it; the author also
reads its task with `task_get`), the reviewers' review claims (one `resource_claim` with `paths`),
`proposal_get` (after the revision `since_revision`) and `vote_cast`. Counted on the tools paths,
once per agent session, as one call: what a harness reads into its model's context when it
connects — the server's `instructions` and its `tools/list` as the harness hands it to the model
(each tool's name, description and input schema; measured with Claude Code 2.1 and Codex 0.171
against a stub model API: neither passes the annotations on). Every tool result counts by its text
blocks (what both harnesses hand their model); every command by its output. The shell pays
nothing for its own tools, nor do the tools paths for the harness's native ones.

Each way of working is one function in `PATHS` taking the prepared `Env` and returning a `Tally`.
Targets, as multiples of the shell's calls and bytes (`FACTORS`): the MCP path 2x, the workspace
path 1.2x.
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
FACTORS = {"workspace": 1.2, "workspace-mcp": 1.2, "mcp": 2.0}
IMPLEMENTER = "implementer-1"
REVIEWERS = ("reviewer-1", "architect-1")
TEST_COMMAND = "unit"
TASK_TITLE = "natural_list: a custom conjunction and an optional Oxford comma"
TASK_BODY = (
    "natural_list always joins the last item with 'and' and never puts a comma before it. Let callers "
    "choose the word (conjunction, default 'and') and ask for an Oxford comma (oxford, default False) "
    "without changing the default output; add tests and update the README's example."
)
# The test command runs in the sandbox, which shows the system's interpreter.
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable

# --- the project and the change -----------------------------------------------------------------

LISTS_PY = '''"""Lists in words: join items the way a person would write them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["natural_list"]


def natural_list(items: Iterable[Any]) -> str:
    """Join items into a phrase a reader expects.

    Each item is converted with ``str``. One item is returned alone, two are joined with
    "and", and longer lists put commas between all but the last two.

    Examples:
        >>> natural_list(["one", "two", "three"])
        'one, two and three'
        >>> natural_list(["tea", "coffee"])
        'tea and coffee'
        >>> natural_list([42])
        '42'

    Args:
        items: The items to join, in order.

    Returns:
        The joined phrase; an empty string for no items.
    """
    words = [str(item) for item in items]
    if len(words) <= 1:
        return "".join(words)
    if len(words) == 2:
        return f"{words[0]} and {words[1]}"
    return ", ".join(words[:-1]) + f" and {words[-1]}"
'''

TEST_LISTS_PY = '''"""Tests of wordsmith.lists."""

import unittest

from wordsmith.lists import natural_list


class NaturalListTest(unittest.TestCase):
    def test_joins(self) -> None:
        cases = [
            ([], ""),
            (["one"], "one"),
            (["one", "two"], "one and two"),
            (["one", "two", "three"], "one, two and three"),
            ([1, 2, 3, 4], "1, 2, 3 and 4"),
            (("tea", "coffee"), "tea and coffee"),
        ]
        for items, expected in cases:
            with self.subTest(items=items):
                self.assertEqual(natural_list(items), expected)

    def test_accepts_any_iterable(self) -> None:
        self.assertEqual(natural_list(iter(["a", "b", "c"])), "a, b and c")
        self.assertEqual(natural_list(x for x in "ab"), "a and b")


if __name__ == "__main__":
    unittest.main()
'''

NUMBER_PY = '''"""Numbers in words: ordinals, thousands separators and the small numbers spelled out."""

from __future__ import annotations

__all__ = ["apnumber", "intcomma", "ordinal"]

_SMALL = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def ordinal(value: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 23 -> '23rd'."""
    if value % 100 in (11, 12, 13):
        return f"{value}th"
    return f"{value}" + {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")


def intcomma(value: int | float, separator: str = ",") -> str:
    """Thousands separated: 1234567 -> '1,234,567'; floats keep their fraction."""
    whole, _, fraction = f"{value}".partition(".")
    sign = "-" if whole.startswith("-") else ""
    digits = whole.lstrip("-")
    groups = []
    while digits:
        groups.append(digits[-3:])
        digits = digits[:-3]
    text = sign + separator.join(reversed(groups))
    return f"{text}.{fraction}" if fraction else text


def apnumber(value: int) -> str:
    """Associated Press style: the numbers below ten spelled out, the rest as digits."""
    return _SMALL[value] if 0 <= value < 10 else str(value)
'''

TEST_NUMBER_PY = '''"""Tests of wordsmith.number."""

import unittest

from wordsmith.number import apnumber, intcomma, ordinal


class NumberTest(unittest.TestCase):
    def test_ordinal(self) -> None:
        for value, expected in [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (112, "112th"), (23, "23rd")]:
            with self.subTest(value=value):
                self.assertEqual(ordinal(value), expected)

    def test_intcomma(self) -> None:
        self.assertEqual(intcomma(1234567), "1,234,567")
        self.assertEqual(intcomma(-1234), "-1,234")
        self.assertEqual(intcomma(1234.5), "1,234.5")
        self.assertEqual(intcomma(999), "999")
        self.assertEqual(intcomma(1000000, "."), "1.000.000")

    def test_apnumber(self) -> None:
        self.assertEqual(apnumber(0), "zero")
        self.assertEqual(apnumber(9), "nine")
        self.assertEqual(apnumber(10), "10")


if __name__ == "__main__":
    unittest.main()
'''

INIT_PY = '''"""wordsmith: numbers, sizes and lists in words a reader expects."""

from wordsmith.lists import natural_list
from wordsmith.number import apnumber, intcomma, ordinal

__all__ = ["apnumber", "intcomma", "natural_list", "ordinal"]
__version__ = "1.4.0"
'''

README_SECTIONS = [
    (
        "Installation",
        "From PyPI:\n\n```sh\npython -m pip install wordsmith\n```\n\nwordsmith has no dependencies "
        "beyond the standard library and supports every Python version that still receives security fixes. "
        "Wheels are pure Python, so they install on any platform.",
    ),
    (
        "Why",
        "Programs speak to people in logs, reports and user interfaces. A count of 1234567 reads better as "
        "1,234,567; the third item of a list reads better as 3rd; and a list of names reads better joined the way "
        "a person would write it. wordsmith collects the small functions that every project ends up writing for "
        "this, with their edge cases settled and tested once.",
    ),
    (
        "Numbers",
        "```pycon\n>>> import wordsmith\n>>> wordsmith.intcomma(1234567)\n'1,234,567'\n>>> "
        "wordsmith.intcomma(1234.5)\n'1,234.5'\n>>> wordsmith.intcomma(1000000, '.')\n'1.000.000'\n>>> "
        "wordsmith.ordinal(2)\n'2nd'\n>>> wordsmith.ordinal(111)\n'111th'\n>>> wordsmith.apnumber(7)\n'seven'\n"
        ">>> wordsmith.apnumber(12)\n'12'\n```\n\n`intcomma` keeps the fraction of a float as it is printed and "
        "takes the separator as its second argument, so a caller that formats for another locale passes its own. "
        "`ordinal` follows English usage, including the teens (11th, 12th, 13th). `apnumber` spells out the "
        "numbers below ten, as the Associated Press style guide asks, and leaves the others as digits.",
    ),
    (
        "Lists",
        "```pycon\n>>> wordsmith.natural_list(['one', 'two', 'three'])\n'one, two and three'\n>>> "
        "wordsmith.natural_list(['tea', 'coffee'])\n'tea and coffee'\n>>> wordsmith.natural_list([42])\n'42'\n```\n\n"
        "`natural_list` converts each item with `str`, so numbers and other objects can be joined directly. An "
        "empty list gives an empty string.",
    ),
    (
        "Sizes",
        "```pycon\n>>> wordsmith.naturalsize(3000000)\n'3.0 MB'\n>>> wordsmith.naturalsize(3000000, binary=True)\n"
        "'2.9 MiB'\n>>> wordsmith.naturalsize(512)\n'512 Bytes'\n```\n\n`naturalsize` uses decimal units by default "
        "(kB, MB, GB), as disk makers and network speeds do; `binary=True` switches to the IEC units (KiB, MiB, "
        "GiB) that memory sizes use. The number of digits after the point is one by default and can be set with "
        "`precision`. Negative sizes keep their sign, which is useful for differences between two measurements.",
    ),
    (
        "Command line",
        "The package installs no command of its own, but every function is easy to call from a "
        "shell with `python -c`:\n\n```sh\npython -c 'import wordsmith; print(wordsmith.intcomma(2**40))'\n```\n\n"
        "Scripts that print tables of numbers often pipe their output through a small wrapper that applies "
        "`intcomma` to every integer column; the examples directory of the repository has one.",
    ),
    (
        "Frequently asked questions",
        "**Why not use the locale module?** `locale` changes the formatting of the "
        "whole process and depends on which locales the system has installed; wordsmith's functions are pure and "
        "give the same answer everywhere.\n\n**Why is there no Oxford comma?** Style guides disagree, and the first "
        "versions followed the one the authors used. A keyword argument to choose is a welcome addition, as long as "
        "the default output stays the same.\n\n**Can I join with a word other than 'and'?** Not yet; see the "
        "previous answer.\n\n**Does it handle very large numbers?** Yes: Python's integers have no fixed size, and "
        "`intcomma` works on their decimal text.",
    ),
    (
        "Related projects",
        'Larger libraries cover dates, times and relative times ("3 minutes ago") as well as '
        "translations into dozens of languages. wordsmith stays small on purpose: it is meant to be vendored or "
        "depended on without pulling in locale data, and its whole source fits on a few screens.",
    ),
    (
        "Localisation",
        "The functions above speak English. A project that needs other languages can wrap them: "
        "`intcomma` takes its separator, and the words used by `apnumber` and `natural_list` are short enough to "
        "be replaced by a translation table. Translations are not shipped with the package; contributions that "
        "add a mechanism for them are welcome if they keep the default behaviour unchanged.",
    ),
    (
        "Performance",
        "Every function is linear in the length of its input and allocates only the result. "
        "`intcomma` on a million numbers takes about half a second on a laptop; `natural_list` is dominated by "
        "the `str` conversion of its items. None of the functions cache anything, so they are safe to call from "
        "several threads.",
    ),
    (
        "Versioning",
        "wordsmith follows semantic versioning. A function's output for a given input is part of "
        "its interface: changing it, even to fix a typographical detail, is a breaking change and waits for the "
        "next major version, unless the old output was plainly a bug. New keyword arguments with defaults that "
        "keep the old output are minor changes.",
    ),
    (
        "Contributing",
        "Issues and pull requests are welcome. Please run the tests before you send a change:\n\n"
        "```sh\npython -m unittest\n```\n\nEvery change that alters an output needs a test that shows the new "
        "output, and a line in the changelog. Keep functions small and free of dependencies; a function that "
        "needs a third-party package belongs in another project. Documentation lives in this README: describe "
        "each new argument in the section of its function, with an example.",
    ),
    (
        "Changelog",
        "- 1.4.0: `intcomma` takes a separator.\n- 1.3.0: `natural_list` accepts any iterable.\n"
        "- 1.2.0: `apnumber`.\n- 1.1.0: `ordinal` handles negative numbers.\n- 1.0.0: first stable release.",
    ),
    (
        "License",
        "MIT. See the LICENSE file; the copyright holders are the contributors listed in the project's history.",
    ),
]


def _readme() -> str:
    body = "".join(f"\n## {title}\n\n{text}\n" for title, text in README_SECTIONS)
    return "# wordsmith\n\nNumbers, sizes and lists in the words a reader expects.\n" + body


FILES: dict[str, str] = {
    "wordsmith/__init__.py": INIT_PY,
    "wordsmith/lists.py": LISTS_PY,
    "wordsmith/number.py": NUMBER_PY,
    "tests/__init__.py": "",
    "tests/test_lists.py": TEST_LISTS_PY,
    "tests/test_number.py": TEST_NUMBER_PY,
    "README.md": _readme(),
    "pyproject.toml": '[project]\nname = "wordsmith"\nversion = "1.4.0"\nrequires-python = ">=3.10"\n',
}

CHANGED = ("wordsmith/lists.py", "tests/test_lists.py", "README.md")
TESTS = "tests/test_lists.py"

# The change: the signature, its documentation and the join (lists.py), a test, the README's example.
EDITS: list[dict[str, str]] = [
    {
        "path": "wordsmith/lists.py",
        "old_string": (
            "def natural_list(items: Iterable[Any]) -> str:\n"
            '    """Join items into a phrase a reader expects.\n\n'
            "    Each item is converted with ``str``. One item is returned alone, two are joined with\n"
            '    "and", and longer lists put commas between all but the last two.\n'
        ),
        "new_string": (
            'def natural_list(items: Iterable[Any], conjunction: str = "and", oxford: bool = False) -> str:\n'
            '    """Join items into a phrase a reader expects.\n\n'
            "    Each item is converted with ``str``. One item is returned alone, two are joined with\n"
            "    the conjunction, and longer lists put commas between all but the last two (and before\n"
            "    the conjunction too, with the Oxford comma).\n"
        ),
    },
    {
        "path": "wordsmith/lists.py",
        "old_string": "        items: The items to join, in order.\n",
        "new_string": (
            "        items: The items to join, in order.\n"
            '        conjunction: The word before the last item ("and", "or", ...).\n'
            "        oxford: Put a comma before the conjunction of three or more items.\n"
        ),
    },
    {
        "path": "wordsmith/lists.py",
        "old_string": (
            '        return f"{words[0]} and {words[1]}"\n    return ", ".join(words[:-1]) + f" and {words[-1]}"\n'
        ),
        "new_string": (
            '        return f"{words[0]} {conjunction} {words[1]}"\n'
            '    comma = "," if oxford else ""\n'
            '    return ", ".join(words[:-1]) + f"{comma} {conjunction} {words[-1]}"\n'
        ),
    },
    {
        "path": "tests/test_lists.py",
        "old_string": '        self.assertEqual(natural_list(x for x in "ab"), "a and b")\n',
        "new_string": (
            '        self.assertEqual(natural_list(x for x in "ab"), "a and b")\n\n'
            "    def test_conjunction_and_oxford_comma(self) -> None:\n"
            '        self.assertEqual(natural_list(["a", "b"], conjunction="or"), "a or b")\n'
            '        self.assertEqual(natural_list(["a", "b", "c"], conjunction="or", oxford=True), "a, b, or c")\n'
            '        self.assertEqual(natural_list(["a", "b"], oxford=True), "a and b")\n'
        ),
    },
    {
        "path": "README.md",
        "old_string": ">>> wordsmith.natural_list([42])\n'42'\n```\n",
        "new_string": (
            ">>> wordsmith.natural_list([42])\n'42'\n"
            ">>> wordsmith.natural_list(['tea', 'coffee', 'juice'], conjunction='or', oxford=True)\n"
            "'tea, coffee, or juice'\n```\n"
        ),
    },
]
# The revision the review asks for: the options keyword-only.
REVISION_EDITS: list[dict[str, str]] = [
    {
        "path": "wordsmith/lists.py",
        "old_string": "items: Iterable[Any], conjunction:",
        "new_string": "items: Iterable[Any], *, conjunction:",
    }
]
SUMMARY = (
    "natural_list takes the word before the last item (conjunction, default 'and') and an optional "
    "Oxford comma (oxford, default False); the default output is unchanged. A test for both, and the "
    "README's example."
)
REVISE_REASON = (
    "Make conjunction and oxford keyword-only (`*,`): a positional `natural_list(xs, 'or', True)` reads "
    "badly and would pin the order of the options for good."
)


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
        out = await runtime.call("task.create", {"title": TASK_TITLE, "body_md": TASK_BODY})
    return str(out["task"]["id"])


# --- tallies --------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one way of working cost: requests made and bytes read (text results; each agent's
    session set-up — instructions and `tools/list` — on its own), with each step for the report."""

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


def model_view(listed: Any) -> int:
    """The bytes of a `tools/list` as a harness hands it to its model: each tool's name,
    description and input schema (Claude Code 2.1 and Codex 0.171 pass nothing else on)."""
    import json

    tools = [{"name": t.name, "description": t.description or "", "input_schema": t.input_schema} for t in listed.tools]
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class Agent:
    """One agent's MCP session (SDK client, Streamable HTTP, its own bearer credential; `kind`
    names the session's kind in the URL, `workspace` for a harness in its workspace); every
    request is counted on the shared tally."""

    def __init__(self, env: Env, agent_id: str, tally: Tally, stack: AsyncExitStack, kind: str = "") -> None:
        self.env, self.agent_id, self.tally, self.stack, self.kind = env, agent_id, tally, stack, kind
        self.session: Any = None

    async def open(self) -> Agent:
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        url = f"{self.env.url}?tools={self.kind}" if self.kind else self.env.url
        client = httpx2.AsyncClient(headers=self.env.auth(self.agent_id), timeout=httpx2.Timeout(60.0, read=600.0))
        read, write = await self.stack.enter_async_context(streamable_http_client(url, http_client=client))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        init = await self.session.initialize()
        listed = await self.session.list_tools()
        # Read into the model's context once per agent session: one step, its bytes counted.
        size = len((init.instructions or "").encode("utf-8")) + model_view(listed)
        self.tally.add(f"{self.agent_id} instructions + tools/list", size)
        self.tally.list_bytes += size
        return self

    async def start_up(self) -> dict[str, Any]:
        """The briefing's start-up read: what concerns the agent (its tasks, claims, proposals,
        reviews asked of it, memory headlines), in one call."""
        return await self.call("table_watch", {})

    async def claim_for_review(self, task_id: str) -> None:
        """The reviewer's briefing: claim the touched files in review mode (one call)."""
        args = {"resource_type": "file", "claim_type": "review", "task_id": task_id, "paths": list(CHANGED)}
        await self.call("resource_claim", args)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        import yaml

        result = await self.session.call_tool(tool, args)
        # What the harness shows the model: every text block (the compact rendering; a diff may follow).
        texts = [getattr(part, "text", "") for part in result.content]
        self.tally.add(f"{self.agent_id} {tool}", sum(len(text.encode("utf-8")) for text in texts))
        if result.is_error:
            raise RuntimeError(f"{tool} refused: {''.join(texts)}")
        if result.structured_content is not None:
            return dict(result.structured_content)
        return yaml.safe_load(texts[0])  # type: ignore[no-any-return]  # an agent's compact rendering


# --- the ways of working ----------------------------------------------------------------------------


async def reviews(env: Env, tally: Tally, stack: AsyncExitStack, pid: str) -> tuple[Agent, Agent]:
    """Both reviewers' start-up (connect, start-up read, review claims); reviewer-1 reads the
    proposal and asks for a revision."""
    first, second = [await Agent(env, who, tally, stack).open() for who in REVIEWERS]
    for reviewer in (first, second):
        await reviewer.start_up()
        await reviewer.claim_for_review(env.task_id)
    await first.call("proposal_get", {"proposal_id": pid})
    await first.call("vote_cast", {"proposal_id": pid, "vote": "revise", "reason_md": REVISE_REASON, "confidence": 0.9})
    return first, second


async def approvals(first: Agent, second: Agent, pid: str) -> None:
    """reviewer-1 reads what the revision changed and approves; architect-1 reads the whole change
    and approves."""
    await first.call("proposal_get", {"proposal_id": pid, "since_revision": 1})
    await first.call("vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Thanks.", "confidence": 0.9})
    await second.call("proposal_get", {"proposal_id": pid})
    await second.call("vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "Fits.", "confidence": 0.8})


async def mcp_path(env: Env) -> Tally:
    """The change through the MCP tools alone: the author has no editor."""
    tally = Tally()
    evidence = {"command": TEST_COMMAND}  # the whole suite: a narrowed run is not evidence
    async with AsyncExitStack() as stack:
        me = await Agent(env, IMPLEMENTER, tally, stack).open()
        await me.start_up()
        await me.call("task_get", {"task_id": env.task_id})
        await me.call("repo_search", {"query": "natural_list"})
        for path in CHANGED:
            await me.call("repo_read_file", {"path": path})
        claim = {"resource_type": "file", "claim_type": "write", "task_id": env.task_id, "paths": list(CHANGED)}
        await me.call("resource_claim", claim)
        proposal = {"task_id": env.task_id, "title": TASK_TITLE, "summary_md": SUMMARY, "edits": EDITS}
        pid = (await me.call("proposal_create", proposal))["proposal"]["id"]  # shows the diff it built
        await me.call("test_run", {**evidence, "proposal_id": pid})
        await me.call("proposal_request_review", {"proposal_id": pid})
        first, second = await reviews(env, tally, stack, pid)
        await me.call("vote_list", {"proposal_id": pid})
        await me.call("proposal_attach_patch", {"proposal_id": pid, "edits": REVISION_EDITS})  # stays in review
        await me.call("test_run", {**evidence, "proposal_id": pid})
        await approvals(first, second, pid)
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


TEST_ARGV = [PYTHON, "-m", "unittest", "-q", TESTS]


def _author_edits(root: Path, tally: Tally) -> None:
    """What the author does in a checkout with a shell and an editor, up to its diff: find the
    code, read every file it changes in full, edit, run the tests, look at the diff."""
    _run(root, ["grep", "-rn", "natural_list", "wordsmith", "tests", "README.md"], tally, "grep -rn")
    for path in CHANGED:
        _run(root, ["cat", "-n", path], tally, f"cat -n {path}")
    for edit in EDITS:
        _edit(root, edit, tally)
    _run(root, TEST_ARGV, tally, "unittest")
    _run(root, ["git", "diff"], tally, "git diff")


async def shell_path(env: Env) -> Tally:
    """The baseline: the same scenario by shell-and-editor agents sharing one checkout.

    A proposal is a commit on a branch (`work`, made with the checkout and not counted, as the
    workspace is not) and a revision is that commit amended; a reviewer reads the commit as git
    shows it (`git show`: author, message and diff — what `proposal_get` gives), after a revision
    only what changed (`git diff work@{1} work`, as `since_revision` gives it), and writes its
    verdict as one line of a shared review file."""
    tally = Tally()
    root = env.root.parent / "shell-checkout"
    _git(env.root.parent, "clone", "-q", str(env.root), str(root))
    _git(root, "switch", "-q", "-c", "work")
    commit = ["git", "-c", f"user.name={IMPLEMENTER}", "-c", f"user.email={IMPLEMENTER}@localhost", "commit", "-a"]
    first, second = REVIEWERS

    def start_up(who: str) -> None:  # where the work stands: the shell's table is git
        _run(root, ["git", "status", "--short", "--branch"], tally, f"{who} git status")
        _run(root, ["git", "log", "--oneline", "-5"], tally, f"{who} git log")

    start_up(IMPLEMENTER)
    _author_edits(root, tally)
    _run(root, [*commit, "-m", TASK_TITLE, "-m", SUMMARY], tally, "git commit")
    for who in REVIEWERS:
        start_up(who)
    _run(root, ["git", "show", "work"], tally, f"{first} git show")
    _say(root, f"{first} revise: {REVISE_REASON}", tally, f"{first} verdict")
    _run(root, ["cat", "../reviews.txt"], tally, "cat reviews")
    for edit in REVISION_EDITS:
        _edit(root, edit, tally)
    _run(root, TEST_ARGV, tally, "unittest")
    _run(root, ["git", "diff"], tally, "git diff")
    _run(root, [*commit, "--amend", "--no-edit"], tally, "git commit --amend")
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


async def workspace_mcp_path(env: Env) -> Tally:
    """The change edited natively in the implementer's workspace and proposed from it; every
    agent's governance through its MCP session (its listing read once)."""
    tally = Tally()
    ws = await make_workspace(env.root, env.task_id)
    evidence = {"command": TEST_COMMAND}  # the whole suite: a narrowed run is not evidence
    async with AsyncExitStack() as stack:
        me = await Agent(env, IMPLEMENTER, tally, stack, kind="workspace").open()
        await me.start_up()  # its task in full and its workspace: no task_get
        _author_edits(ws, tally)
        proposal = {"task_id": env.task_id, "title": TASK_TITLE, "summary_md": SUMMARY}
        pid = (await me.call("workspace_propose", proposal))["proposal"]["id"]  # claimed, review requested
        await me.call("test_run", {**evidence, "proposal_id": pid})  # the briefing's evidence
        first, second = await reviews(env, tally, stack, pid)
        await me.call("vote_list", {"proposal_id": pid})
        for edit in REVISION_EDITS:
            _edit(ws, edit, tally)
        _run(ws, TEST_ARGV, tally, "unittest")
        _run(ws, ["git", "diff"], tally, "git diff")
        await me.call("workspace_propose", {"task_id": env.task_id})
        await me.call("test_run", {**evidence, "proposal_id": pid})
        await approvals(first, second, pid)
    return tally


class ShellAgent:
    """One agent whose harness runs roundtable's tools as commands in its shell (`rt`, that is
    `roundtable agent`, with no MCP server configured): each command is a real process against
    the owner's HTTP endpoint with the agent's own credential, counted by what it prints. What the
    harness reads once, as it would a listing: `rt` with no arguments (the tools it may call, a line
    each), counted as one call."""

    def __init__(self, env: Env, agent_id: str, tally: Tally, kind: str = "") -> None:
        import os

        self.agent_id, self.tally = agent_id, tally
        token = env.auth(agent_id)["Authorization"].split(" ", 1)[1]
        url = f"{env.url}?tools={kind}" if kind else env.url
        self.environ = {**os.environ, "ROUNDTABLE_MCP_URL": url, "ROUNDTABLE_MCP_TOKEN": token}
        self.environ.pop("ROUNDTABLE_MCP_SOCKET", None)

    def rt(self, *words: str, setup: bool = False) -> str:
        """`rt WORDS`: its output, counted."""
        done = subprocess.run(
            [*RT, *words], env=self.environ, capture_output=True, text=True, timeout=600, check=False
        )
        output = done.stdout + done.stderr
        size = len(output.encode("utf-8"))
        self.tally.add(f"{self.agent_id} rt {words[0] if words else '(help)'}", size)
        if setup:
            self.tally.list_bytes += size
        if done.returncode != 0:
            raise RuntimeError(f"rt {' '.join(words)} failed ({done.returncode}): {output}")
        return done.stdout

    def open(self) -> ShellAgent:
        self.rt(setup=True)
        return self


RT = [sys.executable, "-m", "roundtable", "agent"]


def _commit(root: Path, tally: Tally, *args: str) -> None:
    """The author's commit in its workspace, as in the shell path (a revision amends it): git diff
    then shows what changed since."""
    who = ["-c", f"user.name={IMPLEMENTER}", "-c", f"user.email={IMPLEMENTER}@localhost"]
    _run(root, ["git", *who, "commit", "-a", *args], tally, "git commit" + (" --amend" if "--amend" in args else ""))


async def workspace_path(env: Env) -> Tally:
    """The change edited natively in the implementer's workspace; every agent's governance
    through `rt` in its shell (no MCP listing in any session)."""
    import yaml

    tally = Tally()
    ws = await make_workspace(env.root, env.task_id)
    test = ["--test", TEST_COMMAND]  # the whole suite: a narrowed run is not evidence
    me = ShellAgent(env, IMPLEMENTER, tally, kind="workspace").open()
    me.rt("table_watch")  # its task in full and its workspace: no task_get
    _author_edits(ws, tally)
    _commit(ws, tally, "-m", TASK_TITLE, "-m", SUMMARY)
    made = me.rt("workspace_propose", env.task_id, "--title", TASK_TITLE, "--summary-md", SUMMARY, *test)
    pid = yaml.safe_load(made)["proposal"]["id"]  # claimed, review requested, tested
    first, second = (ShellAgent(env, who, tally).open() for who in REVIEWERS)
    for reviewer in (first, second):
        reviewer.rt("table_watch")
        reviewer.rt("resource_claim", "file", "review", env.task_id, "--paths", *CHANGED)
    first.rt("proposal_get", pid)
    first.rt("vote_cast", pid, "revise", REVISE_REASON)
    me.rt("vote_list", pid)
    for edit in REVISION_EDITS:
        _edit(ws, edit, tally)
    _run(ws, TEST_ARGV, tally, "unittest")
    _run(ws, ["git", "diff"], tally, "git diff")
    _commit(ws, tally, "--amend", "--no-edit")
    me.rt("workspace_propose", env.task_id, *test)
    first.rt("proposal_get", pid, "--since-revision", "1")
    first.rt("vote_cast", pid, "approve", "Thanks.")
    second.rt("proposal_get", pid)
    second.rt("vote_cast", pid, "approve", "Fits.")
    return tally


PATHS: dict[str, Callable[[Env], Awaitable[Tally]]] = {
    "mcp": mcp_path,
    "workspace": workspace_path,
    "workspace-mcp": workspace_mcp_path,
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
                "replayed: git status/log, grep, cat -n, edits, tests, git diff, commit/--amend, git show, verdicts",
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
                "instructions + tools/list per agent, every result's text (and every command's output)",
                target=bytes_target,
            )
        )
        rows.append(
            row(
                BENCH,
                f"{name} set-up",
                round(tally.list_bytes / 1024, 1),
                "KB",
                "every agent's instructions + tools/list, counted above",
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
                calls, read = tally.calls / shell.calls, tally.text_bytes / shell.text_bytes
                met = "met" if max(calls, read) <= FACTORS[name] else "missed"
                print(
                    f"{name}: {calls:.3f}x the shell's calls, {read:.3f}x its bytes "
                    f"(target {FACTORS[name]:g}x: {met})"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
