"""The stand-in host modules: installed only where Hermes is missing, and each import works."""

from __future__ import annotations

import importlib
import sys

import pytest

from inspector.engines.compat import STAND_INS, activate, install_compat, is_stand_in, provided_names
from inspector.engines.contract import ContextEngine

from .conftest import needs_compressor


def test_install_reports_stand_ins_and_is_idempotent(config, tmp_path):
    first = install_compat(config, tmp_path)
    second = install_compat(config, tmp_path)
    assert first.from_hermes == [] and sorted(first.stood_in) == sorted(STAND_INS)
    assert second.stood_in == first.stood_in
    assert all(is_stand_in(sys.modules[n]) for n in STAND_INS)
    assert first.to_json()["hermes_home"] == str(tmp_path)
    # The project's own ``plugins/`` folder (a namespace package, no code) is no conflict for
    # plugins.plugin_storage.
    assert first.conflicts == []


def test_agent_context_engine_is_our_abc(compat):
    mod = importlib.import_module("agent.context_engine")
    assert mod.ContextEngine is ContextEngine
    assert "truncated" in mod.sanitize_memory_context("x" * 7000)
    # Hermes' public names and no others: plugins probe for optional names with try/import.
    public = {n for n in vars(mod) if not n.startswith("_") and n not in ("annotations", "Any")}
    assert public == {"MEMORY_CONTEXT_MAX_CHARS", "ContextEngine", "automatic_compaction_status_message",
                      "redact_sensitive_text", "sanitize_memory_context"}


def test_redact_and_model_metadata(compat, config):
    from agent.model_metadata import (
        MINIMUM_CONTEXT_LENGTH,
        estimate_messages_tokens_rough,
        get_model_context_length,
    )
    from agent.redact import redact_sensitive_text

    assert "sk-" not in redact_sensitive_text("key sk-abcdefghijklmnopqrstuvwx", force=True)
    assert estimate_messages_tokens_rough([{"role": "user", "content": "hi"}]) > 0
    assert MINIMUM_CONTEXT_LENGTH == 64000
    assert get_model_context_length("m", config_context_length=200000) == 200000
    custom = [{"name": "local", "base_url": "http://x/v1", "models": {"m": {"context_length": 32768}}}]
    assert get_model_context_length("m", base_url="http://x/v1", custom_providers=custom) == 32768
    with activate(config={"model": {"context_length": 99000}}):
        assert get_model_context_length("m") == 99000
    with activate(config={"model": {}}):
        assert get_model_context_length("m") == 256000


def test_hermes_home_and_config_follow_the_active_sandbox(compat, tmp_path):
    from hermes_cli.config import cfg_get, get_config_path, load_config, load_config_readonly
    from hermes_constants import display_hermes_home, get_hermes_home

    other = tmp_path / "other"
    other.mkdir()
    (other / "config.yaml").write_text("compression:\n  threshold: 0.61\n", encoding="utf-8")
    with activate(home=other):
        assert get_hermes_home() == other
        assert get_config_path() == other / "config.yaml"
        assert cfg_get(load_config(), "compression", "threshold") == 0.61
        assert cfg_get(load_config_readonly(), "compression.protect_last_n") == 20  # defaults merged
        assert display_hermes_home() == str(other)
    assert get_hermes_home() == tmp_path


def test_plugins_module_exposes_manager(compat):
    from hermes_cli.plugins import PluginContext, PluginManager, get_plugin_manager, invoke_hook  # noqa: F401

    pm = PluginManager()
    with activate(plugin_manager=pm):
        assert get_plugin_manager() is pm
        pm._hooks["pre_llm_call"] = [lambda **kw: kw["x"] * 2, lambda **kw: None]
        assert invoke_hook("pre_llm_call", x=21) == [42]
        assert get_plugin_manager()._plugin_commands == {}


def test_auxiliary_client_names(compat):
    from agent.auxiliary_client import async_call_llm, aux_interrupt_protection, call_llm  # noqa: F401

    from inspector.llm import aux

    assert call_llm is aux.call_llm


@needs_compressor
def test_context_compressor_lazy_names(compat):
    from agent.context_compressor import (
        LEGACY_SUMMARY_PREFIX,
        SUMMARY_PREFIX,
        ContextCompressor,
        estimate_messages_tokens_rough,
        resolve_model_threshold,
    )

    from inspector.engines import compressor

    assert ContextCompressor is compressor.ContextCompressor
    assert SUMMARY_PREFIX == compressor.SUMMARY_PREFIX and LEGACY_SUMMARY_PREFIX == compressor.LEGACY_SUMMARY_PREFIX
    assert resolve_model_threshold("claude-x", {"claude": 0.6}, 0.5) == 0.6
    assert estimate_messages_tokens_rough([]) == 0


def test_missing_compressor_does_not_break_other_names(compat, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspector.engines.compressor", None)  # import now fails
    from agent.context_compressor import resolve_model_threshold  # still fine

    assert resolve_model_threshold("m", {}, 0.5) == 0.5
    with pytest.raises(ImportError):
        from agent.context_compressor import ContextCompressor  # noqa: F401


def test_unknown_submodule_of_stand_in_package_fails_cleanly(compat):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agent.memory_manager")


def test_provided_names():
    assert "call_llm" in provided_names("agent.auxiliary_client")
    assert "context_engine" in provided_names("agent")
    assert provided_names("agent.memory_manager") is None


def test_hermes_modules_win_when_installed(tmp_path, monkeypatch, config):
    """A real ``hermes_constants`` on the path is reported as Hermes' and left alone."""
    from inspector.engines.compat import uninstall_compat

    uninstall_compat()
    (tmp_path / "hermes_constants.py").write_text("def get_hermes_home():\n    return 'REAL'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        report = install_compat(config, tmp_path)
        assert "hermes_constants" in report.from_hermes
        assert "hermes_constants" not in report.stood_in
        import hermes_constants

        assert hermes_constants.get_hermes_home() == "REAL"
    finally:
        sys.modules.pop("hermes_constants", None)
        uninstall_compat()
        install_compat(config, tmp_path)


def test_plugin_llm_and_plugin_storage_import(compat):
    from agent.plugin_llm import (  # noqa: F401
        PluginLlm,
        PluginLlmCompleteResult,
        PluginLlmStructuredResult,
        PluginLlmTrustError,
        _TrustPolicy,
        make_plugin_llm_for_test,
    )
    from plugins.plugin_storage import plugin_data_dir, plugin_db  # noqa: F401

    from inspector.engines.compat import mod_plugin_llm

    assert PluginLlm is mod_plugin_llm.PluginLlm
    assert {"plugin_llm"} <= provided_names("agent") and provided_names("plugins") == {"plugin_storage"}
    assert "make_plugin_llm_for_test" in provided_names("agent.plugin_llm")


def test_plugin_storage_writes_only_inside_the_active_sandbox(compat, tmp_path, monkeypatch):
    from plugins.plugin_storage import plugin_data_dir, plugin_db

    fake_user_home = tmp_path / "user"
    fake_user_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_user_home))
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    with activate(home=sandbox):
        data = plugin_data_dir("hermes-snapcompact")
        (data / "mode.yaml").write_text("mode: summarize\n", encoding="utf-8")
        conn = plugin_db("hermes-snapcompact")
        try:
            conn.execute("CREATE TABLE t (x INTEGER)")
            conn.execute("INSERT INTO t VALUES (7)")
            conn.commit()
            assert conn.execute("SELECT x FROM t").fetchone() == (7,)
        finally:
            conn.close()
    assert data == sandbox / "plugin-data" / "hermes-snapcompact"
    assert (data / "data.db").is_file()
    assert not any(fake_user_home.iterdir())  # nothing under the user's ~/.hermes
    for bad in ("../escape", "a/b", "", "..", ".hidden", "x" * 65):
        with pytest.raises(ValueError, match="invalid plugin name"):
            plugin_data_dir(bad)
    for bad in ("../x.db", "sub/x.db", ""):
        with pytest.raises(ValueError, match="invalid plugin db filename"):
            plugin_db("p", bad)


def test_a_real_plugins_plugin_storage_wins(tmp_path, monkeypatch, config):
    """Hermes' own ``plugins`` package (with plugin_storage) is left alone, as for every stand-in."""
    from inspector.engines.compat import uninstall_compat

    uninstall_compat()
    package = tmp_path / "plugins"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "plugin_storage.py").write_text("def plugin_data_dir(name):\n    return 'REAL'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "plugins" or n.startswith("plugins.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        report = install_compat(config, tmp_path)
        assert "plugins.plugin_storage" in report.from_hermes and "plugins.plugin_storage" not in report.stood_in
        from plugins.plugin_storage import plugin_data_dir

        assert plugin_data_dir("x") == "REAL"
    finally:
        sys.modules.pop("plugins.plugin_storage", None)
        sys.modules.pop("plugins", None)
        uninstall_compat()
        install_compat(config, tmp_path)


def test_general_plugins_get_ctx_llm_and_directory_engines_do_not(compat):
    from agent.plugin_llm import PluginLlm

    from inspector.engines.compat.plugins import PluginContext, PluginManager, PluginManifest

    manifest = PluginManifest(name="Pretty Name", key="my-plugin")
    general = PluginContext(PluginManager(), manifest, kind="general")
    assert isinstance(general.llm, PluginLlm) and general.llm is general.llm  # made once, on first use
    assert general.plugin_id == "my-plugin"  # Hermes keys the trust gate by the registry key
    directory = PluginContext(PluginManager(), PluginManifest(name="eng"), kind="directory")
    assert getattr(directory, "llm", None) is None
    assert directory.unsupported_in_directory_collector() == []  # the getattr probe is no misuse
    with pytest.raises(AttributeError, match="only general plugins get ctx.llm"):
        directory.llm  # noqa: B018
