"""Retention on the command line: replay's column, row and --json, compare's row, ★ rule and lost facts."""

from __future__ import annotations

import json

from inspector.cli import main
from inspector.trace.io import load_trace

from .conftest import url_session

SMALL = "compression.threshold_tokens=300"  # the built-in compressor compacts this session several times


def write_session(path, turns=40):
    messages = [{k: v for k, v in m.items() if not k.startswith("x_")} for m in url_session(turns).messages]
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


def test_replay_shows_retention_per_compaction_and_per_run_and_saves_it(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    out_path = tmp_path / "run.trace.json"
    assert main(["replay", str(src), "--engine", "compressor", "--set", SMALL, "--quiet", "--out", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert "retained" in out.splitlines()[0].split()
    assert "facts retained" in out and "\n  compressor: " in out
    saved = load_trace(out_path)
    assert saved.derived["quality"]["retention"]["compactions"]  # measured and saved with the trace
    assert main(["replay", str(out_path), "--json"]) == 0  # the saved trace, as recorded
    run = json.loads(capsys.readouterr().out)["runs"][0]
    quality = run["quality"]
    assert 0.0 <= quality["retention"] <= 1.0 and quality["compactions"]
    per_turn = [r["retention"] for r in run["turns"] if r["retention"]]
    assert [v for vs in per_turn for v in vs] == [p["retention"] for p in quality["compactions"]]
    assert all(f["text"].startswith("https://example.com/") for f in quality["lost"])


def test_compare_ranks_retention_and_names_what_each_run_lost(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    code = main(["compare", str(src), "--engine", f"compressor:{SMALL}", "--engine", "compressor", "--quiet", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["key"]: r for r in data["rows"]}
    kept = rows["retention"]["values"]
    assert kept[1] == 1.0 and kept[0] < 1.0  # the run that never compacts keeps everything
    assert rows["retention"]["best"] == [False, True]
    # the compacting run sends fewer tokens, but the cost star goes to the run that keeps every fact
    assert rows["cost"]["values"][0] < rows["cost"]["values"][1]
    assert rows["cost"]["best"] == [False, True]
    assert len(data["quality"][0]["lost"]) > 0 and data["quality"][1]["lost"] == []
    assert main(["compare", str(src), "--engine", f"compressor:{SMALL}", "--engine", "compressor", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "lost url: 'https://example.com/doc-001-end'" in text
