"""The persistent token cache fills through workers: a worker reads it read-only (inside the
sandbox it cannot write it), hands back what it had to count, and the supervisor writes that —
only when every entry has the shape our own counting makes."""

from __future__ import annotations

import sqlite3

import pytest

from inspector.tokens import persistent
from inspector.tokens.persistent import TokenCache, store_worker_counts
from inspector.worker import sandbox
from tests.worker.conftest import BASE

BWRAP = sandbox.choose({}).kind == "bubblewrap"
NS = f"cl100k_base:{persistent.rules_hash()}"


@pytest.fixture(autouse=True)
def _fresh_caches():
    persistent.forget_open_caches()
    yield
    persistent.forget_open_caches()


def _replay(session, config: dict | None = None, engine: str = "compressor", plugin_dirs=()):
    from inspector.config import load_config
    from inspector.worker.replays import RunRequest, replay_in_workers

    (outcome,) = replay_in_workers(session, [RunRequest(engine, config or load_config(None), engine)], plugin_dirs)
    assert outcome.ok, outcome.describe()
    return outcome


def _rows(path) -> dict[tuple[str, str], int]:
    conn = sqlite3.connect(path)
    try:
        return {(ns, key): n for ns, key, n in conn.execute("SELECT namespace, key, n FROM counts")}
    finally:
        conn.close()


@pytest.mark.parametrize("isolation", [
    pytest.param("bubblewrap", marks=pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")),
    "process"])
def test_a_replay_in_a_worker_fills_the_cache_and_the_next_one_only_reads_it(isolation, tmp_path, monkeypatch):
    from tests.host.conftest import coding_session

    path = tmp_path / "cache" / "tc.sqlite"
    monkeypatch.setenv(persistent.ENV_VAR, str(path))
    monkeypatch.setenv(sandbox.ENV_SWITCH, "auto" if isolation == "bubblewrap" else "off")
    session = coding_session(8)

    first = _replay(session)
    assert first.isolation["isolation"] == isolation
    assert first.token_cache["hits"] == 0 and first.token_cache["new"] > 0
    stored = _rows(path)
    assert len(stored) == first.token_cache["new"] and {ns for ns, _ in stored} == {NS}

    persistent.forget_open_caches()  # as a second invocation: nothing of the first left in this process
    second = _replay(session)
    assert second.token_cache["new"] == 0 and second.token_cache["misses"] == 0
    assert second.token_cache["hits"] >= len(stored)
    assert _rows(path) == stored
    assert [r.tokens for r in second.trace.requests] == [r.tokens for r in first.trace.requests]


@pytest.mark.parametrize("off", ["env", "config"])
def test_the_cache_off_switch_reaches_the_worker(off, tmp_path, monkeypatch):
    from inspector.config import load_config
    from tests.host.conftest import coding_session

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    config = load_config(None)
    if off == "env":
        monkeypatch.setenv(persistent.ENV_VAR, "off")
    else:
        monkeypatch.delenv(persistent.ENV_VAR, raising=False)
        config.setdefault("inspector", {})["token_cache"] = False
    outcome = _replay(coding_session(3), config)
    assert "new" not in outcome.token_cache and outcome.token_cache.get("hits", 0) == 0
    assert not (tmp_path / "xdg").exists()


FORGER = BASE.format(name="forges_counts", at_import="", should="        pass", compress="        pass",
                     compress_now="False", extra="", update="""\
        import inspector.worker.jobs as jobs
        jobs.worker_counts = lambda: {"entries": {NS: [["0" * 20, 5], ["../../etc", 1]]}}""".replace(
                         "NS", repr(NS)))


def test_a_worker_sending_malformed_counts_has_them_refused_and_its_run_goes_on(tmp_path, monkeypatch):
    from tests.host.conftest import coding_session

    plugins = tmp_path / "plugins" / "context_engine" / "forges_counts"
    plugins.mkdir(parents=True)
    (plugins / "__init__.py").write_text(FORGER, encoding="utf-8")
    path = tmp_path / "tc.sqlite"
    monkeypatch.setenv(persistent.ENV_VAR, str(path))
    outcome = _replay(coding_session(3), engine="forges_counts", plugin_dirs=[tmp_path / "plugins"])
    assert outcome.token_cache["refused"].startswith("a malformed entry")
    assert _rows(path) == {}  # not even the well-formed one of the set


GOOD_KEY = "0123456789abcdef0123"


@pytest.mark.parametrize("report, why", [
    ({"entries": {"cl100k_base:older-rules": [[GOOD_KEY, 1]]}}, "unknown namespace"),
    ({"entries": {"approx:" + persistent.rules_hash(): [[GOOD_KEY, 1]]}}, "unknown namespace"),
    ({"entries": {NS: [[GOOD_KEY + "0" * 40, 1]]}}, "malformed"),  # too long
    ({"entries": {NS: [["0123456789ABCDEFXYZ!", 1]]}}, "malformed"),  # not hex
    ({"entries": {NS: [[GOOD_KEY, -1]]}}, "malformed"),
    ({"entries": {NS: [[GOOD_KEY, True]]}}, "malformed"),
    ({"entries": {NS: [[GOOD_KEY, 1.5]]}}, "malformed"),
    ({"entries": {NS: [[GOOD_KEY, "7"]]}}, "malformed"),
    ({"entries": {NS: [[GOOD_KEY, 2**40]]}}, "malformed"),
    ({"entries": {NS: [[GOOD_KEY, 1, "extra"]]}}, "malformed"),
    ({"entries": {NS: {GOOD_KEY: 1}}}, "not a list"),
    ({"entries": [[NS, GOOD_KEY, 1]]}, "not a report"),
    ("entries", "not a report"),
])
def test_malformed_reports_are_refused_whole(report, why, tmp_path):
    cache = TokenCache(tmp_path / "tc.sqlite")
    if isinstance(report, dict) and isinstance(report.get("entries"), dict):
        for items in report["entries"].values():
            if isinstance(items, list):
                items.append(["fedcba9876543210fedc", 3])  # a well-formed entry beside the bad one
    out = store_worker_counts(cache, report)
    assert why in out["refused"]
    assert cache.size() == 0


def test_a_report_past_the_entry_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(persistent, "MAX_WORKER_ENTRIES", 10)
    cache = TokenCache(tmp_path / "tc.sqlite")
    too_many = {"entries": {NS: [[f"{i:020x}", i] for i in range(11)]}}
    assert "more than 10 entries" in store_worker_counts(cache, too_many)["refused"]
    assert cache.size() == 0
    enough = {"entries": {NS: [[f"{i:020x}", i] for i in range(10)], f"o200k_base:{persistent.rules_hash()}": []},
              "hits": 4, "misses": 10}
    assert store_worker_counts(cache, enough) == {"hits": 4, "misses": 10, "new": 10}
    assert cache.get(NS, f"{9:020x}") == 9 and cache.get(NS, "tools:" + "a" * 24) is None


def test_a_read_only_cache_keeps_its_new_counts_for_the_supervisor(tmp_path, monkeypatch):
    monkeypatch.setattr(persistent, "MAX_WORKER_ENTRIES", 3)
    path = tmp_path / "tc.sqlite"
    writer = TokenCache(path)
    writer.put(NS, "a" * 20, 1)
    writer.flush()
    reader = TokenCache(path, read_only=True)
    assert reader.enabled and reader.get(NS, "a" * 20) == 1
    for i in range(5):
        reader.put(NS, f"{i:020x}", i)
    reader.flush()
    assert writer.size() == 1  # nothing written by the reader
    assert reader.take_new() == [(NS, f"{i:020x}", i) for i in range(3)]  # at most MAX_WORKER_ENTRIES
    assert reader.take_new() == []
