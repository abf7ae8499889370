"""Secret redaction for text engines send to summarisers (``agent.redact`` stand-in).

Hermes redacts API keys, bearer tokens, private keys and URL credentials before text leaves
the process; engines call it through ``agent.redact.redact_sensitive_text``. Patterns here are
our own and deliberately conservative: a false positive costs a few characters of summary.
"""

from __future__ import annotations

import re

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), "[REDACTED PRIVATE KEY]"),
    (re.compile(r"\b(sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,})"), "[REDACTED]"),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "[REDACTED]"),
    (re.compile(r"\b(xox[abposr]-[A-Za-z0-9\-]{10,})"), "[REDACTED]"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "[REDACTED]"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), "[REDACTED]"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._\-~+/]{12,}=*"), r"\1 [REDACTED]"),
    (
        re.compile(r"(?i)\b((?:api[_-]?key|secret|token|password|passwd)\s*[=:]\s*)([\"']?)[^\s\"',;]{6,}\2"),
        r"\1\2[REDACTED]\2",
    ),
]
URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")

# Hermes honours ``security.redact_secrets: false`` unless force=True; the inspector keeps
# redaction on by default and lets the host switch it off from config.
REDACT_ENABLED = True


def redact_sensitive_text(
    text: str,
    *,
    force: bool = False,
    code_file: bool = False,
    file_read: bool = False,
    redact_url_credentials: bool = False,
) -> str:
    if not isinstance(text, str) or not text:
        return text
    if not (REDACT_ENABLED or force):
        return text
    out = text
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    if redact_url_credentials:
        out = URL_CREDENTIALS.sub(r"\1[REDACTED]@", out)
    return out
