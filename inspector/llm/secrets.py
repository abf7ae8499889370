"""Keeping API keys out of everything the inspector records, prints or writes.

Some servers and proxies echo the request (``Authorization: Bearer …``) in their error bodies,
engines copy error text into notes and even into summaries that join the conversation, and an
engine may print ``os.environ``. So every text that leaves the process is scrubbed here, the one
scrubber: the values of the key variables (named like keys, or named by a loaded config's
``*_key_env`` setting whatever their name, e.g. ``api_key_env: LOCALTOKEN``), the keys a config
holds and the key a call used are replaced, also in their base64 (at any alignment, so inside a
Basic auth header too) and hex forms; then auth headers and the generic key patterns Hermes
redacts are masked. :class:`StreamScrubber` does the same for text that arrives in pieces.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any, TypeVar

from inspector.engines.redact import redact_sensitive_text

# Environment variables that hold credentials by naming convention.
_SECRET_NAME = re.compile(r"(?:API_KEY|_KEY|_TOKEN|_SECRET|PASSWORD)$", re.I)
_MIN_SECRET = 8  # shorter values ("1", "true") would scrub ordinary words
MASK = "***"
_MASK_BYTES = MASK.encode()
_Text = TypeVar("_Text", str, bytes)
# What loaded configs named: variables that hold a key, and keys written in the config itself.
_KEY_ENVS: set[str] = set()
_CONFIG_KEYS: set[str] = set()
_forms_cache: dict[str, tuple[str, ...]] = {}
# An auth header's credential, whatever its scheme (Basic, Bearer, Token, Digest, none).
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?(?>(?:(?:basic|bearer|token|digest)\s+)?))"
                          r"(?!\[REDACTED|\*\*\*)[^\s\"',;]{6,}")
_BASIC = re.compile(r"(?i)\b(basic\s+)(?!\*\*\*)[A-Za-z0-9+/]{8,}={0,2}")


def key_env_names(config: Any) -> list[str]:
    """Names of the environment variables a config says hold a key (``api_key_env``,
    ``auxiliary.compression.api_key_env``, ``inspector.live.api_key_env``, …; any depth)."""
    found: list[str] = []

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 32 or not isinstance(node, dict):
            return
        for k, v in node.items():
            name = str(k)
            if name.lower().endswith("_env") and is_secret_name(name[:-4]) and isinstance(v, str) and v.strip():
                found.append(v.strip())
            elif isinstance(v, dict):
                walk(v, depth + 1)
            elif isinstance(v, list):
                for item in v:
                    walk(item, depth + 1)

    walk(config)
    return found


def register_config(config: Any) -> None:
    """Remember what ``config`` names as secret for the rest of the process (called by
    :func:`inspector.config.load_config`), so every scrub masks those values too."""
    _KEY_ENVS.update(key_env_names(config))
    _CONFIG_KEYS.update(v.strip() for v in config_secrets(config))


def secret_values(*extra: str | None) -> list[str]:
    """Credential values to hide: the given keys, every key-like environment variable, the
    variables loaded configs name as holding a key, and keys written in loaded configs."""
    values = {v.strip() for v in extra if isinstance(v, str)}
    values.update(v.strip() for k, v in os.environ.items() if k in _KEY_ENVS or _SECRET_NAME.search(k))
    values.update(_CONFIG_KEYS)
    return sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)


def encoded_forms(value: str) -> tuple[str, ...]:
    """``value`` and the forms it takes when encoded: hex (both cases) and the part of its
    base64 (standard and URL-safe) that is the same wherever it starts in the encoded data, for
    each of the three alignments: so a key inside a base64 blob or a Basic auth header is found."""
    cached = _forms_cache.get(value)
    if cached is not None:
        return cached
    raw = value.encode("utf-8", "surrogatepass")
    forms = {value, raw.hex(), raw.hex().upper()}
    for skip in range(3):
        core = raw[skip:]
        core = core[: len(core) // 3 * 3]
        if len(core) >= 6:
            forms.add(base64.b64encode(core).decode("ascii"))
            forms.add(base64.urlsafe_b64encode(core).decode("ascii"))
    out = tuple(sorted(forms, key=len, reverse=True))
    if len(_forms_cache) > 1000:
        _forms_cache.clear()
    _forms_cache[value] = out
    return out


def mask_known(text: _Text, values: list[str] | None = None) -> _Text:
    """``text`` with every known key value, in any of its :func:`encoded_forms`, replaced by
    ``***``: fast (substring tests only), for whole files as they are written. ``bytes`` are
    UTF-8 text, masked in place of being decoded (a form's UTF-8 bytes only match whole characters)."""
    if not isinstance(text, (str, bytes)) or not text:
        return text
    binary = isinstance(text, bytes)
    for value in secret_values() if values is None else values:
        for form in encoded_forms(value):
            found = form.encode("utf-8", "surrogatepass") if binary else form
            if found in text:
                text = text.replace(found, _MASK_BYTES if binary else MASK)  # type: ignore[arg-type]
    return text


def scrub_text(text: str, *extra: str | None) -> str:
    """``text`` with known key values (plain, base64, hex), auth header credentials and
    key-shaped tokens masked."""
    if not isinstance(text, str) or not text:
        return text
    text = mask_known(text, secret_values(*extra))
    text = redact_sensitive_text(text, force=True, redact_url_credentials=True)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    return _BASIC.sub(lambda m: m.group(1) + MASK, text)


class StreamScrubber:
    """:func:`scrub_text` for text that arrives in pieces (a streamed reply, engine output):
    a key split over two pieces must not show as two harmless halves.

    ``feed`` returns what is safe to show now and keeps back the tail that could still turn
    into a key: the last word (a key has no spaces; up to ``HOLD`` characters) and any ending
    that begins a known key or one of its forms. ``flush`` returns the rest at the end.
    """

    HOLD = 4096

    def __init__(self, *extra: str | None) -> None:
        self._extra = extra
        self._pending = ""

    def feed(self, piece: str) -> str:
        if not piece:
            return ""
        text = self._pending + piece
        values = secret_values(*self._extra)
        text = mask_known(text, values)
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
        if len(text) - cut > self.HOLD:  # one very long word: keep back only a possible key start
            cut = len(text) - self._key_prefix(text, values)
        self._pending = text[cut:]
        return scrub_text(text[:cut], *self._extra) if cut else ""

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return scrub_text(text, *self._extra)

    @staticmethod
    def _key_prefix(text: str, values: list[str]) -> int:
        """Length of the longest ending of ``text`` that a known key (or form) starts with."""
        best = 0
        for value in values:
            for form in encoded_forms(value):
                for k in range(min(len(form) - 1, len(text)), best, -1):
                    if form.startswith(text[-k:]):
                        best = k
                        break
        return best


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
