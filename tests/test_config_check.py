"""Config problems are named before anything runs: errors for what nothing can use, warnings for
what Hermes would silently ignore, and a near-miss key name is pointed out."""

from __future__ import annotations

import re

import pytest

from inspector.config import ConfigError, config_warnings, load_config, parse_set_option


def test_a_section_that_is_not_a_mapping_is_an_error_naming_it():
    with pytest.raises(ConfigError, match="compression: expected a mapping"):
        load_config(None, {"compression": 5})


def test_our_own_settings_must_have_the_right_type():
    with pytest.raises(ConfigError, match="inspector.hook_timeout_seconds: expected a number, got 'soon'"):
        load_config(None, {"inspector": {"hook_timeout_seconds": "soon"}})


def test_values_hermes_ignores_are_warned_about_with_the_value_used():
    config = load_config(None, {"compression": {"threshold": "abc", "max_attempts": 0},
                                "model": {"context_length": -5}, "prompt_caching": {"cache_ttl": "forever"}})
    warnings = "\n".join(config_warnings(config))
    assert "compression.threshold: expected a number, got 'abc'; Hermes ignores it and uses 0.5" in warnings
    assert "compression.max_attempts" in warnings and "model.context_length" in warnings
    assert "cache_ttl: 'forever'" in warnings


def test_a_near_miss_key_is_pointed_out_and_a_valid_config_is_quiet():
    config = load_config(None, {"compression": {"thresold": 0.6}, "inspector": {"hook_timout_seconds": 5}})
    warnings = config_warnings(config)
    assert any("compression.thresold" in w and "compression.threshold" in w for w in warnings)
    assert any("inspector.hook_timout_seconds" in w for w in warnings)
    assert config_warnings(load_config(None)) == []
    # Hermes keys we do not model (and are no near miss) load silently: a real config loads unchanged
    assert config_warnings(load_config(None, {"compression": {"hygiene_timeout_seconds": 30}, "memory": {"x": 1}})) == []


def test_the_model_may_be_given_as_a_name_alone():
    config = load_config(None, parse_set_option(["model=gpt-5"]))
    from inspector.engines.loading import window_for

    assert config["model"]["default"] == "gpt-5" and window_for(config, "gpt-5") == 400_000, "the model's own window"


def test_set_rejects_an_empty_key_and_unreadable_yaml():
    with pytest.raises(ConfigError, match="empty"):
        parse_set_option(["=5"])
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_set_option(["compression.threshold=[1,2"])


def test_hermes_settings_the_inspector_does_not_model_are_said_to_have_no_effect():
    warnings = config_warnings(load_config(None, {"compression": {"tail_mode": "lean", "micro_compact": True}}))
    assert any(w.startswith("compression.tail_mode: 'lean' has no effect") for w in warnings)
    assert any(w.startswith("compression.micro_compact: True has no effect") for w in warnings)
    # at Hermes' defaults they change nothing, so nothing is said
    assert config_warnings(load_config(None, {"compression": {"tail_mode": "legacy", "micro_compact": False}})) == []


def test_the_threshold_cap_and_the_tail_ask_count_are_modelled_so_nothing_is_said_about_them():
    settings = {"threshold_tokens": 70000, "min_tail_user_messages": 3}
    assert config_warnings(load_config(None, {"compression": settings})) == []


def test_a_falsy_cache_ttl_switches_caching_off_quietly_as_in_hermes():
    from inspector.host.replay import make_simulator

    for value in (False, "", 0, "off"):
        config = load_config(None, {"prompt_caching": {"cache_ttl": value}})
        assert not any("cache_ttl" in w for w in config_warnings(config)), value
        assert make_simulator(config).disabled, value
    assert not make_simulator(load_config(None)).disabled


def test_a_user_cache_rule_table_is_merged_in_and_its_errors_are_clear(tmp_path):
    from inspector.cache.rules import RulesError
    from inspector.host.replay import make_simulator

    mine = tmp_path / "mine.yaml"
    mine.write_text("version: 1\nprofiles:\n  anthropic:\n    lookback_blocks: "
                    "{value: 7, source: my calibration, snapshot: 2026-12-01}\n", encoding="utf-8")
    config = load_config(None, {"inspector": {"cache_rules": str(mine)}})
    assert config_warnings(config) == [], "cache_rules is a known setting"
    assert make_simulator(config).profile.lookback_blocks == 7
    mine.write_text("version: 1\nprofiles:\n  anthropic:\n    lookback_blocs: {value: 7, source: x}\n", encoding="utf-8")
    with pytest.raises(RulesError, match="lookback_blocs"):
        make_simulator(config)
    with pytest.raises(ConfigError, match="inspector.cache_rules: expected the path"):
        load_config(None, {"inspector": {"cache_rules": 5}})


def test_a_usage_mode_that_names_nothing_is_one_error():
    from inspector.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="inspector.usage: 'bogus' is not one of calibrated, tokenizer, recorded"):
        load_config(None, {"inspector": {"usage": "bogus"}})
    assert load_config(None, {"inspector": {"usage": "recorded"}})["inspector"]["usage"] == "recorded"


@pytest.mark.parametrize("where, value", [("compression.threshold", float("inf")), ("compression.threshold", "1e999"),
                                          ("compression.target_ratio", float("-inf")),
                                          ("model.context_length", float("nan"))])
def test_a_number_that_is_not_finite_is_an_error_naming_its_key(where, value):
    # Every range check passes inf and nan (comparisons with nan are all false); the engine's
    # first int() of the threshold would then fail in the middle of a replay.
    section, key = where.split(".")
    with pytest.raises(ConfigError, match=rf"{re.escape(where)}: .* is not a finite number"):
        load_config(None, {section: {key: value}})


def test_a_non_finite_number_in_a_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("compression:\n  threshold: .inf\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: .*line 2: compression.threshold: '.inf' is not a finite number$"):
        load_config(path)
