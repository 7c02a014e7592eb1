"""Webhooks: each notification POSTed as JSON to the configured URLs, off the critical path.

Every webhook has its own queue and its own worker task, so a slow or hanging endpoint delays
nothing but its own later deliveries: `submit` only puts the notification on the queues (it never
awaits), and each POST has the webhook's `timeout`. A failed POST (an error, a timeout or a non-2xx
answer) is retried `retries` times, waiting `retry_backoff` seconds doubled each time. A webhook
that keeps failing is logged once per `LOG_INTERVAL`, and its state — failing since when, the last
error, the last success — is kept in `.roundtable/logs/notify-status.json`, which `doctor` reads.

Bodies (`format`):
- `plain`: the notification as it is (`kind`, `title`, `message`, `run_id`, `event_id`,
  `created_at`, `project`);
- `ntfy`: ntfy's JSON publishing — POSTed to the server's root with the topic (the URL's last
  path segment) in the body (`topic`, `title`, `message`, `tags`, `priority`);
- `slack`: `{"text": …}`, which Slack-compatible incoming webhooks (Slack, Mattermost, Rocket.Chat,
  Discord's `/slack` endpoint) accept.

URLs can carry secrets (a Slack webhook's path is its key): logs and `doctor` show only the scheme,
host and port (`display_url`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from roundtable import clock
from roundtable.atomic import write_atomic
from roundtable.config import WebhookConfig
from roundtable.notify.kinds import Notification

log = logging.getLogger("roundtable.notify")

LOG_INTERVAL = 300.0
QUEUE_SIZE = 256
STATUS_FILE = Path(".roundtable") / "logs" / "notify-status.json"
_URGENT = {"approval_requested", "apply_failed", "transaction_attention", "budget_exceeded", "autopilot_stopped"}


def display_url(url: str) -> str:
    """`https://hooks.slack.com/…`: the URL without its path, query or credentials."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{parts.scheme}://{netloc}/…" if parts.path.strip("/") or parts.query else f"{parts.scheme}://{netloc}"


def slack_escape(text: str) -> str:
    """Text as Slack shows it literally: `&`, `<`, `>` escaped, so a reason an agent wrote cannot
    mention `<!channel>` or make a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def request(hook: WebhookConfig, n: Notification) -> tuple[str, dict[str, Any]]:
    """(URL to POST to, JSON body) of `n` for `hook`'s format."""
    if hook.format == "slack":
        where = f" — {slack_escape(n.project)}" if n.project else ""
        return hook.url, {"text": f"*{n.title}*{where}: {slack_escape(n.message)}"}
    if hook.format == "ntfy":
        parts = urlsplit(hook.url)
        base, _, topic = parts.path.rstrip("/").rpartition("/")
        root = urlunsplit((parts.scheme, parts.netloc, base + "/", "", ""))
        body = {
            "topic": topic,
            "title": n.title + (f" — {n.project}" if n.project else ""),
            "message": n.message,
            "tags": [n.kind],
            "priority": 4 if n.kind in _URGENT else 3,
        }
        return root, body
    return hook.url, n.to_dict()


class _Health:
    """What one webhook's deliveries came to (for the log's once-per-interval and for doctor)."""

    def __init__(self) -> None:
        self.failing_since = ""
        self.last_error = ""
        self.last_failure_at = ""
        self.last_success_at = ""
        self.failures = 0
        self.delivered = 0
        self.logged_at = -LOG_INTERVAL  # monotonic

    def to_dict(self) -> dict[str, Any]:
        return {
            "failing_since": self.failing_since,
            "last_error": self.last_error,
            "last_failure_at": self.last_failure_at,
            "last_success_at": self.last_success_at,
            "failures": self.failures,
            "delivered": self.delivered,
        }


class WebhookSender:
    """Delivers notifications to the configured webhooks in background tasks (`start`/`close`)."""

    def __init__(
        self,
        hooks: list[WebhookConfig],
        *,
        retries: int = 3,
        retry_backoff: float = 1.0,
        status_path: Path | None = None,
        log_interval: float = LOG_INTERVAL,
    ) -> None:
        self.hooks = list(hooks)
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.status_path = status_path
        self.log_interval = log_interval
        self.health = [_Health() for _ in self.hooks]
        self._queues: list[asyncio.Queue[Notification]] = [asyncio.Queue(QUEUE_SIZE) for _ in self.hooks]
        self._workers: list[asyncio.Task[None]] = []
        self._client: httpx2.AsyncClient | None = None
        self._dirty = asyncio.Event()
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self._idle = [asyncio.Event() for _ in self.hooks]
        for idle in self._idle:
            idle.set()

    def start(self) -> None:
        if self._workers or not self.hooks:
            return
        self._client = httpx2.AsyncClient(follow_redirects=False, headers={"User-Agent": "roundtable-notify"})
        self._workers = [asyncio.create_task(self._work(i), name=f"notify-webhook-{i}") for i in range(len(self.hooks))]
        if self.status_path is not None:
            self._writer = asyncio.create_task(self._write_statuses(), name="notify-status")

    def submit(self, n: Notification) -> None:
        """Queue `n` for every webhook that wants its kind (never waits; a full queue drops it)."""
        for i, hook in enumerate(self.hooks):
            if n.kind not in hook.events:
                continue
            try:
                self._queues[i].put_nowait(n)
                self._idle[i].clear()
            except asyncio.QueueFull:
                self._failed(i, f"queue full ({QUEUE_SIZE} undelivered): notification {n.event_id} dropped")

    async def drained(self, timeout: float) -> bool:
        """Wait until every queued notification was delivered or given up (tests, shutdown)."""
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in self._idle)), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(BaseException):
                await worker
        self._workers = []
        if self._writer is not None:  # it writes the final state, then ends
            self._closing = True
            self._dirty.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._writer, 5)
            self._writer = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _work(self, i: int) -> None:
        queue = self._queues[i]
        while True:
            n = await queue.get()
            try:
                await self._deliver(i, n)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never let one delivery end the worker
                self._failed(i, f"{type(exc).__name__}: {exc}")
            finally:
                queue.task_done()
                if queue.empty():
                    self._idle[i].set()

    async def _deliver(self, i: int, n: Notification) -> None:
        hook = self.hooks[i]
        url, body = request(hook, n)
        assert self._client is not None
        error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff * 2 ** (attempt - 1))
            try:
                answer = await self._client.post(url, json=body, timeout=hook.timeout)
            except httpx2.TimeoutException:
                error = f"no answer within {hook.timeout:g}s"
                continue
            except httpx2.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"[:300]
                continue
            if 200 <= answer.status_code < 300:
                self._succeeded(i)
                return
            error = f"HTTP {answer.status_code}"
        self._failed(i, f"{error} (after {self.retries + 1} attempts)")

    def _succeeded(self, i: int) -> None:
        health = self.health[i]
        health.delivered += 1
        health.last_success_at = clock.now()
        if health.failing_since:
            log.info("webhook %s delivers again", display_url(self.hooks[i].url))
            health.failing_since = ""
        self._save()

    def _failed(self, i: int, error: str) -> None:
        health = self.health[i]
        health.failures += 1
        health.last_error = error
        health.last_failure_at = clock.now()
        first = not health.failing_since
        if first:
            health.failing_since = health.last_failure_at
        now = time.monotonic()
        if now - health.logged_at >= self.log_interval:
            health.logged_at = now
            log.warning("webhook %s failed: %s", display_url(self.hooks[i].url), error)
            self._save()
        elif first:
            self._save()

    def status(self) -> dict[str, Any]:
        return {
            "updated_at": clock.now(),
            "webhooks": [
                {"url": display_url(h.url), **s.to_dict()} for h, s in zip(self.hooks, self.health, strict=True)
            ],
        }

    def _save(self) -> None:
        """Ask the status writer to write the current state (the latest state wins)."""
        if self.status_path is not None:
            self._dirty.set()

    async def _write_statuses(self) -> None:
        """One writer, in order: the file always ends with the latest state."""
        assert self.status_path is not None
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            closing = self._closing  # read before the write: a close during it asks for one more
            await self._flush_status()
            if closing:
                return

    async def _flush_status(self) -> None:
        if self.status_path is None:
            return
        text = json.dumps(self.status(), indent=2) + "\n"
        try:
            await asyncio.to_thread(_write_status, self.status_path, text)
        except OSError as exc:  # a status file that cannot be written is not fatal
            log.debug("notify status not written: %s", exc)


def _write_status(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, mode=0o600)


def read_status(root: Path) -> dict[str, Any]:
    """The webhooks' state as the owner last wrote it ({} when none)."""
    try:
        data = json.loads((root / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
