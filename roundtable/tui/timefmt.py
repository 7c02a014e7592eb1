"""The console's compact times: `HH:MM:SS`, `3m04s`, and seconds until a stamp."""

from __future__ import annotations

from roundtable.services.views.overview import stamp_ns

__all__ = ["ago", "human_delta", "seconds_stamp", "seconds_until", "short_time", "since", "stamp_ns"]


def short_time(stamp: str) -> str:
    """`HH:MM:SS` of an RFC 3339 stamp (the console's compact time)."""
    if "T" in stamp and len(stamp) >= 19:
        return stamp[11:19]
    return stamp


def human_delta(seconds: float) -> str:
    """`12s`, `3m04s`, `2h05m`, `3d04h` (negative values get a leading `-`)."""
    sign = "-" if seconds < 0 else ""
    s = int(abs(seconds))
    if s < 60:
        return f"{sign}{s}s"
    if s < 3600:
        return f"{sign}{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{sign}{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{sign}{s // 86400}d{(s % 86400) // 3600:02d}h"


def seconds_until(stamp: str, now_ns: int) -> float | None:
    ns = stamp_ns(stamp)
    return None if ns == 0 else (ns - now_ns) / 1e9


def ago(stamp: str, now_ns: int) -> str:
    """`12s ago` for a past stamp, `—` when there is none."""
    ns = stamp_ns(stamp)
    return "—" if ns == 0 else f"{human_delta(max(now_ns - ns, 0) / 1e9)} ago"


def since(stamp: str, now_ns: int) -> str:
    """A list's relative time, changing at most once a minute: `<1m`, `4m`, `2h05m`, `3d04h`
    (`—` when there is no stamp). Dialogs and the Inspector show the stamp to the second."""
    ns = stamp_ns(stamp)
    if ns == 0:
        return "—"
    seconds = max(now_ns - ns, 0) / 1e9
    if seconds < 60:
        return "<1m"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    return human_delta(seconds)


def seconds_stamp(stamp: str) -> str:
    """`2026-12-01 13:34:00` — an RFC 3339 stamp to the second, for dialogs."""
    if "T" in stamp and len(stamp) >= 19:
        return f"{stamp[:10]} {stamp[11:19]}"
    return stamp or "—"
