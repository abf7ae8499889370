"""Loading as Hermes does: the user's plugin beats a bundled example of the same name, and where Hermes
would run its built-in compressor instead of a plugin engine, so does the run, saying why."""

from __future__ import annotations

import textwrap

import pytest

from inspector.config import load_config
from inspector.engines.discovery import load_engine, project_plugin_dir

PLUGIN = '''
import threading
from pathlib import Path

from agent.context_engine import ContextEngine


class Lcm(ContextEngine):
    name = "lcm"

    def __init__(self):
        self.lock = threading.Lock() if {uncopyable} else None

    def __deepcopy__(self, memo):
        if self.lock is not None:
            raise TypeError("cannot pickle '_thread.lock' object")
        return Lcm()

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages


def on_turn(**kwargs):
    return None


def register(ctx):
    with open({log!r}, "a") as f:
        f.write("register\\n")
    ctx.register_hook("post_llm_call", on_turn)
    ctx.register_context_engine(Lcm())
'''


def _user_lcm(tmp_path, *, uncopyable=False):
    """hermes-lcm as its users install it: a general plugin named hermes-lcm whose engine is 'lcm'."""
    root = tmp_path / "plugins"
    folder = root / "hermes-lcm"
    folder.mkdir(parents=True)
    log = tmp_path / "register.log"
    (folder / "plugin.yaml").write_text("name: hermes-lcm\nversion: 0.3.0\ndescription: lossless context\n")
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(log=str(log), uncopyable=uncopyable)))
    return root, log


def _config(enabled=("hermes-lcm",)):
    return load_config(None, {"plugins": {"enabled": list(enabled), "disabled": []}})


@pytest.fixture(autouse=True)
def _needs_the_bundled_lcm():
    proj = project_plugin_dir()
    if proj is None or not (proj / "context_engine" / "lcm").is_dir():
        pytest.skip("the project's bundled lcm example is not in this checkout")


def test_the_users_lcm_wins_over_the_bundled_one_and_registers_once(tmp_path):
    root, log = _user_lcm(tmp_path)
    loaded = load_engine("lcm", _config(), [str(root)], include_entry_points=False)
    try:
        assert loaded.info.source == "general-plugin" and loaded.info.path == str(root / "hermes-lcm")
        assert type(loaded.engine).__module__.startswith("hermes_plugins")
        assert any("bundled example engine 'lcm'" in w and "shadowed" in w for w in loaded.warnings)
        assert loaded.plugin_manager.hook_names() == ["post_llm_call"]
    finally:
        loaded.close()
    assert log.read_text().count("register") == 1


def test_without_a_user_plugin_the_bundled_example_runs_unannounced(tmp_path):
    loaded = load_engine("lcm", _config(()), [], include_entry_points=False)
    try:
        assert loaded.info.source == "directory" and not any("shadowed" in w for w in loaded.warnings)
    finally:
        loaded.close()


def test_a_plugin_not_in_plugins_enabled_makes_hermes_run_the_builtin_compressor(tmp_path):
    root, log = _user_lcm(tmp_path)
    loaded = load_engine("lcm", _config(()), [str(root)], include_entry_points=False)
    try:
        assert loaded.info.source == "built-in" and loaded.requested == "lcm"
        assert "not in plugins.enabled" in loaded.fallback
        assert any("runs its built-in compressor instead" in w for w in loaded.warnings)
        assert not loaded.plugin_manager.hook_names()  # Hermes never imported it: none of its hooks exist
    finally:
        loaded.close()


def test_an_engine_deepcopy_refuses_makes_hermes_run_the_builtin_compressor(tmp_path):
    root, log = _user_lcm(tmp_path, uncopyable=True)
    loaded = load_engine("lcm", _config(), [str(root)], include_entry_points=False)
    try:
        assert loaded.info.source == "built-in" and "deep-copied" in loaded.fallback
        assert loaded.deepcopy_error and "lock" in loaded.deepcopy_error
        assert loaded.plugin_manager.hook_names() == ["post_llm_call"]  # the plugin itself did load
    finally:
        loaded.close()
    assert log.read_text().count("register") == 1
    loaded = load_engine("lcm", _config(), [str(root)], include_entry_points=False, hermes_fallbacks=False)
    try:  # the doctor's view: the plugin itself, the finding in words
        assert loaded.info.source == "general-plugin" and any("fall back to the built-in" in w for w in loaded.warnings)
    finally:
        loaded.close()


def test_the_fallback_is_in_the_trace_and_the_cli_table(tmp_path, capsys):
    from inspector.host.cli import print_summary
    from inspector.host.replay import replay
    from tests.host.conftest import coding_session

    root, _ = _user_lcm(tmp_path)
    config = _config(())
    loaded = load_engine("lcm", config, [str(root)], include_entry_points=False)
    try:
        trace = replay(coding_session(2), loaded, config, simulator=None)
    finally:
        loaded.close()
    assert trace.meta["engine"]["requested"] == "lcm" and "plugins.enabled" in trace.meta["engine"]["fallback"]
    assert any("runs its built-in compressor instead" in (e.note or "") for e in trace.events)
    print_summary([trace], ["lcm"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("engine run"))
    assert "compressor (Hermes' fallback: general plugin 'hermes-lcm' is not in plugins.enabled" in row


def test_the_engine_listing_says_the_bundled_example_is_the_one_shadowed(tmp_path):
    from inspector.engines.discovery import discover_engines

    root, _ = _user_lcm(tmp_path)
    infos = [i for i in discover_engines(_config(), [str(root)], include_entry_points=False, ask_availability=False)
             if i.name == "lcm"]
    assert [i.source for i in infos] == ["general-plugin", "directory"]
    assert not any("shadowed" in w for w in infos[0].warnings)
    assert any("shadowed" in w and str(root / "hermes-lcm") in w for w in infos[1].warnings)
