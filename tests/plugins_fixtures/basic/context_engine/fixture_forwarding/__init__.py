"""Duck-typed wrapper, as real plugins write them: not a ContextEngine, forwards the rest via __getattr__.

It defines every hook Hermes calls unguarded and leaves the others (select_context,
should_compress_info, the token attributes, …) to the inner engine it wraps.
"""

from agent.context_engine import ContextEngine


class Inner(ContextEngine):
    name = "inner"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def should_compress_info(self, prompt_tokens=None):
        return self.should_compress(prompt_tokens), None

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        self.compression_count += 1
        return [{"role": "assistant", "content": "summary"}] + [dict(m) for m in messages[last_user:]]


class ForwardingEngine:
    def __init__(self):
        self._inner = Inner()

    @property
    def name(self):
        return "fixture_forwarding"

    def __getattr__(self, attr):
        if attr.startswith("__") or attr == "_inner":
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self._inner.update_model(model, context_length, base_url, api_key, provider, api_mode)

    def update_from_response(self, usage):
        self._inner.update_from_response(usage)

    def should_compress(self, prompt_tokens=None):
        return self._inner.should_compress(prompt_tokens)

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return self._inner.compress(messages, current_tokens, focus_topic, force, memory_context)

    def get_tool_schemas(self):
        return []

    def on_session_start(self, session_id, **kwargs):
        pass

    def on_session_end(self, session_id, messages):
        pass

    def on_session_reset(self):
        self._inner.on_session_reset()

    def get_status(self):
        return self._inner.get_status()


def register(ctx):
    ctx.register_context_engine(ForwardingEngine())
