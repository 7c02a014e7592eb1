"""`roundtable wait --ready [--timeout 60s]`: wait until this project's owner answers (for CI).

Exits 0 once the owner at the project's address (`ROUNDTABLE_HTTP_ADDRESS`, the address the
running owner wrote to `.roundtable/owner.json`, else `mcp.http_address`) answers `/healthz`
naming this project's id — another project's owner on the port is not mistaken for it — and 1
with the last reason when the timeout passes first.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from roundtable.cli.common import fail, handle_errors, root_option

POLL = 0.2


def _address(root: Path) -> tuple[str, bool]:
    from roundtable.config import load_config
    from roundtable.endpoint import override_address, running_address

    config = load_config(root)
    tls = bool(config.mcp.tls_cert_file and config.mcp.tls_key_file)
    return override_address() or running_address(root) or config.mcp.http_address, tls


@click.command()
@root_option
@click.option("--ready", is_flag=True, help="Wait until this project's owner answers (required).")
@click.option("--timeout", default="60s", show_default=True, help="Give up after this long (e.g. 30s, 2m).")
@handle_errors
def wait(root: Path, ready: bool, timeout: str) -> None:
    """Wait until this project's owner answers (its identity checked); exit 1 on timeout."""
    from roundtable.cli.doctor_cmd import identity_finding
    from roundtable.config import parse_duration

    if not ready:
        raise click.UsageError("say what to wait for: --ready")
    try:
        limit = parse_duration(timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--timeout") from None
    deadline = time.monotonic() + limit
    why = "nothing answers"
    while True:
        address, tls = _address(root)  # read again: the owner writes owner.json once it listens
        found = identity_finding(root, address, tls=tls)
        if found is not None and found[0]:
            click.echo(f"ready: {found[1]}")
            return
        why = found[1] if found is not None else f"nothing answers at {address}"
        if time.monotonic() >= deadline:
            fail(f"this project's owner did not answer within {timeout}: {why}")
        time.sleep(POLL)
