"""Which panes the console shows at a given terminal size.

At 120x32 and above every pane is on screen. Below that — a laptop's 80x24 — the console shows
one pane at a time, full size, with a one-line pane bar naming the others (`1`-`9`, `0`, `i` jump,
`tab` cycles). `z` zooms the focused pane the same way at any size. The app applies the decision by
setting CSS classes (`-single` on the screen, `-shown` on the pane, `-holds` on its containers);
this module only decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

COMPACT_WIDTH = 120
COMPACT_HEIGHT = 32

# Pane ids in pane-bar order; the number keys follow it.
PANES: tuple[tuple[str, str], ...] = (
    ("runs", "Runs"),
    ("turns", "Turns"),
    ("proposals", "Proposals"),
    ("sessions", "Sessions"),
    ("approvals", "Approvals"),
    ("transactions", "Transactions"),
    ("claims", "Claims"),
    ("events", "Events"),
    ("tasks", "Tasks"),
    ("agents", "Agents"),
    ("inspector", "Inspector"),
)
PANE_IDS = tuple(pane_id for pane_id, _ in PANES)
# Containers around the panes, outermost first; each is shown in single mode only when it
# holds the shown pane.
CONTAINERS: dict[str, tuple[str, ...]] = {
    "runs": ("upper", "left", "top-row"),
    "tasks": ("upper", "left", "top-row"),
    "turns": ("upper", "left", "top-row"),
    "proposals": ("upper", "left", "mid-row", "work"),
    "sessions": ("upper", "left", "mid-row", "work"),
    "approvals": ("upper", "left", "mid-row", "decisions"),
    "transactions": ("upper", "left", "mid-row", "decisions"),
    "claims": ("bottom-row",),
    "events": ("bottom-row",),
    "agents": ("bottom-row",),
    "inspector": ("upper",),
}
ALL_CONTAINERS = ("upper", "left", "top-row", "mid-row", "work", "decisions", "bottom-row")


@dataclass(frozen=True)
class Layout:
    single: bool  # one pane at a time
    shown: str  # the pane shown alone (meaningful when single)

    def holds(self, container_id: str) -> bool:
        return container_id in CONTAINERS.get(self.shown, ())


def compact(width: int, height: int) -> bool:
    return width < COMPACT_WIDTH or height < COMPACT_HEIGHT


def decide(width: int, height: int, *, zoomed: bool, focused: str | None, last: str) -> Layout:
    """The layout for this size; `focused` is the focused pane's id (None when focus is not on
    a pane, e.g. in a dialog), `last` the pane shown before."""
    shown = focused if focused in PANE_IDS else last if last in PANE_IDS else "proposals"
    return Layout(single=zoomed or compact(width, height), shown=shown)


PANE_KEYS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "i")


def pane_key(number: int) -> str:
    """The key that shows pane `number` (1-based): 1-9, 0 for the tenth, i for the Inspector."""
    return PANE_KEYS[number - 1]


def pane_bar(shown: str, width: int) -> Text:
    """`1 Runs 2 Turns …` with the shown pane highlighted; names shortened (the shown one kept
    whole), then the zoom hint dropped, until the bar fits `width`."""
    for cut, hint in ((0, True), (5, True), (4, True), (4, False), (3, False)):
        text = _bar(shown, cut, hint)
        if text.cell_len <= width:
            return text
    return text


def _bar(shown: str, cut: int, hint: bool) -> Text:
    text = Text(" ")
    for n, (pane_id, title) in enumerate(PANES, start=1):
        label = title if not cut or pane_id == shown else title[:cut]
        style = "bold reverse" if pane_id == shown else "dim"
        text.append(f"{pane_key(n)}", style="bold")
        text.append(f" {label}", style=style)
        text.append(" ")
    if hint:
        text.append(" z zoom", style="dim")
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text
