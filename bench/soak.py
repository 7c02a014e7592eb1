"""`make soak`: 50 concurrent agents against a real owner for a bounded time, then a recount.

`python -m bench.soak [--seconds 60] [--agents 50] [--think 1.0] [--keep]`

A temporary git repository is initialised, one active run is created, and `roundtable start`
(the owner with its Chair loop) runs as a subprocess. Agents are spread over every transport:
the legacy socket, Streamable HTTP (one MCP session each) and the stdio bridge (a few
`roundtable mcp stdio` processes shared by several agents). Each agent mixes reads, task
writes, contended write claims on a small shared file pool (claim, hold, release), proposals
with real patches on its own file (and `patch.validate`, which runs `git apply --check`), and
turns (request → wait on `table.watch` for `agent.turn_scheduled` → start → complete), and
pauses about `--think` seconds between actions as an agent thinking would (0: no pause, a
stress run that saturates whatever is slowest). A side process writes tasks
with `roundtable mcp call` every few seconds, in turn through the owner (the command's
default when an owner listens) and with `--direct` (its own connection, no owner involved), so
the database is busy from two processes. The owner's RSS is sampled every second.

At the end the owner is stopped and the database is recounted:

- every acknowledged write exists exactly once (tasks by unique title, claims, proposals);
- no resource was held by two active write claims at once (replaying the claim events in
  commit order), and fences strictly increase;
- the turn queue was served first-in-first-out with at most one turn in flight (replaying
  the turn events);
- claim rows and `claim.created` events agree; `PRAGMA integrity_check` is ok;
- no transport error or internal error reached an agent (expected refusals — a claim
  conflict, a turn not scheduled yet — are counted, not failures);
- the owner's RSS stayed flat: from minute 2 on (a third into shorter runs) it grows at most
  20 MiB per 28 minutes (the least-squares slope of the samples);
- p99 per call (long polls excluded) under 500 ms, and the owner under half a core.

Those are measured over `--seconds`. Then the load goes on for a tail (a sixth of the run, 30 s
to 2 minutes) with the owner's Python allocations traced (`bench.tracedowner`), and the owner's
tracemalloc top-10 by growth over that tail is printed, with its CPU per call while traced:
tracing costs the owner about 2.5 times the CPU per call, so traced minutes are never measured.

Prints a table and exits 1 if any invariant breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.ownerproc import BridgeClient, CallFailed, HttpClient, OwnerProcess, SocketClient, direct_task_create
from roundtable import clock

SHARED_FILES = 12
THINK_S = 1.0  # an agent thinks between tool calls: the offered load is ~1 action/s per agent
BRIDGES = 4
# Refusals an agent can legitimately get under contention; anything else is an error.
EXPECTED = (
    "claim conflict",
    "has not been scheduled",
    "has not started",
    "already complete",
    "has expired",
    "already started",
    "scheduled for a different agent",
)
# RSS may grow at most 20 MiB from minute 2 to minute 30 of a 30-minute soak: the same slope
# (MiB per minute, over the samples from the window's start on) holds for shorter runs.
RSS_WINDOW_START_S = 120.0
RSS_SLOPE_LIMIT_MIB_PER_MIN = 20.0 / 28.0
P99_LIMIT_MS = 500.0
OWNER_CPU_LIMIT = 0.5  # of one core, over the load
# After the measured part the load goes on for a tail with the owner's allocations traced:
# tracing makes each call cost the owner ~2.5x the CPU and adds its own memory, so traced time
# would fail the CPU and p99 checks and put a step in the RSS it is meant to explain.
TRACE_TAIL_MIN_S = 30.0
TRACE_TAIL_MAX_S = 120.0
TURN_WAIT_MS = 2000  # how long a waiting agent long-polls table.watch for its turn
TURN_TYPES = ["agent.turn_scheduled", "agent.turn_expired"]


@dataclass
class Ledger:
    """What the agents were told succeeded, and what went wrong."""

    tasks: dict[str, str] = field(default_factory=dict)  # unique title -> id
    claims: dict[str, str] = field(default_factory=dict)  # claim id -> resource id
    proposals: dict[str, str] = field(default_factory=dict)  # proposal id -> title
    turns_completed: int = 0
    owner_cpu: float = 0.0  # seconds of owner CPU during the measured part of the load
    calls: int = 0  # calls answered during the measured part
    measuring: bool = True  # False in the traced tail: its latencies are not recorded
    tail: tuple[float, int] = (0.0, 0)  # owner CPU seconds and calls in the traced tail
    ambiguous_titles: set[str] = field(default_factory=set)
    ops: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_tool: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


class Agent:
    def __init__(self, n: int, client: Any, run_id: str, ledger: Ledger, deadline: float, think: float = 0.0) -> None:
        self.n = n
        self.id = f"implementer-{n}"
        self.client = client
        self.run_id = run_id
        self.ledger = ledger
        self.deadline = deadline
        self.rng = random.Random(n)
        self.task_id = ""
        self.turn = 0  # pending request id
        self.cursor = 0  # table.watch cursor while waiting for the turn
        self.think = think  # mean pause between actions (s): an agent thinks between tool calls
        self.writes = 0

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The result, or None for an expected refusal; other failures are recorded."""
        transport = self.client.transport
        started = time.perf_counter()
        try:
            result = await self.client.call(tool, args)
        except CallFailed as exc:
            text = str(exc)
            if any(e in text for e in EXPECTED):
                self.ledger.refusals[f"{tool}: {next(e for e in EXPECTED if e in text)}"] += 1
                return None
            self.ledger.errors.append(f"{transport} {tool}: {text[:200]}")
            return None
        except Exception as exc:  # transport failure: never acceptable under load
            self.ledger.errors.append(f"{transport} {tool}: {type(exc).__name__}: {str(exc)[:200]}")
            raise
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            if self.ledger.measuring:
                self.ledger.latencies[transport].append(elapsed)
                if not (tool == "table.watch" and "wait_ms" in args):  # a long poll waits on purpose
                    self.ledger.by_tool[tool].append(elapsed)
            self.ledger.ops[f"{transport} {tool}"] += 1
        return result

    async def run(self) -> None:
        out = await self.call("task.create", {"title": f"soak {self.id} own", "body_md": "own work"})
        if out is None:
            return
        self.task_id = out["task"]["id"]
        self.ledger.tasks[f"soak {self.id} own"] = self.task_id
        own = await self.call(
            "resource.claim",
            {
                "resource_type": "file",
                "claim_type": "write",
                "task_id": self.task_id,
                "path": f"src/own_{self.n}.py",
                "agent_id": self.id,
                "run_id": self.run_id,
                "ttl_seconds": 3600,
            },
        )
        if own is not None:
            self.ledger.claims[own["claim"]["id"]] = own["claim"]["resource_id"]
        steps = (
            (self.read, 30),
            (self.write_task, 20),
            (self.claim, 22),
            (self.propose, 8),
            (self.take_turn, 20),
        )
        actions = [a for a, _ in steps]
        weights = [w for _, w in steps]
        while time.monotonic() < self.deadline:
            action = self.rng.choices(actions, weights)[0]
            if self.turn and self.rng.random() < 0.5:
                action = self.take_turn  # a waiting agent waits a while for its turn
            try:
                await action()
            except Exception:
                await asyncio.sleep(0.2)  # recorded already; keep the load on
            if self.think:
                await asyncio.sleep(self.rng.uniform(0.5, 1.5) * self.think)

    async def read(self) -> None:
        reads: list[tuple[str, dict[str, Any]]] = [
            ("task.list", {}),
            ("resource.claim_status", {"agent_id": self.id}),
            ("repo.read_file", {"path": f"src/own_{self.n}.py"}),
            ("table.watch", {"run_id": self.run_id, "limit": 10}),
            ("proposal.list", {"task_id": self.task_id}),
            ("task.get", {"task_id": self.task_id}),
        ]
        tool, args = self.rng.choice(reads)
        await self.call(tool, args)

    async def write_task(self) -> None:
        self.writes += 1
        title = f"soak {self.id} write {self.writes}"
        try:
            out = await self.call("task.create", {"title": title, "body_md": "generated"})
        except Exception:
            self.ledger.ambiguous_titles.add(title)
            raise
        if out is not None:
            self.ledger.tasks[title] = out["task"]["id"]
        else:
            self.ledger.ambiguous_titles.add(title)

    async def claim(self) -> None:
        path = f"src/shared_{self.rng.randrange(SHARED_FILES)}.py"
        args = {
            "resource_type": "file",
            "claim_type": "write",
            "task_id": self.task_id,
            "path": path,
            "agent_id": self.id,
            "run_id": self.run_id,
            "ttl_seconds": 300,
        }
        out = await self.call("resource.claim", args)
        if out is None:
            return
        claim = out["claim"]
        self.ledger.claims[claim["id"]] = claim["resource_id"]
        await asyncio.sleep(self.rng.uniform(0, 0.1))
        await self.call(
            "resource.release",
            {"claim_id": claim["id"], "actor_id": self.id, "run_id": self.run_id, "reason": "done"},
        )

    async def propose(self) -> None:
        self.writes += 1
        path = f"src/own_{self.n}.py"
        patch = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 0\n+x = {self.writes}\n"
        out = await self.call(
            "proposal.create",
            {
                "task_id": self.task_id,
                "agent_id": self.id,
                "title": f"soak {self.id} proposal {self.writes}",
                "summary_md": "load",
                "affected_resources": [f"file:{path}"],
                "risk": "normal",
                "patch": patch,
            },
        )
        if out is None:
            return
        proposal_id = out["proposal"]["id"]
        self.ledger.proposals[proposal_id] = f"soak {self.id} proposal {self.writes}"
        if self.rng.random() < 0.3:
            await self.call("patch.validate", {"proposal_id": proposal_id})

    async def take_turn(self) -> None:
        """Request a turn; while one is pending, wait for the Chair's `agent.turn_scheduled` (or
        `agent.turn_expired`) naming it on `table.watch` — a long poll that only those two event
        types end, as agents are told to — and only then call `agent.turn_start`, once."""
        base = {"run_id": self.run_id, "agent_id": self.id}
        if not self.turn:
            out = await self.call("agent.turn_request", {**base, "reason_md": "soak"})
            if out is not None:
                self.turn = self.cursor = int(out["request_event_id"])
            return
        page = await self.call(
            "table.watch",
            {"run_id": self.run_id, "after_event_id": self.cursor, "wait_ms": TURN_WAIT_MS, "types": TURN_TYPES},
        )
        if page is None:
            return
        self.cursor = int(page["next_after_event_id"])
        mine = [e["type"] for e in page["events"] if json.loads(e["payload_json"]).get("request_event_id") == self.turn]
        if "agent.turn_expired" in mine:
            self.turn = 0
            return
        if "agent.turn_scheduled" not in mine:
            return
        args = {**base, "request_event_id": self.turn}
        started = await self.call("agent.turn_start", args)
        if started is None:  # expired between the page and the start
            self.turn = 0
            return
        await self.call("agent.turn_complete", args)
        self.ledger.turns_completed += 1
        self.turn = 0


# --- setup --------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=soak", "-c", "user.email=soak@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def make_repo(base: Path, agents: int) -> tuple[Path, str]:
    """An initialised git project with the agents configured and one active run."""
    from roundtable import chair
    from roundtable.runtime import Runtime
    from roundtable.scaffold import init_project
    from roundtable.services.coordination import runs

    root = base / "p"
    (root / "src").mkdir(parents=True)
    for k in range(SHARED_FILES):
        (root / "src" / f"shared_{k}.py").write_text(f"shared = {k}\n")
    for n in range(1, agents + 1):
        (root / "src" / f"own_{n}.py").write_text("x = 0\n")
    (root / ".gitignore").write_text(".roundtable/\n")
    init_project(root)
    cfg = root / ".roundtable" / "config.yaml"
    text = cfg.read_text()
    text = text.replace("implementers:\n    count: 2", f"implementers:\n    count: {agents}")
    text = text.replace("tick_interval: 1s", "tick_interval: 500ms").replace(
        "turn_start_timeout: 2m", "turn_start_timeout: 8s"
    )
    cfg.write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "soak base")

    async def setup() -> str:
        async with await Runtime.open(root) as rt:
            await chair.sync_agents(rt)
            return (await runs.create_run(rt, "soak")).id

    return root, asyncio.run(setup())


async def _direct_writer(root: Path, deadline: float, ledger: Ledger) -> None:
    """`roundtable mcp call` in its own process every few seconds: through the owner, then with
    `--direct` (its own connection), in turn."""
    k = 0
    while time.monotonic() < deadline - 3:
        k += 1
        title = f"soak direct {k}"
        code, out, err = await direct_task_create(root, title, direct=k % 2 == 0)
        ledger.ops["direct task.create"] += 1
        if code == 0:
            ledger.tasks[title] = json.loads(out)["task"]["id"]
        else:
            ledger.ambiguous_titles.add(title)
            ledger.errors.append(f"direct task.create: {err.decode(errors='replace').strip()[:200]}")
        await asyncio.sleep(2.0)


async def _sample_rss(owner: OwnerProcess, deadline: float, samples: list[tuple[float, int]]) -> None:
    start = time.monotonic()
    while time.monotonic() < deadline:
        samples.append((time.monotonic() - start, owner.rss_kib()))
        await asyncio.sleep(1.0)


def rss_window_start(seconds: float) -> float:
    """When the RSS window opens: minute 2, or a third into a run shorter than six minutes."""
    return min(RSS_WINDOW_START_S, seconds / 3)


def trace_tail(seconds: float) -> float:
    """How long the load goes on after the measured `seconds`, with the owner's allocations traced."""
    return min(TRACE_TAIL_MAX_S, max(TRACE_TAIL_MIN_S, seconds / 6))


async def _measure_then_trace(owner: OwnerProcess, seconds: float, ledger: Ledger, cpu0: float) -> None:
    """End the measured part after `seconds` (the owner's CPU and the calls so far), then start the
    owner's allocation tracing for the tail (`bench.tracedowner`)."""
    await asyncio.sleep(seconds)
    ledger.measuring = False
    ledger.owner_cpu = owner.cpu_seconds() - cpu0
    ledger.calls = sum(ledger.ops.values())
    os.kill(owner.pid, signal.SIGUSR1)


async def _load(
    root: Path, owner: OwnerProcess, run_id: str, agents: int, seconds: float, think: float
) -> tuple[Ledger, list[tuple[float, int]]]:
    ledger = Ledger()
    # Each HTTP or bridge agent presents its own credential (identity comes from the credential);
    # at most BRIDGES agents get a bridge process of their own, the rest of that third use HTTP.
    bridges: list[BridgeClient] = []
    clients: list[Any] = []
    for n in range(1, agents + 1):
        kind = n % 3
        agent_id = f"implementer-{n}"
        if kind == 0:
            clients.append(SocketClient(owner.socket_path))
        elif kind == 2 and len(bridges) < BRIDGES:
            bridges.append(BridgeClient(root, owner.url, agent_id))
            clients.append(bridges[-1])
        else:
            clients.append(HttpClient(owner.url, owner.auth_for(agent_id)))
    for client in {id(c): c for c in clients + bridges}.values():
        await client.open()
    deadline = time.monotonic() + seconds + trace_tail(seconds)
    cpu0 = owner.cpu_seconds()
    rss: list[tuple[float, int]] = []
    crew = [Agent(n, clients[n - 1], run_id, ledger, deadline, think) for n in range(1, agents + 1)]
    tracer = asyncio.create_task(_measure_then_trace(owner, seconds, ledger, cpu0))
    await asyncio.gather(
        *(a.run() for a in crew), _direct_writer(root, deadline, ledger), _sample_rss(owner, deadline, rss)
    )
    tracer.cancel()
    ledger.tail = (owner.cpu_seconds() - cpu0 - ledger.owner_cpu, sum(ledger.ops.values()) - ledger.calls)
    for client in {id(c): c for c in clients + bridges}.values():
        await client.close()
    return ledger, rss


# --- the recount --------------------------------------------------------------------------------


def _check_claims(conn: sqlite3.Connection, ledger: Ledger) -> list[tuple[str, bool, str]]:
    out = []
    rows = dict(conn.execute("SELECT id, resource_id FROM claims").fetchall())
    missing = [c for c in ledger.claims if c not in rows]
    wrong = [c for c, r in ledger.claims.items() if c in rows and rows[c] != r]
    out.append(
        (
            "acknowledged claims exist once",
            not missing and not wrong,
            f"{len(ledger.claims)} acked, {len(missing)} missing",
        )
    )
    holder: dict[str, str] = {}
    double: list[str] = []
    fences: list[int] = []
    for type_, payload_json in conn.execute(
        "SELECT type, payload_json FROM events WHERE type LIKE 'claim.%' ORDER BY id"
    ):
        p = json.loads(payload_json)
        if type_ == "claim.created":
            if p.get("claim_type") == "write" and p["resource_id"] in holder:
                double.append(f"{p['claim_id']} while {holder[p['resource_id']]}")
            holder[p["resource_id"]] = p["claim_id"]
            fences.append(int(p.get("fence", 0)))
        elif type_ in ("claim.released", "claim.expired", "claim.revoked", "claim.suspended"):
            if holder.get(p["resource_id"]) == p["claim_id"]:
                del holder[p["resource_id"]]
    out.append(("no resource held by two write claims", not double, f"{len(fences)} grants; {'; '.join(double[:3])}"))
    increasing = all(a < b for a, b in itertools.pairwise(fences))
    out.append(("claim fences strictly increase", increasing, ""))
    created = conn.execute("SELECT count(*) FROM events WHERE type = 'claim.created'").fetchone()[0]
    out.append(("claim rows == claim.created events", created == len(rows), f"{len(rows)} rows, {created} events"))
    return out


def _check_turns(conn: sqlite3.Connection, run_id: str, gaps: list[float]) -> tuple[str, bool, str]:
    """Replay the turn events; `gaps` receives turn-finished -> next-scheduled delays (ms)."""
    waiting: set[int] = set()
    in_flight: set[int] = set()
    problems: list[str] = []
    scheduled = 0
    freed_at = 0.0  # when the last turn finished (a new schedule is due)
    for type_, payload_json, event_id, created_at in conn.execute(
        "SELECT type, payload_json, id, created_at FROM events WHERE run_id = ? AND type LIKE 'agent.turn_%'"
        " ORDER BY id",
        (run_id,),
    ):
        p = json.loads(payload_json)
        at = clock.parse(created_at) / 1e9
        request = event_id if type_ == "agent.turn_requested" else int(p.get("request_event_id", 0))
        if type_ == "agent.turn_requested":
            waiting.add(request)
        elif type_ == "agent.turn_scheduled":
            scheduled += 1
            if in_flight:
                problems.append(f"{request} scheduled while {sorted(in_flight)} in flight")
            if not waiting or request != min(waiting):
                problems.append(f"{request} scheduled before {min(waiting) if waiting else None}")
            waiting.discard(request)
            in_flight.add(request)
            if freed_at:
                gaps.append((at - freed_at) * 1000)
                freed_at = 0.0
        elif type_ in ("agent.turn_completed", "agent.turn_expired"):
            waiting.discard(request)
            if request in in_flight:
                in_flight.discard(request)
                freed_at = at if waiting else 0.0
    return ("turns served FIFO, one in flight", not problems, f"{scheduled} scheduled; {'; '.join(problems[:3])}")


def recount(db: Path, ledger: Ledger, run_id: str, gaps: list[float]) -> list[tuple[str, bool, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        checks: list[tuple[str, bool, str]] = []
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        checks.append(("integrity_check", integrity == "ok", integrity))
        titles = Counter(t for (t,) in conn.execute("SELECT title FROM tasks WHERE title LIKE 'soak %'"))
        ids = dict(conn.execute("SELECT title, id FROM tasks WHERE title LIKE 'soak %'").fetchall())
        lost = [t for t in ledger.tasks if titles[t] == 0]
        dup = [t for t, c in titles.items() if c > 1]
        wrong = [t for t, i in ledger.tasks.items() if t in ids and ids[t] != i]
        unacked = [t for t in titles if t not in ledger.tasks]
        stray = [t for t in unacked if t not in ledger.ambiguous_titles]
        checks.append(
            (
                "acknowledged tasks exist exactly once",
                not lost and not dup and not wrong and not stray,
                f"{len(ledger.tasks)} acked, {len(lost)} lost, {len(dup)} duplicated, "
                f"{len(unacked)} committed without an ack",
            )
        )
        props = dict(conn.execute("SELECT id, title FROM proposals").fetchall())
        missing = [p for p, t in ledger.proposals.items() if props.get(p) != t]
        checks.append(
            ("acknowledged proposals exist once", not missing, f"{len(ledger.proposals)} acked, {len(missing)} missing")
        )
        checks += _check_claims(conn, ledger)
        checks.append(_check_turns(conn, run_id, gaps))
    finally:
        conn.close()
    return checks


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (x, y) points."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def _rss_check(samples: list[tuple[float, int]], seconds: float) -> tuple[str, bool, str]:
    """RSS growth over the window (minute 2 to the end of the measured part): the least-squares
    slope of the samples in it, in MiB per minute, against the limit (20 MiB over minutes 2 to 30)."""
    start = rss_window_start(seconds)
    window = [(t / 60, kib / 1024) for t, kib in samples if start <= t <= seconds]
    if len(window) < 6:
        return ("owner RSS flat", True, "too few samples")
    slope = _slope(window)
    span = window[-1][0] - window[0][0]
    first = statistics.median(v for _, v in window[:30])
    last = statistics.median(v for _, v in window[-30:])
    return (
        "owner RSS flat",
        slope <= RSS_SLOPE_LIMIT_MIB_PER_MIN,
        f"{slope:+.2f} MiB/min from {start / 60:.1f} min on (limit {RSS_SLOPE_LIMIT_MIB_PER_MIN:.2f},"
        f" i.e. 20 MiB over minutes 2-30): {slope * span:+.1f} MiB over {span:.1f} min;"
        f" {first:.0f} MiB at the start, {last:.0f} MiB at the end (medians of 30 s)",
    )


def _p99(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))] if values else 0.0


def _load_checks(ledger: Ledger, seconds: float) -> list[tuple[str, bool, str]]:
    calls = [v for tool, lat in ledger.by_tool.items() for v in lat]
    p99 = _p99(calls)
    worst = max(ledger.by_tool.items(), key=lambda kv: _p99(kv[1]), default=("", []))
    share = ledger.owner_cpu / seconds
    total = ledger.calls
    return [
        (
            "p99 per call",
            p99 < P99_LIMIT_MS,
            f"{p99:.0f} ms over {len(calls):,} calls (limit {P99_LIMIT_MS:.0f} ms; long polls excluded);"
            f" slowest tool {worst[0]} p99 {_p99(worst[1]):.0f} ms",
        ),
        (
            "owner under half a core",
            share < OWNER_CPU_LIMIT,
            f"{share:.0%} of one core at {total / seconds:.0f} calls/s"
            f" ({ledger.owner_cpu / max(total, 1) * 1000:.2f} ms of owner CPU per call)",
        ),
    ]


def _print(ledger: Ledger, checks: list[tuple[str, bool, str]], seconds: float, agents: int) -> None:
    total = ledger.calls
    print(f"\n## soak: {agents} agents, {seconds:.0f} s measured, {total:,} calls ({total / seconds:,.0f}/s)")
    print(f"owner CPU {ledger.owner_cpu:.1f} s ({ledger.owner_cpu / seconds:.0%} of one core)")
    cpu, calls = ledger.tail
    if calls:
        print(
            f"then {trace_tail(seconds):.0f} s with the owner's allocations traced (not measured):"
            f" {calls:,} calls, owner CPU {cpu / calls * 1000:.2f} ms per call against"
            f" {ledger.owner_cpu / max(total, 1) * 1000:.2f} ms untraced"
        )
    print()
    print("| transport | calls | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for transport, lat in sorted(ledger.latencies.items()):
        lat.sort()
        print(f"| {transport} | {len(lat):,} | {statistics.median(lat):.1f} | {lat[int(len(lat) * 0.99)]:.1f} |")
    print("\n| operation | calls |")
    print("|---|---|")
    for name, count in sorted(ledger.ops.items()):
        print(f"| {name} | {count:,} |")
    print("\n| tool (every transport) | calls | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    for tool, lat in sorted(ledger.by_tool.items()):
        lat.sort()
        print(f"| {tool} | {len(lat):,} | {statistics.median(lat):.1f} | {_p99(lat):.1f} | {lat[-1]:.1f} |")
    print("\n| expected refusal | count |")
    print("|---|---|")
    for name, count in ledger.refusals.most_common():
        print(f"| {name} | {count:,} |")
    print(f"\nturns completed: {ledger.turns_completed}; errors surfaced to agents: {len(ledger.errors)}")
    for line in ledger.errors[:10]:
        print(f"  error: {line}")
    print("\n| invariant | result | detail |")
    print("|---|---|---|")
    for name, ok, detail in checks:
        print(f"| {name} | {'PASS' if ok else 'FAIL'} | {detail} |")


def _tracemalloc_top(owner: OwnerProcess, path: Path, timeout: float = 60.0) -> list[str]:
    """Ask the owner for its tracemalloc top-10 (SIGUSR2) and read it."""
    os.kill(owner.pid, signal.SIGUSR2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text(encoding="utf-8").splitlines()
        time.sleep(0.2)
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument(
        "--think", type=float, default=THINK_S, help="mean pause between an agent's actions, in seconds"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary project for inspection")
    opts = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rt-soak-", dir="/tmp"))
    root, run_id = make_repo(tmp, opts.agents)
    owner = OwnerProcess(root, command="start")
    owner.entry = ("-m", "bench.tracedowner")
    trace_out = tmp / "tracemalloc.txt"
    owner.start(env={"RT_TRACEMALLOC_OUT": str(trace_out)})
    print(f"owner pid {owner.pid} at {owner.url}; project {root}", file=sys.stderr)
    load_avg = os.getloadavg()
    try:
        ledger, rss = asyncio.run(_load(root, owner, run_id, opts.agents, opts.seconds, opts.think))
        top = _tracemalloc_top(owner, trace_out)
    finally:
        status = owner.stop()
    load_avg_end = os.getloadavg()
    from roundtable.config import load_config

    gaps: list[float] = []
    checks = recount(load_config(root).sqlite_path(root), ledger, run_id, gaps)
    checks.append(_rss_check(rss, opts.seconds))
    checks += _load_checks(ledger, opts.seconds)
    checks.append(("no errors surfaced to agents", not ledger.errors, f"{len(ledger.errors)} errors"))
    checks.append(("owner stopped cleanly", status == 0, f"exit status {status}"))
    _print(ledger, checks, opts.seconds, opts.agents)
    if gaps:
        gaps.sort()
        print(
            f"\nChair under load: turn finished -> next turn_scheduled p50 {statistics.median(gaps):.0f} ms,"
            f" max {gaps[-1]:.0f} ms ({len(gaps)} hand-overs; idle target < 50 ms)"
        )
    measured = " ".join(f"{kib / 1024:.0f}" for t, kib in rss if t <= opts.seconds)
    traced = " ".join(f"{kib / 1024:.0f}" for t, kib in rss if t > opts.seconds)
    print(f"\nRSS samples (MiB): {measured} | traced tail: {traced}")
    print(f"\nowner tracemalloc, top {len(top) - 1 if top else 0} by growth over the traced tail:")
    print("\n".join(f"  {line}" for line in top) or "  (no snapshot)")
    print(
        f"\nload average (1/5/15 min) at the start {' '.join(f'{v:.2f}' for v in load_avg)},"
        f" at the end {' '.join(f'{v:.2f}' for v in load_avg_end)} ({os.cpu_count()} CPUs)"
    )
    if not opts.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp}", file=sys.stderr)
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
