"""Subclasses the built-in compressor and calls its methods, as many third-party engines do."""

from agent.context_compressor import (  # noqa: F401
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    ContextCompressor,
    estimate_messages_tokens_rough,
    resolve_model_threshold,
)


class TunedCompressor(ContextCompressor):
    def __init__(self):
        super().__init__(model="test/model", threshold_percent=0.5, config_context_length=128000, quiet_mode=True)
        self.calls = []

    @property
    def name(self):
        return "fixture_compressor_sub"

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        pruned, changed = self._prune_old_tool_results(messages, self.protect_last_n)
        self.calls.append(("prune", changed))
        cleaned = self._sanitize_tool_pairs(pruned)
        self.calls.append(("sanitize", len(cleaned)))
        return super().compress(cleaned, current_tokens=current_tokens, focus_topic=focus_topic, force=force)
