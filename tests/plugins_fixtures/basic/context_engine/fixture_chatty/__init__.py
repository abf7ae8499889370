"""Directory engine that talks while it works: prints and logs from update_from_response and compress.

What engine authors do to debug; the host records it with the hook call that wrote it.
"""

import logging
import sys

from agent.context_engine import ContextEngine

logger = logging.getLogger(__name__)


class ChattyEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_chatty"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = self.last_prompt_tokens + self.last_completion_tokens
        print(f"usage: {self.last_prompt_tokens} prompt tokens")
        logger.debug("below the recorded level")

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        print(f"compress: {len(messages)} messages in", file=sys.stderr)
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        kept = [dict(m) for m in messages[last_user:]]
        logger.info("Compressed %d messages into 1 summary", last_user)
        if not memory_context:
            logger.warning("no memory context; summarising from the messages alone")
        self.compression_count += 1
        return [{"role": "assistant", "content": f"[CONTEXT SUMMARY]: {last_user} earlier messages"}] + kept
