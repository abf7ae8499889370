"""What every live chat owns whoever runs its engine: the conversation and one request at a time.

A chat runs its engine in this process (:class:`inspector.live.session.LiveSession`, which the
worker's chat job drives) or in a worker (:class:`inspector.live.worker_chat.WorkerChat`). Both
keep the conversation as it happened, refuse a second request while one runs, and save the
conversation as OpenAI JSONL with the user's key masked; this class is that part, once.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inspector.live.responder import LiveError, LiveSettings
from inspector.outputs import write_atomic


class Conversation:
    """A chat's system prompt and transcript, its settings, and its one-request lock."""

    def __init__(self, settings: LiveSettings, system_prompt: str | None) -> None:
        self.settings = settings
        self.system_prompt = system_prompt
        #: the conversation as it happened: user, assistant (with usage/timestamp/model), tool rows
        self.transcript: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The one request running now; a second raises ``busy``, any after :meth:`close` ``config``."""
        if self._closed:
            raise LiveError("this live session is closed", kind="config")
        if not self._lock.acquire(blocking=False):
            raise LiveError("a request is already running in this session", kind="busy")
        try:
            yield
        finally:
            self._lock.release()

    def transcript_lines(self) -> list[str]:
        """The transcript as OpenAI message-per-line JSON (system prompt first, as readers expect)."""
        rows: list[dict[str, Any]] = []
        if self.system_prompt:
            rows.append({"role": "system", "content": self.system_prompt})
        rows.extend(self.transcript)
        key = os.environ.get(self.settings.api_key_env, "").strip()
        lines = []
        for row in rows:
            line = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
            if key and len(key) >= 4 and key in line:
                # Someone pasted the key into the chat: it still never reaches the disk.
                line = line.replace(key, "***")
            lines.append(line)
        return lines

    def save_transcript(self, path: str | os.PathLike[str]) -> Path:
        """Write the conversation as OpenAI JSONL (atomic); it saves after a fault too."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(target, "\n".join(self.transcript_lines()) + "\n")
