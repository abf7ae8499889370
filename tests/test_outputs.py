"""Output options never overwrite the user's data: the inputs, or files the inspector did not write."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from inspector.cli import main


def _session(path: Path) -> Path:
    messages = [{"role": "user", "content": f"q{i}"} if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}
                for i in range(6)]
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_out_and_html_refuse_the_input_and_files_they_did_not_write(tmp_path: Path, capsys) -> None:
    src = _session(tmp_path / "s.json")
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}', encoding="utf-8")
    before = {p: _digest(p) for p in (src, notes)}
    for args in (["replay", str(src), "--out", str(src)],
                 ["replay", str(src), "--out", str(notes)],
                 ["compare", str(src), "--engine", "compressor", "--engine", "compressor", "--html", str(src)],
                 ["compare", str(src), "--engine", "compressor", "--engine", "compressor", "--out", str(notes)]):
        assert main([*args, "--quiet"]) == 2, args
        err = capsys.readouterr().err
        assert "is one of the inputs" in err or "is not a file the inspector wrote" in err
    assert {p: _digest(p) for p in (src, notes)} == before
    trace = tmp_path / "run.trace.json"
    assert main(["replay", str(src), "--out", str(trace), "--quiet"]) == 0
    assert main(["replay", str(src), "--out", str(trace), "--quiet"]) == 0, "re-running over our own trace is fine"


def test_a_database_and_its_side_files_are_inputs(tmp_path: Path, capsys) -> None:
    from tests.sessions import hermes_db_fixtures as fx

    db = tmp_path / "state.db"
    conn = fx.create(db)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", 1_760_000_000.0, "hello")
    conn.commit()
    conn.close()
    before = _digest(db)
    assert main(["replay", f"{db}#s1", "--out", str(db), "--quiet"]) == 2
    assert main(["replay", f"{db}#s1", "--out", f"{db}-wal", "--quiet"]) == 2
    assert "is one of the inputs" in capsys.readouterr().err and _digest(db) == before
