"""The Chair: it keeps the table moving — expires and schedules turns, assigns tasks, requests
reviews, sweeps expired claims — and ends a run whose work converged.

One job per module:

- `tick`: one tick for one run, as a function of the stored state; its writes go through the
  Chair's internal operations (`tools/chair_ops.py`, `Runtime.call` as the caller `chair`);
- `report`: what a tick did (`TickReport`);
- `convergence`: what a run's state asks its status to be, and the ending both loops share;
- `finite`: the bounded loop of `roundtable run --headless` (`run_loop`);
- `loop`: the continuous loop the owner hosts (`ChairLoop`).
"""

from __future__ import annotations

from roundtable.chair.convergence import converge, end_converged, settle
from roundtable.chair.finite import LoopResult, run_loop
from roundtable.chair.loop import ChairLoop, ChairState
from roundtable.chair.report import TickReport
from roundtable.chair.tick import tick
from roundtable.services.coordination.agents import sync_agents

__all__ = [
    "ChairLoop",
    "ChairState",
    "LoopResult",
    "TickReport",
    "converge",
    "end_converged",
    "run_loop",
    "settle",
    "sync_agents",
    "tick",
]
