"""The supervisor measures a session's messages while its workers replay it.

Most of what a replay does to a transcript message before an engine sees it is measuring it:
the content key and repr length of its sent form (a walk over it, hashed) and its token count;
together a third of a cold replay's time. The supervisor holds the same session and, while a
worker replays, mostly waits for its stream, so it makes these on a thread of its own, in the
order the replay reaches the messages, and sends them to every worker of the session in
``ahead`` frames. A worker's replay takes what has arrived when it prepares a batch of turns
and measures the rest itself (:mod:`inspector.host.hints`): only ever a speed-up, and two
processes measure in parallel where one interpreter could not (hashing is Python; the count
holds the interpreter lock).

A row is sent only for a message the session's JSON carries unchanged, the only kind whose repr
length its key walk measures exactly (a tuple or a key that is not a string is measured by the
worker itself, from the form it received). Counts go to the persistent token cache from here,
as the worker's own would.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

CHUNK_TURNS = 16  # turns per frame: a worker prepares 64 turns at a time (inspector.host.replay.PREPARE_TURNS)


class SessionAhead:
    """One session's messages measured for the workers replaying it."""

    def __init__(self, session: Any, workers: Sequence[Any], config: dict[str, Any]) -> None:
        self.session = session
        self.workers = list(workers)
        self.config = config
        self.rows = 0  # sent so far
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> SessionAhead:
        self._thread = threading.Thread(target=self._run, name="inspector-session-ahead", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """The runs are over (or cancelled): nothing more is wanted."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        try:
            self._measure()
        except Exception:  # noqa: BLE001 - a speed-up only: the workers measure what they lack themselves
            pass

    def _measure(self) -> None:
        from inspector.host.calibration import sent_form_of
        from inspector.host.replay import make_counter, replayable_indices
        from inspector.sessions.model import wire_message
        from inspector.tokens.encodings import TokenizerUnavailable

        try:
            counter = make_counter(self.config)
        except TokenizerUnavailable:
            counter = None  # the workers report it; keys are still worth sending
        tokenizer = counter.name if counter is not None and counter.exact else ""
        messages, turns = self.session.messages, self.session.turns
        rows: list[list[Any]] = []
        for n, turn in enumerate(turns):
            if self._stop.is_set():
                return
            for i in replayable_indices(self.session, turn):
                wire, (key, chars) = sent_form_of(wire_message(messages[i]))
                if chars is None:
                    continue
                rows.append([i, key, chars, counter.count_message(wire, key=key) if tokenizer else None])
            if rows and ((n + 1) % CHUNK_TURNS == 0 or n + 1 == len(turns)):
                self._send(tokenizer, rows)
                rows = []
        if counter is not None:
            counter.flush()

    def _send(self, tokenizer: str, rows: list[list[Any]]) -> None:
        frame = {"type": "ahead", "tokenizer": tokenizer, "rows": rows}
        for worker in self.workers:
            worker.post(frame)
        self.rows += len(rows)
