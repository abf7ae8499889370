"""``context-inspector compare`` end to end on a small OpenAI-format session file."""

from __future__ import annotations

import json

import pytest

from inspector.cli import main

from .conftest import session_messages


@pytest.fixture
def session_file(tmp_path):
    try:
        from inspector.sessions import load_session
    except ImportError as exc:  # pragma: no cover - the session readers are another engineer's work
        pytest.skip(f"session readers not importable yet: {exc}")
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session_messages(turns=6)), encoding="utf-8")
    try:
        load_session(str(path))
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"the OpenAI reader cannot load a plain message array yet: {exc}")
    return path


def test_json_html_and_bundle(session_file, plugin_dir, tmp_path, capsys):
    html_out, bundle = tmp_path / "r.html", tmp_path / "c.json.gz"
    code = main(["compare", str(session_file), "--engine", "cmp_tail", "--engine", "cmp_never",
                 "--plugin-dir", str(plugin_dir), "--set", "model.default=claude-opus-4-5",
                 "--json", "--html", str(html_out), "--out", str(bundle)])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert [r["label"] for r in data["runs"]] == ["cmp_tail", "cmp_never"]
    rows = {r["key"]: r for r in data["rows"]}
    assert rows["requests"]["values"] == [12, 12]
    assert rows["compressions"]["values"][0] > 0 == rows["compressions"]["values"][1]
    assert rows["peak_prompt"]["best"] == [True, False]
    assert "cmp_tail: turn 6/6" in err  # progress on stderr
    assert html_out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    from inspector.compare import load_comparison

    assert load_comparison(bundle).labels == ["cmp_tail", "cmp_never"]


def test_text_table(session_file, plugin_dir, capsys):
    code = main(["compare", str(session_file), "--engine", "cmp_tail", "--engine",
                 "cmp_tail:label=again", "--plugin-dir", str(plugin_dir), "--quiet", "--turns"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    assert "peak prompt tokens" in out and "again" in out and "*" in out
    assert "turn" in out.splitlines()[0]  # the per-turn table from the replay command comes first


def test_a_run_with_faults_is_told_in_words(session_file, plugin_dir, capsys):
    code = main(["compare", str(session_file), "--engine", "cmp_never", "--engine", "cmp_raises",
                 "--plugin-dir", str(plugin_dir), "--quiet"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "faults (cmp_raises):" in out and "should_compress exploded" in out
    assert "faults (cmp_never)" not in out


def test_failed_run_still_reports_the_others_and_exits_2(session_file, plugin_dir, capsys):
    code = main(["compare", str(session_file), "--engine", "cmp_never", "--engine", "no_such_engine",
                 "--plugin-dir", str(plugin_dir), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "error: run 'no_such_engine'" in err and "unknown context engine" in err
    assert "cmp_never" in out and "load_failed" in out


def test_a_runs_own_settings_are_checked_like_set(session_file, capsys):
    assert main(["compare", str(session_file), "--engine", "compressor:compression.thresold=0.6",
                 "--engine", "compressor:compression.threshold=abc", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "run 'compressor[thresold=0.6]': config compression.thresold: unknown key (did you mean" in err
    assert "run 'compressor[threshold=abc]': config compression.threshold: expected a number" in err


def test_a_run_the_host_refuses_to_start_is_not_ok(session_file, capsys):
    code = main(["compare", str(session_file), "--engine", "compressor",
                 "--engine", "compressor:model.context_length=30000", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and "refused" in out and "below Hermes' minimum of 64000" in err


@pytest.mark.parametrize("argv, message", [
    (["--engine", "x:"], "nothing after ':'"),
    (["--engine", "x:a=1", "--set", "nokeyvalue"], "key=value"),
    (["--config", "/nonexistent/config.yaml"], "cannot read config"),
])
def test_usage_errors_exit_2(session_file, argv, message, capsys):
    code = main(["compare", str(session_file), *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err


def test_missing_session_exits_2(tmp_path, capsys):
    code = main(["compare", str(tmp_path / "missing.json"), "--engine", "compressor", "--engine", "compressor"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: ") and "missing.json" in err
