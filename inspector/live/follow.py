"""Follow a session another program is writing, replaying each new turn as it completes.

Sources: a Hermes ``state.db`` (``path`` or ``path#session``) or a growing JSONL transcript
(Claude Code, OpenAI message-per-line, anything ``load_session`` reads). Each poll re-reads the
source with the ordinary session readers (so following and opening a file agree on what a turn
is) and plays only the turns beyond those already played through the same incremental
:class:`~inspector.host.host.Host` a replay uses.

The writer is never disturbed: state.db is opened read-only (``mode=ro``) by the reader, inside
one short read transaction per poll, with no connection or cursor held between polls; a
cheap ``stat`` of the database and its ``-wal`` decides whether a re-read is needed at all.

A turn is played only once it is known to be complete: a later turn has started (the next user
message appeared), or the source marks it finished (:attr:`Turn.ended`: a Codex
``task_complete``, a Claude Code ``turn_duration`` or final ``stop_reason``, a Hermes row that
finished with ``stop``), or, failing any mark, it ends with an assistant reply asking for no
tools and the session has not changed for the settle period. That period is much longer than
a poll because writers pause between the pieces of one reply (Claude Code writes each content
block of a message as its own line, Codex each response item): a reply that looks final after
its first block may not be. A turn played on the quiet rule is noted in the trace.

While a turn is still being written, what of it is certain is played at once, request by
request (a long agent turn would otherwise show nothing until it ends): every provider call
whose reply is followed by more of the turn (its tool results, say) is complete. The host plays
that part of the turn on a thread of its own and waits, inside the turn, for the rest; each
poll hands it what the source has gained and lets it run until it waits again, so the host and
the engine never run on two threads at once. When the turn ends (by the rules above) the rest
is played; a turn rewritten meanwhile ends where it was and the rewrite is noted as below.

Each played turn is remembered by a digest of everything it fed the host (messages and usage).
When a played turn no longer matches (the writer rewrote, truncated or replaced the file, or a
turn played on the quiet rule grew), the trace notes it and the turns after the last one still
matching are played as new. Messages added to a turn after the source marked it ended are fed
with the next turn.

Usage is fed as a replay feeds it (``inspector.usage``, :mod:`inspector.host.calibration`): in
the default ``calibrated`` mode the hidden head and tokenizer ratio are fitted on the recorded
calls the source holds so far, and fitted again whenever more recorded calls arrive; each fit is
a host note and the trace's ``meta.usage_model`` (with ``refits``, one row per fit) says what
the engine was fed. Requests already played keep the usage they were fed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector import __version__
from inspector.host.calibration import UsageModel
from inspector.host.host import HOST_DIFFERENCES, Host
from inspector.host.replay import (
    INTERRUPT_CLOSING,
    engine_meta,
    host_for,
    is_interrupt_closing,
    make_counter,
    make_simulator,
    play_session_turn,
    public_config,
    replayable_indices,
    session_identifier,
)
from inspector.host.responders import ReplayResponder, WireMessages
from inspector.live import DEFAULT_SETTLE_SECONDS
from inspector.live.session import activated, load_named_engine, snapshot_trace
from inspector.sessions.model import ApiCall, ReaderError, Session, Turn, wire_message
from inspector.sessions.source import PENDING_LINE
from inspector.trace.model import Trace

UpdateFn = Callable[[Trace, int], None]

FOLLOW_DIFFERENCES = [
    "Follow mode: turns are replayed as the source grows, each once it is complete (the next user message "
    "appeared, the source marked the turn finished, or, with no such mark, a final assistant reply and a quiet "
    "settle period; a host note marks each turn played on that rule).",
    "If the writer rewrites turns already replayed (compaction in place, /rewind), the replayed ones are kept "
    "and a host note marks the point; new turns continue from there.",
    "Messages the source adds to a turn after marking it ended (a local command, instructions re-sent on resume) "
    "are fed at the start of the next turn rather than at the end of theirs; the history is the same.",
    "A turn still being written is played as far as its provider calls are complete (a reply followed by more of "
    "the turn); a follow stopped meanwhile finalises it with the calls played so far (a host note says so).",
]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def fed_digest(session: Session, indices: list[int], calls: dict[int, ApiCall]) -> str:
    """What playing these messages feeds the host: each as the engine sees it, with its recorded usage."""
    fed = []
    for i in indices:
        call = calls.get(i)
        fed.append((wire_message(session.messages[i]), call.usage.to_json() if call and call.usage else None))
    return _digest(fed)


@dataclass
class _Played:
    """A source turn as the replay holds it: the digest and number of its replayable messages fed."""

    digest: str
    count: int
    settled: bool  # played on the quiet rule: if it grows, it was not complete after all


def _content_fingerprint(session: Session) -> tuple[Any, ...]:
    """Changes whenever the session gains a message, its last turn changes in any way (a block, a
    flag) or the reader skips something new (a line the writer is half-way through)."""
    last = session.turns[-1] if session.turns else None
    tail = session.messages[last.start:] if last is not None else []
    return len(session.messages), len(session.turns), _digest(tail), _digest(session.warnings)


def turn_is_final(session: Session, turn: Turn) -> bool:
    """Does the turn end with an assistant reply that asks for no tools (so it may be over)?"""
    for i in range(turn.end - 1, turn.start - 1, -1):
        msg = session.messages[i]
        role = msg.get("role")
        if role == "system":
            continue
        return role == "assistant" and not msg.get("tool_calls")
    return False


def certain_part(session: Session, kept: list[int]) -> list[int]:
    """The part of a turn still being written that can no longer change: all but a last assistant
    row (a reply may still gain blocks, tool calls or its usage until something follows it)."""
    if kept and session.messages[kept[-1]].get("role") == "assistant":
        return kept[:-1]
    return kept


class _GrowingResponder(ReplayResponder):
    """Teacher forcing for a turn still being written: at the end of what is known it waits."""

    open_turn: _OpenTurn

    def _peek(self) -> dict[str, Any] | None:
        while self._pos >= len(self._indices) and not self.open_turn.final:
            self.open_turn.park()
        return super()._peek()

    def grow(self, session: Session, calls: dict[int, ApiCall], more: list[int]) -> None:
        """The source was read again: the same turn, with ``more`` of it (indices into ``session``)."""
        self._session, self._calls, self._wire = session, calls, WireMessages(session)
        self._indices.extend(more)


class _OpenTurn:
    """A turn the host is playing while the source still writes it, on a thread of its own.

    Strictly alternating with the poll thread, like a coroutine: :meth:`resume` runs the turn
    until its responder has nothing more to feed (:meth:`park`) or the turn ends.
    """

    def __init__(self, index: int, session: Session, calls: dict[int, ApiCall], own: list[int],
                 markers_done: int) -> None:
        self.index = index
        self.session, self.calls = session, calls
        self.own = list(own)  # the turn's replayable messages given to the host so far
        self.digest = fed_digest(session, self.own, calls)
        self.final = False  # no more will come: the responder plays what it has and the turn ends
        self.settled = False
        self.closing: int | None = None  # Hermes' own closing row of a stopped turn (not a provider reply)
        self.responder: _GrowingResponder | None = None
        self.markers_done = markers_done  # the source's compaction markers placed (play_session_turn's return)
        self.done = False
        self.error: BaseException | None = None
        self._turn_go = threading.Semaphore(0)
        self._poll_go = threading.Semaphore(0)
        self.thread: threading.Thread | None = None

    def start(self, play: Callable[[Callable[..., ReplayResponder]], int]) -> None:
        """Begin the turn (``play`` feeds it to the host) and run it until it first waits."""
        def make(*args: Any, **kwargs: Any) -> ReplayResponder:
            responder = _GrowingResponder(*args, **kwargs)
            responder.open_turn = self
            self.responder = responder
            return responder

        def run() -> None:
            self._turn_go.acquire()
            try:
                self.markers_done = play(make)
            except BaseException as exc:  # noqa: BLE001 - handed to the poll thread, which raises it
                self.error = exc
            finally:
                self.done = True
                self._poll_go.release()

        self.thread = threading.Thread(target=run, name="inspector-follow-turn", daemon=True)
        self.thread.start()
        self.resume()

    def park(self) -> None:
        """On the turn's thread: hand control back to the poll and wait to be resumed."""
        self._poll_go.release()
        self._turn_go.acquire()

    def resume(self) -> None:
        """On the poll thread: let the turn run until it waits for more or ends."""
        if self.done:  # it ended (or failed) already: nothing waits to be resumed
            return
        self._turn_go.release()
        self._poll_go.acquire()
        if self.done:
            assert self.thread is not None
            self.thread.join()
            if self.error is not None:
                raise self.error

    def grow(self, session: Session, calls: dict[int, ApiCall], own: list[int]) -> None:
        assert self.responder is not None
        more = own[len(self.own):]
        self.responder.grow(session, calls, more)
        self.session, self.calls, self.own = session, calls, list(own)
        self.digest = fed_digest(session, self.own, calls)


class Follower:
    """Replays the complete turns of a growing session through one engine.

    ``engine`` is a name, ``None`` (``context.engine``), a ``LoadedEngine`` or an engine
    instance. Call :meth:`poll` yourself, or :meth:`run` on a thread until a stop event.
    ``settle`` is how long (seconds) the session must stay unchanged before a last turn the
    source marks no end for is played (default :data:`DEFAULT_SETTLE_SECONDS`, or two poll
    intervals if that is longer). ``clock`` gives wall-clock seconds, comparable to file
    modification times (a file last written long ago is quiet already); tests pass a fake one.
    ``grow``: play a turn still being written as far as it is certain (see the module's notes);
    False waits for each turn to be complete.
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
        settle: float | None = None,
        clock: Callable[[], float] = time.time,
        counter: Any = None,
        simulator: Any = None,
        label: str | None = None,
        grow: bool = True,
    ) -> None:
        from inspector.sessions import split_spec

        path, spec_id = split_spec(os.fspath(source))
        self.path = path
        self.session_id = session_id if session_id is not None else spec_id
        self.format = format
        self.config = config
        self.interval = max(0.01, float(interval))
        self.settle = max(DEFAULT_SETTLE_SECONDS, 2 * self.interval) if settle is None else max(0.0, float(settle))
        self._clock = clock
        self.label = label
        self.loaded, self._owns_loaded = load_named_engine(engine, config, plugin_dirs)
        self.engine = getattr(self.loaded, "engine", self.loaded)
        self._counter = counter
        self._simulator = simulator
        self._usage: UsageModel | None = None  # as a replay feeds usage (inspector.host.calibration)
        self._counter_used: Any = None
        self._fitted_calls = -1  # recorded calls the usage model was last fitted on
        self._refits: list[dict[str, Any]] = []
        self.host: Host | None = None
        self.started = False
        self.played = 0  # turns played
        self.polls = 0
        self.last_error: str | None = None
        self.error_changed = False  # set when last_error changes; run() reports and clears it
        self.refused = False  # the host would not start with this engine
        self._played: list[_Played] = []  # one per source turn the replay holds
        self._markers_done = 0
        self._stat: tuple[Any, ...] | None = None
        self._content: tuple[Any, ...] | None = None
        self._session: Session | None = None
        self._read_at: float | None = None  # clock time of the latest poll
        self._changed_at: float | None = None  # when the session last changed, as far as can be told
        self._rewritten_noted_at: int | None = None
        self._warned: set[str] = set()  # reader warnings already noted
        self._closed = False
        self.grow = grow
        self._open: _OpenTurn | None = None  # the turn being played while the source writes it
        self.grew = False  # the latest poll played more of the open turn (a new request, say)

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

    def _read(self) -> Session | None:
        """The source as it is now; notes when its content last changed (for the settle rule)."""
        now = self._clock()
        previous, self._read_at = self._read_at, now
        stat = self._stat_fingerprint()
        if self._session is not None and stat == self._stat:
            return self._session
        from inspector.sessions import load_session

        try:
            session = load_session(self.path, format=self.format, session_id=self.session_id)
        except (ReaderError, OSError) as exc:
            # The writer may not have created the file yet, or a line is half-written: try again next poll.
            self._set_error(str(exc))
            return self._session
        self._set_error(None)
        content = _content_fingerprint(session)
        if content != self._content:
            # The change was written after the previous poll and by now; the files' modification
            # time places it in between (a file finished long ago has been quiet since then).
            written = max((entry[1] / 1e9 for entry in stat if entry is not None), default=now)
            self._changed_at = min(now, written if previous is None else max(previous, written))
        self._stat, self._content, self._session = stat, content, session
        if self.host is not None and self.started:
            self._refit(session)  # the first fit is made with the host (_ensure_host)
        return session

    def quiet_for(self) -> float:
        """Seconds the session had not changed at the latest poll."""
        if self._read_at is None or self._changed_at is None:
            return 0.0
        return max(0.0, self._read_at - self._changed_at)

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
        from inspector.host.transcript_defaults import settle

        self.config = settle(self.config, session)  # the transcript's model, window and cache unless set
        model = None  # the host reads the settled config's model.default
        counter = self._counter or make_counter(self.config)
        host_model = model or str((self.config.get("model") or {}).get("default") or "")
        simulator = self._simulator if self._simulator is not None else make_simulator(self.config, host_model)
        meta: dict[str, Any] = {
            "inspector_version": __version__,
            "label": self.label or f"{getattr(self.engine, 'name', 'engine')} (follow)",
            "engine": engine_meta(self.loaded, self.engine),
            "session": {"id": session.id, "format": session.source_format, "path": session.source_path,
                        "title": session.title, "model": session.model},
            "config": public_config(self.config),
            "tokenizer": getattr(counter, "name", "?"),
            "cache_profile": (self.config.get("inspector") or {}).get("cache_profile", "anthropic"),
            "assumed": self.config.get("x_assumed"),
            "host_differences": list(HOST_DIFFERENCES) + list(FOLLOW_DIFFERENCES),
            "mode": "follow",
        }
        self._usage, self._counter_used = UsageModel(simulator=simulator), counter
        self.host = host_for(self.loaded, self.config, session_id=session_identifier(session),
                             system_prompt=session.system_prompt(), session_tools=session.tools, counter=counter,
                             simulator=simulator, trace=Trace(meta=meta), model=model, session_clock=True,
                             usage_model=self._usage)
        with activated(self.loaded):
            self.started = self.host.start()
        if self.started:
            self._refit(session)
        self.host.trace.finish()
        return self.started

    def _refit(self, session: Session) -> None:
        """The usage model fitted again when the source holds more recorded calls than at the last fit."""
        assert self.host is not None and self._usage is not None
        calls = sum(1 for c in session.api_calls if c.usage is not None and c.usage.prompt_tokens > 0
                    and c.usage.source == "reported")
        if calls == self._fitted_calls:
            return
        first = self._fitted_calls < 0
        self._fitted_calls = calls
        changed = self._usage.refit(self.config, session, self._counter_used)
        cal = self._usage.calibration
        row: dict[str, Any] = {"turns_played": self.played, "recorded_calls": calls, "mode": self._usage.mode,
                               "hidden_tokens": cal.hidden_tokens if cal else None, "ratio": cal.ratio if cal else None}
        if not (changed or first):
            return
        self._refits.append(row)
        if cal is not None:
            self.host.note(f"follow: usage {'calibrated' if first else 'calibration refitted'} on the {calls:,} recorded "
                           f"call(s) seen so far: head {cal.hidden_tokens:,} tokens, ratio {cal.ratio:.2f} "
                           f"({cal.method}); fitted again as calls arrive", **row)
        else:
            self.host.note(f"follow: usage {self._usage.mode} ({calls:,} recorded call(s) seen so far)", **row)
        self._record_usage()

    def _record_usage(self) -> None:
        """``meta.usage_model`` as of now: the mode, the latest fit, every fit so far and what each request was fed."""
        if self.host is not None and self._usage is not None:
            self.host.trace.meta["usage_model"] = dict(self._usage.to_json(), refits=list(self._refits))

    @property
    def trace(self) -> Trace | None:
        self._record_usage()
        return self.host.trace if self.host is not None else None

    def snapshot(self) -> Trace | None:
        trace = self.trace  # meta.usage_model as of now
        return snapshot_trace(trace) if trace is not None else None

    # -- polling ----------------------------------------------------------------------------------
    def poll(self) -> int:
        """Read the source once and replay every newly completed turn; returns how many were added.

        With ``grow``, a last turn still being written is also played as far as it is certain
        (:attr:`grew` says whether this poll added requests to it).
        """
        if self._closed:
            return 0
        self.polls += 1
        self.grew = False
        session = self._read()
        if session is None or not session.turns:
            return 0
        if not self._ensure_host(session):
            stopped = self.host.trace.meta.get("stopped") if self.host is not None else None
            self._set_error(str(stopped or "the engine refused to start; see the trace"))
            self.refused = True  # Hermes builds no agent with this engine: nothing more to follow
            return 0
        assert self.host is not None
        turns = session.turns
        calls = {c.message_index: c for c in session.api_calls}
        self._note_warnings(session)
        complete = len(turns) - 1  # every turn but the last: a later one has begun
        quiet = self.quiet_for()
        settled = False
        if turns[-1].ended:
            complete = len(turns)
        elif turn_is_final(session, turns[-1]) and quiet >= self.settle:
            complete, settled = len(turns), True
        added = 0
        requests = len(self.host.trace.requests)
        with activated(self.loaded):
            if self._open is not None and self._advance_open(session, calls, complete, settled, quiet):
                self.played += 1
                added += 1
            if self._open is None:
                start, carried = self._first_new_turn(session, calls)
                for index in range(start, complete):
                    self._play(session, index, calls, carried if index == start else [], settled=settled)
                    self.played += 1
                    added += 1
                if settled and start < len(turns):  # the last turn was among those played
                    self._note_quiet(quiet)
                last = len(turns) - 1
                if self.grow and complete <= last and start <= last:
                    self._open_turn(session, last, calls, carried if start == last else [])
        self.grew = self._open is not None and len(self.host.trace.requests) > requests
        if added or self.grew:
            self.host.trace.meta["session"]["turns"] = self.played
            self.host.trace.finish()
        return added

    def _note_quiet(self, quiet: float) -> None:
        assert self.host is not None
        self.host.note(f"follow: this turn was replayed on the quiet rule: the source marks no end of turn and "
                       f"had not changed for {quiet:.1f} s (settle period {self.settle:g} s); should the writer "
                       f"add to it, it is replayed again", rule="quiet", quiet_seconds=round(quiet, 3),
                       settle_seconds=self.settle)

    # -- a turn still being written -------------------------------------------------------------
    def _open_turn(self, session: Session, index: int, calls: dict[int, ApiCall], carried: list[int]) -> None:
        """Start playing the last turn as far as it is certain, if one provider call of it is."""
        turn = session.turns[index]
        certain = certain_part(session, replayable_indices(session, turn))
        if not any(session.messages[i].get("role") == "assistant" for i in certain):
            return  # no call of it is complete yet
        if carried:  # as _play: the previous turn's digest now covers what it gained
            before = replayable_indices(session, session.turns[index - 1])
            self._played[-1] = _Played(fed_digest(session, before, calls), len(before), self._played[-1].settled)
        markers = sorted(session.compactions, key=lambda c: c.message_index)
        host, done = self.host, self._markers_done
        opened = self._open = _OpenTurn(index, session, calls, certain, done)
        opened.start(lambda make: play_session_turn(host, session, turn, calls, markers, done, kept=carried + certain,
                                                    make_responder=make))
        if opened.done:  # the host ended the turn itself (an interrupt, a failure): it holds what it played
            self._close_open()

    def _advance_open(self, session: Session, calls: dict[int, ApiCall], complete: int, settled: bool,
                      quiet: float) -> bool:
        """Give the open turn what the source gained; True when the turn has ended."""
        opened = self._open
        assert opened is not None and self.host is not None
        index = opened.index
        own = replayable_indices(session, session.turns[index]) if index < len(session.turns) else []
        if session is not opened.session and (own[:len(opened.own)] != opened.own
                                              or fed_digest(session, opened.own, calls) != opened.digest):
            # Rewritten under the turn: it ends where it is, and the next look notes the rewrite.
            opened.final = True
            opened.resume()
            self._close_open()
            return True
        if index < complete:  # complete now: the rest of it, then the turn ends
            messages = session.messages
            if len(own) >= 2 and is_interrupt_closing(messages[own[-1]], messages[own[-2]]):
                opened.closing, own = own[-1], own[:-1]
            opened.grow(session, calls, own)
            opened.final = True
            opened.resume()
            if opened.closing is not None:  # as play_session_turn: Hermes' own row, no provider call
                self.host.history.append(WireMessages(session)[opened.closing])
                self.host.note("the user stopped this turn during its tools; Hermes closed it with its own "
                               f"assistant row ({INTERRUPT_CLOSING!r}…), which joins the history without a "
                               "provider call")
            opened.settled = settled and index == len(session.turns) - 1
            self._close_open()
            if opened.settled:
                self._note_quiet(quiet)
            return True
        certain = certain_part(session, own)
        if len(certain) > len(opened.own):
            opened.grow(session, calls, certain)
            opened.resume()
            if opened.done:
                self._close_open()
                return True
        return False

    def _close_open(self) -> None:
        """The open turn has ended: remember it as a played turn."""
        opened = self._open
        assert opened is not None
        self._open = None
        self._markers_done = opened.markers_done
        fed = opened.own + ([opened.closing] if opened.closing is not None else [])
        self._played.append(_Played(fed_digest(opened.session, fed, opened.calls), len(fed), opened.settled))

    def _first_new_turn(self, session: Session, calls: dict[int, ApiCall]) -> tuple[int, list[int]]:
        """The source's first turn not replayed yet, and messages of the turn before it still to feed.

        Normally the turns after those already played. Messages the source added to the last
        played turn after marking it ended (a local command, instructions re-sent on resume) are
        fed with the next turn: the history the engine sees is the same.

        When the source was rewritten, truncated or replaced (a rotated log), or a played turn
        changed in any message it fed (or grew after being played on the quiet rule), the new
        turns are the ones after the last turn the replay holds unchanged: a replaced file's
        turns are all new, and turns a rewrite dropped or changed and then wrote again are played,
        not skipped. Noted once per rewrite.
        """
        assert self.host is not None
        turns = session.turns
        played = len(self._played)
        changed: int | None = None
        carried: list[int] = []
        for i, rec in enumerate(self._played):
            kept = replayable_indices(session, turns[i]) if i < len(turns) else []
            if i >= len(turns) or len(kept) < rec.count or fed_digest(session, kept[:rec.count], calls) != rec.digest:
                changed = i
                break
            if len(kept) > rec.count:
                if rec.settled or i < played - 1:  # only the last turn can grow: a later one had begun
                    changed = i
                    break
                carried = kept[rec.count:]
        if changed is None:
            return played, carried
        if changed >= len(turns):
            why = f"the source was rewritten or replaced: it no longer holds turn {changed}"
        elif self._played[changed].settled:
            why = f"turn {changed}, replayed on the quiet rule, has changed since: it was not complete"
        else:
            why = f"the source was rewritten or replaced: its turn {changed} differs from the one replayed"
        known = {rec.digest for rec in self._played}
        digests = [fed_digest(session, replayable_indices(session, t), calls) for t in turns]
        start = max((i + 1 for i, d in enumerate(digests) if d in known), default=0)
        if self._rewritten_noted_at != start:
            self._rewritten_noted_at = start
            self.host.note(f"{why} (the source now holds {len(digests)} turns, {played} were replayed from it); "
                           f"replayed turns are kept, and its turns from {start} on are new",
                           turns=len(digests), changed=changed, new_from=start)
        # The source's turns the replay holds, from now on.
        self._played = [_Played(d, len(replayable_indices(session, t)), False) for d, t in zip(digests[:start], turns)]
        return start, []

    def _note_warnings(self, session: Session) -> None:
        """What the reader had to skip (a torn line in the middle, say), once each, as replay shows it."""
        assert self.host is not None
        for warning in session.warnings:
            if PENDING_LINE in warning:  # a line being written: read whole at a later poll, not a damage
                continue
            if warning not in self._warned:
                self._warned.add(warning)
                self.host.note(f"reading the source: {warning}")

    def _play(self, session: Session, index: int, calls: dict[int, ApiCall], carried: list[int], *,
              settled: bool) -> None:
        """One turn, exactly as :func:`inspector.host.replay.replay` feeds it to the host.

        ``carried`` are the messages the previous turn gained after it was played; they go first.
        """
        assert self.host is not None
        turn = session.turns[index]
        kept = replayable_indices(session, turn)
        markers = sorted(session.compactions, key=lambda c: c.message_index)
        self._markers_done = play_session_turn(self.host, session, turn, calls, markers, self._markers_done,
                                               kept=carried + kept)
        if carried:
            before = replayable_indices(session, session.turns[index - 1])
            self._played[-1] = _Played(fed_digest(session, before, calls), len(before), self._played[-1].settled)
        self._played.append(_Played(fed_digest(session, kept, calls), len(kept), settled and index == len(session.turns) - 1))

    def run(self, stop: threading.Event, on_update: UpdateFn | None = None, *, max_seconds: float | None = None,
            on_error: Callable[[str | None], None] | None = None) -> int:
        """Poll every ``interval`` until ``stop`` is set (or ``max_seconds``); returns the turns added.

        ``on_update(snapshot, added)`` runs on this thread after each poll that added turns (or
        requests of a turn still being written: ``added`` is 0 then), with a trace snapshot that
        is safe to hand to another thread. ``on_error(message)`` runs when
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
            if self.refused:
                break
            if (added or self.grew) and on_update is not None:
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

    def _finish_open(self) -> None:
        """Stopped while a turn is still being written: it ends with the calls played so far."""
        opened = self._open
        if opened is None:
            return
        assert self.host is not None
        opened.final = True
        opened.resume()
        played = sum(1 for r in self.host.trace.requests if r.turn == self.host.turn)
        self.host.note(f"follow: stopped while this turn was still being written; it was finalised with the "
                       f"{played} provider call{'s' if played != 1 else ''} played so far", rule="stopped")
        self._close_open()
        self.played += 1
        self.host.trace.meta["session"]["turns"] = self.played

    def close(self) -> Trace | None:
        """End the engine's session (``on_session_end``) and release the engine; returns the final trace."""
        if self._closed:
            return self.trace
        self._closed = True
        try:
            if self.host is not None and self.started:
                with activated(self.loaded):
                    self._finish_open()
                    self.host.end()
        finally:
            if self._owns_loaded:
                closer = getattr(self.loaded, "close", None)
                if callable(closer):
                    with contextlib.suppress(Exception):
                        closer()
        return self.trace

