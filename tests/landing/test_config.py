"""The `landing:` section of the config: defaults, and bad values refused with the key and line."""

from __future__ import annotations

import pytest

from roundtable.config import ConfigError, parse_config


def test_defaults_land_in_the_working_tree() -> None:
    landing = parse_config("").landing
    assert (landing.mode, landing.branch_prefix, landing.forge.api_url) == (
        "working-tree",
        "roundtable/",
        "https://api.github.com",
    )
    assert landing.author("implementer-1") == ("implementer-1", "implementer-1@roundtable.invalid")


def test_an_author_given_by_the_operator_is_used() -> None:
    text = "landing:\n  authors:\n    implementer-1: Ada Lovelace <ada@example.com>\n"
    assert parse_config(text).landing.author("implementer-1") == ("Ada Lovelace", "ada@example.com")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "landing:\n  mode: pr\n",
            "config.yaml:2: landing.mode: must be one of working-tree, commit, branch, pull-request",
        ),
        (
            "landing:\n  authors:\n    implementer-1: ada\n",
            "config.yaml:3: landing.authors.implementer-1: must read 'Name <email>'",
        ),
        ("landing:\n  branch_prefix: ../x\n", "config.yaml:2: landing.branch_prefix: must be letters"),
        (
            "landing:\n  forge:\n    token_env: 1TOKEN\n",
            "config.yaml:3: landing.forge.token_env: must be an environment variable name",
        ),
        (
            "landing:\n  forge:\n    api_url: ftp://x\n",
            "config.yaml:3: landing.forge.api_url: must be an http:// or https:// URL",
        ),
        (
            "landing:\n  forge:\n    repository: just-a-name\n",
            "config.yaml:3: landing.forge.repository: must read owner/name",
        ),
        ("landing:\n  pull_request:\n    merge_method: octopus\n", "config.yaml:3: landing.pull_request.merge_method"),
        ("landing:\n  ci_attempts: 0\n", "config.yaml:2: landing.ci_attempts: must be a positive integer"),
        ("landing:\n  forge:\n    token: ghp_x\n", "config.yaml:3: landing.forge.token: unknown key"),
    ],
)
def test_bad_landing_values_name_key_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert str(caught.value).startswith(message), str(caught.value)
