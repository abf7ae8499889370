"""``context-inspector batch`` end to end: every task runs once, results are kept and reused,
Ctrl+C stops cleanly and the next run resumes."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.config import load_config
from tests.batch.conftest import write_session

REPO = Path(__file__).resolve().parents[2]


def run_batch(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["batch", *argv, "--json", "--quiet"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def sleepy_plugin(root: Path, delay: float = 0.0) -> Path:
    """A directory engine that records its process id and takes ``delay`` seconds per response."""
    folder = root / "context_engine" / "sleepy"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(f"""
        import os, time
        from agent.context_engine import ContextEngine

        class Sleepy(ContextEngine):
            def __init__(self):
                with open({str(root / "pids")!r}, "a") as fh:
                    fh.write(f"{{os.getpid()}}\\n")

            @property
            def name(self):
                return "sleepy"

            def update_from_response(self, usage):
                time.sleep({delay})
                self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

            def should_compress(self, prompt_tokens=None):
                return False

            def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
                return messages
    """), encoding="utf-8")
    return root


def test_every_session_runs_with_every_engine_and_setting(corpus, tmp_path, capsys):
    plugins = sleepy_plugin(tmp_path / "plugins")
    code, doc, err = run_batch(capsys, str(corpus), "--engine", "compressor", "--engine", "sleepy",
                               "--plugin-dir", str(plugins), "--sweep", "compression.threshold=0.5,0.3",
                               "--out", str(tmp_path / "out"), "--workers", "2")
    assert code == 0, err
    tasks = doc["tasks"]
    sessions = {t["session"] for t in tasks}
    assert len(sessions) == 5 and len(tasks) == 5 * 2 * 2
    assert {(t["engine"], t["setting"]) for t in tasks} == {
        (e, f"compression.threshold={v}") for e in ("compressor", "sleepy") for v in ("0.5", "0.3")}
    assert all(t["ok"] and t["error"] is None and not t["reused"] for t in tasks)
    assert {g["sessions"] for g in doc["groups"]} == {5}
    assert sum(g["tokens_sent"] for g in doc["groups"]) == sum(t["tokens_sent"] for t in tasks)


def test_a_task_result_is_the_replay_of_that_session(corpus, tmp_path, capsys):
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.sessions import load_session
    from inspector.trace.summary import summarise

    code, doc, err = run_batch(capsys, str(corpus / "b.json"), "--engine", "compressor",
                               "--set", "compression.threshold=0.3", "--out", str(tmp_path / "out"), "--workers", "1")
    assert code == 0, err
    [row] = doc["tasks"]
    config = load_config(None, {"compression": {"threshold": 0.3}})
    loaded = load_engine("compressor", config)
    try:
        expected = summarise(replay(load_session(str(corpus / "b.json")), loaded, config))
    finally:
        loaded.close()
    for field in ("requests", "compressions", "tokens_sent", "cache_read", "cache_write", "cost", "peak_prompt", "faults"):
        assert row[field] == expected[field], field


def test_running_the_same_batch_again_replays_nothing(corpus, tmp_path, capsys):
    args = [str(corpus), "--engine", "compressor", "--out", str(tmp_path / "out"), "--workers", "2"]
    code, first, err = run_batch(capsys, *args)
    assert code == 0, err
    log = tmp_path / "out" / "workers.log"
    started = time.perf_counter()
    code, second, err = run_batch(capsys, *args)
    assert code == 0, err
    assert all(t["reused"] for t in second["tasks"])
    strip = [{k: v for k, v in t.items() if k != "reused"} for t in first["tasks"]]
    assert [{k: v for k, v in t.items() if k != "reused"} for t in second["tasks"]] == strip
    assert time.perf_counter() - started < 5  # no worker was started for it
    assert not log.exists() or "Traceback" not in log.read_text()


def test_a_changed_setting_or_session_runs_again_and_only_that(corpus, tmp_path, capsys):
    out = str(tmp_path / "out")
    run_batch(capsys, str(corpus), "--engine", "compressor", "--out", out, "--workers", "2")
    write_session(corpus / "a.json", 7, seed=11)  # edited: its content hash changes
    code, doc, _ = run_batch(capsys, str(corpus), "--engine", "compressor", "--out", out, "--workers", "2")
    assert code == 0
    fresh = [t["session"] for t in doc["tasks"] if not t["reused"]]
    assert fresh == [str(corpus / "a.json")]
    code, doc, _ = run_batch(capsys, str(corpus / "b.json"), "--engine", "compressor", "--set",
                             "compression.threshold=0.4", "--out", out, "--workers", "1")
    assert [t["reused"] for t in doc["tasks"]] == [False]


def test_csv_and_html_have_one_row_per_task_and_refuse_to_overwrite_user_files(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    table, report = tmp_path / "tasks.csv", tmp_path / "report.html"
    code, doc, err = run_batch(capsys, str(corpus / "a.json"), str(corpus / "state.db"), "--engine", "compressor",
                               "--sweep", "compression.threshold=0.5,0.3", "--out", str(out), "--workers", "2",
                               "--csv", str(table), "--html", str(report))
    assert code == 0, err
    with open(table, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(doc["tasks"]) == 6
    assert {r["key"] for r in rows} == {t["key"] for t in doc["tasks"]}
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # Run again: our own files are replaced; a file of the user's is not.
    mine = tmp_path / "mine.csv"
    mine.write_text("precious,data\n", encoding="utf-8")
    code, _, err = run_batch(capsys, str(corpus / "a.json"), "--engine", "compressor", "--out", str(out),
                             "--csv", str(mine))
    assert code == 2 and "not a file the inspector wrote" in err
    assert mine.read_text(encoding="utf-8") == "precious,data\n"
    code, _, err = run_batch(capsys, str(corpus / "a.json"), "--engine", "compressor", "--out", str(out),
                             "--csv", str(table))
    assert code == 0, err


def test_the_table_names_each_engine_and_setting(corpus, tmp_path, capsys):
    code = main(["batch", str(corpus / "a.json"), "--engine", "compressor", "--sweep",
                 "compression.threshold=0.5,0.3", "--out", str(tmp_path / "out"), "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["engine", "setting", "sessions", "failed"]
    assert [line.split()[:3] for line in lines[1:]] == [["compressor", "compression.threshold=0.5", "1"],
                                                         ["compressor", "compression.threshold=0.3", "1"]]
    assert "tasks" in err  # the progress line


def test_bad_options_are_said_before_any_work(corpus, tmp_path, capsys):
    for argv, words in (
        (["--sweep", "compression.threshold"], "--sweep expects"),
        (["--engine", "nope"], "nope"),
        (["--baseline", "other"], "--baseline"),
        (["--workers", "0"], "--workers"),
    ):
        code, _, err = run_batch(capsys, str(corpus / "a.json"), "--out", str(tmp_path / "out"), *argv)
        assert code == 2 and words in err, (argv, err)
    code, _, err = run_batch(capsys, str(tmp_path / "nothing-here.json"), "--out", str(tmp_path / "out"))
    assert code == 2 and "no session to replay" in err


def test_a_swept_value_the_config_check_doubts_is_warned_about(corpus, tmp_path, capsys):
    code, doc, err = run_batch(capsys, str(corpus / "a.json"), "--sweep", "compression.threshold=0.5,lots",
                               "--out", str(tmp_path / "out"), "--workers", "1")
    assert "warning: --sweep compression.threshold=lots: config compression.threshold" in err
    assert len(doc["tasks"]) == 2


def test_a_failing_session_is_one_failed_task_and_the_others_run(corpus, tmp_path, capsys):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "only_system.json").write_text(json.dumps({"messages": [{"role": "system", "content": "hi"}]}))
    code, doc, err = run_batch(capsys, str(corpus / "a.json"), str(broken), "--engine", "compressor",
                               "--out", str(tmp_path / "out"), "--workers", "1")
    assert code == 0, err
    assert "nothing to replay" in err and len(doc["tasks"]) == 1


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to check that no worker is left")
def test_ctrl_c_stops_cleanly_keeps_partial_results_and_the_next_run_resumes(tmp_path):
    folder = tmp_path / "many"
    for i in range(4):
        write_session(folder / f"s{i}.json", 12, seed=20 + i)
    plugins = sleepy_plugin(tmp_path / "plugins", delay=0.05)
    out = tmp_path / "out"
    temp = tmp_path / "temp"  # where the workers' folders go
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    argv = [sys.executable, "-m", "inspector.cli", "batch", str(folder), "--engine", "sleepy", "--plugin-dir",
            str(plugins), "--out", str(out), "--workers", "1"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = out / "results.sqlite"
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and not done:
        time.sleep(0.2)
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    done = conn.execute("SELECT count(*) FROM results").fetchone()[0]
                except sqlite3.OperationalError:  # the file is there, its table not yet
                    continue
    assert done, "no task finished in time"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted:" in stderr and "run the same command again to resume" in stderr
    pids = [int(p) for p in (plugins / "pids").read_text().split()]
    assert pids and not any(_alive(p) for p in pids if p != proc.pid)
    assert not list(temp.glob("context-inspector-worker-*")), "no worker folder is left behind"
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT count(*) FROM results").fetchone()[0]
    assert 1 <= kept < 4
    assert stdout.splitlines()[0].startswith("engine")  # the partial results' table
    # Resume: only the tasks without a result run.
    again = subprocess.run(argv + ["--json", "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    tasks = json.loads(again.stdout)["tasks"]
    assert len(tasks) == 4 and sum(1 for t in tasks if t["reused"]) == kept


def test_workers_get_one_engine_after_another_largest_session_first(tmp_path):
    from inspector.batch.cli import schedule

    sizes = {"small": 10, "large": 3000, "medium": 700}
    for name, size in sizes.items():
        (tmp_path / name).write_text("x" * size)
    tasks = [{"session": {"path": str(tmp_path / name)}, "engine": engine, "setting_label": label, "name": name}
             for name in sizes for engine in ("compressor", "recall") for label in ("", "threshold=0.5")]
    order = [(t["engine"], t["setting_label"], t["name"]) for t in schedule(tasks)]
    # Two tasks of one session never run side by side while others wait: the second would tokenise
    # what the first is counting instead of reading it from the shared cache.
    assert order == [(engine, label, name)
                     for engine in ("compressor", "recall") for label in ("", "threshold=0.5")
                     for name in ("large", "medium", "small")]
