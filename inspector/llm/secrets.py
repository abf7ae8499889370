"""Keeping API keys out of everything the inspector records.

Some servers and proxies echo the request (``Authorization: Bearer …``) in their error bodies,
and engines copy error text into notes and even into summaries that join the conversation. So
error text from an endpoint is scrubbed before anyone sees it: the values of the key variables
in the environment (and the key the call used) are replaced, then the generic key patterns
Hermes redacts are applied.
"""

from __future__ import annotations

import os
import re
from typing import Any

from inspector.engines.redact import redact_sensitive_text

# Environment variables that hold credentials by naming convention.
_SECRET_NAME = re.compile(r"(?:API_KEY|_KEY|_TOKEN|_SECRET|PASSWORD)$", re.I)
_MIN_SECRET = 8  # shorter values ("1", "true") would scrub ordinary words
MASK = "***"


def secret_values(*extra: str | None) -> list[str]:
    """Credential values to hide: the given keys and every key-like environment variable."""
    values = {v.strip() for v in extra if isinstance(v, str)}
    values.update(v.strip() for k, v in os.environ.items() if _SECRET_NAME.search(k))
    return sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)


def scrub_text(text: str, *extra: str | None) -> str:
    """``text`` with known key values and key-shaped tokens masked."""
    if not isinstance(text, str) or not text:
        return text
    for value in secret_values(*extra):
        if value in text:
            text = text.replace(value, MASK)
    return redact_sensitive_text(text, force=True, redact_url_credentials=True)


def _scrub_value(value: Any, secrets: tuple[str | None, ...], depth: int = 0) -> Any:
    if isinstance(value, str):
        return scrub_text(value, *secrets)
    if depth > 6:
        return value
    if isinstance(value, dict):
        return {k: _scrub_value(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, secrets, depth + 1) for v in value]
    return value


def scrub_exception(exc: BaseException, *extra: str | None) -> BaseException:
    """Mask keys in an exception's message and body in place, so whoever formats it sees none.

    The engine that called receives this same exception object: its ``str()`` (what engines
    put in notes and fallback summaries) and the SDK's ``message``/``body`` are cleaned.
    """
    try:
        exc.args = tuple(_scrub_value(a, extra) for a in exc.args)
        for name in ("message", "body"):
            value = getattr(exc, name, None)
            if isinstance(value, (str, dict, list)):
                setattr(exc, name, _scrub_value(value, extra))
    except Exception:  # an exception type with read-only attributes keeps them; str() is still checked
        pass
    return exc
