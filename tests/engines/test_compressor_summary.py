"""Built-in compressor: summary serialisation, prompt template, grounding, fallback (agent/context_compressor.py:1835-2115 of hermes-agent 0.19.0)."""

from __future__ import annotations

import datetime as dt
import json
import sys

import pytest

import inspector.llm
from inspector.engines.compressor import SUMMARY_PREFIX, ContextCompressor
from inspector.engines.compressor_summary import (
    FALLBACK_TRUNCATION_MARKER,
    SUMMARY_HEADINGS,
    ground_snapshot,
)
from inspector.tokens.rough import estimate_messages_tokens_rough
from tests.engines.compressor_fakes import NO_PROVIDER, FakeAux, completion, hermetic, install_aux  # noqa: F401

SECRET = "sk-proj-" + "A1b2C3d4" * 4
GH_TOKEN = "ghp_" + "x7Y8z9" * 6


def engine(**kw) -> ContextCompressor:
    kw.setdefault("quiet_mode", True)
    kw.setdefault("now", dt.date(2026, 3, 14))
    return ContextCompressor("test-model", config_context_length=200_000, **kw)


def call(cid: str, name: str = "terminal", **args) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# ---------------------------------------------------------------------------------------------
# serialisation
# ---------------------------------------------------------------------------------------------


def test_serialisation_format():
    c = engine()
    turns = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "<think>secret plan</think>On it.", "tool_calls": [call("c1", command="ls"), call("c2", "read_file", path="/a")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "system", "content": "note"},
    ]
    assert c._serialize_for_summary(turns) == (
        "[USER]: fix it\n\n"
        "[ASSISTANT]: On it.\n[Tool calls:\n  terminal({\"command\": \"ls\"})\n  read_file({\"path\": \"/a\"})\n]\n\n"
        "[TOOL RESULT c1]: a.py\n\n"
        "[SYSTEM]: note"
    )


def test_serialisation_redacts_and_replaces_media():
    c = engine()
    turns = [
        {"role": "user", "content": f"key {SECRET} see MEDIA:/tmp/shot.png"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "http", token=SECRET)]},
    ]
    text = c._serialize_for_summary(turns)
    assert SECRET not in text
    assert "[media attachment]" in text and "MEDIA:" not in text


def test_serialisation_truncates_bodies_and_arguments():
    c = engine()
    body = "H" * 4000 + "M" * 1000 + "T" * 1500
    args = "{" + "a" * 2000 + "}"
    turns = [
        {"role": "tool", "tool_call_id": "c1", "content": body},
        {"role": "assistant", "content": "x", "tool_calls": [{"id": "c2", "function": {"name": "big", "arguments": args}}]},
    ]
    text = c._serialize_for_summary(turns)
    assert "[TOOL RESULT c1]: " + "H" * 4000 + "\n...[truncated]...\n" + "T" * 1500 + "\n\n" in text
    assert "M" not in text
    assert "  big(" + args[:1200] + "...)\n]" in text
    # exactly 6000 characters is not truncated
    assert "[TOOL RESULT c]: " + "z" * 6000 == c._serialize_for_summary([{"role": "tool", "tool_call_id": "c", "content": "z" * 6000}])


def test_serialisation_flattens_list_content():
    c = engine()
    turns = [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x.org/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
        {"type": "input_audio", "input_audio": {}},
    ]}]
    assert c._serialize_for_summary(turns) == "[USER]: look\n[image: https://x.org/a.png]\n[image]\n[input_audio]"


# ---------------------------------------------------------------------------------------------
# prompt template and call
# ---------------------------------------------------------------------------------------------


def test_prompt_headings_in_order_and_budget(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nx"))
    c = engine()
    turns = [{"role": "user", "content": "u" * 200_000}]
    assert c._generate_summary(turns) is not None
    prompt = fake.calls[0]["messages"][0]["content"]
    positions = [prompt.index(h + "\n") for h in SUMMARY_HEADINGS]
    assert positions == sorted(positions)
    assert SUMMARY_HEADINGS[0] == "## Historical Task Snapshot" and SUMMARY_HEADINGS[-1] == "## Critical Context"
    assert len(SUMMARY_HEADINGS) == 13
    rough = estimate_messages_tokens_rough(turns)
    assert f"Target ~{min(int(rough * 0.20), 10_000)} tokens." in prompt
    assert "TEMPORAL ANCHORING: today's date is 2026-03-14." in prompt
    assert fake.protected == 1
    # no max_tokens is sent
    assert "max_tokens" not in fake.calls[0]


def test_summary_budget_formula():
    c = engine()
    small = [{"role": "user", "content": "hi"}]
    assert c._compute_summary_budget(small) == 2000
    mid = [{"role": "user", "content": "m" * 100_000}]
    assert c._compute_summary_budget(mid) == int(estimate_messages_tokens_rough(mid) * 0.2)
    big = [{"role": "user", "content": "b" * 400_000}]
    assert c._compute_summary_budget(big) == 10_000


def test_now_injection_accepts_callables_and_datetimes():
    assert engine(now=lambda: dt.datetime(2025, 1, 2, 3, 4))._today() == "2025-01-02"
    assert engine(now="2024-12-31")._today() == "2024-12-31"
    assert engine(now=None)._today() == dt.date.today().strftime("%Y-%m-%d")


# ---------------------------------------------------------------------------------------------
# post-processing and grounding
# ---------------------------------------------------------------------------------------------


def test_grounding_inserts_missing_heading_and_caps_length(monkeypatch):
    install_aux(monkeypatch, FakeAux(f"## Goal\nthe token was {SECRET}"))
    c = engine()
    ask = "q" * 2000
    out = c._generate_summary([{"role": "user", "content": ask}, {"role": "assistant", "content": "ok"}])
    body = out[len(SUMMARY_PREFIX) + 1 :]
    assert body.startswith(
        "## Historical Task Snapshot\nUser asked (deterministic, from compacted turns): '" + "q" * 1399 + "…'\n"
        "Historical only; newer protected-tail messages after this summary win.\n\n## Goal\n"
    )
    assert SECRET not in body


def test_grounding_uses_newest_real_user_message_of_the_window():
    body = "## Historical Task Snapshot\nwrong\nmore wrong\n\n## Goal\nG"
    turns = [
        {"role": "user", "content": "older ask"},
        {"role": "user", "content": "newest ask"},
        {"role": "user", "content": SUMMARY_PREFIX + "\nold", "_compressed_summary": True},
    ]
    from inspector.engines.compressor_summary import latest_user_ask

    assert ground_snapshot(body, latest_user_ask(turns)) == (
        "## Historical Task Snapshot\n"
        "User asked (deterministic, from compacted turns): 'newest ask'\n"
        "Historical only; newer protected-tail messages after this summary win.\n\n"
        "## Goal\nG"
    )
    assert ground_snapshot(body, None) == body


# ---------------------------------------------------------------------------------------------
# fallback summary (context_compressor.py:1923-2115)
# ---------------------------------------------------------------------------------------------


def _work_turns() -> list[dict]:
    return [
        {"role": "user", "content": f"please fix /src/app.py, token {GH_TOKEN}"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", command="pytest"), call("c2", "read_file", path="/src/app.py")]},
        {"role": "tool", "tool_call_id": "c1", "content": "Traceback (most recent call last)\nValueError: boom"},
        {"role": "tool", "tool_call_id": "c2", "content": "def main(): pass"},
        {"role": "assistant", "content": "<think>hmm</think>Found the bug in src/util/helpers.py"},
    ]


def test_fallback_summary_content():
    c = engine()
    c._last_summary_error = "no auxiliary LLM provider configured"
    text = c._build_fallback_summary(_work_turns())
    assert text.startswith(SUMMARY_PREFIX + "\n## Historical Task Snapshot\nUser asked (deterministic, from compacted turns): 'please fix /src/app.py, token [REDACTED]'\n")
    assert GH_TOKEN not in text
    for heading in SUMMARY_HEADINGS:
        assert f"\n{heading}\n" in "\n" + text
    assert "## Completed Actions\n1. Called tool(s): terminal, read_file\n2. [terminal] ran `pytest` -> exit ?, 2 lines output\n3. [read_file] read /src/app.py from line 1 (16 chars)\n" in text
    assert "## Blocked\n- [terminal] Traceback (most recent call last)\n" in text
    assert "## Relevant Files\n- /src/app.py\n- src/util/helpers.py\n" in text
    assert "Last 5 compacted rows:\n" in text
    assert "- [ASSISTANT] Found the bug in src/util/helpers.py" in text
    assert "hmm" not in text
    assert text.endswith("This summary was generated without an LLM (no auxiliary LLM provider configured).")
    assert "earlier compaction summary" not in text
    # as in Hermes, a fallback does not become the running summary (the transcript keeps it)
    assert c._previous_summary is None
    c._previous_summary = "an earlier summary"
    assert "An earlier compaction summary preceded these turns" in c._build_fallback_summary(_work_turns())


def test_fallback_keeps_results_an_earlier_prune_already_summarised():
    pruned = "[terminal] ran `pytest -q` -> exit 1, 42 lines output"
    turns = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", command="pytest -q"),
                                                          call("c2", "list_files", path=".")]},
        {"role": "tool", "tool_call_id": "c1", "content": pruned},
        {"role": "tool", "tool_call_id": "c2", "content": "a.py\nb.py"},
    ]
    text = engine()._build_fallback_summary(turns)
    assert f"2. {pruned}\n" in text, "the pruned line is the action, not re-measured as 1 line"
    assert f"## Blocked\n- {pruned}\n" in text, "no doubled [terminal] prefix"
    assert "- .\n" not in text.split("## Relevant Files\n")[1], "the current directory is not a file"


def test_fallback_limits():
    c = engine()
    turns: list[dict] = [{"role": "user", "content": "go " + "g" * 1000}]
    for i in range(20):
        turns.append({"role": "assistant", "content": "", "tool_calls": [call(f"c{i}", "read_file", path=f"/p/f{i}.py")]})
        turns.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"error: failed {i}"})
    text = c._build_fallback_summary(turns)
    actions = text.split("## Completed Actions\n")[1].split("\n\n")[0].splitlines()
    assert actions[0].startswith("1. ") and actions[11].startswith("12. ")
    assert actions[12] == "(28 earlier actions omitted)"
    blocked = text.split("## Blocked\n")[1].split("\n\n")[0].splitlines()
    assert blocked == [f"- [read_file] error: failed {i}" for i in range(15, 20)]
    files = text.split("## Relevant Files\n")[1].split("\n\n")[0].splitlines()
    assert files == [f"- /p/f{i}.py" for i in range(12)]
    assert "'go " + "g" * 696 + "…'" in text  # 700 characters per ask


def test_fallback_is_capped_at_8000_chars():
    c = engine()
    turns = []
    for i in range(12):
        turns.append({"role": "user", "content": f"{i} " + "w" * 900})
        turns.append({"role": "assistant", "content": "", "tool_calls": [call(f"c{i}", "read_file", path="/" + "d" * 180 + f"{i}.py")]})
        turns.append({"role": "tool", "tool_call_id": f"c{i}", "content": "r" * 300})
    text = c._build_fallback_summary(turns)
    body = text[len(SUMMARY_PREFIX) + 1 :]
    assert body.endswith(FALLBACK_TRUNCATION_MARKER)
    assert len(body) == 8000 + len(FALLBACK_TRUNCATION_MARKER)


def test_fallback_used_when_provider_missing_and_identical_across_runs():
    msgs = [{"role": "user", "content": f"user {i}"} if i % 2 == 0 else {"role": "assistant", "content": f"reply {i}"} for i in range(40)]
    runs = []
    for _ in range(2):
        c = engine()
        runs.append(c.compress(msgs))
        assert c._last_summary_fallback_used is True
    assert runs[0] == runs[1]


# ---------------------------------------------------------------------------------------------
# against the inspector's real LLM layer (inspector.llm.aux), transport stubbed
# ---------------------------------------------------------------------------------------------


def _chat40() -> list[dict]:
    return [{"role": "user", "content": f"user {i}"} if i % 2 == 0 else {"role": "assistant", "content": f"reply {i}"} for i in range(40)]


@pytest.fixture
def real_aux(monkeypatch):
    import importlib

    monkeypatch.delitem(sys.modules, "inspector.llm.aux", raising=False)
    monkeypatch.delattr(inspector.llm, "aux", raising=False)
    aux = importlib.import_module("inspector.llm.aux")
    monkeypatch.setattr(inspector.llm, "aux", aux, raising=False)
    return aux


def test_real_aux_without_configuration_gives_fallback(real_aux, tmp_path):
    with real_aux.use_aux_config({}):
        c = engine()
        out = c.compress(_chat40())
    assert c._last_summary_fallback_used is True
    assert c._last_summary_error == "no auxiliary LLM provider configured"
    assert "This summary was generated without an LLM (no auxiliary LLM provider configured).\n\n---" in out[3]["content"]
    assert not list((tmp_path / "summary-cache").glob("*.json"))


def test_real_aux_offline_stand_in_is_not_taken_as_a_summary(real_aux, tmp_path):
    with real_aux.use_aux_config({"inspector": {"aux_offline_stand_in": True}}):
        c = engine()
        offline = c.compress(_chat40())
    assert c._last_summary_fallback_used is True
    assert "offline stand-in" not in offline[3]["content"]
    assert not list((tmp_path / "summary-cache").glob("*.json"))


def test_real_aux_endpoint_reply_is_cached_by_endpoint_identity(real_aux, monkeypatch, tmp_path):
    sent = []

    def fake_endpoint(endpoint, messages, **kw):
        sent.append((endpoint.model, endpoint.base_url, messages))
        return completion("## Goal\nfrom the endpoint")

    monkeypatch.setattr(real_aux, "_call_endpoint", fake_endpoint)
    cfg = {"auxiliary": {"compression": {"base_url": "http://aux.local/v1", "model": "summ-1", "api_key": "k"}}}
    with real_aux.use_aux_config(cfg):
        first = engine().compress(_chat40())
        second_engine = engine()
        second = second_engine.compress(_chat40())
    assert len(sent) == 1 and sent[0][:2] == ("summ-1", "http://aux.local/v1")
    assert second == first and second_engine._last_summary_from_cache is True
    assert "from the endpoint" in first[3]["content"]
    entries = list((tmp_path / "summary-cache").glob("*.json"))
    assert len(entries) == 1
    assert json.loads(entries[0].read_text())["model"] == "summ-1@http://aux.local/v1"
    # another endpoint does not reuse the entry; no endpoint at all never reads the cache
    cfg2 = {"auxiliary": {"compression": {"base_url": "http://other/v1", "model": "summ-2", "api_key": "k"}}}
    with real_aux.use_aux_config(cfg2):
        engine().compress(_chat40())
    assert len(sent) == 2
    with real_aux.use_aux_config({}):
        c = engine()
        c.compress(_chat40())
    assert c._last_summary_fallback_used is True and c._last_summary_from_cache is False
