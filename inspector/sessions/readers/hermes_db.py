"""Hermes ``state.db`` (docs/formats.md §2.1), opened strictly read-only.

The database is opened with ``mode=ro`` (never written, safe while Hermes holds a write
transaction in WAL mode) and read inside one read transaction so a concurrent commit cannot
tear the picture. Rows are read in id order, never timestamp order (timestamps jump back after
compaction). A rotated lineage (``end_reason='compression'`` plus a continuation child) is
loaded and listed as one logical session; branches and delegate children are not merged.
Columns newer than the oldest schemas (``active``, ``compacted``, ``api_content``, …) are optional.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from inspector.sessions.common import build_turns, default_api_calls, finalize
from inspector.sessions.model import ReaderError, Session, Usage
from inspector.sessions.readers.hermes_common import (
    MAX_COPY_SPAN,
    SKIPPED_ROLES,
    flag,
    flags_of,
    map_row,
    mark_compactions,
    mark_harness_replies,
    mark_turn_ends,
)
from inspector.sessions.sqlite_ro import connect_readonly
from inspector.sessions.summary import SessionSummary
from inspector.usage import token_count

MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "effect_disposition",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
    "platform_message_id",
    "observed",
    "active",
    "compacted",
    "api_content",
)
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def connect(path: str) -> sqlite3.Connection:
    """A read-only connection; the URI form guarantees SQLite never writes the database."""
    p = Path(path)
    if not p.is_file():
        raise ReaderError("no such database file", path=path)
    try:
        conn = connect_readonly(p, timeout=5)
    except (sqlite3.Error, UnicodeDecodeError, OSError) as exc:
        raise ReaderError(f"cannot open database read-only: {exc}", path=path) from None
    conn.row_factory = sqlite3.Row
    # Damaged or foreign text must not abort the read: undecodable bytes are replaced.
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    return conn


class _Db:
    """One read transaction over a state.db, with the schema it actually has."""

    def __init__(self, path: str):
        self.path = path
        self.conn = connect(path)
        try:
            self.conn.execute("BEGIN")
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"sessions", "messages"} <= tables:
                raise ReaderError("not a Hermes state.db: tables 'sessions' and 'messages' are required", path=path)
            self.msg_cols = [r[1] for r in self.conn.execute("PRAGMA table_info(messages)")]
            self.sess_cols = [r[1] for r in self.conn.execute("PRAGMA table_info(sessions)")]
            missing = {"session_id", "role"} - set(self.msg_cols)
            if missing or "id" not in self.sess_cols:
                raise ReaderError(f"not a Hermes state.db: messages lacks {', '.join(sorted(missing)) or 'nothing'}", path=path)
            self.sessions = {str(r["id"]): dict(r) for r in self.conn.execute("SELECT * FROM sessions")}
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            self.close()
            raise _error(exc, path) from None
        except ReaderError:
            self.close()
            raise

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass

    def rows(self, session_id: str) -> list[dict[str, Any]]:
        cols = [c for c in MESSAGE_COLUMNS if c in self.msg_cols]
        order = "id" if "id" in self.msg_cols else "rowid"
        sql = f"SELECT {order} AS _rowid, {', '.join(cols)} FROM messages WHERE session_id = ? ORDER BY {order}"
        try:
            return [dict(r) for r in self.conn.execute(sql, (session_id,))]
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _error(exc, self.path) from None

    def counts(self) -> dict[str, int]:
        sql = f"SELECT session_id, COUNT(*) FROM messages WHERE role NOT IN {SKIPPED_ROLES!r} GROUP BY session_id"
        try:
            return {str(r[0]): r[1] for r in self.conn.execute(sql)}
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _error(exc, self.path) from None


def _error(exc: Exception, path: str) -> ReaderError:
    if isinstance(exc, UnicodeDecodeError):
        return ReaderError("database is damaged: its schema or an error message is not valid text", path=path)
    text = str(exc)
    if "locked" in text:
        return ReaderError("database is locked by another process (exclusive lock); try again in a moment", path=path)
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return ReaderError(f"database is damaged or not a database: {text}", path=path)
    return ReaderError(f"database error: {text}", path=path)


# --- lineage ---------------------------------------------------------------------------------


def _model_config(row: dict[str, Any]) -> dict[str, Any]:
    raw = row.get("model_config")
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _continues(child: dict[str, Any], parent: dict[str, Any] | None) -> bool:
    """True when ``child`` is the rotation continuation of ``parent`` (not a branch/delegate)."""
    if parent is None or parent.get("end_reason") != "compression":
        return False
    cfg = _model_config(child)
    return not ("_branched_from" in cfg or "_delegate_from" in cfg or child.get("source") == "tool")


def _continuation_of(sessions: dict[str, dict[str, Any]]) -> dict[str, str]:
    """parent id → its continuation child (the earliest one if several)."""
    out: dict[str, str] = {}
    ordered = sorted(sessions.values(), key=lambda r: (_num(r.get("started_at")), str(r["id"])))
    for row in ordered:
        parent_id = row.get("parent_session_id")
        if parent_id is None:
            continue
        parent_id = str(parent_id)
        if parent_id not in out and _continues(row, sessions.get(parent_id)):
            out[parent_id] = str(row["id"])
    return out


def lineage(sessions: dict[str, dict[str, Any]], session_id: str) -> list[str]:
    """Segments of the logical conversation ending at ``session_id``, root first."""
    chain = [session_id]
    seen = {session_id}
    current = sessions[session_id]
    while True:
        parent_id = current.get("parent_session_id")
        if parent_id is None or str(parent_id) in seen or str(parent_id) not in sessions:
            break
        parent = sessions[str(parent_id)]
        if not _continues(current, parent):
            break
        chain.append(str(parent_id))
        seen.add(str(parent_id))
        current = parent
    return chain[::-1]


def _tips(sessions: dict[str, dict[str, Any]]) -> list[str]:
    continued = _continuation_of(sessions)
    tips = [sid for sid in sessions if sid not in continued]
    return sorted(tips, key=lambda sid: (_num(sessions[sid].get("started_at")), sid))


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _int(value: Any) -> int:
    return token_count(value)


def _aggregate(rows: list[dict[str, Any]]) -> Usage | None:
    if not any(any(k in r for k in TOKEN_COLUMNS) for r in rows):
        return None
    uncached = sum(_int(r.get("input_tokens")) for r in rows)
    read = sum(_int(r.get("cache_read_tokens")) for r in rows)
    write = sum(_int(r.get("cache_write_tokens")) for r in rows)
    return Usage(
        prompt_tokens=uncached + read + write,
        completion_tokens=sum(_int(r.get("output_tokens")) for r in rows),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=sum(_int(r.get("reasoning_tokens")) for r in rows),
        source="aggregate-only",
    )


# --- public -----------------------------------------------------------------------------------


def list_sessions(path: str) -> list[SessionSummary]:
    """One summary per logical session (a rotated lineage is one entry, named by its tip)."""
    db = _Db(path)
    try:
        counts = db.counts()
        out = []
        for tip in _tips(db.sessions):
            chain = lineage(db.sessions, tip)
            rows = [db.sessions[sid] for sid in chain]
            agg = _aggregate(rows) or Usage(source="none")
            root, last = rows[0], rows[-1]
            out.append(
                SessionSummary(
                    id=tip,
                    format="hermes-db",
                    title=_str(last.get("title")) or _str(root.get("title")),
                    source=_str(root.get("source")),
                    model=_str(last.get("model")) or _str(root.get("model")),
                    started=_num(root.get("started_at")) or None,
                    message_count=sum(counts.get(sid, 0) for sid in chain),
                    api_calls=sum(_int(r.get("api_call_count")) for r in rows),
                    prompt_tokens=agg.prompt_tokens,
                    completion_tokens=agg.completion_tokens,
                    cache_read_tokens=agg.cache_read_tokens,
                    cache_write_tokens=agg.cache_write_tokens,
                    usage_source="aggregate-only" if agg.source == "aggregate-only" else "none",
                    segments=chain if len(chain) > 1 else [],
                )
            )
        return out
    finally:
        db.close()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def load(path: str, session_id: str | None = None) -> Session:
    """The logical session ending at ``session_id`` (its whole rotated lineage)."""
    db = _Db(path)
    try:
        if session_id is None:
            tips = _tips(db.sessions)
            if not tips:
                raise ReaderError("database holds no sessions", path=path)
            if len(tips) > 1:
                shown = ", ".join(tips[-20:])
                raise ReaderError(
                    f"database holds {len(tips)} sessions; pick one with {Path(path).name}#<id> "
                    f"(most recent last: {shown})",
                    path=path,
                )
            session_id = tips[0]
        if session_id not in db.sessions:
            raise ReaderError(f"no session {session_id!r} in this database (see `context-inspector sessions {path}`)", path=path)
        chain = lineage(db.sessions, session_id)
        return _build(db, chain)
    finally:
        db.close()


def _row_sig(msg: dict[str, Any]) -> tuple[Any, ...]:
    calls = tuple((c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
                  for c in msg.get("tool_calls") or () if isinstance(c, dict))
    content = msg.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return (msg.get("role"), content, msg.get("tool_call_id"), calls)


def flag_unprefixed_summaries(messages: list[dict[str, Any]]) -> None:
    """Flag the summary of an in-place compaction that does not carry Hermes' summary prefix.

    In-place compaction soft-archives the rows it summarised and inserts the engine's list after
    them (agent/conversation_compression.py:1212-1240, ``archive_and_compact``): a summary, then
    copies of the last rows it kept. A plugin engine's summary need not start with the built-in
    compressor's prefix, so it is found by that shape instead: an archived row, then a row seen
    nowhere before, then exact copies of the rows right before it. Unflagged, the summary and
    its copies replayed as new turns (6 turns became 8).
    """
    sigs = [_row_sig(m) for m in messages]
    seen: set[tuple[Any, ...]] = set()
    for k, msg in enumerate(messages):
        sig = sigs[k]
        if (k > 0 and sig not in seen and flags_of(messages[k - 1]).get("archived")
                and not flags_of(msg).get("compaction_summary") and msg.get("role") in ("user", "assistant")):
            span = min(MAX_COPY_SPAN, k, len(messages) - k - 1)
            if any(sigs[k + 1:k + 1 + t] == sigs[k - t:k] for t in range(span, 0, -1)):
                flag(msg, compaction_summary=True)
        seen.add(sig)
    _flag_last_batch_summary(messages, sigs)


# Rows one archive_and_compact call inserts carry timestamps microseconds apart; rows the agent
# appends later come after a provider call.
_BATCH_SECONDS = 0.05


def _flag_last_batch_summary(messages: list[dict[str, Any]], sigs: list[tuple[Any, ...]]) -> None:
    """The last in-place compaction's summary when no copies follow it (a turn-start compaction keeps
    only the turn's new user message): the first row of the active list written after the archived
    rows that repeats none of them, provided another row of the same write follows it (so a
    truncating engine's new user message is never taken for a summary)."""
    archived = [k for k, m in enumerate(messages) if flags_of(m).get("archived")]
    if not archived or archived[-1] + 1 >= len(messages):
        return
    before = set(sigs[:archived[-1] + 1])
    k = archived[-1] + 1
    while k < len(messages) and sigs[k] in before:  # head copies
        k += 1
    if k + 1 >= len(messages) or flags_of(messages[k]).get("compaction_summary"):
        return
    msg, nxt = messages[k], messages[k + 1]
    first = msg.get("x_timestamp")
    then = nxt.get("x_timestamp")
    if (msg.get("role") in ("user", "assistant") and isinstance(first, int | float) and isinstance(then, int | float)
            and 0 <= then - first <= _BATCH_SECONDS and not msg.get("tool_calls")):
        flag(msg, compaction_summary=True)


def _build(db: _Db, chain: list[str]) -> Session:
    rows_by_segment = {sid: db.rows(sid) for sid in chain}
    tip = db.sessions[chain[-1]]
    root = db.sessions[chain[0]]
    session = Session(id=chain[-1], source_format="hermes-db", source_path=db.path)
    if db.conn.note:
        session.warnings.append(db.conn.note)
    messages: list[dict[str, Any]] = []
    segment_starts: list[int] = []
    skipped = 0
    for n, sid in enumerate(chain):
        if n:
            segment_starts.append(len(messages))
        for row in rows_by_segment[sid]:
            rowid = row.pop("_rowid")
            msg = map_row(row, file=db.path, where=f"row {rowid}", warnings=session.warnings, rowid=rowid)
            if msg is None:
                if row.get("role") in SKIPPED_ROLES:
                    skipped += 1
                continue
            if len(chain) > 1:
                msg["x_origin"]["session_id"] = sid
            messages.append(msg)
    if skipped:
        session.warnings.append(f"{skipped} legacy session_meta/system row(s) skipped, as Hermes itself does")
    mark_harness_replies(messages)
    flag_unprefixed_summaries(messages)
    compactions = mark_compactions(messages, segment_starts)
    system_prompt = _str(root.get("system_prompt"))
    offset = 0
    if system_prompt is not None:
        session.messages.append({"role": "system", "content": system_prompt, "x_origin": {"file": db.path, "session": chain[0]}})
        offset = 1
    session.messages.extend(messages)
    for c in compactions:
        c.message_index += offset
    session.compactions = compactions
    session.title = _str(tip.get("title")) or _str(root.get("title"))
    session.model = _str(tip.get("model")) or _str(root.get("model"))
    session.started_at = _num(root.get("started_at")) or None
    session.cwd = _str(tip.get("cwd")) or _str(root.get("cwd"))
    session.aggregate_usage = _aggregate([db.sessions[sid] for sid in chain])
    session.meta.update(
        {
            "source": _str(root.get("source")),
            "end_reason": tip.get("end_reason"),
            "parent_session_id": root.get("parent_session_id"),
            "billing_provider": tip.get("billing_provider"),
            "api_call_count": sum(_int(db.sessions[sid].get("api_call_count")) for sid in chain),
        }
    )
    if len(chain) > 1:
        session.meta["segments_ids"] = chain
        prompts = {sid: _str(db.sessions[sid].get("system_prompt")) for sid in chain}
        session.meta["segment_system_prompts_differ"] = len(set(prompts.values())) > 1
    session.api_calls = default_api_calls(session, model=session.model)
    session.turns = build_turns(session.messages)
    mark_turn_ends(session.messages, session.turns)
    return finalize(session)
