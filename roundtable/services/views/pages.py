"""The long lists (claims, events) read by pages: `VirtualSource.page()` reads one page after
(or before) a known key, falling back to `OFFSET` only for a jump to an unknown position (a
scrollbar drag or `end`). Long lists never load whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from roundtable.domain import ClaimStatus, ContentionStatus
from roundtable.store.db import Reader


@dataclass(frozen=True)
class ClaimLine:
    id: str
    resource_id: str
    agent_id: str
    claim_type: str
    status: str
    expires_at: str
    fence: int
    contended: bool

    @property
    def key(self) -> str:
        return self.id


@dataclass(frozen=True)
class EventLine:
    id: int
    run_id: str
    type: str
    actor_id: str
    task_id: str
    payload_json: str
    created_at: str

    @property
    def key(self) -> int:
        return self.id


class VirtualSource:
    """A long table read by pages ordered by a unique key (`id`)."""

    table: ClassVar[str]
    select: ClassVar[str]
    filter_columns: ClassVar[tuple[str, ...]]
    append_only: ClassVar[bool] = False
    dense = False

    def where(self, text: str) -> tuple[str, list[Any]]:
        text = text.strip()
        if not text:
            return "", []
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = f"%{escaped}%"
        clause = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in self.filter_columns)
        return f"WHERE ({clause})", [like] * len(self.filter_columns)

    async def count(self, reader: Reader, text: str) -> int:
        where, params = self.where(text)
        if not where and self.append_only:
            # An append-only AUTOINCREMENT table with no gaps maps position n to id n+1, so a
            # jump to any position is a key lookup instead of an OFFSET scan. Nothing deletes
            # events, so once the ids are known to be dense, MAX(id) (one index probe) is the
            # count; the full COUNT(*) (130 ms at a million rows here) runs only once.
            if self.dense:
                return int(await reader.scalar(f"SELECT COALESCE(MAX(id), 0) FROM {self.table}") or 0)
            row = await reader.fetchone(f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM {self.table}")
            total, top = (int(row[0]), int(row[1])) if row else (0, 0)
            self.dense = total == top
            return total
        return int(await reader.scalar(f"SELECT COUNT(*) FROM {self.table} t {where}", params) or 0)

    async def page(
        self,
        reader: Reader,
        text: str,
        *,
        offset: int,
        limit: int,
        after: Any = None,
        before: Any = None,
    ) -> list[Any]:
        """`limit` rows in key order: after `after`, before `before`, or from `offset`."""
        where, params = self.where(text)
        conds = [where[len("WHERE ") :]] if where else []
        if after is not None:
            conds.append("t.id > ?")
            params.append(after)
        elif before is not None:
            conds.append("t.id < ?")
            params.append(before)
        clause = f"WHERE {' AND '.join(conds)}" if conds else ""
        if before is not None:
            sql = f"{self.select} {clause} ORDER BY t.id DESC LIMIT ?"
            rows = list(reversed(await reader.fetchall(sql, [*params, limit])))
        elif after is not None:
            rows = await reader.fetchall(f"{self.select} {clause} ORDER BY t.id LIMIT ?", [*params, limit])
        else:
            if self.append_only and not where and self.dense:
                # Dense AUTOINCREMENT ids: position n is id n+1, so a jump is a key lookup.
                rows = await reader.fetchall(f"{self.select} WHERE t.id > ? ORDER BY t.id LIMIT ?", [offset, limit])
            else:
                sql = f"{self.select} {clause} ORDER BY t.id LIMIT ? OFFSET ?"
                rows = await reader.fetchall(sql, [*params, limit, offset])
        return [self.line(r) for r in rows]

    def line(self, row: Any) -> Any:
        raise NotImplementedError


class ClaimsSource(VirtualSource):
    table = "claims"
    select = (
        "SELECT t.id, t.resource_id, t.agent_id, t.claim_type, t.status, t.expires_at, t.fence, "
        "(EXISTS (SELECT 1 FROM claim_contentions cc WHERE cc.resource_id = t.resource_id "
        f"  AND cc.status = '{ContentionStatus.OPEN.value}') "
        f" OR (t.status = '{ClaimStatus.ACTIVE.value}' AND (SELECT COUNT(*) FROM claims c2 "
        f"     WHERE c2.resource_id = t.resource_id AND c2.status = '{ClaimStatus.ACTIVE.value}') > 1)) AS contended "
        "FROM claims t"
    )
    filter_columns = ("t.resource_id", "t.agent_id", "t.status", "t.claim_type", "t.id")

    def line(self, row: Any) -> ClaimLine:
        return ClaimLine(
            id=row["id"],
            resource_id=row["resource_id"] or "",
            agent_id=row["agent_id"] or "",
            claim_type=row["claim_type"] or "",
            status=row["status"] or "",
            expires_at=row["expires_at"] or "",
            fence=int(row["fence"] or 0),
            contended=bool(row["contended"]),
        )


class EventsSource(VirtualSource):
    table = "events"
    select = "SELECT t.id, t.run_id, t.type, t.actor_id, t.task_id, t.payload_json, t.created_at FROM events t"
    filter_columns = ("t.type", "t.actor_id", "t.task_id", "t.run_id", "t.payload_json")
    append_only = True

    def line(self, row: Any) -> EventLine:
        return EventLine(
            id=int(row["id"]),
            run_id=row["run_id"] or "",
            type=row["type"] or "",
            actor_id=row["actor_id"] or "",
            task_id=row["task_id"] or "",
            payload_json=row["payload_json"] or "",
            created_at=row["created_at"] or "",
        )
