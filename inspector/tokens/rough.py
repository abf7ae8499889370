"""Hermes' rough token estimators, reproduced exactly (agent/model_metadata.py:2600-2786 of hermes-agent 0.19.0).

Hermes measures ``len(str(message))``: the Python *repr* of the dict (single quotes, True,
escapes), not JSON. Gates and thresholds in the real host are computed from these figures, so
the inspector must get them to the character, not approximately.
"""

from __future__ import annotations

import json
import re
from typing import Any

from inspector.trace.model import repr_length

IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})
IMAGE_TOKENS = 1500
_PLAIN_CONTENT = (str, type(None))
_LEADING_SPACE = re.compile(r"\s*")  # \s is str.isspace(), the set str.strip() removes


def estimate_tokens_rough(text: str) -> int:
    if not text:
        return 0
    return (len(text) + 3) // 4


def _shadow(message: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The message as Hermes measures it, plus the number of images it carries."""
    images = 0
    shadow = message
    content = message.get("content")
    if isinstance(content, list):
        new_parts = []
        changed = False
        for part in content:
            if isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES:
                images += 1
                new_parts.append({"type": part.get("type"), "image": "[stripped]"})
                changed = True
            else:
                new_parts.append(part)
        if changed:
            shadow = dict(message)
            shadow["content"] = new_parts
    elif isinstance(content, dict) and content.get("_multimodal"):
        shadow = dict(message)
        shadow["content"] = content.get("text_summary", "")
        for part in content.get("content", []) or []:
            if isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES:
                images += 1
    blocks = message.get("_anthropic_content_blocks")
    if blocks is not None:
        if shadow is message:
            shadow = dict(message)
        shadow.pop("_anthropic_content_blocks", None)
        if isinstance(blocks, list):
            images += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "image")
    return shadow, images


def message_rough_chars(message: dict[str, Any]) -> tuple[int, int]:
    """(repr length, image count) of one message: the additive part of the estimate.

    The length is counted without building the repr (:func:`inspector.trace.model.repr_length`):
    the compressor estimates its whole message list at every compaction."""
    shadow, images = _shadow(message)
    return repr_length(shadow), images


def is_plain(message: dict[str, Any]) -> bool:
    """True when Hermes measures the message as it is (no image or block shadow to strip)."""
    return type(message.get("content")) in _PLAIN_CONTENT and "_anthropic_content_blocks" not in message


def rough_chars_from(base: dict[str, Any], base_chars: int, other: dict[str, Any]) -> int | None:
    """``message_rough_chars(other)[0]`` from ``base``'s figure, measuring only what differs.

    A dict's repr is ``{`` + ``', '.join('k: v')`` + ``}``, so its length is a sum over items:
    a history row and its wire form share their (large) content object, and only the extra
    keys and the edited values need a repr. None when the shortcut does not apply (an empty
    dict, or content Hermes measures through a stripped shadow).
    """
    if not base or not other or type(base) is not dict or type(other) is not dict:
        return None
    if not (is_plain(base) and is_plain(other)):
        return None
    n = base_chars
    for k, v in other.items():
        if k in base:
            b = base[k]
            if b is not v:
                n += _repr_len_delta(b, v)
        else:
            n += len(repr(k)) + len(repr(v)) + 4  # "k: v" plus its ", " separator
    for k, b in base.items():
        if k not in other:
            n -= len(repr(k)) + len(repr(b)) + 4
    return n


def _repr_len_delta(old: Any, new: Any) -> int:
    """len(repr(new)) - len(repr(old)), without a repr of a long text that was only stripped.

    The wire form strips string content; the characters stripped are whitespace, which never
    changes the quote style, so each adds its own escaped length (1 for a space, 2 for ``\\n``).
    """
    if type(old) is str and type(new) is str:
        if len(new) > len(old):
            extra = _whitespace_around(new, old)
            if extra is not None:
                return extra
        elif len(old) > len(new):
            extra = _whitespace_around(old, new)
            if extra is not None:
                return -extra
    return len(repr(new)) - len(repr(old))


def _whitespace_around(text: str, stripped: str) -> int | None:
    """The repr length of the whitespace ``text`` has around ``stripped``; None unless
    ``stripped == text.strip()``. Compares in place: no copy of the long middle."""
    if stripped and (stripped[0].isspace() or stripped[-1].isspace()):
        return None
    lead = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]  # \s* always matches
    if not text.startswith(stripped, lead):
        return None
    cut = text[:lead] + text[lead + len(stripped):]
    if cut and not cut.isspace():
        return None
    if not cut.strip(" \t\n\r"):  # the usual whitespace: a space is itself, the rest escape to two
        return len(cut) + cut.count("\n") + cut.count("\t") + cut.count("\r")
    return sum(len(repr(c)) - 2 for c in cut)


def estimate_messages_tokens_rough(messages: list[dict[str, Any]]) -> int:
    chars = 0
    images = 0
    for msg in messages:
        c, i = message_rough_chars(msg)
        chars += c
        images += i
    return rough_from_chars(chars, images)


def rough_from_chars(chars: int, images: int = 0) -> int:
    """Combine per-message figures the way ``estimate_messages_tokens_rough`` does."""
    return (chars + 3) // 4 + IMAGE_TOKENS * images


def estimate_tools_tokens_rough(tools: list[dict[str, Any]] | None) -> int:
    if not tools:
        return 0
    total = 0
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, dict) else {}
        if not isinstance(fn, dict):
            continue
        name = str(fn.get("name", "") or "")
        desc = str(fn.get("description", "") or "")
        params = json.dumps(fn.get("parameters", {}) or {}, ensure_ascii=False, separators=(",", ":"))
        total += len(name) + len(desc) + len(params)
    return (total + 3) // 4


def estimate_request_tokens_rough(
    messages: list[dict[str, Any]], *, system_prompt: str = "", tools: list[dict[str, Any]] | None = None
) -> int:
    return (
        (len(system_prompt or "") + 3) // 4
        + estimate_messages_tokens_rough(messages)
        + estimate_tools_tokens_rough(tools)
    )
