"""``ctx.llm`` (Hermes' agent.plugin_llm facade): routed through the inspector's call_llm, trust-gated."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from inspector.engines.compat import activate
from inspector.engines.compat.mod_plugin_llm import (
    PluginLlm,
    PluginLlmImageInput,
    PluginLlmTextInput,
    PluginLlmTrustError,
    _TrustPolicy,
    make_plugin_llm_for_test,
)
from inspector.llm import aux

from .compressor_fakes import completion

ASK = [{"role": "user", "content": "Summarise the session so far."}]


def _config(config, *, stand_in: bool = True, entry: dict | None = None):
    config["inspector"]["aux_offline_stand_in"] = stand_in
    if entry is not None:
        config["plugins"]["entries"] = {"my-plugin": {"llm": entry}}
    return config


def _run(config, tmp_path, fn):
    """Run ``fn`` with the replay's config and sandbox active; returns (its value, recorded aux calls)."""
    log = aux.AuxCallLog()
    with activate(config=config, home=tmp_path), aux.recording(log):
        value = fn()
    return value, log.records


def test_complete_goes_through_call_llm_and_is_recorded(compat, config, tmp_path):
    config["model"]["provider"] = "anthropic"
    llm = PluginLlm(plugin_id="my-plugin")
    result, records = _run(_config(config), tmp_path, lambda: llm.complete(ASK, max_tokens=300, purpose="summary"))
    (rec,) = records
    # Hermes' call: no task (its "auto" route), the plugin's messages and limits.
    assert rec.task is None and rec.prompt == ASK and rec.kwargs["max_tokens"] == 300
    assert rec.offline and result.text == rec.reply and "Summarise the session so far." in result.text
    assert result.model == aux.OFFLINE_MODEL  # what answered, as the response names it
    assert result.provider == "anthropic" and result.agent_id == "default"  # the main model's route
    assert result.usage.total_tokens == rec.usage["total_tokens"] > 0
    assert result.audit == {"plugin_id": "my-plugin", "purpose": "summary", "profile": ""}


def test_offline_without_the_stand_in_raises_hermes_no_provider_error(compat, config, tmp_path):
    llm = PluginLlm(plugin_id="my-plugin")
    log = aux.AuxCallLog()
    with activate(config=_config(config, stand_in=False), home=tmp_path), aux.recording(log):
        with pytest.raises(RuntimeError, match="No LLM provider configured.*without a task"):
            llm.complete(ASK)
    (rec,) = log.records
    assert rec.error and "aux_offline_stand_in" in rec.error


def test_overrides_are_refused_without_trust_and_nothing_is_called(compat, config, tmp_path):
    llm = PluginLlm(plugin_id="my-plugin")
    for kwargs, key in (({"provider": "openrouter"}, "allow_provider_override"),
                        ({"model": "gpt-4o-mini"}, "allow_model_override"),
                        ({"agent_id": "other"}, "allow_agent_id_override"),
                        ({"profile": "work"}, "allow_profile_override")):
        log = aux.AuxCallLog()
        with activate(config=_config(config), home=tmp_path), aux.recording(log):
            with pytest.raises(PluginLlmTrustError, match=f"plugins.entries.my-plugin.llm.{key}"):
                llm.complete(ASK, **kwargs)
        assert log.records == []
    assert issubclass(PluginLlmTrustError, PermissionError)


def test_trusted_overrides_reach_call_llm_within_the_allowlist(compat, config, tmp_path):
    entry = {"allow_model_override": True, "allowed_models": ["Small-Model"], "allow_profile_override": "yes"}
    llm = PluginLlm(plugin_id="my-plugin")
    result, records = _run(_config(config, entry=entry), tmp_path,
                           lambda: llm.complete(ASK, model="small-model", profile="work"))
    (rec,) = records
    assert rec.kwargs["model"] == "small-model"
    assert rec.kwargs["extra_body"] == {"metadata": {"auth_profile": "work"}}
    assert result.audit["profile"] == "work"
    with activate(config=config, home=tmp_path), pytest.raises(PluginLlmTrustError, match="allowed_models"):
        llm.complete(ASK, model="big-model")


def test_the_trust_block_is_read_from_the_sandbox_config_file(compat, config, tmp_path):
    """Hermes reads plugins.entries from config.yaml on every call, so an edit applies at once."""
    llm = PluginLlm(plugin_id="my-plugin")
    with activate(config=_config(config), home=tmp_path), pytest.raises(PluginLlmTrustError):
        llm.complete(ASK, provider="local-proxy")
    (tmp_path / "config.yaml").write_text(
        "plugins:\n  entries:\n    my-plugin:\n      llm:\n"
        "        allow_provider_override: true\n        allowed_providers: ['*']\n", encoding="utf-8")
    _, records = _run(_config(config), tmp_path, lambda: llm.complete(ASK, provider="local-proxy"))
    assert records[0].kwargs["provider"] == "local-proxy"


def test_async_complete_is_recorded_too(compat, config, tmp_path):
    llm = PluginLlm(plugin_id="my-plugin")
    result, records = _run(_config(config), tmp_path, lambda: asyncio.run(llm.acomplete(ASK)))
    assert len(records) == 1 and records[0].task is None and result.text == records[0].reply


def test_structured_request_shape_and_response_format(compat, config, tmp_path):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    llm = PluginLlm(plugin_id="my-plugin")
    inputs = [PluginLlmTextInput("total 12"), PluginLlmImageInput(data=b"\x89PNG", mime_type="image/png"),
              {"type": "image", "url": "https://example.test/r.png"}]
    result, records = _run(_config(config), tmp_path, lambda: llm.complete_structured(
        instructions="Check the receipt.", input=inputs, json_schema=schema, schema_name="receipt",
        system_prompt="Be terse."))
    (rec,) = records
    system, user = rec.prompt
    assert system["role"] == "system" and system["content"].startswith("Be terse.") and "single JSON object" in system["content"]
    header, text, image, link = user["content"]
    assert header["text"].startswith("Check the receipt.\n\nSchema name: receipt\n\nJSON schema:\n")
    assert json.loads(header["text"].split("JSON schema:\n", 1)[1]) == schema
    assert text == {"type": "text", "text": "total 12"}
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(b"\x89PNG").decode()
    assert link == {"type": "image_url", "image_url": {"url": "https://example.test/r.png"}}
    assert rec.kwargs["extra_body"]["response_format"]["type"] == "json_schema"
    assert rec.kwargs["extra_body"]["response_format"]["json_schema"]["schema"] == schema
    # The stand-in's reply is not JSON: the result says so instead of inventing a value.
    assert result.parsed is None and result.content_type == "text" and result.audit["schema_name"] == "receipt"


def test_structured_replies_are_parsed_from_plain_or_fenced_json():
    replies = iter(['{"ok": true}', 'Here:\n```json\n{"ok": false}\n```', "not json"])

    def caller(**kw):
        return "prov", "mod", completion(next(replies))

    llm = make_plugin_llm_for_test(plugin_id="p", policy=_TrustPolicy(plugin_id="p"), sync_caller=caller)
    ask = {"instructions": "Is it ok?", "input": [{"type": "text", "text": "x"}], "json_mode": True}
    first, second, third = (llm.complete_structured(**ask) for _ in range(3))
    assert (first.parsed, first.content_type) == ({"ok": True}, "json")
    assert (second.parsed, second.content_type) == ({"ok": False}, "json")
    assert (third.parsed, third.content_type, third.text) == (None, "text", "not json")
    assert (first.provider, first.model) == ("prov", "mod")


def test_structured_input_errors_are_clear():
    llm = make_plugin_llm_for_test(plugin_id="p", policy=_TrustPolicy(plugin_id="p"),
                                   sync_caller=lambda **kw: pytest.fail("must not be called"))
    with pytest.raises(ValueError, match="non-empty instructions"):
        llm.complete_structured(instructions="  ", input=[{"type": "text", "text": "x"}])
    with pytest.raises(ValueError, match="at least one input block"):
        llm.complete_structured(instructions="Go", input=[])
    with pytest.raises(ValueError, match="Unknown input block type: 'audio'"):
        llm.complete_structured(instructions="Go", input=[{"type": "audio"}])
    with pytest.raises(ValueError, match="requires 'data' bytes or 'url'"):
        llm.complete_structured(instructions="Go", input=[{"type": "image"}])
    with pytest.raises(ValueError, match="must be bytes"):
        llm.complete_structured(instructions="Go", input=[{"type": "image", "data": "not bytes"}])
