"""Which transcript format a file holds, decided from its content (docs/formats.md §7).

The file name is never the deciding signal: people rename exports. Gzip is looked through.
``detect_format`` returns one of :data:`FORMATS`; unknown content raises a :class:`ReaderError`
that lists the keys seen, so the user can tell what the file actually is.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from inspector.input_files import InputRefused, read_head
from inspector.sessions.model import ReaderError
from inspector.sessions.source import SQLITE_MAGIC, Source, open_source
from inspector.sessions.sqlite_ro import connect_readonly

FORMATS: tuple[str, ...] = (
    "hermes-db",
    "hermes-export",
    "hermes-session-json",
    "hermes-gateway-jsonl",
    "hermes-request-dump",
    "trajectory",
    "openai-array",
    "openai-jsonl",
    "openai-object",
    "openai-conversations",
    "openai-request-log",
    "claude-code",
    "codex",
)

# Friendlier names accepted by ``--format``.
ALIASES: dict[str, str] = {
    "hermes": "hermes-db",
    "state.db": "hermes-db",
    "sqlite": "hermes-db",
    "hermes-jsonl": "hermes-export",
    "sharegpt": "trajectory",
    "hermes-trajectory": "trajectory",
    "claude": "claude-code",
    "hermes-trace": "claude-code",
    "openai": "openai",  # any OpenAI chat variant, told apart by content
    "json": "openai-array",
    "jsonl": "openai-jsonl",
    "request-log": "openai-request-log",
    "codex-rollout": "codex",
}

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state"})
CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"})
# Records a resumed Claude Code session may open with, in any number, before one with its ids.
CLAUDE_PREAMBLE = frozenset({"summary", "file-history-snapshot", "queue-operation", "progress"})
CLAUDE_SCAN_LINES = 5000
SHAREGPT_SPEAKERS = frozenset({"system", "human", "gpt", "tool"})


def resolve_format(name: str) -> str:
    """A ``--format`` value as a canonical name; unknown names list the valid ones."""
    key = name.strip().lower()
    if key in FORMATS:
        return key
    if key in ALIASES:
        return ALIASES[key]
    raise ReaderError(f"unknown format {name!r}; choose one of: {', '.join(FORMATS)} (or openai)")


def is_hermes_db(path: str | Path) -> bool:
    """True when ``path`` is an SQLite file with Hermes' ``sessions`` and ``messages`` tables."""
    try:
        if read_head(path, 16) != SQLITE_MAGIC:
            return False
    except (OSError, InputRefused):
        return False
    try:
        conn = connect_readonly(path, timeout=2)
    except (sqlite3.Error, UnicodeDecodeError, OSError):
        return False
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"sessions", "messages"} <= tables:
            return False
        cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
        return {"role", "session_id"} <= cols
    except (sqlite3.Error, UnicodeDecodeError):
        return False
    finally:
        conn.close()


def detect_format(path: str | Path) -> str:
    """The format of the file at ``path``, from its bytes."""
    return open_detected(path)[0]


def open_detected(path: str | Path) -> tuple[str, Source | None]:
    """The format of the file at ``path`` and, unless it is a database, the :class:`Source` it was
    detected from, for the reader: the file is read, inflated, decoded and parsed once."""
    try:
        magic = read_head(path, len(SQLITE_MAGIC))
    except (OSError, InputRefused):
        magic = b""  # open_source below names the problem
    if magic == SQLITE_MAGIC:  # a state.db may be gigabytes: never read it whole to detect it
        if is_hermes_db(path):
            return "hermes-db", None
        raise ReaderError(
            "an SQLite database without readable Hermes sessions/messages tables (not a Hermes state.db, or damaged)",
            path=str(path),
        )
    source = open_source(path)
    return detect_source(source), source


def detect_text(text: str, path: str = "<text>") -> str:
    """Format of decoded transcript text (the part of :func:`detect_format` after the bytes)."""
    return detect_source(Source(path=path, text=text))


def detect_source(source: Source) -> str:
    """Format of a transcript's decoded text; a document parsed whole stays parsed in ``source``."""
    text, path = source.text, source.path
    start = _NONBLANK.search(text)
    if start is None:
        raise ReaderError("file is empty", path=path)
    head = text[start.start()]
    if head == "[":
        return _detect_array(source)
    if head != "{":
        raise ReaderError(f"not a JSON transcript: starts with {text[start.start():start.start() + 20]!r}", path=path)
    spans = _line_spans(text, start.start(), CLAUDE_SCAN_LINES + 1)
    try:
        # one line: the whole text is that line (a long export is one line: not copied to parse it)
        first = source.whole_json() if len(spans) == 1 else json.loads(text[spans[0][0]:spans[0][1]])
    except (ValueError, RecursionError):
        first = None
    if isinstance(first, dict):
        if len(spans) == 1:
            fmt = _detect_object(first)
            if fmt:
                return fmt
        return _detect_jsonl(first, [text[a:b] for a, b in spans], path)
    try:
        whole = source.whole_json()
    except (ValueError, RecursionError) as exc:
        raise ReaderError(f"neither JSON Lines nor one JSON object ({exc})", path=path, line=1) from None
    if not isinstance(whole, dict):
        raise ReaderError("top-level JSON value is not an object", path=path)
    fmt = _detect_object(whole)
    if fmt:
        return fmt
    raise ReaderError(f"unknown JSON object; keys seen: {_keys(whole)}", path=path)


_NONBLANK = re.compile(r"\S")


def _line_spans(text: str, start: int, limit: int) -> list[tuple[int, int]]:
    """(start, end) of the first ``limit`` non-blank lines from ``start`` (split at newlines only,
    as :func:`~inspector.sessions.source.json_lines` splits), without copying the text."""
    spans: list[tuple[int, int]] = []
    size = len(text)
    while start < size and len(spans) < limit:
        end = text.find("\n", start)
        end = size if end < 0 else end
        if _NONBLANK.search(text, start, end):
            spans.append((start, end))
        start = end + 1
    return spans


def _detect_array(source: Source) -> str:
    path = source.path
    try:
        data = source.whole_json()
    except (ValueError, RecursionError) as exc:
        # A truncated array still tells its kind from the first element.
        data = _first_element(source.text.lstrip())
        if data is None:
            raise ReaderError(f"not valid JSON ({exc})", path=path) from None
    if not isinstance(data, list) or not data:
        raise ReaderError("empty JSON array", path=path)
    el = data[0]
    if not isinstance(el, dict):
        raise ReaderError(f"JSON array of {type(el).__name__}, expected message objects", path=path)
    if "conversations" in el:
        return "trajectory"
    if "from" in el and "value" in el:
        return "trajectory"
    if "role" in el:
        return "openai-array"
    raise ReaderError(f"JSON array whose first element has keys: {_keys(el)}", path=path)


def _first_element(text: str) -> list[Any] | None:
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[1:].lstrip())
    except (ValueError, RecursionError):
        return None
    return [obj]


def _detect_object(obj: dict[str, Any]) -> str | None:
    if "session_id" in obj and "session_start" in obj and "messages" in obj:
        return "hermes-session-json"
    if "request" in obj and "session_id" in obj and "reason" in obj:
        return "hermes-request-dump"
    if "messages" in obj and any(k in obj for k in ("response", "choices", "usage", "completion")):
        return "openai-request-log"
    if "conversations" in obj:
        return "trajectory"
    if "messages" in obj and "source" in obj and "started_at" in obj:
        return "hermes-export"
    if "messages" in obj or ("history" in obj and "trajectory" in obj):
        return "openai-object"
    return None


def _detect_jsonl(first: dict[str, Any], lines: list[str], path: str) -> str:
    kind = first.get("type")
    kind = kind if isinstance(kind, str) else None
    if isinstance(first.get("payload"), dict) and kind in CODEX_TYPES:
        return "codex"
    if "conversations" in first:
        return "trajectory"
    if first.get("role") == "session_meta":
        return "hermes-gateway-jsonl"
    if kind in CLAUDE_TYPES and "payload" not in first:
        # Resumed sessions start with summary/snapshot records (any number of them) before the
        # first record that carries the session's ids.
        for n, line in enumerate(lines[:CLAUDE_SCAN_LINES]):
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(rec, dict):
                continue
            if "sessionId" in rec or "parentUuid" in rec:
                return "claude-code"
            if n >= 20 and rec.get("type") not in CLAUDE_PREAMBLE:
                break
    if "messages" in first and "source" in first and "started_at" in first:
        return "hermes-export"
    if "messages" in first and any(k in first for k in ("response", "choices", "usage", "completion")):
        return "openai-request-log"
    if "custom_id" in first and isinstance(first.get("response"), dict):
        raise ReaderError(
            "OpenAI Batch output holds only responses, not the conversation; load the batch input instead", path=path, line=1
        )
    if "messages" in first:
        return "openai-conversations"
    if "role" in first:
        return "openai-jsonl"
    if "id" in first and "instructions" in first and "type" not in first:
        return "codex"
    raise ReaderError(f"unknown JSON Lines format; keys on line 1: {_keys(first)}", path=path, line=1)


def _keys(obj: dict[str, Any]) -> str:
    return ", ".join(sorted(map(str, obj))[:15]) or "(none)"
