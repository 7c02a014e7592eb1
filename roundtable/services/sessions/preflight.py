"""Preflight: can each configured agent's harness run here, before anything is launched?

For every agent the supervisor can launch, its adapter's executable must be on the PATH a
session gets, its install must be one the sandbox can be given alone (`runner.program_grant`),
and the model credential must be in the owner's environment, where the owner's
gateway reads it to add it to the session's model requests (a session never holds it, and a
login the user made elsewhere is not found): Claude Code `ANTHROPIC_API_KEY` or
`ANTHROPIC_AUTH_TOKEN`; Codex `CODEX_API_KEY` or `OPENAI_API_KEY`, or the `env_key` of the model
provider the operator's own Codex configuration selects (`adapters.operator_credentials`).
`doctor`, `start` and every launch ask here.
A harness's own "not logged in" answer is reported as `NO_CREDENTIAL` (`credential_failure`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from roundtable.config import Config
from roundtable.errors import ValidationError
from roundtable.sandbox import runner
from roundtable.services.coordination.agents import configured_agents
from roundtable.services.sessions import adapters, capabilities

NO_CREDENTIAL = "no model credential in the owner's environment"
# Harnesses whose model API roundtable's gateway does not serve: a supervised session has no other
# way to a model, so launching one could only fail later and less clearly.
NO_GATEWAY_ROUTE = "is not supported under roundtable's gateway"
# How a session ended when the model API refused the operator's credential (the gateway saw a 401
# or 403): `CREDENTIAL_REFUSED (status, upstream message)`. Retrying cannot help.
CREDENTIAL_REFUSED = "the model API refused the credential"


def credential_refused(status: int, message: str) -> str:
    """`the model API refused the credential (401, invalid x-api-key)`."""
    return f"{CREDENTIAL_REFUSED} ({status}, {message})" if message else f"{CREDENTIAL_REFUSED} ({status})"


# What harnesses print when they have no usable credential (Claude Code: "Not logged in · Please
# run /login"; an API answering 401).
_NO_LOGIN = re.compile(r"not logged in|please run /login|invalid api key|authentication_error|401 unauthorized", re.I)


@dataclass(frozen=True)
class Unready:
    """Agents that cannot run, and why."""

    agents: tuple[str, ...]
    adapter: str
    problem: str
    fix: str

    def line(self) -> str:
        who = ", ".join(self.agents) if len(self.agents) <= 3 else f"{self.agents[0]} … {self.agents[-1]}"
        return f"{who} cannot run (adapter {self.adapter}): {self.problem}"


def session_path() -> str:
    """The PATH a supervised session searches: this interpreter's directory first."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])


def credential_names(adapter: str) -> tuple[str, ...]:
    """The owner's variables of which at least one must be set for `adapter` to reach its model
    (none for an adapter the gateway serves no model API to)."""
    return adapters.operator_credentials(adapter)


def adapter_problem(config: Config, name: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(why adapter `name` cannot start a session here, the fix), or ('', '')."""
    env = os.environ if environ is None else environ
    try:
        adapter = adapters.get(config, name)
    except ValidationError as exc:
        return str(exc), f"add adapters.{name} to .roundtable/config.yaml or point the agent at a configured adapter"
    if name in adapters.WITHOUT_GATEWAY_ROUTE:
        return (
            f"adapter {name} {NO_GATEWAY_ROUTE}: a supervised session reaches its model only through the "
            "gateway, which serves Anthropic's API (adapter claude) and OpenAI's (adapter codex), so "
            f"{name} would reach no model",
            "give these agents adapter claude or codex (agents.*.adapter in .roundtable/config.yaml)",
        )
    words = shlex.split(adapter.command or name) if (adapter.command or name).strip() else []
    if not words:
        return f"adapter {name} has no command", f"set adapters.{name}.command in .roundtable/config.yaml"
    if shutil.which(words[0], path=session_path()) is None:
        return (
            f"{words[0]} not found on PATH",
            f"install {words[0]}, or give these agents an installed harness (agents.*.adapter in .roundtable/config.yaml)",
        )
    if granted := install_problem(config, words[0]):
        return granted, (
            f"install {words[0]} in a directory of its own, or add a path holding only it to sessions.read_paths "
            "in .roundtable/config.yaml"
        )
    if name == "codex" and (followed := adapters.codex_operator_upstream()).problem:
        return (
            followed.problem,
            f"define the provider in {adapters.codex_home() / 'config.toml'}, or remove model_provider",
        )
    names = credential_names(name)
    if names and not any(env.get(n, "").strip() for n in names):
        return (
            f"{NO_CREDENTIAL} (set {' or '.join(names)} for the owner: its gateway adds it to the session's "
            "model requests; a session never holds it, nor sees your login)",
            f"export {names[0]}=… in the shell that runs `roundtable start` (or the console)",
        )
    return "", ""


def adapter_program(config: Config, name: str) -> str:
    """The program adapter `name` runs (the first word of its command), '' when it has none."""
    adapter = adapters.get(config, name)
    words = shlex.split(adapter.command or name) if (adapter.command or name).strip() else []
    return words[0] if words else ""


def install_problem(config: Config, program: str, *, root: str = "") -> str:
    """Why the sandbox cannot be given `program`'s install (its directory is the home, holds
    another project or a credential, or the sandbox's user cannot run it), or ''."""
    if not program or os.environ.get("ROUNDTABLE_SESSION_ISOLATION", config.sessions.sandbox) == "subprocess":
        return ""  # a plain subprocess is given nothing: it has the owner's rights
    return runner.program_grant(program, session_path(), root=root, read_paths=config.sessions.read_paths).problem


def unready_agents(config: Config, environ: Mapping[str, str] | None = None) -> list[Unready]:
    """Every launchable configured agent whose harness cannot run here, grouped by adapter."""
    by_adapter: dict[str, list[str]] = {}
    for spec in configured_agents(config):
        if capabilities.role_for_agent(spec.id) is None:
            continue  # the Chair and the memory oracle are never launched
        by_adapter.setdefault(spec.adapter, []).append(spec.id)
    out = []
    for name, agents in by_adapter.items():
        problem, fix = adapter_problem(config, name, environ)
        if problem:
            out.append(Unready(tuple(agents), name, problem, fix))
    return out


def credential_failure(output: str) -> bool:
    """Whether a harness's output says it has no usable model credential."""
    return bool(_NO_LOGIN.search(output))
