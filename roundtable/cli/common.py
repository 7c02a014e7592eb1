"""Shared CLI pieces: the --root option, error reporting, JSON output, running coroutines."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from roundtable.errors import RoundtableError

P = ParamSpec("P")
T = TypeVar("T")


def find_project(start: Path) -> Path | None:
    """The nearest directory from `start` upwards that holds a roundtable project
    (`.roundtable/config.yaml`), as git finds `.git/`; None when there is none."""
    here = start.absolute()
    for candidate in (here, *here.parents):
        if (candidate / ".roundtable" / "config.yaml").is_file():
            return candidate
    return None


# Where `roundtable --root X <command>` keeps X for the command (`ctx.meta`, shared by the contexts).
ROOT_META = "roundtable.root"


def _discover_root(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """`--root` as given, else the one given before the command (`roundtable --root X watch`),
    else the nearest project above the working directory, else `.`."""
    if value is not None:
        return value
    given = ctx.meta.get(ROOT_META)
    if isinstance(given, Path):
        return given
    return find_project(Path.cwd()) or Path(".")


def keep_group_root(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """The top-level `--root`: kept for whichever command follows (its own `--root` wins)."""
    if value is not None:
        ctx.meta[ROOT_META] = value


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    callback=_discover_root,
    help="Project root (default: the nearest directory upwards with .roundtable/, as git finds .git/).",
)


def _address(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from roundtable.endpoint import address_problem

    if value is None or not value.strip():
        return None
    problem = address_problem(value)
    if problem:
        raise click.BadParameter(problem)
    return value.strip()


http_address_option = click.option(
    "--http-address",
    "http_address",
    envvar="ROUNDTABLE_HTTP_ADDRESS",
    default=None,
    callback=_address,
    help="Listen here instead of mcp.http_address (e.g. 127.0.0.1:0 for a free port); "
    "also ROUNDTABLE_HTTP_ADDRESS. The bound address goes to .roundtable/owner.json.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def fail(message: str) -> NoReturn:
    """Print one line to stderr and exit 1."""
    from roundtable.services.redact import redact

    click.echo(redact(message), err=True)
    sys.exit(1)


def handle_errors(func: Callable[P, T]) -> Callable[P, T]:
    """Turn `RoundtableError`s into a one-line message and exit status 1."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except RoundtableError as exc:
            fail(str(exc))

    return wrapper


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def print_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))
