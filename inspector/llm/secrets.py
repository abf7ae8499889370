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


def scrub_strings(value: Any, *extra: str | None) -> Any:
    """A copy of ``value`` (dicts and lists, a few levels deep) with :func:`scrub_text` applied to every string."""
    return _scrub_value(value, extra)


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


# Keys (at any depth of a config, a run spec or a header map) whose values are credentials.
_SECRET_KEY = re.compile(r"(?:^|[_\-.])(?:api[_\-]?key|token|secret|password|passwd|authorization|auth|cookie|"
                         r"credentials?)(?:$|[_\-.])", re.I)
# Maps of HTTP headers: every value may carry a credential.
_HEADER_MAPS = frozenset({"headers", "extra_headers", "default_headers"})
# A command-line flag in a list (``["--token", "…"]``) whose next element is a credential.
_SECRET_FLAG = re.compile(r"^--?[\w-]*(?:key|token|secret|password|passwd|auth)[\w-]*$", re.I)


def is_secret_name(key: Any) -> bool:
    """A config or header key that holds a credential (``api_key``, ``Authorization``, ``x-api-key``…);
    the name of the environment variable that holds one (``api_key_env``) is not."""
    name = str(key)
    return bool(_SECRET_KEY.search(name)) and not name.lower().endswith("_env")


def public_value(value: Any, *extra: str | None, drop: bool = False, depth: int = 0) -> Any:
    """``value`` with every credential masked (or, with ``drop``, secret-named keys left out):
    values under secret-named keys, every value of a ``headers`` map, list items after a
    ``--token``-like flag, and key-shaped text, known key values and ``user:pass@`` in URLs
    inside any string."""
    if isinstance(value, str):
        return scrub_text(value, *extra)
    if depth > 32:
        return MASK
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if is_secret_name(k):
                if not drop:
                    out[k] = MASK if v not in (None, "", {}, []) else v
            elif str(k).lower() in _HEADER_MAPS and isinstance(v, dict):
                out[k] = {hk: MASK if hv not in (None, "") else hv for hk, hv in v.items()}
            else:
                out[k] = public_value(v, *extra, drop=drop, depth=depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        out_list, hide_next = [], False
        for item in value:
            hidden = hide_next and isinstance(item, str)
            out_list.append(MASK if hidden else public_value(item, *extra, drop=drop, depth=depth + 1))
            hide_next = isinstance(item, str) and bool(_SECRET_FLAG.match(item))
        return out_list
    return value


def config_secrets(config: Any) -> list[str]:
    """The credential values written in a config (to mask wherever an endpoint echoes them)."""
    found: list[str] = []

    def walk(node: Any, secret: bool, depth: int = 0) -> None:
        if depth > 32:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                headers = str(k).lower() in _HEADER_MAPS
                walk(v, secret or headers or is_secret_name(k), depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, secret, depth + 1)
        elif secret and isinstance(node, str) and len(node) >= _MIN_SECRET:
            found.append(node)

    walk(config, False)
    return found
