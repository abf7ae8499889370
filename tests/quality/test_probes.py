"""Probes: an engine's declared retrieval tools in a dry run at the end of the run, and graded
questions answered by a scripted OpenAI-compatible server through the real ``openai`` SDK."""

from __future__ import annotations

import json

import pytest

from inspector.quality.analysis import analyse
from inspector.quality.probes import declared_retrieval_tools, grade_questions
from inspector.quality.retention import LOST, RECOVERABLE
from tests.live.fake_openai import FakeOpenAI, Plain
from tests.live.helpers import TEST_KEY_ENV

from .conftest import KeepLastTwo, url


class Archiving(KeepLastTwo):
    """Drops what it compacts from the context but keeps it, searchable through ``archive_search``."""

    name = "archiving"
    summary = False
    retrieval_tools = {"archive_search": "query"}

    def __init__(self) -> None:
        super().__init__()
        self.archive: list[str] = []

    def rewrite(self, messages):
        self.archive += [str(m.get("content") or "") for m in messages[:-2]]
        return super().rewrite(messages)

    def get_tool_schemas(self):
        return [{"name": "archive_search", "description": "search compacted messages",
                 "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}]

    def handle_tool_call(self, name, args, **kwargs):
        hits = [m for m in self.archive if args.get("query", "").lower() in m.lower()]
        return json.dumps({"hits": hits})


class EchoingSearch(Archiving):
    """Finds nothing, but says what it was asked (as lcm_grep does)."""

    def handle_tool_call(self, name, args, **kwargs):
        return json.dumps({"query": args.get("query"), "hits": []})


class BrokenSearch(Archiving):
    def handle_tool_call(self, name, args, **kwargs):
        raise RuntimeError("index not built")


def probing(config):
    return dict(config, inspector={**config["inspector"], "probe_tools": True})


def test_a_declared_retrieval_tool_makes_the_facts_it_returns_recoverable(run, config):
    plain = run(Archiving())
    assert analyse(plain).run_retention == 0.0  # by string matching alone, everything compacted is lost
    from inspector.host.replay import replay
    from tests.host.conftest import NoCache
    from tests.quality.conftest import url_session

    trace = replay(url_session(), Archiving(), probing(config), simulator=NoCache())
    analysis = analyse(trace)
    assert analysis.run_retention == 1.0
    assert all(f.status == RECOVERABLE and f.via == "archive_search" for f in analysis.retention.end.facts)
    assert analysis.probes["tools"]["calls"] == analysis.probes["tools"]["recoverable"] == 5
    assert len(trace.events) == len(plain.events)  # a dry run: no event of the trace


def test_a_retrieval_tool_that_fails_recovers_nothing_and_the_run_goes_on(config):
    from inspector.host.replay import replay
    from tests.host.conftest import NoCache
    from tests.quality.conftest import url_session

    trace = replay(url_session(), BrokenSearch(), probing(config), simulator=NoCache())
    analysis = analyse(trace)
    assert analysis.probes["tools"]["failed"] == 5 and analysis.run_retention == 0.0
    assert all(f.status == LOST for f in analysis.retention.end.facts)


def test_a_tool_that_only_echoes_the_query_recovers_nothing(config):
    from inspector.host.replay import replay
    from tests.host.conftest import NoCache
    from tests.quality.conftest import url_session

    analysis = analyse(replay(url_session(), EchoingSearch(), probing(config), simulator=NoCache()))
    assert analysis.probes["tools"]["calls"] == 5 and analysis.probes["tools"]["recoverable"] == 0
    assert analysis.run_retention == 0.0


def test_only_a_dict_of_names_is_a_declaration():
    class Odd:
        retrieval_tools = ["archive_search"]

    assert declared_retrieval_tools(Odd()) == {}
    assert declared_retrieval_tools(Archiving()) == {"archive_search": "query"}


@pytest.fixture
def secret_key(monkeypatch):
    """A key only in the environment: it must reach no trace."""
    key = "sk-retention-probe-test-key"
    monkeypatch.setenv(TEST_KEY_ENV, key)
    return key


@pytest.fixture
def summary_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXT_INSPECTOR_SUMMARY_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def endpoint_config(config, server):
    return dict(config, auxiliary={"compression": {"base_url": server.base_url, "model": "fake-model",
                                                   "api_key_env": TEST_KEY_ENV}})


class Forgetting(KeepLastTwo):
    summary = False


def test_graded_questions_are_answered_graded_and_cached(run, config, summary_cache, secret_key):
    trace = run(Forgetting())
    with FakeOpenAI([Plain(url(0)), Plain("UNKNOWN")]) as server:
        report = grade_questions(trace, endpoint_config(config, server), 2)
        asked = [r.body for r in server.requests]
        again = grade_questions(trace, endpoint_config(config, server), 2)  # nothing left scripted
        assert len(server.requests) == 2  # answered from the cache
    assert report["asked"] == 2 and report["correct"] == 1 and report["cached"] == 0
    assert [q["fact"] for q in report["questions"]] == [url(0), url(2)]
    assert [q["correct"] for q in report["questions"]] == [True, False]
    for body, fact in zip(asked, (url(0), url(2))):
        question = body["messages"][-1]["content"]
        assert fact not in question and "_____" in question  # the fact is what is asked for
        assert body["messages"][:-1] == json.loads(json.dumps(trace.request_messages(trace.requests[-1])))
    assert secret_key not in json.dumps(trace.derived)
    assert again["cached"] == 2 and again["correct"] == 1
    assert analyse(trace).probes["graded"]["correct"] == 1  # kept with the analysis (and saved with the trace)


def test_offline_the_graded_questions_are_skipped_with_a_note(run, config, summary_cache):
    report = grade_questions(run(Forgetting()), config, 3)
    assert report["asked"] == 0 and "offline" in report["note"]


def test_the_run_retention_read_before_a_probe_counts_what_the_probe_recovered(run):
    from inspector.quality.probes import probe_retrieval_tools

    trace = run(Archiving())
    analysis = analyse(trace)
    assert analysis.run_retention == 0.0  # read (and kept) before probing
    engine = Archiving()
    engine.archive = [url(k) for k in range(8)]
    report = probe_retrieval_tools(trace, engine, call=lambda fn, *args, **kwargs: (True, fn(*args, **kwargs)))
    assert report["recoverable"] == 5 and analyse(trace) is analysis
    assert analysis.run_retention == 1.0
