"""`context-inspector follow` takes its settings and its session the way `replay` does."""

from __future__ import annotations

import json

import pytest

from inspector.cli import main
from inspector.trace.io import load_trace
from tests.sessions import hermes_db_fixtures as fx

FOLLOW_BRIEFLY = ["--engine", "compressor", "--interval", "0.05", "--max-seconds", "0.5"]


def _transcript(tmp_path):
    path = tmp_path / "done.jsonl"
    rows = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _two_session_db(tmp_path):
    path = tmp_path / "state.db"
    conn = fx.create(path)
    for sid, t0 in (("first", 1_760_000_000.0), ("second", 1_760_001_000.0)):
        fx.add_session(conn, sid, started_at=t0)
        fx.plain_exchange(conn, sid, t0, f"prompt of {sid}")
    conn.commit()
    conn.close()
    return path


def test_set_overrides_config_values_in_the_followed_replay(tmp_path):
    out = tmp_path / "follow.json.gz"
    code = main(["follow", str(_transcript(tmp_path)), *FOLLOW_BRIEFLY, "--set", "compression.threshold=0.9",
                 "--set", "inspector.cache_profile=openai", "--out", str(out)])
    assert code == 0
    trace = load_trace(out)
    assert trace.meta["config"]["compression"]["threshold"] == 0.9
    assert trace.meta["cache_profile"] == "openai"
    assert trace.state_at(len(trace.events) - 1)["threshold_tokens"] == int(0.9 * 200_000)


@pytest.mark.parametrize("bad", ["compression.threshold", "=0.6", "compression..threshold=1", "compression.threshold=[0.6"])
def test_a_bad_set_is_the_same_one_line_error_as_replays(tmp_path, capsys, bad):
    src = _transcript(tmp_path)
    assert main(["replay", str(src), "--quiet", "--set", bad]) == 2
    replay_err = capsys.readouterr().err
    assert main(["follow", str(src), *FOLLOW_BRIEFLY, "--set", bad]) == 2
    follow_err = capsys.readouterr().err
    assert follow_err == replay_err
    assert follow_err.startswith("error: ") and follow_err.count("\n") == 1


@pytest.mark.parametrize("option", ["--session-id", "--session"])
def test_session_id_picks_a_session_of_a_state_db_and_session_is_its_alias(tmp_path, option):
    out = tmp_path / "follow.json"
    code = main(["follow", str(_two_session_db(tmp_path)), *FOLLOW_BRIEFLY, option, "second", "--out", str(out)])
    assert code == 0
    trace = load_trace(out)
    assert trace.meta["session"]["id"] == "second" and len(trace.requests) == 2


def test_help_names_session_id_first_and_session_as_its_alias(capsys):
    with pytest.raises(SystemExit):
        main(["follow", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--session-id SESSION_ID, --session SESSION_ID" in text and "--session is an alias" in text
    assert "--set KEY=VALUE" in text


def test_what_the_engine_prints_goes_to_stderr_and_stdout_holds_only_the_turn_rows(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    plugins = root / "tests" / "plugins_fixtures" / "basic"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "inspector.cli", "follow", str(_transcript(tmp_path)),
                           "--plugin-dir", str(plugins), "--engine", "fixture_chatty", "--interval", "0.05",
                           "--settle", "0", "--max-seconds", "1"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage: " in done.stderr and "usage: " not in done.stdout  # fixture_chatty prints in update_from_response
    assert done.stdout.strip() and all(line.startswith("turn") for line in done.stdout.splitlines())


def test_an_engine_hermes_cannot_start_ends_the_follow_at_once_saying_why(tmp_path, capsys):
    import time

    folder = tmp_path / "plugins" / "context_engine" / "bad_start"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from agent.context_engine import ContextEngine\n\n\n"
        "class BadStart(ContextEngine):\n"
        "    name = 'bad_start'\n\n"
        "    def update_model(self, model, context_length, **kwargs):\n"
        "        raise RuntimeError('no such model here')\n\n"
        "    def update_from_response(self, usage):\n        pass\n\n"
        "    def should_compress(self, prompt_tokens=None):\n        return False\n\n"
        "    def compress(self, messages, **kwargs):\n        return messages\n", encoding="utf-8")
    started = time.monotonic()
    code = main(["follow", str(_transcript(tmp_path)), "--plugin-dir", str(tmp_path / "plugins"), "--engine",
                 "bad_start", "--interval", "0.05", "--settle", "0", "--max-seconds", "30"])
    assert code == 2 and time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert "update_model raised at agent start" in err and "no such model here" in err


def test_while_nothing_was_played_a_source_that_cannot_be_read_is_said_once(tmp_path, capsys):
    code = main(["follow", str(_two_session_db(tmp_path)), "--session-id", "nope", *FOLLOW_BRIEFLY])
    err = capsys.readouterr().err
    assert code == 1 and err.count("waiting: cannot read") == 1 and "nope" in err


def test_follow_says_how_it_calibrated_usage_and_the_trace_records_it(tmp_path, capsys):
    from tests.live.growing import CodexLog
    from tests.live.test_follow_usage import _turn

    log = CodexLog(tmp_path / "rollout.jsonl")
    for k in range(2):
        _turn(log, k)
    out = tmp_path / "follow.json"
    assert main(["follow", str(log.path), *FOLLOW_BRIEFLY, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "usage calibrated on the 2 recorded call(s) seen so far: head " in err
    um = load_trace(out).meta["usage_model"]
    assert um["mode"] == "calibrated" and um["calibration"]["calls"] == 2
    assert [r["recorded_calls"] for r in um["refits"]] == [2]
