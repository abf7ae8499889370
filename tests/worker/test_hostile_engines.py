"""Hostile engines cannot take the command, the user's files or keys with them.

Each engine (a plugin folder, tests/worker/conftest.py) misbehaves in one way. Every test runs a
real command through :func:`inspector.cli.main` (so through worker processes) and asserts: it
ends within its bound, the fault is recorded with the engine's location, and the fake key in the
environment appears in no output; the ``fake_home`` fixture asserts that the fake ``HOME`` is
byte-identical afterwards.
"""

from __future__ import annotations

import gzip
import json
import os
import pwd
import time

import pytest

from inspector.cli import main
from inspector.worker import sandbox
from tests.worker.conftest import FAKE_KEY, tree_hash

BOUND = 30.0  # seconds any command may take here (the config's timeouts are 1-2 s)
BWRAP = sandbox.choose({}).kind == "bubblewrap"


def _run(capsys, argv):
    start = time.monotonic()
    code = main(argv)
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    return code, out, err, took


def _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config, name):
    out_path = tmp_path / "trace.json.gz"
    code, out, err, took = _run(capsys, ["replay", str(session_file), "--engine", name, "--plugin-dir",
                                         str(hostile_dir), "--config", str(hostile_config), "--json",
                                         "--out", str(out_path)])
    saved = gzip.decompress(out_path.read_bytes()).decode() if out_path.exists() else ""
    return code, out, err, took, saved


def _no_key(*texts):
    for text in texts:
        assert FAKE_KEY not in text


# name -> (exit status, run status in --json (None: no trace, the error is on stderr), hook the fault names)
CASES = {
    "regex_select": (2, "timeout", "select_context"),
    "regex_hook": (2, "timeout", "should_compress"),
    "regex_compress": (2, "timeout", "compress"),
    "exit_in_hook": (2, "died", "update_from_response"),
    "segfault_in_hook": (2, "died", "update_from_response"),
    "raises_base": (2, "died", "update_from_response"),
    "raises_interrupt": (2, "died", "update_from_response"),
    "raises_generator_exit": (2, "died", "update_from_response"),
    "blocks_signals": (2, "timeout", "update_from_response"),
    "import_hangs": (2, None, "<module>"),
    "import_regex": (2, None, "<module>"),
    "exit_at_import": (2, None, ""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_frozen_or_dying_engine_is_a_located_fault_and_the_command_ends(
        name, capsys, tmp_path, session_file, hostile_dir, hostile_config, fake_home):
    before = tree_hash(fake_home)
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config, name)
    want_code, want_status, hook = CASES[name]
    assert took < BOUND and code == want_code
    if want_status is None:  # no trace: the engine never loaded; stderr says where it stopped
        assert out == "" and f"{name!r}" in err and f"context_engine/{name}" in err
    else:
        run = json.loads(out)["runs"][0]
        assert run["status"] == want_status
        fault = run["faults"][-1]
        assert f"context_engine/{name}/__init__.py" in fault["where"] and fault["where"].endswith(f" in {hook}")
        assert saved and json.loads(saved)["meta"]["worker_status"] == want_status  # the partial trace is kept
        if name == "segfault_in_hook":
            assert "SIGSEGV" in fault["message"]
    assert tree_hash(fake_home) == before
    _no_key(out, err, saved)


def test_a_fork_in_a_hook_cannot_write_our_stdout_or_output(capsys, tmp_path, session_file, hostile_dir,
                                                           hostile_config, fake_home):
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config, "forks")
    assert took < BOUND and code == 0
    data = json.loads(out)  # one JSON document: the forked children print to the worker's pipes only
    assert data["runs"][0]["status"] == "ok" and json.loads(saved)["meta"]["label"] == "forks"
    _no_key(out, err, saved)


def test_a_thread_that_keeps_printing_does_not_keep_the_command_alive(capsys, tmp_path, session_file, hostile_dir,
                                                                      hostile_config, fake_home):
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config,
                                          "chatty_thread")
    assert took < BOUND and code == 0
    assert json.loads(out)["runs"][0]["status"] == "ok" and "chatter" in err and "chatter" not in out
    _no_key(out, err, saved)


def test_a_million_messages_from_compress_end_within_the_memory_limit(capsys, tmp_path, session_file, hostile_dir,
                                                                      hostile_config, fake_home):
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config,
                                          "million_messages")
    assert took < BOUND
    run = json.loads(out)["runs"][0]
    # Either the host measured and refused the result, or the worker outgrew its limit and was killed.
    assert run["status"] in ("ok", "memory") and run["faults"]
    assert any(f["hook"] == "compress" or "memory" in f["message"] for f in run["faults"])
    _no_key(out, err, saved)


@pytest.mark.skipif(not BWRAP, reason="no bubblewrap here: without it, $HOME, subprocesses and pwd.getpwuid() reach "
                                      "the real home (the README states this limit)")
def test_writes_through_home_a_shell_and_getpwuid_reach_nothing(capsys, tmp_path, session_file, hostile_dir,
                                                                hostile_config, fake_home):
    before = tree_hash(fake_home)
    marker = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".context-inspector-hostile")
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config, "writes_home")
    assert took < BOUND and code == 0
    assert tree_hash(fake_home) == before and not os.path.exists(marker)
    assert json.loads(saved)["meta"]["worker"]["isolation"] == "bubblewrap"


def test_an_engine_printing_the_environment_shows_no_key(capsys, tmp_path, session_file, hostile_dir, hostile_config,
                                                         fake_home):
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config,
                                          "prints_environ")
    assert took < BOUND and code == 0
    assert "'HOME'" in saved or "HOME" in err  # the engine did print the environment
    _no_key(out, err, saved)


def test_in_a_comparison_the_other_runs_finish(capsys, tmp_path, session_file, hostile_dir, hostile_config, fake_home):
    before = tree_hash(fake_home)
    code, out, err, took = _run(capsys, ["compare", str(session_file), "--engine", "regex_hook", "--engine",
                                         "exit_in_hook", "--engine", "compressor", "--plugin-dir", str(hostile_dir),
                                         "--config", str(hostile_config), "--json", "--quiet"])
    assert took < BOUND and code == 2
    assert "run 'regex_hook'" in err and "run 'exit_in_hook'" in err and "run 'compressor'" not in err
    assert "context_engine/regex_hook/__init__.py" in err and "context_engine/exit_in_hook/__init__.py" in err
    assert json.loads(out)  # the table of every run, the healthy one included
    assert tree_hash(fake_home) == before
    _no_key(out, err)


def test_engines_lists_plugins_whose_import_hangs_or_exits_as_not_loading(capsys, hostile_dir, hostile_config,
                                                                          fake_home):
    code, out, err, took = _run(capsys, ["engines", "--plugin-dir", str(hostile_dir), "--config",
                                         str(hostile_config), "--json"])
    assert took < BOUND * 2 and code == 0
    infos = {i["name"]: i for i in json.loads(out)}
    for name in ("import_hangs", "import_regex", "exit_at_import"):
        assert infos[name]["loads"] is False and infos[name]["error"]
    assert infos["regex_hook"]["loads"] and infos["compressor"]["loads"]
    _no_key(out, err)


def test_doctor_reports_a_frozen_hook_as_a_failure(capsys, hostile_dir, hostile_config, fake_home):
    code, out, err, took = _run(capsys, ["doctor", "regex_hook", "--plugin-dir", str(hostile_dir), "--config",
                                         str(hostile_config), "--json"])
    assert took < BOUND and code == 1
    report = json.loads(out)
    failure = next(f for f in report["findings"] if f["status"] == "fail")
    assert "should_compress" in failure["message"] and "context_engine/regex_hook" in failure["message"]
    _no_key(out, err)


def test_doctor_ends_when_compress_returns_a_million_messages(capsys, hostile_dir, hostile_config, fake_home):
    before = tree_hash(fake_home)
    code, out, err, took = _run(capsys, ["doctor", "million_messages", "--plugin-dir", str(hostile_dir), "--config",
                                         str(hostile_config), "--json"])
    assert took < BOUND and code == 1
    failures = [f for f in json.loads(out)["findings"] if f["status"] == "fail"]
    # Either compress failed its checks (its timeout) or the worker outgrew its limit and was killed.
    assert any("compress" in f["check"] or "inspector.worker_memory_mb" in f["message"] for f in failures)
    assert tree_hash(fake_home) == before
    _no_key(out, err)


def test_frames_forged_by_engine_code_kill_its_worker_not_the_command(capsys, tmp_path, session_file, hostile_dir,
                                                                      hostile_config, fake_home):
    code, out, err, took, saved = _replay(capsys, tmp_path, session_file, hostile_dir, hostile_config,
                                          "forges_frames")
    assert took < BOUND and code == 2
    run = json.loads(out)["runs"][0]
    assert run["status"] == "protocol" and "stream broke" in run["faults"][-1]["message"]
    _no_key(out, err, saved)
