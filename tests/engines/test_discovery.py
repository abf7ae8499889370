"""Discovery and loading rules (agent/agent_init.py:1819-1918, plugins/context_engine/__init__.py:79-199 of hermes-agent 0.19.0) over the fixture plugins."""

from __future__ import annotations

import sys
import textwrap

import pytest

from inspector.engines.discovery import EngineLoadError, discover_engines, load_engine

from .conftest import BASIC, GENERAL, needs_compressor

DIRS = [str(BASIC), str(GENERAL)]


def _load(name, config, dirs=DIRS, **kw):
    """The plugin itself, even where Hermes would fall back to its built-in compressor (see test_fallbacks)."""
    kw.setdefault("hermes_fallbacks", False)
    return load_engine(name, config, dirs, include_project=False, include_entry_points=False, **kw)


@pytest.fixture
def infos(config):
    return {i.name: i for i in discover_engines(config, DIRS, include_project=False, include_entry_points=False)}


def test_listing_covers_every_source_and_says_what_loads(infos):
    assert infos["compressor"].source == "built-in"
    simple = infos["fixture_simple"]
    assert (simple.source, simple.loads, simple.version) == ("directory", True, "1.2.3")
    assert simple.description.startswith("Keeps the last user turn")
    assert infos["fixture_general"].source == "general-plugin" and infos["fixture_general"].loads
    broken = infos["fixture_broken"]
    assert not broken.loads and "fixture_dependency_that_does_not_exist" in broken.error and "Traceback" in broken.error
    assert not infos["broken_general"].loads and "cannot register" in infos["broken_general"].error
    assert not infos["not_engine"].loads and "not a ContextEngine" in infos["not_engine"].error
    assert any("deep-copied" in w for w in infos["fixture_nocopy"].warnings)
    assert infos["fixture_first"].loads and "fixture_second" not in infos
    assert any("refused a second context engine" in w for w in infos["fixture_first"].warnings)


def test_default_is_compressor_and_plugins_never_auto_activate(config, infos):
    loaded = _load(None, config)
    try:
        assert loaded.info.source == "built-in" and loaded.engine.name == "compressor"
    finally:
        loaded.close()


@needs_compressor
def test_builtin_built_from_compression_keys(config):
    config["compression"].update(threshold=0.6, protect_first_n=-2, protect_last_n=7, target_ratio=0.3,
                                 model_thresholds={"sonnet": 0.8})
    config["model"]["context_length"] = 1_000_000
    loaded = _load("compressor", config)
    try:
        eng = loaded.engine
        assert eng.protect_first_n == 0 and eng.protect_last_n == 7
        assert eng.context_length == 1_000_000
        assert eng.threshold_percent == pytest.approx(0.8)  # model_thresholds matched "sonnet"
        assert eng.model_thresholds == {"sonnet": 0.8}
    finally:
        loaded.close()


def test_directory_engine_subclass_scan_with_sibling_and_sandbox(config):
    loaded = _load("fixture_simple", config)
    try:
        eng = loaded.engine
        assert loaded.info.how == "subclass scan: SimpleEngine()"
        assert eng.home_at_init == str(loaded.sandbox.path)  # sandbox HERMES_HOME, not ~/.hermes
        assert eng.threshold_from_config == config["compression"]["threshold"]
        assert "plugins.context_engine.fixture_simple.summary" in sys.modules
        assert eng.context_length == 0  # update_model is the host's job
    finally:
        loaded.close()


def test_directory_register_using_unsupported_ctx_method_falls_back(config):
    loaded = _load("fixture_ctx_methods", config)
    try:
        assert loaded.engine.made_by == "subclass scan"
        assert any("register(ctx) raised" in w for w in loaded.warnings)
    finally:
        loaded.close()


def test_general_plugin_registers_hooks_tools_and_is_deep_copied(config):
    loaded = _load("fixture_general", config)
    try:
        pm = loaded.plugin_manager
        assert loaded.info.source == "general-plugin" and loaded.info.how == "ctx.register_context_engine"
        assert pm.hook_names() == ["on_session_end", "post_tool_call", "pre_llm_call"]
        assert [t.name for t in loaded.tools] == ["fixture_tool"]
        assert "fixture-cmd" in pm._plugin_commands and "fixture-cli" in pm._cli_commands
        assert pm._auxiliary_tasks and pm._skills and pm._middleware
        assert pm.get_plugin_context_engine() is not loaded.engine  # the per-agent deep copy
        assert pm.invoke_hook("pre_llm_call", session_id="s", user_message="u") == [{"context": "from hooks_plugin"}]
        assert pm.invoke_hook("on_session_end", session_id="s") == []  # failure recorded, not raised
        assert any("hook failure is recorded" in w for w in pm.warnings)
        mod = sys.modules["hermes_plugins.hooks_plugin"]
        assert ("manager_hooks", ["on_session_end", "post_tool_call", "pre_llm_call"]) in mod.SEEN
    finally:
        loaded.close()


def test_a_general_plugin_hermes_would_not_load_is_warned_about(config):
    loaded = _load("fixture_general", config)
    try:  # not in plugins.enabled: Hermes would not load it, the inspector says so
        assert any("not in plugins.enabled" in w for w in loaded.warnings)
    finally:
        loaded.close()
    config["plugins"] = {"enabled": [loaded.info.plugin], "disabled": []}
    loaded = _load("fixture_general", config)
    try:
        assert not any("not in plugins.enabled" in w for w in loaded.warnings)
    finally:
        loaded.close()


def test_general_plugin_that_cannot_be_copied_is_reported(config):
    loaded = _load("fixture_nocopy", config)
    try:
        assert loaded.deepcopy_error and "lock" in loaded.deepcopy_error.lower()
        assert any("fall back to the built-in" in w for w in loaded.warnings)
    finally:
        loaded.close()


def test_second_engine_refused(config):
    loaded = _load("fixture_first", config)
    try:
        assert loaded.engine.name == "fixture_first"
        assert any("refused a second context engine" in w for w in loaded.warnings)
    finally:
        loaded.close()
    with pytest.raises(EngineLoadError, match="unknown context engine 'fixture_second'"):
        _load("fixture_second", config)


def test_broken_plugin_error_names_available_and_has_traceback(config):
    with pytest.raises(EngineLoadError) as err:
        _load("fixture_broken", config)
    text = str(err.value)
    assert "fixture_broken" in text and "Traceback" in text and "fixture_dependency_that_does_not_exist" in text
    assert "compressor" in err.value.available and "fixture_simple" in err.value.available
    assert "fixture_broken" not in err.value.available


def test_unknown_name_never_falls_back(config):
    with pytest.raises(EngineLoadError) as err:
        _load("no_such_engine", config)
    assert "unknown context engine 'no_such_engine'" in str(err.value)
    assert "fixture_general" in err.value.available
    assert "broken_general" in str(err.value)  # failed plugins that might have provided it are shown


def test_config_plugin_dirs_and_enabled_hook_plugins(config):
    config["inspector"]["plugin_dirs"] = [str(BASIC), str(GENERAL)]
    config["plugins"]["enabled"] = ["hooks_plugin"]
    loaded = load_engine("fixture_simple", config, include_project=False, include_entry_points=False)
    try:
        assert "pre_llm_call" in loaded.plugin_manager.hook_names()  # enabled plugin's hooks, engine refused
        assert loaded.plugin_manager.get_plugin_context_engine() is None or loaded.engine.name == "fixture_simple"
    finally:
        loaded.close()


def test_entry_point_plugins(config, tmp_path, monkeypatch):
    pkg = tmp_path / "ep_engine_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from agent.context_engine import ContextEngine

        class EpEngine(ContextEngine):
            name = "fixture_ep"
            def update_from_response(self, usage): pass
            def should_compress(self, prompt_tokens=None): return False
            def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
                return messages

        def register(ctx):
            ctx.register_context_engine(EpEngine())
    '''), encoding="utf-8")
    dist = tmp_path / "ep_engine_pkg-0.4.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-engine-pkg\nVersion: 0.4\nSummary: Entry point engine\n")
    (dist / "entry_points.txt").write_text("[hermes_agent.plugins]\nep_engine = ep_engine_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    infos = {i.name: i for i in discover_engines(config, (), include_project=False)}
    assert infos["fixture_ep"].source == "entry-point" and infos["fixture_ep"].loads
    assert infos["fixture_ep"].version == "0.4" and infos["fixture_ep"].description == "Entry point engine"
    loaded = load_engine("fixture_ep", config, include_project=False)
    try:  # an entry point is opt-in too (hermes_cli/plugins.py:1449-1470): the built-in compressor runs
        assert loaded.info.source == "built-in" and loaded.requested == "fixture_ep"
        assert "not in plugins.enabled" in loaded.fallback
    finally:
        loaded.close()
    config["plugins"] = {"enabled": ["ep_engine"], "disabled": []}
    loaded = load_engine("fixture_ep", config, include_project=False)
    try:
        assert loaded.info.source == "entry-point" and not loaded.fallback
    finally:
        loaded.close()


def test_context_engine_key_selects(config):
    config["context"]["engine"] = "fixture_simple"
    loaded = _load(None, config)
    try:
        assert loaded.engine.name == "fixture_simple"
    finally:
        loaded.close()


def test_listing_asks_each_engine_that_loads_whether_it_is_available(monkeypatch, config):
    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    infos = {i.name: i for i in discover_engines(config, DIRS, include_project=False, include_entry_points=False)}
    assert infos["fixture_unavailable"].loads
    assert infos["fixture_unavailable"].availability.describe() == "no: is_available() returned False"
    assert infos["fixture_simple"].availability.state == "yes"
    assert infos["fixture_broken"].availability is None  # not loaded, not asked
    monkeypatch.setenv("FIXTURE_UNAVAILABLE_API_KEY", "k")
    infos = {i.name: i for i in discover_engines(config, DIRS, include_project=False, include_entry_points=False)}
    assert infos["fixture_unavailable"].availability.state == "yes"


def test_an_engine_that_says_it_is_unavailable_still_loads_as_in_hermes(monkeypatch, config):
    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    loaded = _load("fixture_unavailable", config)
    try:
        assert loaded.engine.name == "fixture_unavailable"
        assert loaded.availability.state == "no"
    finally:
        loaded.close()
