"""Plugin hooks in the ``hermes_cli.plugins`` stand-in: every Hermes 0.19.0 hook name is accepted
(``tests/differential/test_plugin_hooks.py`` compares the list with the wheel's), and a hook the
replay never fires is said when the plugin registers it, not silently ignored."""

from __future__ import annotations

from types import SimpleNamespace

from inspector.config import load_config
from inspector.engines.compat.plugins import (
    NOT_FIRED_IN_REPLAY,
    REPLAY_FIRED_HOOKS,
    VALID_HOOKS,
    PluginContext,
    PluginManager,
    PluginManifest,
)
from inspector.host.replay import replay
from tests.host.conftest import CountingEngine, NoCache, coding_session


def _register(manager: PluginManager, hooks, callback=lambda **kw: None) -> None:
    ctx = PluginContext(manager, PluginManifest(name="watcher"), kind="general")
    for hook in hooks:
        ctx.register_hook(hook, callback)


def test_every_hermes_hook_is_either_fired_or_has_a_reason_it_is_not():
    assert REPLAY_FIRED_HOOKS <= VALID_HOOKS
    assert set(NOT_FIRED_IN_REPLAY) == VALID_HOOKS - REPLAY_FIRED_HOOKS


def test_registering_a_hook_the_replay_never_fires_says_why():
    manager = PluginManager()
    _register(manager, ["subagent_start", "pre_llm_call", "made_up_hook"])
    assert manager.warnings == [
        "watcher: hook 'subagent_start' registered as in Hermes, but never fired in a replay: a replay has no subagents",
        "watcher: unknown hook 'made_up_hook' (registered, but Hermes never fires it)",
    ]
    assert manager.hook_names() == ["made_up_hook", "pre_llm_call", "subagent_start"]  # stored, as Hermes does


class _ToolEngine(CountingEngine):
    """An engine with a tool of its own: the only tool calls a replay runs (and fires tool hooks for)."""

    def get_tool_schemas(self):
        return [{"name": "ctx_grep", "description": "search", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kwargs):
        return "no matches"


def test_a_replay_fires_exactly_the_hooks_it_claims_to():
    config = load_config(None, {"model": {"context_length": 64000}})
    fired: list[str] = []
    manager = PluginManager()
    for hook in sorted(VALID_HOOKS):
        _register(manager, [hook], lambda _hook=hook, **kw: fired.append(_hook))
    loaded = SimpleNamespace(engine=_ToolEngine(), plugin_manager=manager, sandbox=None)
    replay(coding_session(turns=3, engine_tool="ctx_grep"), loaded, config, simulator=NoCache())
    assert set(fired) == REPLAY_FIRED_HOOKS
