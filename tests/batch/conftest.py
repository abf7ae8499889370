"""Small corpora for batch tests: OpenAI-format session files in nested folders and a Hermes state.db."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.bench.host_bench import make_session
from inspector.sessions.model import wire_message
from inspector.tokens import persistent
from tests.sessions import hermes_db_fixtures as hdb


@pytest.fixture(autouse=True)
def _private_caches(tmp_path, monkeypatch):
    """Each test has its own token cache and its own default result folder (the user's are untouched)."""
    monkeypatch.setenv(persistent.ENV_VAR, str(tmp_path / "token-cache.sqlite"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    # The test engines note their process ids in the test's folder, which bubblewrap keeps read-only;
    # containment has its own suite (tests/worker), these test the batch around it.
    monkeypatch.setenv("CONTEXT_INSPECTOR_SANDBOX", "off")
    yield
    persistent.forget_open_caches()


def write_session(path: Path, turns: int, seed: int) -> Path:
    session = make_session(turns, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": [wire_message(m) for m in session.messages]}), encoding="utf-8")
    return path


def write_state_db(path: Path, sessions: int = 2) -> Path:
    conn = hdb.create(path)
    for i in range(sessions):
        sid = f"db-session-{i}"
        hdb.add_session(conn, sid, model="anthropic/claude-sonnet-4.5", title=f"<b>title {i}</b>")
        for n in range(3):
            hdb.plain_exchange(conn, sid, 1_760_000_000.0 + 100 * n, f"task {i}.{n}", n)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    """sessions/a.json, sessions/b.json, sessions/deep/c.json, a note, and a state.db with two sessions."""
    root = tmp_path / "sessions"
    write_session(root / "a.json", 6, seed=1)
    write_session(root / "b.json", 8, seed=2)
    write_session(root / "deep" / "c.json", 5, seed=3)
    (root / "README.txt").write_text("notes about these sessions", encoding="utf-8")
    (root / "junk.json").write_text('{"not": "a transcript"}', encoding="utf-8")
    write_state_db(root / "state.db")
    return root
