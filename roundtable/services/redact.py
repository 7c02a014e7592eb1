"""The secrets redactor every error text, log line and stored free text passes.

The rules are a maintained set plus our own. The maintained set is Yelp's `detect-secrets`: every
regex detector its plugins package ships (AWS, Azure, GitHub, GitLab, Slack, Stripe, npm, PyPI,
SendGrid, Twilio, JWTs, private-key headers, credentials in URLs, …), taken as data — the
regexes, and a detector's own validity check where it has one (a JWT must decode) — and updated
with the dependency; its public-IP detector is left out (an address is not a credential) and its
optional network verification is never called. Ours: roundtable's own tokens (`rtcap_`, `rttok_`, the gateway's `rtgw_`),
a PEM private key as a whole block (detect-secrets matches only its header line), formats the set
lacks (GitHub's `github_pat_`, Google's `AIza…` keys, Slack app tokens, OpenAI-style `sk-` keys),
bearer and basic authorization values, `name = value` pairs whose name is one of
detect-secrets' secret keywords or a token (the value whole: quoted, or to the end of the line),
and roundtable's tokens base64- or URL-encoded.

Matching runs on a normalised copy: zero-width and other invisible format characters dropped, then
NFKC, so `rt\u200btok_…` or a full-width `ｇｈｐ_…` is caught. Text the rules find nothing in is
returned unchanged; text whose secret only the normalised copy shows comes back normalised, with
the secret replaced. The rules are compiled on first use (importing detect-secrets costs about a
tenth of a second); `warm_up` does it ahead of time.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

MARK = "[REDACTED]"
_ENV_SECRETS = ("ROUNDTABLE_MCP_TOKEN",)
# detect-secrets detectors that flag what is no credential.
_SKIPPED_DETECTORS = frozenset({"IPPublicDetector"})

# Invisible characters dropped before matching: Unicode's format characters (Cf: zero-width
# space and joiners, bidirectional controls, the BOM, soft hyphen, tags, …), variation
# selectors, the combining grapheme joiner and the Hangul fillers, which render as nothing.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)

# Our own rules: (pattern, the groups to redact — () for the whole match).
_PEM_BLOCK = (
    r"-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]*?-----END[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)"
)
# A keyword's value, whole: a quoted one to its closing quote; after a blank (`password: correct
# horse battery staple`, `secret = two words`) to the end of the line (or of a query parameter,
# `&`, or a statement, `;`), its trailing blanks aside; right after the separator (`token=abc`,
# a shell assignment or a query string) to the next blank, comma, `&` or `;`.
_VALUE = (
    r"""(?:[ \t]*(?P<q>["'])(?P<value>[^\n]*?)(?P=q)"""
    r"""|[ \t]+(?P<line>[^\s&;'"](?:[^\n&;]*[^\s&;])?)"""
    r"""|(?P<bare>[^\s&;,'"]+))"""
)
_VALUE_GROUPS = ("value", "line", "bare")
_COUNT = re.compile(r"\d+(?![\w.-])")


def _encoded_prefixes(prefix: bytes) -> list[str]:
    """What `prefix` looks like inside base64 text (standard and URL-safe alphabets), at each of
    the three byte alignments: the characters its bits alone decide."""
    import base64

    found: set[str] = set()
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            chars = encode(b"\0" * pad + prefix).decode()
            first = -(-pad * 8 // 6)  # the first character holding no padding bit
            last = (pad * 8 + len(prefix) * 8) // 6  # past the last one holding only prefix bits
            found.add(chars[first:last])
    return sorted(found, key=len, reverse=True)


# roundtable's own tokens encoded: base64 (either alphabet, any alignment) and URL-encoding
# (`%5F` for the underscore); a whole base64 run holding one is the secret.
_ENCODED_TOKENS = (
    "[A-Za-z0-9+/_-]{0,3}(?:"
    + "|".join(re.escape(p) for t in (b"rttok_", b"rtcap_", b"rtgw_") for p in _encoded_prefixes(t))
    + ")[A-Za-z0-9+/_-]{16,}=*"
)
# The rest of a token a detector matched the start of (a JWT's signature): token characters, and
# dots between them (not a sentence's full stop).
_TAIL = re.compile(r"(?:[A-Za-z0-9_+/=-]|\.(?=[A-Za-z0-9_-]))*")
_OWN_RULES: tuple[tuple[str, tuple[int | str, ...]], ...] = (
    (_PEM_BLOCK, ()),
    (r"rtcap(?:_|%5[Ff])[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])", ()),
    (r"rttok(?:_|%5[Ff])[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])", ()),
    (r"rtgw(?:_|%5[Ff])[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])", ()),
    (_ENCODED_TOKENS, ()),
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}", ()),
    (r"\bgh[pousr]_[A-Za-z0-9_]{20,}", ()),
    (r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", ()),
    (r"\bxapp-\d+-[A-Za-z0-9-]{10,}", ()),
    (r"\bxox[a-z]-[A-Za-z0-9-]{10,}", ()),
    (r"\bsk-[A-Za-z0-9_-]{16,}\b", ()),
    (r"\bAKIA[0-9A-Z]{16}\b", ()),
    (r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})", (1,)),
    (r"(?i)\bauthorization[\"']?\s*[=:]\s*[\"']?basic\s+([A-Za-z0-9+/=]{4,})", (1,)),
)


@dataclass(frozen=True)
class Rule:
    """One regex; `groups` are the parts that are the secret (empty: the whole match), and
    `valid` a detector's own check of a candidate (a JWT must decode)."""

    pattern: re.Pattern[str]
    groups: tuple[int | str, ...] = ()
    valid: Callable[[str], bool] | None = None
    extend: bool = False  # a whole match runs on to the end of the token (detectors only detect)
    # Lower-case strings one of which every match contains (None: unknown): a text holding none
    # of them is not searched with this rule — most texts skip most rules at the cost of a
    # substring test.
    needs: frozenset[str] | None = None
    # Lower-case literals a match begins with: the rule is tried only where one occurs, instead
    # of at every position (a case-insensitive alternation is slow to try everywhere).
    starts: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        pattern: re.Pattern[str],
        groups: tuple[int | str, ...] = (),
        valid: Callable[[str], bool] | None = None,
        extend: bool = False,
    ) -> Rule:
        return cls(pattern, groups, valid, extend, necessary_literals(pattern))


def _detect_secrets_rules() -> list[Rule]:
    """Every regex detector detect-secrets ships, found by walking its plugins package (a new
    detector in a newer release is used without a change here)."""
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[Rule] = []
    seen: set[type] = set()
    for info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                not isinstance(value, type)
                or not issubclass(value, RegexBasedDetector)
                or value is RegexBasedDetector
                or value in seen
                or value.__name__ in _SKIPPED_DETECTORS
            ):
                continue
            denylist = getattr(value, "denylist", None)
            if not isinstance(denylist, (list, tuple)):
                continue
            seen.add(value)
            detector = value()
            # A detector that filters its regex's candidates (JWT) keeps that filter here.
            checks = type(detector).analyze_string is not RegexBasedDetector.analyze_string
            valid = _validator(detector) if checks else None
            for pattern in denylist:
                groups = tuple(range(1, pattern.groups + 1))
                rules.append(Rule.of(pattern, groups, valid, extend=not groups))
    return rules


def _validator(detector: object) -> Callable[[str], bool]:
    """A candidate passes when the detector's own analysis still finds a secret in it."""
    analyze: Callable[[str], Iterator[str]] = detector.analyze_string  # type: ignore[attr-defined]

    def valid(text: str) -> bool:
        return any(True for _ in analyze(text))

    return valid


def _leading_literal(word: str) -> str:
    """The literal a keyword regex such as `api_?key` or `api[_-]?key` always begins with (`api`)."""
    out = ""
    for at, char in enumerate(word):
        if not (char.isalnum() or char == "_") or word[at + 1 : at + 2] in ("?", "*"):
            break
        out += char
    return out.lower()


def _keyword_rule() -> Rule:
    """`name = value` (or `name: value`, quoted or not) where the name contains one of
    detect-secrets' secret keywords (`password`, `secret`, `api_key`, `private_key`, …) or
    `token`; the name and separator stay. A purely numeric value of a token name (`max_tokens:
    4096`) is a count, not a credential."""
    from detect_secrets.plugins.keyword import DENYLIST

    words = (*DENYLIST, "token", "api[_-]?key")
    names = "|".join(words)
    pattern = re.compile(rf"(?i)(?P<name>(?:{names})[\w-]*)[\"']?[ \t]*[=:]{_VALUE}")
    starts = tuple(sorted({_leading_literal(word) for word in words}))
    return replace(Rule.of(pattern, _VALUE_GROUPS), starts=starts)


@cache
def rules() -> tuple[Rule, ...]:
    """The compiled rule set: ours first, then detect-secrets' detectors and keywords."""
    own = [Rule.of(re.compile(p), g) for p, g in _OWN_RULES]
    return (*own, *_detect_secrets_rules(), _keyword_rule())


@cache
def _index() -> tuple[tuple[int, ...], tuple[tuple[str, tuple[int, ...]], ...]]:
    """(the rules that always run, (literal, the rules it lets run) for every literal)."""
    always: list[int] = []
    by_literal: dict[str, list[int]] = {}
    for number, rule in enumerate(rules()):
        if rule.needs is None:
            always.append(number)
        else:
            for literal in rule.needs:
                by_literal.setdefault(literal, []).append(number)
    return tuple(always), tuple((literal, tuple(numbers)) for literal, numbers in sorted(by_literal.items()))


def _candidates(text: str, lowered: str | None = None) -> list[Rule]:
    """The rules that can match `text`, in order: those whose literals it holds, and the rest."""
    always, by_literal = _index()
    lowered = text.lower() if lowered is None else lowered
    chosen = set(always)
    for literal, numbers in by_literal:
        if literal in lowered:
            chosen.update(numbers)
    every = rules()
    return [every[number] for number in sorted(chosen)]


# --- which literals a match must contain ------------------------------------------------------

Literals = frozenset[str] | None


def necessary_literals(pattern: re.Pattern[str]) -> Literals:
    """Lower-case strings one of which appears in every match of `pattern` (the prefilter of
    `Rule.needs`), read from the regex's parse tree; None when the pattern guarantees no literal
    of two characters or more, or cannot be read (then the rule always runs)."""
    try:
        # The stdlib's own regex parser (private, hence imported by name): its tree is what the
        # engine runs.
        parser = importlib.import_module("re._parser")
        tree = list(parser.parse(pattern.pattern, pattern.flags))
        found = _sequence(tree)
    except Exception:  # a parser that changed shape: no prefilter, never a missed secret
        return None
    if not found or min(len(literal) for literal in found) < 2:
        return None
    return frozenset(literal.lower() for literal in found)


def _sequence(items: list[tuple[Any, Any]]) -> Literals:
    """The best literal set of a sequence: its longest literal runs and its required parts."""
    op = importlib.import_module("re._constants")
    options: list[frozenset[str]] = []
    run = ""
    for code, value in items:
        if code is op.LITERAL:
            run += chr(value)
            continue
        if run:
            options.append(frozenset({run}))
            run = ""
        found = _node(code, value)
        if found:
            options.append(found)
    if run:
        options.append(frozenset({run}))
    return max(options, key=lambda option: min(len(s) for s in option), default=None)


def _node(code: Any, value: Any) -> Literals:
    op = importlib.import_module("re._constants")
    if code is op.SUBPATTERN:
        return _sequence(list(value[-1]))
    if code is op.ATOMIC_GROUP:
        return _sequence(list(value))
    if code is op.BRANCH:
        union: set[str] = set()
        for branch in value[1]:
            found = _sequence(list(branch))
            if not found:
                return None  # one branch needs nothing: the alternation needs nothing
            union |= found
        return frozenset(union)
    if code in (op.MAX_REPEAT, op.MIN_REPEAT, op.POSSESSIVE_REPEAT) and value[0] >= 1:
        return _sequence(list(value[2]))
    return None  # classes, anchors, lookarounds, optional parts: nothing guaranteed


def warm_up() -> int:
    """Compile the rules now (blocking: call it from a thread); returns how many there are."""
    _index()
    return len(rules())


def normalise(text: str) -> str:
    """`text` with invisible characters dropped and NFKC applied (ASCII comes back as it is)."""
    if text.isascii():
        return text
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", _INVISIBLE.sub("", text)))


def _spans(text: str) -> Iterator[tuple[int, int]]:
    for name in _ENV_SECRETS:
        value = os.environ.get(name, "")
        if len(value) >= 4:
            start = text.find(value)
            while start >= 0:
                yield start, start + len(value)
                start = text.find(value, start + len(value))
    lowered = text.lower()
    aligned = len(lowered) == len(text)  # lower() lengthens a few letters (İ): then no offsets
    for rule in _candidates(text, lowered):
        matches = _matches_at(rule, text, lowered) if rule.starts and aligned else rule.pattern.finditer(text)
        for match in matches:
            if rule.valid is not None and not rule.valid(match.group(0)):
                continue
            if rule.groups == _VALUE_GROUPS and _is_count(match):
                continue
            if not rule.groups:
                tail = _TAIL.match(text, match.end()) if rule.extend else None
                yield match.start(), tail.end() if tail is not None else match.end()
                continue
            for group in rule.groups:
                if match.group(group):
                    yield match.span(group)


def _matches_at(rule: Rule, text: str, lowered: str) -> Iterator[re.Match[str]]:
    """`rule`'s matches that begin where one of its `starts` literals occurs, left to right,
    not overlapping (what `finditer` finds for a rule whose every match begins so)."""
    positions: set[int] = set()
    for literal in rule.starts:
        at = lowered.find(literal)
        while at >= 0:
            positions.add(at)
            at = lowered.find(literal, at + 1)
    end = 0
    for at in sorted(positions):
        if at < end:
            continue
        match = rule.pattern.match(text, at)
        if match is not None:
            end = match.end()
            yield match


def _is_count(match: re.Match[str]) -> bool:
    """`max_tokens: 4096` (or `input_tokens: 1200, output_tokens: 340`) is a count."""
    value = next((match.group(g) for g in _VALUE_GROUPS if match.group(g)), "")
    return "token" in match.group("name").lower() and _COUNT.match(value) is not None


def _redact_spans(text: str) -> str | None:
    """`text` with every secret replaced, or None when there is none. Overlapping and touching
    secrets become one mark."""
    merged: list[list[int]] = []
    for start, end in sorted(_spans(text)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if not merged:
        return None
    out: list[str] = []
    position = 0
    for start, end in merged:
        out += (text[position:start], MARK)
        position = end
    out.append(text[position:])
    return "".join(out)


def redact(text: str) -> str:
    """Replace anything that looks like a credential with `[REDACTED]`."""
    if not text:
        return text
    normal = normalise(text)
    found = _redact_spans(normal)
    if found is not None:
        return found
    if normal is not text:
        # Nothing in the normalised copy: the original can still hold what normalising joined
        # differently (it never does for the rules above, but the original is what is stored).
        original = _redact_spans(text)
        return original if original is not None else text
    return text
