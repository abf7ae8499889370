"""``context-inspector sessions``: a table, JSON, and exit code 2 with one line on errors."""

from __future__ import annotations

import json
from pathlib import Path

from inspector.cli import main

from . import hermes_db_fixtures as fx


def _db(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "20250101_000000_aaaaaa", title="Refactor", model="gpt-5", input_tokens=1000, output_tokens=20)
    fx.plain_exchange(conn, "20250101_000000_aaaaaa", 1_760_000_000.0, "go")
    fx.add_session(conn, "20250102_000000_bbbbbb", title="Second", started_at=1_760_100_000.0)
    conn.commit()
    conn.close()
    return path


def test_prints_a_table_of_sessions(tmp_path: Path, capsys):
    assert main(["sessions", str(_db(tmp_path))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["ID", "TITLE", "SOURCE", "MODEL"]
    assert out[1].startswith("20250101_000000_aaaaaa") and "Refactor" in out[1] and "1,000" in out[1]
    assert out[2].startswith("20250102_000000_bbbbbb")


def test_json_output(tmp_path: Path, capsys):
    assert main(["sessions", str(_db(tmp_path)), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["20250101_000000_aaaaaa", "20250102_000000_bbbbbb"]
    assert rows[0]["message_count"] == 4 and rows[0]["prompt_tokens"] == 1000


def test_errors_exit_2_with_a_message_and_no_traceback(tmp_path: Path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    assert main(["sessions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(bad) in err and "Traceback" not in err
    assert main(["sessions", str(tmp_path / "missing.db")]) == 2
    assert main(["sessions", str(bad), "--format", "nope"]) == 2


def test_entries_a_listing_had_to_skip_are_reported(tmp_path: Path, capsys):
    good = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
    path = tmp_path / "trajectories.jsonl"
    path.write_text("\n".join([json.dumps(good), '{"conversations": [', json.dumps({"conversations": [
        {"from": "narrator", "value": "x"}]}), json.dumps(good)]) + "\n", encoding="utf-8")
    assert main(["sessions", str(path)]) == 0
    captured = capsys.readouterr()
    assert len([line for line in captured.out.splitlines() if line[:1].isdigit()]) == 2
    assert "line 2: skipped" in captured.err and "entry 3" in captured.err


def test_terminal_control_characters_from_a_transcript_are_printed_visibly(tmp_path: Path, capsys):
    path = tmp_path / "evil.json"
    path.write_text(json.dumps([{"role": "user", "content": "\x1b]0;PWNED\x07\x1b[31mRED title"},
                                {"role": "assistant", "content": "ok"}]), encoding="utf-8")
    assert main(["sessions", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def test_a_saved_trace_is_named_as_one_not_as_a_broken_transcript(tmp_path: Path, capsys):
    src = tmp_path / "s.json"
    src.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]),
                   encoding="utf-8")
    trace = tmp_path / "t.trace.json"
    assert main(["replay", str(src), "--out", str(trace), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["sessions", str(trace)]) == 2
    assert "is a saved trace, not a transcript" in capsys.readouterr().err
