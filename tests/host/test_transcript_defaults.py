"""Unless the user sets them, a replay uses the transcript's model, window and provider's cache."""

from __future__ import annotations

import pytest

from inspector.config import load_config
from inspector.host.transcript_defaults import describe, profile_for, settle
from inspector.sessions.model import Session


def _codex_like() -> Session:
    s = Session(id="r", source_format="codex", model="gpt-5.3-codex")
    s.context_window = 258_400
    return s


def test_with_no_config_the_transcript_decides():
    settled = settle(load_config(None), _codex_like())
    assert settled["model"]["default"] == "gpt-5.3-codex"
    assert settled["model"]["context_length"] == 258_400, "the recorded window, not a table's 400K"
    assert settled["inspector"]["cache_profile"] == "openai"
    assert describe(settled["x_assumed"]) == ("replay settings: model gpt-5.3-codex (transcript), window 258,400 "
                                             "(transcript), cache profile openai (transcript)")


def test_what_the_user_sets_wins_and_is_said_to_be_theirs():
    config = load_config(None, {"model": {"default": "claude-opus-4-6"}, "inspector": {"cache_profile": "ideal"}})
    settled = settle(config, _codex_like())
    assert settled["model"]["default"] == "claude-opus-4-6"
    assert settled["inspector"]["cache_profile"] == "ideal"
    assert settled["x_assumed"]["model"]["from"] == "user" and settled["x_assumed"]["cache_profile"]["from"] == "user"
    assert settled["model"]["context_length"] == 258_400, "the window is still the transcript's"


def test_a_window_the_user_sets_is_kept_and_without_a_recorded_one_the_table_answers():
    settled = settle(load_config(None, {"model": {"context_length": 64_000}}), _codex_like())
    assert settled["model"]["context_length"] == 64_000 and settled["x_assumed"]["context_length"]["from"] == "user"
    claude = Session(id="c", source_format="claude-code", model="claude-opus-4-6")
    settled = settle(load_config(None), claude)
    assert settled["x_assumed"]["context_length"]["from"] == "model table"
    assert settled["inspector"]["cache_profile"] == "anthropic"


def test_settling_twice_changes_nothing_and_a_modelless_transcript_keeps_the_defaults():
    once = settle(load_config(None), _codex_like())
    assert settle(once, Session(id="x", source_format="test", model="other")) is once
    plain = settle(load_config(None), Session(id="x", source_format="openai-chat"))
    assert plain["x_assumed"]["model"] == {"value": "anthropic/claude-sonnet-4.5", "from": "config default"}


@pytest.mark.parametrize(("model", "profile"), [("claude-opus-4-6", "anthropic"), ("gpt-5.3-codex", "openai"),
                                                ("deepseek-chat", "deepseek"), ("kimi-k2.5", None)])
def test_the_cache_profile_follows_the_provider(model, profile):
    assert profile_for(model) == profile


def test_a_comparison_runs_own_setting_wins_over_the_transcript():
    from inspector.compare.runs import parse_specs

    [spec] = parse_specs(["compressor:model.default=claude-opus-4-6"])
    settled = settle(spec.config_for(load_config(None)), _codex_like())
    assert settled["model"]["default"] == "claude-opus-4-6" and settled["x_assumed"]["model"]["from"] == "user"


def test_a_transcript_of_one_hour_cache_writes_replays_with_the_one_hour_ttl():
    from inspector.sessions.model import ApiCall, Usage

    s = Session(id="c", source_format="claude-code", model="claude-opus-4-6",
                api_calls=[ApiCall(message_index=1, usage=Usage(prompt_tokens=900, cache_write_tokens=800,
                                                                 cache_write_1h_tokens=800))])
    assert settle(load_config(None), s)["prompt_caching"]["cache_ttl"] == "1h"
    chosen = settle(load_config(None, {"prompt_caching": {"cache_ttl": "5m"}}), s)
    assert chosen["prompt_caching"]["cache_ttl"] == "5m" and chosen["x_assumed"]["cache_ttl"]["from"] == "user"


def test_the_built_in_compressor_replays_at_the_transcripts_window_however_it_was_loaded():
    """Loaded before the session was read (as a worker does), it was built for the config's default
    model; Hermes' agent builds it with its own model and window, so the replay does too."""
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from tests.host.conftest import coding_session

    session = coding_session(3)
    session.model, session.source_format, session.context_window = "gpt-5.3-codex", "codex", 258_400
    config = load_config(None)
    loaded = load_engine("compressor", config)
    assert loaded.engine.context_length == 200_000, "built for the default model"
    trace = replay(session, loaded, config)
    state = trace.state_at(len(trace.events) - 1)
    assert state["context_length"] == 258_400 and state["threshold_tokens"] == int(0.75 * 258_400)
    assert loaded.engine.model == "gpt-5.3-codex"
    chosen = load_config(None, {"model": {"context_length": 64_000}})
    state = replay(session, load_engine("compressor", chosen), chosen).state_at(0)
    assert state["context_length"] == 64_000, "the user's window is kept"

