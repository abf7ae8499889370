"""Source text of tiny plugin engines that tests write into temporary plugin directories.

Plugins are imported by name, process-wide, so each test package formats them with its own
engine names.
"""

# Compresses at a fixed token count: keeps the system message, a summary and the last user turn.
TAIL_ENGINE = '''
from agent.context_engine import ContextEngine


class TailEngine(ContextEngine):
    LIMIT = {limit}

    @property
    def name(self):
        return "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = self.last_prompt_tokens + self.last_completion_tokens

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) >= self.LIMIT

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        head = [dict(m) for m in messages[:1] if m.get("role") == "system"]
        self.compression_count += 1
        summary = {{"role": "user", "content": "[CONTEXT SUMMARY]: earlier turns were dropped"}}
        return head + [summary] + [dict(m) for m in messages[last_user:]]
'''

NEVER_ENGINE = '''
from agent.context_engine import ContextEngine


class NeverEngine(ContextEngine):
    @property
    def name(self):
        return "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages
'''

BROKEN_ENGINE = 'raise RuntimeError("{name} refuses to import")\n'

# Compresses like the tail engine, but drops every tool result it keeps: the assistant's tool calls
# are left without results, which the host's sanitiser repairs with stubs before every call. It
# looks cheapest, and must never get a best value.
DROPS_TOOLS_ENGINE = '''
from agent.context_engine import ContextEngine


class DropsTools(ContextEngine):
    @property
    def name(self):
        return "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) >= 1500

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compression_count += 1
        return [dict(m) for m in messages if m.get("role") != "tool"]
'''
