"""The stand-in host modules: installed only where Hermes is missing, and each import works."""

from __future__ import annotations

import importlib
import sys

import pytest

from inspector.engines.compat import STAND_INS, activate, install_compat, is_stand_in, provided_names
from inspector.engines.contract import ContextEngine, ContextSelectionBlocked

from .conftest import needs_compressor


def test_install_reports_stand_ins_and_is_idempotent(config, tmp_path):
    first = install_compat(config, tmp_path)
    second = install_compat(config, tmp_path)
    assert first.from_hermes == [] and sorted(first.stood_in) == sorted(STAND_INS)
    assert second.stood_in == first.stood_in
    assert all(is_stand_in(sys.modules[n]) for n in STAND_INS)
    assert first.to_json()["hermes_home"] == str(tmp_path)


def test_agent_context_engine_is_our_abc(compat):
    mod = importlib.import_module("agent.context_engine")
    assert mod.ContextEngine is ContextEngine
    assert mod.ContextSelectionBlocked is ContextSelectionBlocked
    assert "truncated" in mod.sanitize_memory_context("x" * 7000)


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
