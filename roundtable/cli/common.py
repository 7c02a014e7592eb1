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

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project root.",
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
