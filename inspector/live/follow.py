"""Follow a session another program is writing, replaying each new turn as it completes.

Sources: a Hermes ``state.db`` (``path`` or ``path#session``) or a growing JSONL transcript
(Claude Code, OpenAI message-per-line, anything ``load_session`` reads). Each poll re-reads the
source with the ordinary session readers (so following and opening a file agree on what a turn
is) and plays only the turns beyond those already played through the same incremental
:class:`~inspector.host.host.Host` a replay uses.

The writer is never disturbed: state.db is opened read-only (``mode=ro``) by the reader, inside
one short read transaction per poll, with no connection or cursor held between polls; a
cheap ``stat`` of the database and its ``-wal`` decides whether a re-read is needed at all.

A turn is played only once it is complete: either a later turn has started (the next user
message appeared), or its last message is an assistant reply with no pending tool calls and the
source has stayed unchanged for one poll interval.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from inspector import __version__
from inspector.host.host import HOST_DIFFERENCES, Host
from inspector.host.replay import (
    engine_meta,
    make_counter,
    make_simulator,
    play_session_turn,
    public_config,
    session_identifier,
)
from inspector.live.session import activated, is_builtin_engine, load_named_engine, snapshot_trace
from inspector.sessions.model import ApiCall, ReaderError, Session, Turn, wire_message
from inspector.trace.model import Trace

UpdateFn = Callable[[Trace, int], None]

FOLLOW_DIFFERENCES = [
    "Follow mode: turns are replayed as the source grows, each once it is complete (the next user message "
    "appeared, or a final assistant reply and one quiet poll interval).",
    "If the writer rewrites turns already replayed (compaction in place, /rewind), the replayed ones are kept "
    "and a host note marks the point; new turns continue from there.",
]


def _message_digest(message: dict[str, Any] | None) -> str:
    if message is None:
        return ""
    text = json.dumps(wire_message(message), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def turn_is_final(session: Session, turn: Turn) -> bool:
    """Does the turn end with an assistant reply that asks for no tools (nothing left to come)?"""
    for i in range(turn.end - 1, turn.start - 1, -1):
        msg = session.messages[i]
        role = msg.get("role")
        if role == "system":
            continue
        return role == "assistant" and not msg.get("tool_calls")
    return False


class Follower:
    """Replays the complete turns of a growing session through one engine.

    ``engine`` is a name, ``None`` (``context.engine``), a ``LoadedEngine`` or an engine
    instance. Call :meth:`poll` yourself, or :meth:`run` on a thread until a stop event.
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        engine: Any,
        config: dict[str, Any],
        *,
        format: str | None = None,
        session_id: str | None = None,
        plugin_dirs: Any = (),
        interval: float = 1.0,
        counter: Any = None,
        simulator: Any = None,
        label: str | None = None,
    ) -> None:
        from inspector.sessions import split_spec

        path, spec_id = split_spec(os.fspath(source))
        self.path = path
        self.session_id = session_id if session_id is not None else spec_id
        self.format = format
        self.config = config
        self.interval = max(0.01, float(interval))
        self.label = label
        self.loaded, self._owns_loaded = load_named_engine(engine, config, plugin_dirs)
        self.engine = getattr(self.loaded, "engine", self.loaded)
        self._counter = counter
        self._simulator = simulator
        self.host: Host | None = None
        self.started = False
        self.played = 0  # turns played
        self.polls = 0
        self.last_error: str | None = None
        self.error_changed = False  # set when last_error changes; run() reports and clears it
        self._turn_digests: list[str] = []
        self._markers_done = 0
        self._stat: tuple[Any, ...] | None = None
        self._content: tuple[int, str] | None = None
        self._session: Session | None = None
        self._rewritten_noted_at: int | None = None
        self._warned: set[str] = set()  # reader warnings already noted
        self._closed = False

    # -- reading -----------------------------------------------------------------------------
    def _stat_fingerprint(self) -> tuple[Any, ...]:
        """Size and mtime of the source (and a state.db's -wal): changes when the writer commits."""
        out: list[Any] = []
        for suffix in ("", "-wal"):
            try:
                st = os.stat(self.path + suffix)
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def _read(self) -> tuple[Session | None, bool]:
        """(session, quiet): the source as it is now; quiet when it has not changed since the last poll."""
        stat = self._stat_fingerprint()
        if self._session is not None and stat == self._stat:
            return self._session, True
        from inspector.sessions import load_session

        try:
            session = load_session(self.path, format=self.format, session_id=self.session_id)
        except (ReaderError, OSError) as exc:
            # The writer may not have created the file yet, or a line is half-written: try again next poll.
            self._set_error(str(exc))
            return self._session, False
        self._set_error(None)
        content = (len(session.messages), _message_digest(session.messages[-1] if session.messages else None))
        quiet = content == self._content
        self._stat, self._content, self._session = stat, content, session
        return session, quiet

    def _set_error(self, error: str | None) -> None:
        """Record a read failure (or its end); once turns were played it goes into the trace too."""
        if error == self.last_error:
            return
        self.last_error = error
        self.error_changed = True
        if self.host is not None and self.started:
            self.host.note(f"follow: the source cannot be read ({error}); still polling" if error
                           else "follow: the source is readable again")

    # -- the host ------------------------------------------------------------------------------
    def _ensure_host(self, session: Session) -> bool:
        if self.host is not None:
            return self.started
        model = session.model if not (self.config.get("model") or {}).get("default") else None
        counter = self._counter or make_counter(self.config)
        host_model = model or str((self.config.get("model") or {}).get("default") or "")
        simulator = self._simulator if self._simulator is not None else make_simulator(self.config, host_model)
        sandbox = getattr(self.loaded, "sandbox", None)
        meta: dict[str, Any] = {
            "inspector_version": __version__,
            "label": self.label or f"{getattr(self.engine, 'name', 'engine')} (follow)",
            "engine": engine_meta(self.loaded, self.engine),
            "session": {"id": session.id, "format": session.source_format, "path": session.source_path,
                        "title": session.title, "model": session.model},
            "config": public_config(self.config),
            "tokenizer": getattr(counter, "name", "?"),
            "cache_profile": (self.config.get("inspector") or {}).get("cache_profile", "anthropic"),
            "host_differences": list(HOST_DIFFERENCES) + list(FOLLOW_DIFFERENCES),
            "mode": "follow",
        }
        self.host = Host(
            self.engine, self.config, session_id=session_identifier(session), system_prompt=session.system_prompt(),
            session_tools=session.tools, counter=counter, simulator=simulator, trace=Trace(meta=meta),
            plugin_manager=getattr(self.loaded, "plugin_manager", None),
            engine_is_builtin=is_builtin_engine(self.loaded, self.engine),
            hermes_home=str(getattr(sandbox, "path", sandbox) or ""), model=model, session_clock=True,
        )
        with activated(self.loaded):
            self.started = self.host.start()
        self.host.trace.finish()
        return self.started

    @property
    def trace(self) -> Trace | None:
        return self.host.trace if self.host is not None else None

    def snapshot(self) -> Trace | None:
        return snapshot_trace(self.host.trace) if self.host is not None else None

    # -- polling ----------------------------------------------------------------------------------
    def poll(self) -> int:
        """Read the source once and replay every newly completed turn; returns how many were added."""
        if self._closed:
            return 0
        self.polls += 1
        session, quiet = self._read()
        if session is None or not session.turns:
            return 0
        if not self._ensure_host(session):
            self.last_error = "the engine refused to start (context length below Hermes' minimum?); see the trace"
            return 0
        turns = session.turns
        self._note_warnings(session)
        start = self._first_new_turn(session)
        complete = len(turns) - 1
        if quiet and turn_is_final(session, turns[-1]):
            complete = len(turns)
        added = 0
        calls = {c.message_index: c for c in session.api_calls}
        with activated(self.loaded):
            for index in range(start, complete):
                self._play(session, turns[index], calls)
                self.played += 1
                added += 1
        if added:
            assert self.host is not None
            self.host.trace.meta["session"]["turns"] = self.played
            self.host.trace.finish()
        return added

    def _first_new_turn(self, session: Session) -> int:
        """The source's first turn not replayed yet.

        Normally the turns after those already played. When the source was rewritten, truncated
        or replaced (a rotated log), the new turns are the ones after the last turn the replay
        already holds: a replaced file's turns are all new, and turns a rewrite dropped and then
        wrote again are played, not skipped. Noted once per rewrite.
        """
        assert self.host is not None
        digests = [_message_digest(session.messages[t.start] if t.start < len(session.messages) else None)
                   for t in session.turns]
        played = len(self._turn_digests)
        if digests[:played] == self._turn_digests:
            return played
        known = set(self._turn_digests)
        start = max((i + 1 for i, d in enumerate(digests) if d in known), default=0)
        if self._rewritten_noted_at != start:
            self._rewritten_noted_at = start
            self.host.note(f"the source was rewritten or replaced (it now holds {len(digests)} turns, {played} were "
                           f"replayed from it); replayed turns are kept, and its turns from {start} on are new",
                           turns=len(digests), new_from=start)
        self._turn_digests = digests[:start]  # the source's turns the replay holds, from now on
        return start

    def _note_warnings(self, session: Session) -> None:
        """What the reader had to skip (a torn line in the middle, say), once each, as replay shows it."""
        assert self.host is not None
        for warning in session.warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                self.host.note(f"reading the source: {warning}")

    def _play(self, session: Session, turn: Turn, calls: dict[int, ApiCall]) -> None:
        """One turn, exactly as :func:`inspector.host.replay.replay` feeds it to the host."""
        assert self.host is not None
        markers = sorted(session.compactions, key=lambda c: c.message_index)
        self._markers_done = play_session_turn(self.host, session, turn, calls, markers, self._markers_done)
        first = session.messages[turn.start] if turn.start < len(session.messages) else None
        self._turn_digests.append(_message_digest(first))

    def run(self, stop: threading.Event, on_update: UpdateFn | None = None, *, max_seconds: float | None = None,
            on_error: Callable[[str | None], None] | None = None) -> int:
        """Poll every ``interval`` until ``stop`` is set (or ``max_seconds``); returns the turns added.

        ``on_update(snapshot, added)`` runs on this thread after each poll that added turns, with
        a trace snapshot that is safe to hand to another thread. ``on_error(message)`` runs when
        the source becomes unreadable (deleted, truncated, the session gone) and with None when
        it is readable again.
        """
        deadline = time.monotonic() + max_seconds if max_seconds else None
        total = 0
        while not stop.is_set():
            added = self.poll()
            total += added
            if self.error_changed:
                self.error_changed = False
                if on_error is not None:
                    on_error(self.last_error)
            if added and on_update is not None:
                snap = self.snapshot()
                if snap is not None:
                    on_update(snap, added)
            wait = self.interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                wait = min(wait, left)
            if stop.wait(wait):
                break
        return total

    def close(self) -> Trace | None:
        """End the engine's session (``on_session_end``) and release the engine; returns the final trace."""
        if self._closed:
            return self.trace
        self._closed = True
        try:
            if self.host is not None and self.started:
                with activated(self.loaded):
                    self.host.end()
        finally:
            if self._owns_loaded:
                closer = getattr(self.loaded, "close", None)
                if callable(closer):
                    with contextlib.suppress(Exception):
                        closer()
        return self.trace

