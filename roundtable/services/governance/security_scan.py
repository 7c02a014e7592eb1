"""The automatic security scan of a patch (the reference's scan with its
weaknesses fixed): secrets, dangerous calls and commands in *added* lines, and sensitive paths.

Differences from the reference, on purpose:
- command patterns match as whole words (`rm` no longer matches `format`, `mv` not `mvn`);
- secrets are recognised by shape (private-key blocks, well-known token formats, a credential
  name assigned a literal), not only when printed;
- every finding names its path and line, findings are de-duplicated and sorted by real
  severity (`critical` first);
- `info` and `low` findings inform but do not change the verdict.

Pure functions: no I/O. Messages never quote the matched text, so a found secret is not
copied into the database or an error. Paths come from the git-faithful parser
(`patches.parse_patch` without a root), so both sides of a rename or copy are scanned, and a
symlink, submodule or mode change is a finding of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from roundtable.domain import ReviewStatus
from roundtable.errors import ToolError
from roundtable.services.policy.engine import BUILTIN_DANGEROUS
from roundtable.services.repository.patches import Allowances, parse_patch

SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
BLOCKING = ("critical", "high", "medium")
MAX_FINDINGS = 500

SUMMARIES: dict[str, str] = {
    ReviewStatus.VETO: "Security review vetoed the proposal due to critical findings.",
    ReviewStatus.NEEDS_CHANGES: "Security review found issues that require changes before apply.",
    ReviewStatus.APPROVED: "Security review completed with no blocking findings.",
}

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_TOKEN_SHAPES = re.compile(
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}\b"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}\b"
    r"|\bglpat-[A-Za-z0-9_-]{20,}\b"
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"
    r"|\bsk_live_[A-Za-z0-9]{16,}\b"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}\b"
    r"|\brtcap_[A-Za-z0-9_-]{16,}\b"
)
_CREDENTIAL_NAME = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key)"
)
# name = "literal" / name: 'literal' / "name": "literal" (code, JSON, YAML, TOML)
_QUOTED_SECRET = re.compile(rf"(?i){_CREDENTIAL_NAME}[\w.-]*[\"']?\s*(?::=|=|:)\s*[\"']([^\"'\s]{{8,}})[\"']")
# NAME=value / name: value in configuration-like files, where values are written unquoted
_BARE_SECRET = re.compile(
    rf"(?i)^\s*(?:export\s+)?[\w.-]*{_CREDENTIAL_NAME}[\w.-]*\s*[=:]\s*([^\s\"'$<{{(\[][^\s]{{7,}})\s*$"
)
_CONFIG_SUFFIXES = (".env", ".ini", ".cfg", ".conf", ".properties", ".yaml", ".yml", ".toml")
_PLACEHOLDER = re.compile(r"(?i)example|changeme|change_me|placeholder|your[_-]|xxxx|dummy|redacted|\*\*\*|\.\.\.")

_LOGGING = re.compile(
    r"(?i)(?:\b(?:print|println|printf|puts|echo)\b"
    r"|\bconsole\.\w+\s*\("
    r"|\blog(?:ger|ging)?\.\w+\s*\("
    r"|\bfmt\.(?:print|sprint|fprint)\w*\s*\()"
)
_SENSITIVE_WORD = re.compile(r"(?i)token|secret|password|passwd|api[_-]?key|private[_-]?key")

_DANGEROUS_CALLS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("eval()", re.compile(r"(?<![\w.])eval\s*\(")),
    ("exec()", re.compile(r"(?<![\w.])exec\s*\(")),
    ("os.system()", re.compile(r"\bos\.(?:system|popen)\s*\(")),
    ("os.exec*()", re.compile(r"\bos\.exec[lv]p?e?\s*\(")),
    ("shell=True", re.compile(r"\bshell\s*=\s*True\b")),
    ("child_process", re.compile(r"\bchild_process\b")),
    ("new Function()", re.compile(r"\bnew\s+Function\s*\(")),
    ("pickle.loads()", re.compile(r"\bpickle\.loads?\s*\(")),
    ("exec.Command()", re.compile(r"\bexec\.Command(?:Context)?\s*\(")),
    ("Runtime.exec()", re.compile(r"\bRuntime\.getRuntime\(\)\.exec\s*\(")),
)


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    message: str
    path: str = ""
    line: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
        }


@dataclass(frozen=True)
class ScanResult:
    status: str
    summary: str
    findings: tuple[Finding, ...]
    touched: tuple[str, ...]


def _commands_regex(commands: Iterable[str]) -> tuple[re.Pattern[str] | None, list[str]]:
    """One alternation for all command patterns (longest first), matched as whole words."""
    names = sorted({c.strip() for c in commands if c.strip()}, key=lambda c: (-len(c), c))
    if not names:
        return None, []
    spaced = r"\s+"
    parts = [f"(?P<k{i}>{spaced.join(re.escape(w) for w in name.lower().split())})" for i, name in enumerate(names)]
    body = "|".join(parts)
    return re.compile(rf"(?<![\w.-])(?:{body})(?![\w-])", re.IGNORECASE), names


_CALLS = re.compile("|".join(f"(?P<c{i}>{pattern.pattern})" for i, (_, pattern) in enumerate(_DANGEROUS_CALLS)))
_TOKEN_HINTS = ("akia", "asia", "gh", "glpat-", "sk-", "sk_live_", "xox", "aiza", "rtcap_")
_CREDENTIAL_HINTS = ("pass", "secret", "token", "key", "auth")
_CALL_HINTS = ("eval", "exec", "os.", "shell", "child_process", "function", "pickle", "runtime")
_WORD = re.compile(r"[\w-]+")
_SENSITIVE_HINTS = (
    "token",
    "secret",
    "passw",
    "api_key",
    "api-key",
    "apikey",
    "private_key",
    "private-key",
    "privatekey",
)


def _is_config_file(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    return name.startswith(".env") or name.endswith(_CONFIG_SUFFIXES)


def _scan_line(
    text: str, path: str, line: int, commands: re.Pattern[str] | None, names: list[str], first_words: frozenset[str]
) -> Iterable[Finding]:
    # Cheap substring checks on the lower-cased line gate the costlier expressions.
    lower = text.lower()
    if "private key" in lower and _PRIVATE_KEY.search(text):
        yield Finding("private_key", "critical", "Added content contains a private key.", path, line)
    if any(h in lower for h in _TOKEN_HINTS) and _TOKEN_SHAPES.search(text):
        yield Finding(
            "access_token", "critical", "Added content contains what looks like an access key or token.", path, line
        )
    if any(h in lower for h in _CREDENTIAL_HINTS):
        match = _QUOTED_SECRET.search(text) or (_BARE_SECRET.search(text) if _is_config_file(path) else None)
        if match and not _PLACEHOLDER.search(match.group(1)):
            yield Finding(
                "hardcoded_secret",
                "critical",
                "Added line assigns a literal value to a credential (password, secret, token or key).",
                path,
                line,
            )
    if any(h in lower for h in _SENSITIVE_HINTS) and _LOGGING.search(text):
        yield Finding(
            "secret_logging",
            "critical",
            "Added line appears to log or print sensitive credentials or tokens.",
            path,
            line,
        )
    calls = _CALLS.finditer(text) if any(h in lower for h in _CALL_HINTS) else ()
    for group in dict.fromkeys(m.lastgroup for m in calls if m.lastgroup):
        label = _DANGEROUS_CALLS[int(group[1:])][0]
        yield Finding(
            "dangerous_call",
            "high",
            f"Added content calls {label}, which can run arbitrary code or commands.",
            path,
            line,
        )
    if commands is None or first_words.isdisjoint(_WORD.findall(lower)):
        return
    for group in dict.fromkeys(m.lastgroup for m in commands.finditer(text) if m.lastgroup):
        escaped = names[int(group[1:])].replace("\\", "\\\\").replace('"', '\\"')
        yield Finding(
            "dangerous_command",
            "high",
            f'Added content references dangerous command pattern "{escaped}".',
            path,
            line,
        )


def verdict(findings: Iterable[Finding]) -> str:
    severities = {f.severity for f in findings}
    if "critical" in severities:
        return ReviewStatus.VETO
    if severities & set(BLOCKING):
        return ReviewStatus.NEEDS_CHANGES
    return ReviewStatus.APPROVED


_EVERYTHING = Allowances(symlinks=True, submodules=True, mode_changes=True)


def _path_findings(
    path: str, is_sensitive: Callable[[str], bool] | None, is_high_risk: Callable[[str], bool] | None
) -> list[Finding]:
    out = []
    if is_sensitive is not None and is_sensitive(path):
        out.append(Finding("sensitive_path", "high", "Patch touches a credential or configuration location.", path))
    if is_high_risk is not None and is_high_risk(path):
        out.append(
            Finding(
                "high_risk_path",
                "info",
                "Path matches a high-risk policy pattern; the human approval rules apply.",
                path,
            )
        )
    return out


def scan_patch(
    text: str,
    *,
    dangerous_commands: Iterable[str] = BUILTIN_DANGEROUS,
    is_sensitive: Callable[[str], bool] | None = None,
    is_high_risk: Callable[[str], bool] | None = None,
) -> ScanResult:
    """Scan a unified diff; raises `ToolError` when it does not parse or touches no file. The
    patch is read by `patches.parse_patch` (the one diff model: the paths and lines git reads,
    both sides of a rename or copy), with every special file allowed so the scan can name it."""
    try:
        parsed = parse_patch(text, None, _EVERYTHING)
    except ToolError as exc:
        raise ToolError(f"parse patch: {exc}") from None
    commands, names = _commands_regex(dangerous_commands)
    first_words = frozenset(name.lower().split()[0] for name in names)
    findings: list[Finding] = []
    touched = list(parsed.touched)
    for path in touched:
        findings.extend(_path_findings(path, is_sensitive, is_high_risk))
    for path, why in sorted(parsed.special.items()):
        findings.append(Finding("special_file", "low", f"Patch changes more than contents: {why}.", path))
    for change, number, line in parsed.added_lines():
        findings.extend(_scan_line(line, change.new or change.old, number, commands, names, first_words))
    unique = sorted(set(findings), key=lambda f: (SEVERITY_RANK.get(f.severity, 9), f.path, f.line, f.code, f.message))
    if len(unique) > MAX_FINDINGS:
        dropped = len(unique) - MAX_FINDINGS
        unique = [
            *unique[:MAX_FINDINGS],
            Finding("findings_truncated", "info", f"{dropped} more findings were not recorded."),
        ]
    status = verdict(unique)
    return ScanResult(status, SUMMARIES[status], tuple(unique), tuple(touched))
