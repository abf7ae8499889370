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
# What each pattern above needs in the text, loosely (a superset, with no \b and no
# back-reference), for RE2 to rule all of them out in one linear pass: most text engines summarise
# holds no secret, and Python's engine scans it once per pattern, from every position (a leading
# \b gives it no literal to search for). The compressor's 69,467 calls in a replay of a 150 MB
# session (9.5 MB of text): 1.9 s before, 0.2 s with the check.
# _SPACE is what Python's \s matches in text (str.isspace()).
_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
_MAY_HOLD_A_SECRET = "|".join((
    "-----BEGIN ", r"sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16}", "gh[pousr]_[A-Za-z0-9]{20}", "github_pat_",
    r"xox[abposr]-", "AKIA", "AIza", "(?i:bearer)", rf"(?i:api[_-]?key|secret|token|password|passwd){_SPACE}*[=:]"))
try:
    import re2

    _ANY = re2.compile(_MAY_HOLD_A_SECRET)
except ImportError:
    _ANY = None
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
    if not redact_url_credentials and not _may_hold_a_secret(text):
        return text
    out = text
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    if redact_url_credentials:
        out = URL_CREDENTIALS.sub(r"\1[REDACTED]@", out)
    return out


def _may_hold_a_secret(text: str) -> bool:
    """False only where no pattern of :data:`_PATTERNS` can match ``text``."""
    if _ANY is None:
        return True
    try:
        return _ANY.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: RE2 cannot read it
        return True
