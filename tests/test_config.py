"""config.yaml: Hermes' keys load unchanged, our defaults fill the gaps, bad files say why."""

from __future__ import annotations

import pytest

from inspector.config import DEFAULTS, ConfigError, cfg_get, load_config, parse_set_option

HERMES_CONFIG = """
model:
  default: anthropic/claude-opus-4.5
  provider: openrouter
  base_url: https://openrouter.example/api/v1
context:
  engine: lcm
compression:
  enabled: true
  threshold: 0.6
  model_thresholds: {"claude": 0.7, "openai-codex:gpt-5": 0.85}
auxiliary:
  compression: {provider: auto, model: google/gemini-flash, timeout: 90}
prompt_caching: {cache_ttl: 1h}
terminal: {backend: local, cwd: .}
toolsets: [hermes-cli]
display: {skin: default, show_reasoning: false}
plugins: {enabled: [my_plugin]}
"""


def test_a_hermes_config_loads_unchanged_with_defaults_underneath(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(HERMES_CONFIG, encoding="utf-8")
    before = path.read_bytes()
    cfg = load_config(path)
    assert path.read_bytes() == before
    assert cfg["context"]["engine"] == "lcm"
    assert cfg["compression"]["threshold"] == 0.6
    assert cfg["compression"]["model_thresholds"] == {"claude": 0.7, "openai-codex:gpt-5": 0.85}
    assert cfg["compression"]["protect_last_n"] == DEFAULTS["compression"]["protect_last_n"]
    assert cfg["terminal"] == {"backend": "local", "cwd": "."}
    assert cfg["toolsets"] == ["hermes-cli"]
    assert cfg["prompt_caching"]["cache_ttl"] == "1h"
    assert cfg["inspector"]["tokenizer"] == "cl100k_base"


def test_the_shipped_config_loads():
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
    assert cfg["context"]["engine"] == "compressor"
    assert cfg_get(cfg, "compression.context_timeout_seconds") == 120


@pytest.mark.parametrize(
    "text, words",
    [("a: [1, 2", "invalid YAML"), ("- just\n- a list\n", "mapping"), ("!!python/object:os.system ls", "invalid YAML")],
)
def test_bad_files_raise_config_error_naming_the_file(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and words in str(err.value)


def test_set_options_override_nested_keys():
    cfg = load_config(None, parse_set_option(["compression.threshold=0.8", "model.context_length=200000",
                                              "inspector.cache_profile=openai"]))
    assert cfg["compression"]["threshold"] == 0.8
    assert cfg["model"]["context_length"] == 200000
    assert cfg["inspector"]["cache_profile"] == "openai"
    with pytest.raises(ConfigError):
        parse_set_option(["no-equals-sign"])
    assert cfg_get(cfg, "no.such.key", "fallback") == "fallback"


def test_relative_paths_in_a_config_file_are_relative_to_that_file(tmp_path, monkeypatch):
    folder = tmp_path / "cfg"
    folder.mkdir()
    path = folder / "config.yaml"
    path.write_text("inspector:\n  plugin_dirs: [my_plugins, /opt/abs]\n  cache_rules: rules.yaml\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = load_config(path)
    assert config["inspector"]["plugin_dirs"] == [str(folder.resolve() / "my_plugins"), "/opt/abs"]
    assert config["inspector"]["cache_rules"] == str(folder.resolve() / "rules.yaml")
    assert load_config(None, {"inspector": {"plugin_dirs": ["here"]}})["inspector"]["plugin_dirs"] == ["here"], \
        "a --set value stays relative to where the command runs"
