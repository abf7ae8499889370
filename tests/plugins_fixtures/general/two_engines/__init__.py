from agent.context_engine import ContextEngine


class _Base(ContextEngine):
    label = "?"

    @property
    def name(self):
        return self.label

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages


class First(_Base):
    label = "fixture_first"


class Second(_Base):
    label = "fixture_second"


def register(ctx):
    ctx.register_context_engine(First())
    ctx.register_context_engine(Second())
