"""How the console is put together: every command's action runs somewhere, each flow action
lives in one flow, and the flows are widgets of the main screen that own their keys' work."""

from __future__ import annotations

import pytest

from roundtable.runtime import Runtime
from roundtable.tui import commands
from roundtable.tui.app import RoundtableApp
from roundtable.tui.flows.flow import Flow
from roundtable.tui.screens.console import FLOW_OF_ACTION, FLOWS, ConsoleScreen
from roundtable.tui.screens.prompt import PromptScreen
from tests.tui.conftest import make_app, settle, wait_for

pytestmark = pytest.mark.anyio


def _defines(cls: type, name: str) -> bool:
    return callable(getattr(cls, f"action_{name}", None))


def test_every_command_runs_on_exactly_one_flow_or_the_screen_or_the_app() -> None:
    for command in commands.COMMANDS:
        if not command.action:
            continue
        flows = [flow for flow in FLOWS if _defines(flow, command.action)]
        assert len(flows) <= 1, f"{command.action} is in {flows}"
        places = [*flows] + [cls for cls in (ConsoleScreen, RoundtableApp) if _defines(cls, command.action)]
        assert places, f"{command.id}: no flow, screen or app has action_{command.action}"
        if flows:
            assert FLOW_OF_ACTION[command.action] is flows[0]


def test_the_app_is_not_assembled_from_flows() -> None:
    assert not any(issubclass(base, Flow) for base in RoundtableApp.__mro__ if isinstance(base, type))
    assert all(issubclass(flow, Flow) for flow in FLOWS)


async def test_a_key_runs_on_its_flow_mounted_in_the_main_screen(runtime: Runtime) -> None:
    app = make_app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        screen = app.screen
        assert isinstance(screen, ConsoleScreen)
        mounted = {type(node) for node in screen.query(Flow)}
        assert mounted == set(FLOWS)
        assert all(not node.display for node in screen.query(Flow))  # no place on screen
        await pilot.press("g")  # new run: RunFlow's action, from the main screen's binding
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="goal prompt")
        await pilot.press("escape")
        await wait_for(lambda: app.screen is screen, what="back on the main screen")
        # A dialog has only its own keys: the main screen's `g` does not open a second prompt.
        await pilot.press("question_mark")
        await wait_for(lambda: app.screen is not screen, what="help over the console")
        await pilot.press("g")
        await settle(app)
        assert not isinstance(app.screen, PromptScreen)
