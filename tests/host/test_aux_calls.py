"""Auxiliary LLM calls an engine makes (call_llm) appear in the trace next to the hook."""

from __future__ import annotations

import json

from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.trace.model import EV_AUX_LLM, EV_COMPRESS

from .conftest import coding_session


def replay_compressor(config, nocache, turns: int = 8):
    """The built-in compressor over a small coding session, compressing early (threshold 3,000)."""
    loaded = load_engine("compressor", config)
    try:
        loaded.engine.threshold_tokens = 3000
        return replay(coding_session(turns), loaded, config, simulator=nocache)
    finally:
        loaded.close()


def test_the_compressor_summary_call_is_recorded_during_compress(config, nocache):
    config["compression"]["threshold"] = 0.5
    trace = replay_compressor(config, nocache)
    aux = [e for e in trace.events if e.kind == EV_AUX_LLM]
    assert aux, "the compressor asks call_llm for a summary before falling back"
    first = aux[0]
    parent = trace.events[first.args["during"]]
    assert parent.kind == EV_COMPRESS and first.index > parent.index
    assert first.args["task"] == "compression"
    # Offline, call_llm raises Hermes' "no provider" error: recorded, but not an engine fault.
    assert first.fault is None and "No LLM provider" in first.result["error"]
    prompt = trace.store.materialise(first.args["prompt"]["$list"])
    assert prompt[0]["role"] == "user" and "TURNS TO SUMMARIZE" in prompt[0]["content"]
    assert "api_key" not in str(first.args["kwargs"])


def _compressions(config, nocache, strict: bool):
    from inspector.trace.model import EV_COMPRESS

    config["inspector"]["offline_fallback_counts"] = strict
    trace = replay_compressor(config, nocache, 12)
    return trace, [e for e in trace.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)
                   and "$list" in e.result and not e.result.get("unchanged")]


def test_offline_fallback_summaries_stand_in_for_the_auxiliary_model_by_default(config, nocache):
    trace, committed = _compressions(config, nocache, strict=False)
    assert len(committed) > 2
    aux = [e for e in trace.events if e.kind == "call_llm"]
    assert aux and all("No LLM provider" in e.result["error"] for e in aux)


def test_hermes_strict_rule_on_request(config, nocache):
    _, default = _compressions(config, nocache, strict=False)
    trace, strict = _compressions(config, nocache, strict=True)
    # Hermes' own rule offline: each fallback summary starts the no-provider cooldown and counts in
    # the fallback streak, but with no session store to keep them the compaction boundary
    # (on_session_end, then on_session_start) clears both, as Hermes 0.19.0's hooks do
    # (agent/context_compressor.py:900-979), so it compacts as often as the default.
    assert 1 <= len(strict) == len(default)


class _EchoingGateway:
    """An endpoint whose error bodies repeat the request's Authorization header (some proxies do)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.seen: list[str] = []
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                gateway.seen.append(auth)
                body = json.dumps({"error": {"message": f"rejected (received Authorization: {auth})",
                                             "type": "invalid_request_error"}}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda request, address: None  # a client hanging up is not news
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_key_echoed_in_an_error_body_reaches_no_event_summary_or_file(config, nocache, monkeypatch, tmp_path):
    from inspector.trace.io import save_trace

    secret = "sk-test-Echoed-9d1f2c8a7b"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    gateway = _EchoingGateway()
    try:
        config["auxiliary"]["compression"].update(base_url=gateway.url, model="summary-model")
        trace = replay_compressor(config, nocache)
    finally:
        gateway.close()
    assert gateway.seen and all(auth == f"Bearer {secret}" for auth in gateway.seen)  # the key came from the env
    aux = [e for e in trace.events if e.kind == EV_AUX_LLM]
    assert aux and all("400" in e.result["error"] and "***" in e.result["error"] for e in aux)
    path = tmp_path / "t.json"
    save_trace(trace, path)
    text = path.read_text(encoding="utf-8")
    assert "generated without an LLM" in text  # the fallback summary quoting the error is in the trace
    assert secret not in text


def test_a_summary_from_the_disk_cache_is_said_on_the_compress_event(config, nocache, monkeypatch, tmp_path):
    from inspector.llm import aux

    monkeypatch.setenv("CONTEXT_INSPECTOR_SUMMARY_CACHE", str(tmp_path / "summaries"))
    asked = []

    def endpoint(ep, messages, **kw):
        from tests.engines.compressor_fakes import completion

        asked.append(ep.model)
        return completion(f"## Goal\nsummary {len(asked)} of the work so far")

    monkeypatch.setattr(aux, "_call_endpoint", endpoint)
    config["auxiliary"]["compression"].update(base_url="http://summaries.local/v1", model="summary-model")

    first = replay_compressor(config, nocache)
    calls = len(asked)
    second = replay_compressor(config, nocache)
    assert calls and len(asked) == calls  # the second replay asked nobody
    committed = [e for e in second.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)]
    assert committed and all("summary cache" in (e.note or "") for e in committed)
    assert not any("summary cache" in (e.note or "") for e in first.events if e.kind == EV_COMPRESS)


_CTX_LLM_PLUGIN = '''
from agent.context_engine import ContextEngine


class LlmEngine(ContextEngine):
    name = "ctx_llm_engine"
    threshold_percent = 0.05

    def __init__(self, llm):
        self.llm = llm

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        result = self.llm.complete([{"role": "user", "content": "Summarise the work so far."}], model="summary-model")
        self.compression_count += 1
        return [{"role": "user", "content": "[summary] " + result.text}] + messages[-2:]


def register(ctx):
    ctx.register_context_engine(LlmEngine(getattr(ctx, "llm", None)))
'''


def replay_ctx_llm_plugin(config, nocache, tmp_path):
    """A general plugin (plugin.yaml + register(ctx)) whose engine summarises through ctx.llm.

    It asks for its own model, which Hermes allows only when ``plugins.entries.<id>.llm`` says so,
    ``<id>`` being the plugin's directory name (not the manifest's ``name``).
    """
    plugin = tmp_path / "plugins" / "ctx-llm-plugin"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: Context LLM plugin\nversion: '1.0'\n", encoding="utf-8")
    config["plugins"]["entries"] = {"ctx-llm-plugin": {"llm": {"allow_model_override": True}}}
    config["plugins"]["enabled"] = ["ctx-llm-plugin"]  # Hermes loads only enabled plugins
    (plugin / "__init__.py").write_text(_CTX_LLM_PLUGIN, encoding="utf-8")
    loaded = load_engine("ctx_llm_engine", config, [tmp_path / "plugins"])
    try:
        assert loaded.info.source == "general-plugin"
        return replay(coding_session(8), loaded, config, simulator=nocache)
    finally:
        loaded.close()


def test_a_general_plugins_ctx_llm_call_is_recorded_during_compress(config, nocache, tmp_path):
    config["inspector"]["aux_offline_stand_in"] = True
    trace = replay_ctx_llm_plugin(config, nocache, tmp_path)
    aux = [e for e in trace.events if e.kind == EV_AUX_LLM]
    assert aux and not [e for e in trace.events if e.fault]
    first = aux[0]
    parent = trace.events[first.args["during"]]
    assert parent.kind == EV_COMPRESS and first.args["task"] is None and first.args["offline"]
    assert first.args["kwargs"]["model"] == "summary-model"  # the trusted override reached call_llm
    assert trace.store.materialise(first.args["prompt"]["$list"]) == [
        {"role": "user", "content": "Summarise the work so far."}]
    reply = trace.store.get(first.result["reply"]["$msg"])["content"]
    summary = trace.store.materialise(parent.result["$list"])[0]["content"]
    assert summary == "[summary] " + reply  # the engine got the recorded reply back


def test_a_failing_ctx_llm_call_is_recorded_and_the_fault_names_the_plugin_line(config, nocache, tmp_path):
    config["inspector"]["aux_offline_stand_in"] = False
    trace = replay_ctx_llm_plugin(config, nocache, tmp_path)
    aux = [e for e in trace.events if e.kind == EV_AUX_LLM]
    assert aux and all("No LLM provider configured" in e.result["error"] for e in aux)
    faults = [e.fault for e in trace.events if e.kind == EV_COMPRESS and e.fault]
    assert faults and all("No LLM provider configured" in f.message for f in faults)
    plugin_init = str(tmp_path / "plugins" / "ctx-llm-plugin" / "__init__.py")
    assert all(f.where.startswith(plugin_init + ":") and f.where.endswith(" in compress") for f in faults)
