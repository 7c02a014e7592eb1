"""The secrets redactor every error text and log line passes before it leaves the process."""

from __future__ import annotations

import os
import re

_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    # `key=value`, `key: value`, and quoted forms (`"token": "…"` in JSON, `'token': '…'` in a repr).
    re.compile(r"(?i)((?:token|secret|password|passwd|api[_-]?key)[\"']?\s*[=:]\s*[\"']?)[^\s'\",;]{4,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"),
    re.compile(r"\bghp_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\brtcap_[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])"),
    re.compile(r"\brttok_[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])"),
]
_ENV_SECRETS = ("ROUNDTABLE_MCP_TOKEN",)


def redact(text: str) -> str:
    """Replace anything that looks like a credential with `[REDACTED]`."""
    for name in _ENV_SECRETS:
        value = os.environ.get(name, "")
        if len(value) >= 4:
            text = text.replace(value, "[REDACTED]")
    for pattern in _PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + "[REDACTED]", text)
        else:
            text = pattern.sub("[REDACTED]", text)
    return text
