"""Secrets in the formats agents paste most never reach the database: each is written through a
real tool call (`memory.record`, free text an agent sends) and the stored row is read back. The
rules come from detect-secrets' detectors plus our own; matching runs after dropping invisible
characters and NFKC, so a token split by a zero-width space is caught too."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from roundtable.runtime import Runtime
from roundtable.services import redact as redactor
from roundtable.services.coordination.agents import sync_agents
from tests.helpers import agent

pytestmark = pytest.mark.anyio

PEM_BODY = "MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumMzuTWVnMRQj2rVRnYT9ZKNUq2mDEX8ZXm0kq2mDEX8ZXm0k"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
# (name, the text an agent sends, the parts of it that must not be stored)
FORMATS = [
    (
        "pem private key",
        f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY[:64]}\n{PEM_BODY[64:]}\n-----END RSA PRIVATE KEY-----\nend",
        [PEM_BODY[:64], PEM_BODY[64:], "BEGIN RSA PRIVATE KEY"],
    ),
    (
        "openssh key cut short",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ{PEM_BODY[:40]}",
        ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", PEM_BODY[:40]],
    ),
    (
        "aws secret access key",
        "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1",
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
    ),
    ("aws access key id", "AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A", ["ASIAY34FZKBOKMUTVV7A"]),
    ("credentials in a url", "git clone https://alice:hunter2pass@git.example.com/r.git", ["hunter2pass"]),
    ("database url", "DATABASE_URL=postgres://app:S3cretPw0rd@db:5432/app", ["S3cretPw0rd"]),
    (
        "github fine-grained pat",
        "GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX used",
        ["github_pat_11ABCDEFG0123456789", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"],
    ),
    (
        "github oauth token",
        "token gho_16C7e42F292c6912E7710c838347Ae178B4a ok",
        ["gho_16C7e42F292c6912E7710c838347Ae178B4a"],
    ),
    (
        "slack bot token",
        "SLACK xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"],
    ),
    (
        "slack webhook",
        "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        ["XXXXXXXXXXXXXXXXXXXXXXXX"],
    ),
    (
        "google api key",
        "maps key AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI here",
        ["AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"],
    ),
    ("jwt", f"Cookie: session={JWT}; Path=/", [JWT.split(".")[1], JWT.split(".")[2]]),
    ("zero-width split token", "use rt\u200btok_0123456789abcdefXYZabc now", ["0123456789abcdefXYZabc"]),
    ("zero-width inside a token", "use rttok_0123\u2060456789abcdefXYZabc now", ["456789abcdefXYZabc"]),
    (
        "full-width bearer",
        "Authorization: Ｂｅａｒｅｒ ａｂｃｄｅｆｇｈ１２３４５６７８",
        ["ａｂｃｄｅｆｇｈ", "abcdefgh12345678"],
    ),
]


@pytest.mark.parametrize(("name", "text", "secrets"), FORMATS, ids=[f[0] for f in FORMATS])
async def test_each_format_is_redacted_before_it_is_stored(
    runtime: Runtime, name: str, text: str, secrets: list[str]
) -> None:
    await sync_agents(runtime)
    args = {"scope": "project", "kind": "note", "title": f"note on {name}", "body_md": text}
    entry = (await runtime.call("memory.record", args, agent("implementer-1")))["entry"]
    async with runtime.db.read() as reader:
        stored = await reader.scalar("SELECT body_md FROM memory_entries WHERE id = ?", (entry["id"],))
    assert isinstance(stored, str) and redactor.MARK in stored, stored
    for secret in secrets:
        assert secret not in stored, (secret, stored)
    everything = await _dump(runtime)
    for secret in secrets:
        assert secret not in everything, f"{secret!r} reached the database"


async def _dump(runtime: Runtime) -> str:
    """Every text column of every row: nothing may hold the secret (events, revisions, …)."""
    out: list[str] = []
    async with runtime.db.read() as reader:
        tables = [row[0] for row in await reader.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in await reader.fetchall(f"SELECT * FROM {table}"):
                out.extend(str(value) for value in row if isinstance(value, str))
    return "\n".join(out)


def test_text_around_the_secret_stays_and_clean_text_is_untouched() -> None:
    assert redactor.redact("region = eu-west-1\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == (
        "region = eu-west-1\naws_secret_access_key = [REDACTED]"
    )
    for clean in (
        "max_tokens: 4096",
        "sha256 3f786850e387550fdab836ed7e6dc881de23001b83e9c0f1e8ac3f2a2f0b2d6c of P-20261201T153220.933359495",
        "naïve café — ｆｕｌｌ ｗｉｄｔｈ text, no secret",
        "see https://example.com/docs/page.html for why",
    ):
        assert redactor.redact(clean) == clean  # returned as it was, not normalised


def test_every_invisible_format_character_is_dropped_before_matching() -> None:
    missing = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if unicodedata.category(chr(cp)) == "Cf" and not redactor._INVISIBLE.fullmatch(chr(cp))
    ]
    assert missing == []


@pytest.mark.parametrize(("name", "text", "secrets"), FORMATS, ids=[f[0] for f in FORMATS])
def test_the_literal_prefilter_never_skips_a_rule_that_matches(name: str, text: str, secrets: list[str]) -> None:
    normal = redactor.normalise(text)
    chosen = {id(rule) for rule in redactor._candidates(normal)}
    for rule in redactor.rules():
        if rule.pattern.search(normal):
            assert id(rule) in chosen, rule.pattern.pattern
        if rule.starts:  # tried only where a start literal occurs: the same matches as everywhere
            found = [m.span() for m in redactor._matches_at(rule, normal, normal.lower())]
            assert found == [m.span() for m in rule.pattern.finditer(normal)]


def test_the_maintained_rule_set_is_used() -> None:
    patterns = {rule.pattern.pattern for rule in redactor.rules()}
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.stripe import StripeDetector

    assert {p.pattern for p in SlackDetector.denylist} <= patterns
    assert {p.pattern for p in StripeDetector.denylist} <= patterns
    assert not any(re.search(r"\d\{1,3\}\\\.", p) for p in patterns if "IPPublic" in p)
    assert redactor.redact("key sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2") == "key [REDACTED]"
