"""inspector.llm.aux: call_llm's keywords, configuration, offline stand-in, recording."""

from __future__ import annotations

import asyncio
import threading

import pytest

from inspector.llm import aux


def _cfg(**inspector):
    return {"auxiliary": {"compression": {"provider": "auto", "model": "", "base_url": ""}}, "inspector": inspector}


def test_unconfigured_raises_like_hermes_and_is_recorded():
    log = aux.AuxCallLog()
    with aux.use_aux_config(_cfg()), aux.recording(log):
        with pytest.raises(RuntimeError, match="No LLM provider configured for auxiliary task 'compression'"):
            aux.call_llm("compression", messages=[{"role": "user", "content": "x"}])
    (rec,) = log.records
    assert rec.task == "compression" and rec.error.startswith("RuntimeError") and rec.reply is None


def test_offline_stand_in_is_deterministic_chat_completion():
    log = aux.AuxCallLog()
    msgs = [{"role": "user", "content": "Summarise the work so far"}]
    with aux.use_aux_config(_cfg(aux_offline_stand_in=True)), aux.recording(log):
        a = aux.call_llm("compression", messages=msgs, max_tokens=500, brand_new_kw=1, api_key="sk-secret-123456789012345")
        b = aux.call_llm("compression", messages=msgs)
    from openai.types.chat import ChatCompletion

    assert isinstance(a, ChatCompletion)
    assert a.choices[0].message.content == b.choices[0].message.content
    assert "Summarise the work so far" in a.choices[0].message.content
    assert a.usage.prompt_tokens > 0 and a.model == aux.OFFLINE_MODEL
    rec = log.records[0]
    assert rec.offline and rec.unknown_kwargs == ["brand_new_kw"]
    assert "sk-secret" not in repr(rec.to_json())
    assert rec.prompt == msgs and rec.prompt is not msgs


def test_resolve_endpoint_from_config_and_env(monkeypatch):
    monkeypatch.setenv("MY_AUX_KEY", "k-from-env")
    cfg = {"auxiliary": {"compression": {"base_url": "http://127.0.0.1:9/v1", "model": "small", "api_key_env": "MY_AUX_KEY",
                                         "timeout": 10, "extra_body": {"a": 1}, "reasoning_effort": "low"}}}
    ep = aux.resolve_endpoint("compression", cfg)
    assert ep.base_url == "http://127.0.0.1:9/v1" and ep.model == "small" and ep.api_key == "k-from-env"
    assert ep.timeout == 300  # compression floored like Hermes
    assert ep.extra_body == {"a": 1, "reasoning": {"effort": "low"}}
    assert aux.resolve_endpoint("other", cfg) is None
    with pytest.raises(RuntimeError, match="No model configured"):
        aux.resolve_endpoint("compression", {"auxiliary": {"compression": {"base_url": "http://x/v1"}}})


def test_a_call_without_a_task_goes_to_the_main_model_as_hermes_auto_does(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k-main")
    cfg = {"model": {"default": "big-model", "base_url": "http://127.0.0.1:9/v1"}}
    ep = aux.resolve_endpoint(None, cfg)
    assert (ep.base_url, ep.model, ep.api_key) == ("http://127.0.0.1:9/v1", "big-model", "k-main")
    assert aux.resolve_endpoint(None, {"model": {"default": "big-model"}}) is None  # nowhere to send it
    with pytest.raises(RuntimeError, match="main model.*model.default"):
        aux.resolve_endpoint(None, {"model": {"base_url": "http://127.0.0.1:9/v1"}})


def test_real_endpoint_path_through_openai_sdk(monkeypatch):
    """The configured endpoint is called through the SDK client with merged parameters."""
    seen = {}

    class FakeCompletions:
        def create(self, **params):
            seen.update(params)
            return aux.offline_completion("compression", params["messages"])

    class FakeClient:
        chat = type("Chat", (), {"completions": FakeCompletions()})()

    import inspector.llm.client as client

    monkeypatch.setattr(client, "make_client", lambda base_url, api_key=None, **kw: FakeClient())
    cfg = {"auxiliary": {"compression": {"base_url": "http://x/v1", "model": "gpt-5-mini", "extra_body": {"a": 1}}}}
    with aux.use_aux_config(cfg):
        out = aux.call_llm("compression", messages=[{"role": "user", "content": "q"}], max_tokens=50,
                           reasoning_config={"effort": "high"}, temperature=0)
    assert out.choices[0].message.content
    assert seen["model"] == "gpt-5-mini" and seen["max_completion_tokens"] == 50 and "max_tokens" not in seen
    assert seen["extra_body"] == {"a": 1, "reasoning": {"effort": "high"}} and seen["temperature"] == 0


def test_global_recorder_thread_safe_and_async():
    log = aux.AuxCallLog()
    previous = aux.set_recorder(log)
    try:
        with aux.use_aux_config(_cfg(aux_offline_stand_in=True)):
            threads = [threading.Thread(target=aux.call_llm, args=("t",), kwargs={"messages": [{"role": "user", "content": str(i)}]})
                       for i in range(8)]
            # contextvars do not flow into plain threads: those calls see the process default config
            aux.set_aux_config(_cfg(aux_offline_stand_in=True))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            result = asyncio.run(aux.async_call_llm("t", messages=[{"role": "user", "content": "async"}]))
        assert result.choices[0].message.content
        assert len(log.records) == 9
    finally:
        aux.set_recorder(previous)
        aux.set_aux_config({})


def test_interrupt_protection_flag():
    assert not aux.is_aux_interrupt_protected()
    with aux.aux_interrupt_protection():
        assert aux.is_aux_interrupt_protected()
    assert not aux.is_aux_interrupt_protected()


def test_an_endpoint_echoing_its_key_or_url_password_leaves_neither_in_the_reply_or_record(monkeypatch):
    """A proxy that echoes the request must not put the key in the summary the engine writes."""
    key = "sk-live-SECRETECHO123456"

    class EchoCompletions:
        def create(self, **params):
            return aux.offline_completion("compression", [{"role": "user", "content": f"you sent {key}"}])

    class EchoClient:
        chat = type("Chat", (), {"completions": EchoCompletions()})()

    import inspector.llm.client as client

    monkeypatch.setattr(client, "make_client", lambda base_url, api_key=None, **kw: EchoClient())
    monkeypatch.setattr(aux, "offline_completion", lambda task, messages, **kw: _reply(messages[0]["content"]))
    records = []
    cfg = {"auxiliary": {"compression": {"base_url": "http://bob:PASSWORD9876@proxy:8080/v1", "model": "m",
                                         "api_key": key}}}
    with aux.use_aux_config(cfg), aux.recording(records.append):
        out = aux.call_llm("compression", messages=[{"role": "user", "content": "q"}])
    assert key not in out.choices[0].message.content, "the engine never sees the key"
    (record,) = records
    assert key not in (record.reply or "") and "PASSWORD9876" not in (record.base_url or "")


def _reply(text):
    from types import SimpleNamespace

    message = SimpleNamespace(role="assistant", content=text)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=None, model="m")


def test_public_values_mask_credentials_however_they_are_written():
    from inspector.llm.secrets import config_secrets, public_value

    config = {"mcp_servers": {"gh": {"headers": {"Authorization": "Bearer abcdefgh12345"},
                                     "args": ["--token", "tok-abcdefgh", "--verbose"]}},
              "auxiliary": {"compression": {"extra_headers": {"x-api-key": "xk-abcdefgh"}, "api_key_env": "AUX_KEY",
                                            "base_url": "https://u:pw123456@h/v1"}}}
    shown = public_value(config)
    text = repr(shown)
    assert not any(secret in text for secret in ("abcdefgh12345", "tok-abcdefgh", "xk-abcdefgh", "pw123456"))
    assert shown["mcp_servers"]["gh"]["args"] == ["--token", "***", "--verbose"]
    assert shown["auxiliary"]["compression"]["api_key_env"] == "AUX_KEY", "the variable's name is not a secret"
    assert set(config_secrets(config)) >= {"Bearer abcdefgh12345", "xk-abcdefgh"}


def test_every_string_of_a_reply_is_scrubbed_tool_call_arguments_included(monkeypatch):
    from inspector.llm.secrets import scrub_strings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRETKEY-123456")
    message = {"role": "assistant", "content": "ok", "reasoning": "saw Bearer sk-SECRETKEY-123456",
               "tool_calls": [{"id": "c1", "type": "function",
                               "function": {"name": "grep", "arguments": '{"q": "Bearer sk-SECRETKEY-123456"}'}}]}
    cleaned = scrub_strings(message)
    assert "SECRETKEY" not in repr(cleaned) and cleaned["tool_calls"][0]["function"]["name"] == "grep"
    assert "SECRETKEY" in repr(message), "the original is left as it was"
