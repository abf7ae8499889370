"""`context-inspector replay` end to end on a small transcript file."""

from __future__ import annotations

import json

import pytest

from inspector.cli import main
from inspector.trace.io import load_trace

from . import lone_user
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
    assert lines[0].split()[:4] == ["turn", "req", "last", "prompt"]
    assert sum(1 for line in lines if line.strip().split(" ")[0].isdigit()) == 4
    assert "compressions committed" in out and "cache hit rate" in out


def test_replay_side_by_side_and_saved_traces(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    out_path = tmp_path / "run.json.gz"
    code = main(["replay", str(src), "--engine", "compressor", "--engine", "compressor",
                 "--set", "compression.threshold=0.8", "--out", str(out_path), "--quiet"])
    assert code == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "compressor:last prompt" in header and "compressor#2:last prompt" in header
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


def _table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.split() and line.split()[0].isdigit()]


def test_a_last_turn_without_a_reply_is_a_table_row_as_the_progress_line_counts_it(tmp_path, capsys):
    src = lone_user.openai_object(tmp_path)
    assert main(["replay", str(src), "--engine", "compressor"]) == 0
    captured = capsys.readouterr()
    assert "turn 3/3 (100%)" in captured.err
    rows = _table_rows(captured.out)
    assert [row.split()[0] for row in rows] == ["0", "1", "2"]
    turn, requests, prompt, rough, recorded, threshold, compressions = rows[2].split()[:7]
    assert (requests, prompt, rough, recorded, compressions) == ("0", "-", "-", "-", "0")
    assert threshold == rows[1].split()[5]  # the figures the turn has are shown
    assert rows[2].endswith("no reply: no provider call")
    assert not any("no reply" in row for row in rows[:2])


def test_a_comparison_lines_the_unanswered_turn_up_across_engines(tmp_path, capsys):
    src = lone_user.openai_object(tmp_path)
    assert main(["replay", str(src), "--engine", "compressor", "--engine", "compressor", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "note"
    rows = _table_rows("\n".join(lines))
    assert [row.split()[0] for row in rows] == ["0", "1", "2"]
    cells = rows[2].split()
    # each run: no prompt, its compressions, no cache read, no compaction whose retention to show
    assert cells[1:9] == ["-", "0", "0", "-", "-", "0", "0", "-"]
    assert rows[2].endswith("no reply: no provider call")
    assert not any("no reply" in row for row in rows[:2])


def test_a_comparison_without_unanswered_turns_has_no_note_column(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--engine", "compressor", "--engine", "compressor", "--quiet"]) == 0
    assert "note" not in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("fmt", sorted(lone_user.WRITERS))
def test_the_json_has_every_turn_and_marks_an_unanswered_last_one_in_every_format(tmp_path, capsys, fmt):
    src = lone_user.WRITERS[fmt](tmp_path)
    assert main(["replay", str(src), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"]["format"] == fmt
    rows = data["runs"][0]["turns"]
    assert [r["turn"] for r in rows] == list(range(data["session"]["turns"])) == [0, 1, 2]
    assert [r["reply"] for r in rows] == [True, True, False]
    last = rows[-1]
    assert last["requests"] == 0 and last["prompt"] is None and last["rough"] is None
    assert last["cache_read"] == last["cache_write"] == 0 and last["miss"] == ""
    assert last["threshold"] == rows[1]["threshold"] and last["compression_count"] == 0


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


def test_a_session_with_nothing_to_replay_is_an_error_not_an_empty_table(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"messages": []}), encoding="utf-8")
    assert main(["replay", str(empty), "--quiet"]) == 2
    assert "nothing to replay: the session holds no messages" in capsys.readouterr().err
    system_only = tmp_path / "system.json"
    system_only.write_text(json.dumps([{"role": "system", "content": "You are terse."}]), encoding="utf-8")
    assert main(["compare", str(system_only), "--engine", "compressor", "--engine", "compressor"]) == 2
    assert "only a system prompt" in capsys.readouterr().err


def test_a_saved_trace_and_a_saved_comparison_are_shown_as_recorded(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    saved = tmp_path / "run.json.gz"
    assert main(["replay", str(src), "--engine", "compressor", "--out", str(saved), "--quiet"]) == 0
    live = capsys.readouterr().out
    assert main(["replay", str(saved)]) == 0
    assert capsys.readouterr().out == live  # the same table and summary, without replaying
    assert main(["replay", str(saved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["summary"]["requests"] == 8
    assert main(["replay", str(saved), "--engine", "compressor"]) == 2
    assert "saved trace" in capsys.readouterr().err
    bundle = tmp_path / "cmp.json.gz"
    assert main(["compare", str(src), "--engine", "compressor", "--engine", "compressor", "--engine", "nosuch",
                 "--out", str(bundle), "--quiet"]) == 2
    compared = capsys.readouterr().out
    assert main(["replay", str(bundle)]) == 0
    reopened = capsys.readouterr()
    assert reopened.out == compared, "a saved comparison reads as compare printed it"
    assert "run 'nosuch'" in reopened.err and "unknown context engine" in reopened.err


def test_faults_are_listed_in_words(tmp_path, capsys):
    from inspector.engines.contract import ContextEngine
    from inspector.host.cli import print_faults
    from inspector.host.replay import replay

    from .conftest import coding_session

    class Exploding(ContextEngine):
        name = "exploding"

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            raise RuntimeError("should_compress exploded at the seams")

        def compress(self, messages, current_tokens=None, **kw):
            return messages

    trace = replay(coding_session(3), Exploding(), {"model": {"context_length": 128000}})
    print_faults([trace], ["exploding"])
    out = capsys.readouterr().out
    assert "faults (exploding):" in out and "should_compress exploded at the seams" in out


def test_faults_that_differ_only_in_their_figures_are_one_kind(capsys):
    from inspector.engines.contract import ContextEngine
    from inspector.host.cli import print_faults
    from inspector.host.replay import replay

    from .conftest import coding_session

    class Counts(ContextEngine):
        name = "counts"

        def update_from_response(self, usage):
            raise ValueError(f"bad usage: {usage['prompt_tokens']:,} prompt tokens")

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, current_tokens=None, **kw):
            return messages

    trace = replay(coding_session(3), Counts(), {"model": {"context_length": 128000}})
    print_faults([trace], ["counts"])
    out = capsys.readouterr().out
    assert "faults (counts): 6\n" in out and "(×6, last at event" in out and "more kinds" not in out


def test_a_faulted_hooks_last_lines_of_output_are_shown_with_its_fault(capsys):
    from inspector.engines.contract import ContextEngine
    from inspector.host.cli import print_faults
    from inspector.host.replay import replay

    from .conftest import coding_session

    class Explaining(ContextEngine):
        name = "explaining"

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            print("step 1\nstep 2\nstep 3\nstep 4: about to fail \x1b[31m")
            raise RuntimeError("should_compress gave up")

        def compress(self, messages, current_tokens=None, **kw):
            return messages

    trace = replay(coding_session(1), Explaining(), {"model": {"context_length": 128000}})
    capsys.readouterr()
    print_faults([trace], ["explaining"])
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if "should_compress gave up" in line)
    assert lines[at + 2:at + 5] == ["    output: step 2", "            step 3",
                                    "            step 4: about to fail \\x1b[31m"]


def test_replay_json_lists_engine_output_per_event_and_the_terminal_still_shows_it(tmp_path, capsys):
    from pathlib import Path

    plugins = Path(__file__).resolve().parents[1] / "plugins_fixtures" / "basic"
    src = write_session(tmp_path / "s.json", turns=2)
    assert main(["replay", str(src), "--plugin-dir", str(plugins), "--engine", "fixture_chatty", "--json"]) == 0
    shown = capsys.readouterr()
    rows = json.loads(shown.out)["runs"][0]["output"]  # stdout is the JSON document alone
    assert [row["hook"] for row in rows] == ["update_from_response"] * 4
    assert all(row["output"].startswith("usage: ") and row["turn"] in (0, 1) for row in rows)
    assert shown.err.count("usage: ") == 4
    assert main(["replay", str(src), "--plugin-dir", str(plugins), "--engine", "fixture_chatty", "--quiet"]) == 0
    assert "engine output (fixture_chatty): 4 hook call(s) printed or logged" in capsys.readouterr().out


def test_an_unwritable_out_path_is_refused_before_the_replay(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--out", str(tmp_path / "missing" / "t.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err
    assert main(["replay", str(src), "--out", str(tmp_path), "--quiet"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_trace_records_the_config_without_credentials():
    from inspector.host.replay import public_config

    shown = public_config({"model": {"api_key": "sk-1", "max_tokens": 5, "base_url": "https://user:pw@proxy/v1"},
                           "auxiliary": {"compression": {"api_key_env": "AUX_KEY", "token": "t", "threshold_tokens": 3}}})
    assert shown == {"model": {"max_tokens": 5, "base_url": "https://[REDACTED]@proxy/v1"},
                     "auxiliary": {"compression": {"api_key_env": "AUX_KEY", "threshold_tokens": 3}}}


def test_reading_warnings_beyond_twenty_are_counted_and_all_are_in_json(tmp_path, capsys):
    lines = [json.dumps({"role": "user", "content": "hi"}), json.dumps({"role": "assistant", "content": "hello"})]
    lines += ["{broken"] * 25
    src = tmp_path / "noisy.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["replay", str(src), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: line") == 20 and "… and 5 more reading warning(s); --json lists them all" in err
    assert main(["replay", str(src), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["session"]["warnings"]) == 25


def test_a_setting_that_names_no_cache_profile_is_one_error_line_not_a_crash(tmp_path, capsys):
    src = write_session(tmp_path / "s.json")
    assert main(["replay", str(src), "--set", "inspector.cache_profile=bogus", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown cache profile 'bogus'") and "crashed" not in err


def test_an_engine_that_reports_itself_unavailable_is_replayed_with_a_note(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    basic = Path(__file__).resolve().parents[1] / "plugins_fixtures" / "basic"
    src = write_session(tmp_path / "s.json")
    saved = tmp_path / "run.trace.json.gz"
    assert main(["replay", str(src), "--engine", "fixture_unavailable", "--plugin-dir", str(basic), "--quiet",
                 "--out", str(saved)]) == 0  # Hermes activates it regardless: so does the replay
    err = capsys.readouterr().err
    assert "note: engine 'fixture_unavailable' reports itself unavailable (is_available() returned False)" in err
    notes = [e for e in load_trace(saved).events if e.note and "reports itself unavailable" in e.note]
    assert len(notes) == 1 and notes[0].args == {"available": False}


_NEWER_KEYWORDS_PLUGIN = '''
from agent.context_compressor import ContextCompressor


class CappedCompressor(ContextCompressor):
    """Subclasses Hermes' class with the keywords newer Hermes passes."""

    def __init__(self):
        super().__init__(model="test/model", quiet_mode=True, threshold_tokens_cap=6000,
                         min_tail_user_messages=2, tail_mode="legacy")

    @property
    def name(self):
        return "capped_sub"
'''

_NEWER_KEYWORDS_WRAPPER = '''
from agent.context_compressor import ContextCompressor
from agent.context_engine import ContextEngine


class Wrapper(ContextEngine):
    """Builds Hermes' class inside and delegates to it."""

    def __init__(self, threshold_tokens_cap=6000, **_):
        self._inner = ContextCompressor(model="test/model", quiet_mode=True, threshold_tokens_cap=threshold_tokens_cap,
                                        proactive_prune_tokens=0, min_tail_user_messages=2)
        self.threshold_tokens = self._inner.threshold_tokens

    @property
    def name(self):
        return "capped_wrapper"

    def update_from_response(self, usage):
        self._inner.update_from_response(usage)
        self.last_prompt_tokens = self._inner.last_prompt_tokens

    def should_compress(self, prompt_tokens=None):
        return self._inner.should_compress(prompt_tokens)

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        out = self._inner.compress(messages, current_tokens=current_tokens, focus_topic=focus_topic, force=force)
        self.compression_count = self._inner.compression_count
        return out

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode="", **_):
        self._inner.update_model(model, context_length, base_url=base_url, api_key=api_key, provider=provider,
                                 api_mode=api_mode)
        self.context_length, self.threshold_tokens = self._inner.context_length, self._inner.threshold_tokens
'''


@pytest.mark.parametrize(("name", "source"), [("capped_sub", _NEWER_KEYWORDS_PLUGIN),
                                              ("capped_wrapper", _NEWER_KEYWORDS_WRAPPER)])
def test_a_plugin_that_builds_the_compressor_with_newer_hermes_keywords_loads_and_replays(tmp_path, capsys, name,
                                                                                          source):
    plugin = tmp_path / "plugins" / "context_engine" / name
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(source, encoding="utf-8")
    plugins = str(tmp_path / "plugins")
    assert main(["engines", "--plugin-dir", plugins, "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed[name]["loads"] is True, listed[name]
    src = write_session(tmp_path / "s.json", turns=6)
    saved = tmp_path / "run.trace.json.gz"
    assert main(["replay", str(src), "--engine", name, "--plugin-dir", plugins, "--quiet", "--out", str(saved)]) == 0
    trace = load_trace(saved)
    assert not [e for e in trace.events if e.fault]
    # the host's update_model re-derived the threshold for the replay's 200K window, and the cap held
    assert trace.state_at(len(trace.events) - 1)["threshold_tokens"] == 6000
    assert trace.state_at(len(trace.events) - 1)["compression_count"] >= 1


def test_replay_prints_recorded_beside_simulated_and_the_simulators_accuracy(capsys):
    from tests.sessions.conftest import CORPUS

    path = CORPUS / "claude_code" / "tool_heavy.jsonl"
    if not path.is_file():
        pytest.skip(f"sample corpus not found at {CORPUS}")
    assert main(["replay", str(path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "replay settings: model claude-opus-4-6 (transcript)" in captured.err
    out = captured.out
    assert "usage and cache, recorded vs simulated" in out and "usage calibrated (head " in out
    assert "simulator accuracy:" in out and "real misses caught" in out and "false alarms:" in out
    assert main(["replay", str(path), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["usage_model"]["mode"] == "calibrated" and run["cache_accuracy"]["compared"] == 4
    assert run["cache_vs_recorded"]["recorded"]["write_1h"] > 0
