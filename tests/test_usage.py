"""One usage normaliser for every provider shape; cached tokens are never counted twice.

OpenAI (Chat and Responses) report cached tokens as a *subset* of the prompt; Anthropic reports
``input_tokens`` *excluding* cache reads and writes; DeepSeek reports hit + miss. Each test
feeds a provider-shaped payload and checks the canonical figures and Hermes' usage dict.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from inspector.usage import detect_shape, hermes_usage_dict, normalize_usage


def assert_no_double_count(usage, expected_prompt: int) -> None:
    d = usage.to_hermes_dict()
    assert d["prompt_tokens"] == expected_prompt
    assert d["prompt_tokens"] == d["cache_read_tokens"] + d["cache_write_tokens"] + d["input_tokens"]
    assert d["cache_read_tokens"] + d["cache_write_tokens"] <= d["prompt_tokens"]
    assert d["total_tokens"] == d["prompt_tokens"] + d["completion_tokens"]
    assert d["output_tokens"] == d["completion_tokens"]


def test_openai_chat_cached_tokens_are_a_subset():
    raw = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 128},
    }
    assert detect_shape(raw) == "chat"
    u = normalize_usage(raw)
    assert (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.input_tokens) == (2006, 1920, 0, 86)
    assert u.reasoning_tokens == 128
    assert_no_double_count(u, 2006)


def test_openai_chat_from_sdk_object():
    raw = SimpleNamespace(
        prompt_tokens=1500,
        completion_tokens=10,
        prompt_tokens_details=SimpleNamespace(cached_tokens=1024),
        completion_tokens_details=None,
    )
    u = normalize_usage(raw)
    assert (u.cache_read_tokens, u.input_tokens) == (1024, 476)
    assert_no_double_count(u, 1500)


def test_openai_responses_input_includes_cached():
    raw = {
        "input_tokens": 5000,
        "input_tokens_details": {"cached_tokens": 4096},
        "output_tokens": 700,
        "output_tokens_details": {"reasoning_tokens": 512},
        "total_tokens": 5700,
    }
    assert detect_shape(raw) == "responses"
    u = normalize_usage(raw, api_mode="codex_responses")
    assert (u.prompt_tokens, u.cache_read_tokens, u.input_tokens, u.completion_tokens) == (
        5000,
        4096,
        904,
        700,
    )
    assert u.reasoning_tokens == 512
    assert_no_double_count(u, 5000)


def test_openai_responses_with_cache_creation():
    raw = {
        "input_tokens": 3000,
        "input_tokens_details": {"cached_tokens": 1000, "cache_creation_tokens": 1500},
        "output_tokens": 5,
    }
    u = normalize_usage(raw, api_mode="codex_responses")
    assert (u.cache_read_tokens, u.cache_write_tokens, u.input_tokens) == (1000, 1500, 500)
    assert_no_double_count(u, 3000)


def test_anthropic_cache_tokens_are_additive():
    # The documented example: the second call reads what the first wrote; input_tokens is the tail only.
    first = {
        "input_tokens": 21,
        "cache_creation_input_tokens": 188086,
        "cache_read_input_tokens": 0,
        "output_tokens": 393,
    }
    second = {
        "input_tokens": 21,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 188086,
        "output_tokens": 393,
    }
    assert detect_shape(first) == "anthropic"
    u1 = normalize_usage(first, provider="anthropic")
    u2 = normalize_usage(second, api_mode="anthropic_messages")
    assert (u1.prompt_tokens, u1.cache_write_tokens, u1.input_tokens) == (188107, 188086, 21)
    assert (u2.prompt_tokens, u2.cache_read_tokens, u2.input_tokens) == (188107, 188086, 21)
    assert_no_double_count(u1, 188107)
    assert_no_double_count(u2, 188107)


def test_anthropic_one_hour_split():
    raw = {
        "input_tokens": 50,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 3_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 2_000},
        "output_tokens": 80,
    }
    u = normalize_usage(raw, provider="anthropic")
    assert (u.cache_write_tokens, u.cache_write_1h_tokens) == (3_000, 2_000)
    assert_no_double_count(u, 13_050)


def test_anthropic_split_without_total_still_counts_writes():
    raw = {
        "input_tokens": 5,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 700, "ephemeral_1h_input_tokens": 300},
    }
    u = normalize_usage(raw, provider="anthropic")
    assert (u.cache_write_tokens, u.cache_write_1h_tokens) == (1000, 300)
    assert_no_double_count(u, 1005)


def test_deepseek_hit_and_miss():
    raw = {
        "prompt_tokens": 1200,
        "completion_tokens": 40,
        "prompt_cache_hit_tokens": 1024,
        "prompt_cache_miss_tokens": 176,
    }
    assert detect_shape(raw) == "deepseek"
    u = normalize_usage(raw)
    assert (u.cache_read_tokens, u.input_tokens) == (1024, 176)
    assert (
        u.cache_read_tokens + u.input_tokens
        == raw["prompt_cache_hit_tokens"] + raw["prompt_cache_miss_tokens"]
    )
    assert_no_double_count(u, 1200)


def test_deepseek_without_prompt_total():
    u = normalize_usage(
        {"prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36, "completion_tokens": 1},
        shape="deepseek",
    )
    assert (u.prompt_tokens, u.cache_read_tokens) == (100, 64)
    assert_no_double_count(u, 100)


@pytest.mark.parametrize("raw", [
    {"prompt_token_count": 1000, "cached_content_token_count": 800, "candidates_token_count": 50,
     "thoughts_token_count": 20, "total_token_count": 1070},
    {"promptTokenCount": 1000, "cachedContentTokenCount": 800, "candidatesTokenCount": 50,
     "thoughtsTokenCount": 20, "totalTokenCount": 1070},
])
def test_gemini_usage_metadata_cached_content_is_a_subset(raw):
    assert detect_shape(raw) == "gemini"
    u = normalize_usage(raw)
    assert (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.input_tokens) == (1000, 800, 0, 200)
    assert (u.completion_tokens, u.reasoning_tokens) == (70, 20), "thoughts are billed as output"
    assert_no_double_count(u, 1000)


def test_openrouter_cache_write_tokens():
    raw = {
        "prompt_tokens": 9000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 6000, "cache_write_tokens": 2500},
    }
    u = normalize_usage(raw, provider="openrouter")
    assert (u.cache_read_tokens, u.cache_write_tokens, u.input_tokens) == (6000, 2500, 500)
    assert_no_double_count(u, 9000)


def test_chat_with_top_level_anthropic_style_fields():
    # Some gateways keep Chat Completions' prompt_tokens but report Anthropic-named cache fields.
    raw = {
        "prompt_tokens": 4000,
        "completion_tokens": 3,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 900,
    }
    u = normalize_usage(raw)
    assert (u.cache_read_tokens, u.cache_write_tokens, u.input_tokens) == (3000, 900, 100)
    assert_no_double_count(u, 4000)


def test_over_reported_cache_is_clamped_not_trusted():
    raw = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 150, "cache_write_tokens": 20}}
    u = normalize_usage(raw)
    assert (u.cache_read_tokens, u.cache_write_tokens) == (100, 0)
    assert_no_double_count(u, 100)


def test_hermes_usage_dict_shape():
    d = hermes_usage_dict({"prompt_tokens": 10, "completion_tokens": 5})
    assert d == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }


@pytest.mark.parametrize("raw", [None, {}, {"prompt_tokens": None, "completion_tokens": "x"}])
def test_missing_or_garbage_values_become_zero(raw):
    d = hermes_usage_dict(raw)
    assert d["prompt_tokens"] == 0 and d["total_tokens"] == 0


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), 1e308, 10**13])
def test_infinite_or_absurd_counts_are_not_usage(value):
    u = normalize_usage({"prompt_tokens": value, "completion_tokens": 5})
    assert (u.prompt_tokens, u.completion_tokens) == (0, 5)
