"""`context-inspector replay` end to end on a small transcript file."""

from __future__ import annotations

import json

from inspector.cli import main
from inspector.trace.io import load_trace

from .conftest import coding_session


def write_session(path, turns=4):
    session = coding_session(turns)
    messages = []
    for m in session.messages:
        m = {k: v for k, v in m.items() if not k.startswith("x_")}
        messages.append(m)
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


def test_replay_prints_a_turn_table_and_summary(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--engine", "compressor", "--quiet"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["turn", "req", "prompt(tok)"]
    assert sum(1 for line in lines if line.strip().split(" ")[0].isdigit()) == 4
    assert "compressions committed" in out and "cache hit rate" in out


def test_replay_side_by_side_and_saved_traces(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    out_path = tmp_path / "run.json.gz"
    code = main(["replay", str(src), "--engine", "compressor", "--engine", "compressor",
                 "--set", "compression.threshold=0.8", "--out", str(out_path), "--quiet"])
    assert code == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "compressor:prompt" in header and "compressor#2:prompt" in header
    for name in ("compressor", "compressor#2"):
        trace = load_trace(tmp_path / f"run.{name}.json.gz")
        assert len(trace.requests) == 8
    assert "api_key" not in json.dumps(trace.meta["config"]).replace("api_key_env", "")


def test_json_output(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["engine"] == "compressor"
    assert data["runs"][0]["summary"]["requests"] == 8


def test_errors_are_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["replay", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "bad.json" in err and "Traceback" not in err
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--engine", "no_such_engine", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no_such_engine" in err and "compressor" in err
