"""The secrets redactor as a table: each credential shape it must hide, what it keeps around
the secret, and look-alikes it must leave alone (errors and logs stay readable)."""

from __future__ import annotations

import pytest

from roundtable.services.redact import redact

R = "[REDACTED]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Bearer credentials: the scheme stays, any case, any token alphabet of 8+ characters.
        ("Authorization: Bearer abcdefgh12345678", f"Authorization: Bearer {R}"),
        ("authorization: bearer eyJhbGciOi.J9.x-y_z~+/=", f"authorization: bearer {R}"),
        ("BEARER\tABCDEFGH", f"BEARER\t{R}"),
        # key=value / key: value for the secret-looking names; the key and separator stay.
        ("token=s3cr3tvalue", f"token={R}"),
        ("TOKEN: s3cr3tvalue rest", f"TOKEN: {R}"),  # after a blank: the value is the rest of the line
        ("password: correct horse battery staple", f"password: {R}"),
        ("passwd = two words ; next", f"passwd = {R} ; next"),
        ("token=abc", f"token={R}"),
        ("GET /x?token=abc&page=2", f"GET /x?token={R}&page=2"),
        ("password = hunter22;", f"password = {R};"),
        ("passwd:abcd", f"passwd:{R}"),
        ("secret='topsecret'", f"secret='{R}'"),
        ('api_key="k-123456"', f'api_key="{R}"'),
        ("API-KEY=k-123456, next", f"API-KEY={R}, next"),
        ("apikey:xyz1", f"apikey:{R}"),
        ("access_token=abcd1234", f"access_token={R}"),
        # Quoted keys and values: JSON, and a Python dict's repr in an error text.
        ('{"token": "abcd1234", "n": 1}', f'{{"token": "{R}", "n": 1}}'),
        ("{'password': 'hunter22'}", f"{{'password': '{R}'}}"),
        ('"api_key":"k-123456"', f'"api_key":"{R}"'),
        # Provider key shapes, anywhere in the text.
        ("key sk-abcdefghijklmnop1234 used", f"key {R} used"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", R),
        ("AKIAABCDEFGHIJKLMNOP", R),
        # Our own credentials: capability tokens and bearer tokens, whole.
        ("cap rtcap_ABCDEFGHIJKLMNOP_-x1 end", f"cap {R} end"),
        ("rttok_0123456789abcdefXYZ", R),
        ("rtgw_0123456789abcdefXYZ_-", R),
        # Several in one text.
        ("token=aaaa1111 and Bearer bbbbbbbbcccc", f"token={R} and Bearer {R}"),
    ],
)
def test_credentials_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "proposal P-12 is not approvable: 1 approval of 2",
        "Bearer short",  # fewer than 8 characters: a word, not a token
        "token = ",
        "tokens are per principal",  # the word alone
        "sk-short",  # provider prefixes below their length
        "ghp_tooshort",
        "AKIA123",  # wrong alphabet and length
        "akiaABCDEFGHIJKLMNOP",  # the AWS prefix is upper-case
        "rtcap_short",
        "rttok_0123456789",  # too short to be a token
        "path src/token_store.py line 3",
    ],
)
def test_look_alikes_are_kept(text: str) -> None:
    assert redact(text) == text


def test_the_project_token_from_the_environment_is_redacted_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", "plainvalue42")
    assert redact("sent plainvalue42 twice: plainvalue42") == f"sent {R} twice: {R}"
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", "abc")  # too short to replace safely
    assert redact("abc abc") == "abc abc"


def test_redaction_is_idempotent() -> None:
    once = redact("Bearer abcdefgh12345678 token=zzzz9999 sk-abcdefghijklmnop1234")
    assert R in once and redact(once) == once


def test_an_encoded_roundtable_token_is_found() -> None:
    import base64
    import urllib.parse

    token = "rttok_" + "Zq3" * 10
    for encoded in (
        base64.b64encode(token.encode()).decode(),
        base64.b64encode(b"u:" + token.encode()).decode(),  # another alignment
        base64.urlsafe_b64encode(b"abc" + token.encode() + b"\xff\xfe").decode(),
        urllib.parse.quote(f"next={token}&x=1", safe=""),
        token.replace("_", "%5F"),
    ):
        shown = redact(f"sent {encoded} upstream")
        assert R in shown and encoded not in shown and shown.startswith("sent ") and shown.endswith(" upstream")
        assert "Zq3Zq3" not in shown
