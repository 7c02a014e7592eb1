"""The configured forge: `landing.forge` of the config, the token from the environment.

The token is read from the variable `landing.forge.token_env` names at the moment a forge is
needed, in the owner's process — never from a file in the repository, never passed to a
sandbox (sessions and test runs get an environment built from nothing). Redacting it is the
GitHub client's job (its own value, whatever its shape) and the redactor's (every known token
format).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from roundtable.services.forge.base import Forge, ForgeError
from roundtable.services.forge.github import GitHub

if TYPE_CHECKING:
    from roundtable.config import LandingConfig


def connect(config: LandingConfig) -> Forge:
    """A client for the configured forge; `ForgeError` when it is not configured."""
    forge = config.forge
    if not forge.repository:
        raise ForgeError("no forge repository: set landing.forge.repository (owner/name) in .roundtable/config.yaml")
    token = os.environ.get(forge.token_env, "")
    if not token:
        raise ForgeError(f"no forge token: the environment variable {forge.token_env} is not set")
    return GitHub(api_url=forge.api_url, repository=forge.repository, token=token, timeout=forge.timeout)
