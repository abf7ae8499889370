"""The provider rule table: every number sourced, versioned, user-overridable, validated."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from inspector.cache.rules import DEFAULT_PATH, RulesError, load_rules


def _facts(node, path="$"):
    """Yield (path, holder) for every number or boolean anywhere in the table."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, (bool, int, float)) and not (path == "$" and key == "version"):
                yield f"{path}.{key}", node, key
            else:
                yield from _facts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, (bool, int, float)):
                yield f"{path}[{i}]", None, i
            yield from _facts(value, f"{path}[{i}]")


def test_every_number_has_a_source_and_snapshot():
    raw = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    facts = list(_facts(raw))
    assert len(facts) > 30
    for path, holder, key in facts:
        assert holder is not None and key == "value", f"{path}: numbers must sit under `value`"
        assert str(holder.get("source") or "").strip(), f"{path}: no source"
        assert isinstance(holder.get("snapshot"), (dt.date, str)) and str(holder["snapshot"]), (
            f"{path}: no snapshot"
        )
        assert holder.get("status") in {"documented", "observed", "derived", "example"}, f"{path}: no status"


def test_bundled_table_loads_with_documented_numbers():
    rules = load_rules()
    assert rules.version == 1
    anth = rules.profile("anthropic")
    assert (anth.mode, anth.max_breakpoints, anth.lookback_blocks) == ("breakpoints", 4, 20)
    assert anth.ttls == {"5m": 300.0, "1h": 3600.0}
    assert (anth.read_multiplier, anth.write_multipliers) == (0.1, {"5m": 1.25, "1h": 2.0})
    assert anth.min_prefix_for("claude-opus-4-5-20251101") == 4096
    assert anth.min_prefix_for("anthropic/claude-haiku-4.5") == 4096
    assert anth.min_prefix_for("claude-sonnet-4-5") == 1024
    assert anth.min_prefix_for("claude-3-5-haiku-20241022") == 2048
    assert anth.min_prefix_for("claude-opus-4-1") == 1024
    assert anth.min_prefix_for("") == 1024
    oai = rules.profile("openai")
    assert (oai.mode, oai.granularity, oai.min_prefix_for("gpt-4o")) == ("automatic", 128, 1024)
    assert oai.ttl_seconds("5m") == 300  # unknown option name → the profile default
    assert rules.profile("ideal").mode == "ideal"
    assert rules.profile("none").mode == "disabled"
    assert rules.price_for("claude-opus-4.5").input == 5.0
    assert rules.price_for("some-unknown-model") is None


def test_unknown_profile_names_the_available_ones():
    with pytest.raises(RulesError, match="anthropic"):
        load_rules().profile("gemini-ultra")


def test_unknown_version_is_a_clear_error(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("version: 2\nprofiles: {}\n", encoding="utf-8")
    with pytest.raises(RulesError, match=r"version 2 is not supported.*version 1"):
        load_rules(path)
    path.write_text("profiles: {}\n", encoding="utf-8")
    with pytest.raises(RulesError, match="version: must be the whole number 1, got None"):
        load_rules(path)


def test_user_file_overrides_key_by_key(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "version: 1\n"
        "profiles:\n"
        "  anthropic:\n"
        "    lookback_blocks: {value: 10, source: my calibration run, snapshot: 2026-12-01, status: observed}\n",
        encoding="utf-8",
    )
    rules = load_rules(path)
    assert rules.profile("anthropic").lookback_blocks == 10
    assert rules.profile("anthropic").max_breakpoints == 4  # untouched values come from the bundled table
    assert str(path) in rules.sources


def test_a_user_file_changed_after_a_load_is_read_again(tmp_path):
    """Parsed tables are reused between replays, but never a stale one."""
    path = tmp_path / "mine.yaml"

    def write(lookback):
        path.write_text("version: 1\nprofiles:\n  anthropic:\n    lookback_blocks: "
                        f"{{value: {lookback}, source: my run, snapshot: 2026-12-01, status: observed}}\n",
                        encoding="utf-8")

    write(10)
    assert load_rules(path).profile("anthropic").lookback_blocks == 10
    assert load_rules(path).profile("anthropic").lookback_blocks == 10  # the parsed table, reused
    write(125)
    assert load_rules(path).profile("anthropic").lookback_blocks == 125


def test_user_value_without_source_is_refused(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "version: 1\nprofiles:\n  anthropic:\n    lookback_blocks: {value: 10}\n", encoding="utf-8"
    )
    with pytest.raises(RulesError, match="source"):
        load_rules(path)


def test_bare_number_is_refused(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("version: 1\nprofiles:\n  anthropic:\n    lookback_blocks: 10\n", encoding="utf-8")
    with pytest.raises(RulesError, match=r"lookback_blocks.*value"):
        load_rules(path)


def test_invalid_mode_and_bad_yaml(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("version: 1\nprofiles:\n  weird: {mode: psychic}\n", encoding="utf-8")
    with pytest.raises(RulesError, match="mode"):
        load_rules(path)
    path.write_text("version: 1\nprofiles: [unclosed\n", encoding="utf-8")
    with pytest.raises(RulesError, match="YAML"):
        load_rules(path)


def _override(tmp_path, body: str):
    path = tmp_path / "mine.yaml"
    path.write_text("version: 1\nprofiles:\n  anthropic:\n" + body, encoding="utf-8")
    return path


FACT = "source: my run, snapshot: 2026-12-01"


@pytest.mark.parametrize("field, value, message", [
    ("min_prefix:\n      default", ".nan", "finite"),
    ("min_prefix:\n      default", ".inf", "finite"),
    ("multipliers:\n      read", ".nan", "finite"),
    ("max_breakpoints", "0", "at least 1"),
    ("max_breakpoints", "2.7", "whole number"),
    ("lookback_blocks", "3.5", "whole number"),
])
def test_numbers_a_simulation_cannot_use_are_refused_naming_the_field(tmp_path, field, value, message):
    path = _override(tmp_path, f"    {field}: {{value: {value}, {FACT}}}\n")
    with pytest.raises(RulesError, match=message) as err:
        load_rules(path)
    assert str(path) in str(err.value) and field.split(":")[0] in str(err.value)


def test_a_misspelt_key_in_a_user_file_is_an_error_not_ignored(tmp_path):
    path = _override(tmp_path, f"    min_prefx:\n      default: {{value: 4096, {FACT}}}\n")
    with pytest.raises(RulesError, match=r"profiles\.anthropic: unknown key\(s\) min_prefx"):
        load_rules(path)
    path = _override(tmp_path, f"    lookback_blocks: {{valeu: 10, {FACT}}}\n")
    with pytest.raises(RulesError, match="unknown key.*valeu"):
        load_rules(path)


@pytest.mark.parametrize("version", ["true", "'1'", "1.0"])
def test_the_version_must_be_the_whole_number_1(tmp_path, version):
    path = tmp_path / "mine.yaml"
    path.write_text(f"version: {version}\nprofiles: {{}}\n", encoding="utf-8")
    with pytest.raises(RulesError, match="must be the whole number 1"):
        load_rules(path)


def test_the_corpus_models_have_prices_each_with_a_source():
    from inspector.cache.rules import load_rules

    rules = load_rules()
    for model in ("claude-opus-4-6", "claude-sonnet-4-5-20250929", "gpt-5.3-codex"):
        price = rules.price_for(model)
        assert price is not None and price.input > 0 and price.output > 0, model
    assert rules.price_for("gpt-5.3-codex").cache_read == 0.175
    assert rules.price_for("kimi-k2.5") is None, "a model we have no price for has none (never a neighbour's)"


def test_a_replay_says_when_its_model_has_no_price():
    from inspector.cache.simulator import CacheSimulator
    from inspector.host.replay import price_meta

    sim = CacheSimulator("openai", model="kimi-k2.5")
    assert price_meta(sim, "kimi-k2.5") == {"model": "kimi-k2.5", "found": False,
                                            "note": "no price for kimi-k2.5: costs are not estimated"}
    assert price_meta(sim, "gpt-5.3-codex")["found"]
