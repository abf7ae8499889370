"""General plugin: uses the full ctx and registers an engine through ctx.register_context_engine."""

from agent.context_engine import ContextEngine
from hermes_cli.plugins import get_plugin_manager

SEEN = []


class GeneralEngine(ContextEngine):
    @property
    def name(self):
        return "fixture_general"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        self.compression_count += 1
        return [{"role": "assistant", "content": "summary"}] + messages[last_user:]


def _pre_llm_call(**kwargs):
    SEEN.append(("pre_llm_call", sorted(kwargs)))
    return {"context": "from hooks_plugin"}


def _post_tool_call(**kwargs):
    SEEN.append(("post_tool_call", sorted(kwargs)))


def _boom(**kwargs):
    raise ValueError("hook failure is recorded, not raised")


def register(ctx):
    assert ctx.manifest.version == "0.3.0"
    ctx.register_hook("pre_llm_call", _pre_llm_call)
    ctx.register_hook("post_tool_call", _post_tool_call)
    ctx.register_hook("on_session_end", _boom)
    ctx.register_tool(name="fixture_tool", toolset="fixture", schema={"name": "fixture_tool", "parameters": {}},
                      handler=lambda args, **kw: "ok")
    ctx.register_command("fixture-cmd", handler=lambda raw: "done", description="a command")
    ctx.register_cli_command(name="fixture-cli", help="h", setup_fn=lambda p: None, handler_fn=lambda a: 0)
    ctx.register_auxiliary_task("fixture_task", description="aux task")
    ctx.register_skill("fixture-skill", "text")
    ctx.register_middleware("tool_request", lambda *a, **k: None)
    ctx.register_context_engine(GeneralEngine())
    SEEN.append(("manager_hooks", sorted(get_plugin_manager()._hooks)))
