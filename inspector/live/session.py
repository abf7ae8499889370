"""A live chat: one engine, one :class:`~inspector.host.host.Host`, a real model behind it.

The user's text becomes a turn of the same incremental host a replay uses, so the trace a chat
produces is read by every panel exactly like a replayed one. The session also keeps the
conversation as it happened (not the engine's compacted view) so it can be saved as an OpenAI
message-per-line transcript, with each call's usage and time, and replayed later against other
engines with the recorded usage beside the synthesised one.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from inspector import __version__
from inspector.host.replay import (
    engine_meta,
    host_for,
    make_counter,
    make_simulator,
    public_config,
)
from inspector.live.conversation import Conversation
from inspector.live.responder import DeltaFn, LiveError, LiveResponder, LiveSettings, NoticeFn
from inspector.llm.secrets import scrub_text
from inspector.trace.model import Trace

LIVE_DIFFERENCES = [
    "Provider calls are real: each request the engine produced was sent to the configured OpenAI-compatible "
    "endpoint and the streamed reply became the next assistant message.",
    "update_from_response receives the endpoint's real usage (cached tokens included); it is synthesised from "
    "tokenizer counts only when the endpoint sends no usage (a host note says so).",
    "Only the engine's tools are offered to the model; a call to any other tool gets a JSON error result.",
    "Transient failures (timeouts, 429, 5xx, a broken stream) are retried with the same selected request, as "
    "Hermes' retry loop does, so select_context is not re-run for a retry.",
    "A context-overflow rejection (HTTP 413, or 400 naming the context length) triggers Hermes' error-driven "
    "compaction (agent/conversation_loop.py:3500-3830 of hermes-agent 0.19.0): compress, re-assemble (select_context runs again) and retry, 3 times at most.",
    "No SessionDB: compaction is emulated in place; no memory provider, todo store or ephemeral system prompt.",
    "The cache panel shows the simulated provider cache beside the real cached tokens the endpoint reported.",
]


def redact_key(text: str, key_env: str) -> tuple[str, bool]:
    """A key pasted into the chat would reach the trace and the provider's logs: replace it first."""
    key = os.environ.get(key_env, "").strip()
    if key and len(key) >= 4 and key in text:
        return text.replace(key, "[redacted API key]"), True
    return text, False


def new_session_id() -> str:
    """Hermes-shaped session id: ``YYYYMMDD_HHMMSS_`` plus six hex digits."""
    return time.strftime("%Y%m%d_%H%M%S_") + uuid.uuid4().hex[:6]


def load_named_engine(engine: Any, config: dict[str, Any], plugin_dirs: Any = ()) -> tuple[Any, bool]:
    """(loaded, owned): a name (or None for ``context.engine``) is loaded here; anything else is used as given."""
    if engine is None or isinstance(engine, str):
        from inspector.engines.discovery import load_engine

        return load_engine(engine, config, plugin_dirs=plugin_dirs), True
    return engine, False


@contextlib.contextmanager
def activated(loaded: Any) -> Iterator[None]:
    """Run engine hooks with the stand-in Hermes modules answering for this engine (config, home)."""
    activate = getattr(loaded, "activate", None)
    if callable(activate):
        with activate():
            yield
    else:
        yield


def snapshot_trace(trace: Trace) -> Trace:
    """A finished copy of ``trace`` that later turns do not touch, safe to hand to the GUI thread.

    The host keeps appending to its trace; panels on another thread must read a copy. Messages,
    events and requests are shared (the host never edits them once a request is recorded); only
    the containers are copied, so this costs O(events + distinct messages), not O(text).
    """
    snap = Trace(meta=copy.deepcopy(trace.meta))
    src, dst = trace.store, snap.store
    dst.messages = dict(src.messages)
    dst.lists = src.lists.copy()
    dst._list_ids = dict(src._list_ids)
    dst.tokens = dict(src.tokens)
    snap.events = list(trace.events)
    snap.requests = list(trace.requests)
    snap.marks = list(trace.marks)
    snap.tool_schemas = list(trace.tool_schemas)
    return snap.finish()


class LiveSession(Conversation):
    """A chat with a real model through the engine under test.

    ``engine`` is an engine name (loaded with ``inspector.engines.discovery.load_engine``),
    ``None`` for ``context.engine``, a ``LoadedEngine`` or a bare engine instance. Not
    thread-safe by design: one request at a time (a second concurrent :meth:`send` raises a
    ``LiveError`` of kind ``busy``); run it on a worker thread and read :meth:`snapshot` elsewhere.
    """

    def __init__(
        self,
        engine: Any,
        config: dict[str, Any],
        *,
        system_prompt: str | None = None,
        plugin_dirs: Any = (),
        settings: LiveSettings | None = None,
        client: Any = None,
        counter: Any = None,
        simulator: Any = None,
        session_id: str | None = None,
        label: str | None = None,
        sleep: Callable[[float], None] | None = None,
        history: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(settings or LiveSettings.from_config(config), system_prompt)
        self.config = config
        self.loaded, self._owns_loaded = load_named_engine(engine, config, plugin_dirs)
        self.engine = getattr(self.loaded, "engine", self.loaded)
        self.session_id = session_id or new_session_id()
        try:
            self.responder = LiveResponder(self.settings, client=client, on_note=self._note, sleep=sleep)
        except BaseException:
            self._release_engine()
            raise
        try:
            counter = counter or make_counter(config)
            simulator = simulator if simulator is not None else make_simulator(config, self.settings.model)
            meta: dict[str, Any] = {
                "inspector_version": __version__,
                "label": label or f"{getattr(self.engine, 'name', 'engine')} (live)",
                "engine": engine_meta(self.loaded, self.engine),
                "session": {"id": self.session_id, "format": "live", "path": None, "model": self.settings.model,
                            "endpoint": scrub_text(self.settings.base_url)},
                "config": public_config(config),
                "tokenizer": getattr(counter, "name", "?"),
                "cache_profile": (config.get("inspector") or {}).get("cache_profile", "anthropic"),
                "host_differences": list(LIVE_DIFFERENCES),
                "mode": "live",
            }
            self.host = host_for(self.loaded, config, session_id=self.session_id, system_prompt=system_prompt,
                                 session_tools=None, counter=counter, simulator=simulator, trace=Trace(meta=meta),
                                 model=self.settings.model)
            with activated(self.loaded):
                self._started = self.host.start()
            if history:
                # A chat carried on after its worker ended: the conversation so far, as Hermes reloads a
                # resumed session's messages before the next turn (``conversation_history``, run_agent.py:6354
                # of hermes-agent 0.19.0).
                self.host.history.extend(copy.deepcopy(history))
                self.host.note(f"the conversation so far ({len(history)} messages) was carried over from an earlier "
                               "worker of this chat; the engine starts with a fresh state", resumed=len(history))
            self.host.trace.finish()
        except BaseException:
            # Nothing half-built may keep a connection pool or an engine sandbox alive.
            self.responder.close()
            self._release_engine()
            raise

    # -- state ---------------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        """The host's trace, finished after every turn (mutated by the next one: use :meth:`snapshot` across threads)."""
        return self.host.trace

    @property
    def history(self) -> list[dict[str, Any]]:
        """The engine's working transcript (after any compaction)."""
        return self.host.history

    @property
    def started(self) -> bool:
        return self._started

    def snapshot(self) -> Trace:
        return snapshot_trace(self.host.trace)

    def _note(self, text: str, **args: Any) -> None:
        self.host.note(text, **args)

    # -- actions ---------------------------------------------------------------------------
    def send(
        self,
        user_text: str,
        on_delta: DeltaFn | None = None,
        cancel: threading.Event | None = None,
        *,
        on_notice: NoticeFn | None = None,
        on_request: Callable[[], None] | None = None,
    ) -> str:
        """One user turn through the engine and the model; returns the final assistant text.

        ``on_delta`` receives text as it streams; ``on_notice(kind, text)`` hears about retries
        (kind ``retry``: any partial text of that call is void); ``on_request()`` runs after each
        provider call is fully recorded except the last (the caller knows when ``send`` returns).
        A :class:`LiveError` (or ``LiveCancelled``) ends the turn; the user message and anything
        recorded before the failure stay in the history, the transcript and the trace.
        """
        if not isinstance(user_text, str) or not user_text.strip():
            raise LiveError("nothing to send: the message is empty", kind="bad_request")
        with self._exclusive():
            if not self._started:
                raise LiveError("the engine refused to start (see the trace's first events); this session cannot chat",
                                kind="config")
            now = time.time()
            user_text, redacted = redact_key(user_text, self.settings.api_key_env)
            user = {"role": "user", "content": user_text}
            self.transcript.append(dict(user, timestamp=now))
            self.responder.begin_turn(on_delta=on_delta, on_notice=on_notice, on_request=on_request, cancel=cancel)
            if redacted:
                self.host.note(f"the API key (${self.settings.api_key_env}) was removed from the user's message "
                               "before it reached the engine, the model and the trace")
                if on_notice is not None:
                    on_notice("redacted", "Your message contained the API key; it was replaced by [redacted API key].")
            try:
                with activated(self.loaded):
                    self.host.play_turn([user], self.responder, timestamp=now)
            except LiveError as exc:
                self.host.note(f"turn ended without a reply: {exc}", kind=exc.kind, attempts=exc.attempts,
                               status=exc.status)
                raise
            finally:
                produced = self.responder.take_log()
                self.transcript.extend(produced)
                self.host.trace.finish()
            finals = [m for m in produced if m.get("role") == "assistant"]
            if not finals:
                return ""
            content = finals[-1].get("content")
            return content if isinstance(content, str) else ""

    def compress(self, focus_topic: str | None = None) -> bool:
        """A manual ``/compress [topic]`` (force=True, the topic passed through); True if a boundary committed."""
        with self._exclusive():
            if not self._started:
                raise LiveError("the engine refused to start; nothing to compress", kind="config")
            try:
                with activated(self.loaded):
                    return self.host.compress_now(focus_topic or None)
            finally:
                self.host.trace.finish()

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> Trace:
        """End the session (``on_session_end``), release the client and the engine; returns the final trace."""
        if self._closed:
            return self.host.trace
        with self._lock:
            self._closed = True
            try:
                if self._started:
                    with activated(self.loaded):
                        self.host.end()
            finally:
                self.responder.close()
                self._release_engine()
                self.host.trace.finish()
        return self.host.trace

    def _release_engine(self) -> None:
        if self._owns_loaded:
            closer = getattr(self.loaded, "close", None)
            if callable(closer):
                with contextlib.suppress(Exception):
                    closer()

    def __enter__(self) -> LiveSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
