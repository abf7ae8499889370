"""What an engine author sees when their plugin misbehaves: where, in which hook, at which line.

Each test writes a small plugin into a temporary plugin directory and runs the command line on
it, as an author would; the process-wide parts (stdout, HERMES_HOME) run in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from inspector.cli import main

ROOT = Path(__file__).resolve().parents[2]

BASE = '''
from agent.context_engine import ContextEngine


class Engine(ContextEngine):
    name = "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) > 300

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compression_count += 1
        return [{{"role": "user", "content": "summary"}}] + [dict(m) for m in messages[-2:]]
'''


def plugin(root: Path, name: str, extra: str = "", base: str = BASE) -> Path:
    folder = root / "context_engine" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(base.format(name=name) + textwrap.indent(textwrap.dedent(extra), "    "),
                                        encoding="utf-8")
    return root


def session(tmp_path: Path, turns: int = 6) -> Path:
    messages = []
    for t in range(turns):
        messages += [{"role": "user", "content": f"question {t} " + "word " * 80},
                     {"role": "assistant", "content": f"answer {t} " + "word " * 80}]
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def cli(args: list[str], tmp_path: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HERMES_HOME"}
    env.update(HOME=str(home), TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "inspector.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_engine_resolving_hermes_home_itself_never_reaches_the_real_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = plugin(tmp_path / "plugins", "homey", '''
    def __init__(self):
        import os
        from pathlib import Path
        where = Path(os.environ.get("HERMES_HOME", Path.home() / ".hermes")) / "homey"
        where.mkdir(parents=True, exist_ok=True)
        (where / "state.json").write_text("{}")
    ''')
    for args in (["engines", "--plugin-dir", str(root)],
                 ["replay", str(session(tmp_path)), "--engine", "homey", "--plugin-dir", str(root), "--quiet"]):
        done = cli(args, tmp_path, home)
        assert done.returncode == 0, done.stderr
    assert not (home / ".hermes").exists(), "the user's ~/.hermes was written"
    assert not list(tmp_path.glob("context-inspector-*")), "every private folder is removed at exit"


TILDE_BASE = """
import os
import threading
from pathlib import Path

_DB = os.path.expanduser("~/.hermes/state/{name}.db")  # resolved once, when the plugin is imported
""" + BASE


def test_an_engine_building_hermes_paths_from_the_home_folder_never_reaches_the_real_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".tool").mkdir(parents=True)
    (home / ".tool" / "config.json").write_text('{"seen": true}')
    root = plugin(tmp_path / "plugins", "tilde", '''
    def on_session_start(self, session_id, **kwargs):
        os.makedirs(os.path.dirname(_DB), exist_ok=True)
        Path(_DB).write_text("rows")  # the process's folder, as the module outlives the run
        read = (Path.home() / ".tool" / "config.json").read_text()  # the rest of the home is the real one
        (Path.home() / ".hermes" / "read.txt").write_text(read)
        Path("~/.hermes/notes.txt").expanduser().write_text("n")
        Path("~/.hermes/../beside.txt").expanduser().write_text("b")  # still inside the private home

        def worker():  # a thread the engine starts does not inherit the run's context
            (Path.home() / ".hermes" / "thread.txt").write_text("t")

        t = threading.Thread(target=worker)
        t.start()
        t.join()
    ''', base=TILDE_BASE)
    out = tmp_path / "trace.json"
    done = cli(["replay", str(session(tmp_path)), "--engine", "tilde", "--plugin-dir", str(root), "--quiet",
                "--out", str(out)], tmp_path, home)
    assert done.returncode == 0, done.stderr
    written = dict(json.loads(out.read_text())["meta"]["engine_files"])
    assert written == {"read.txt": len('{"seen": true}'), "notes.txt": 1}  # the run's own sandbox
    assert not (home / ".hermes").exists(), "the user's ~/.hermes was written"
    assert not (home / "beside.txt").exists() and not (tmp_path / "beside.txt").exists()
    assert (home / ".tool" / "config.json").read_text() == '{"seen": true}'
    assert not list(tmp_path.glob("context-inspector-*")), "every private folder is removed at exit"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "plugins", "session.json", "trace.json"]


def test_what_an_engine_prints_goes_to_stderr_and_json_stays_valid(tmp_path: Path) -> None:
    root = plugin(tmp_path / "plugins", "chatty", '''
    def on_session_start(self, session_id, **kwargs):
        print("chatty: hello from the engine")
        import os
        os.write(1, b"raw bytes on fd 1\\n")
    ''')
    done = cli(["replay", str(session(tmp_path)), "--engine", "chatty", "--plugin-dir", str(root), "--json"],
               tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["engine"] == "chatty"
    assert "chatty: hello from the engine" in done.stderr and "raw bytes on fd 1" in done.stderr


def test_a_fault_names_the_engine_file_and_line(tmp_path: Path, capsys) -> None:
    root = plugin(tmp_path / "plugins", "boomy", '''
    def compress(self, messages, **kwargs):
        raise RuntimeError("boom in compress")
    ''')
    assert main(["replay", str(session(tmp_path)), "--engine", "boomy", "--plugin-dir", str(root), "--quiet"]) == 0
    out = capsys.readouterr().out
    init = root / "context_engine" / "boomy" / "__init__.py"
    assert "compress: exception: RuntimeError: boom in compress" in out
    assert f"at {init}:" in out and " in compress" in out


def test_an_engine_failing_outside_any_hook_is_an_error_not_a_traceback(tmp_path: Path, capsys) -> None:
    root = plugin(tmp_path / "plugins", "named", '''
    @property
    def name(self):
        raise RuntimeError("no name today")
    ''', base=BASE.replace('    name = "{name}"\n', ""))
    assert main(["replay", str(session(tmp_path)), "--engine", "named", "--plugin-dir", str(root), "--quiet"]) == 0
    capsys.readouterr()
    duck = tmp_path / "ducks" / "context_engine" / "ducky"
    duck.mkdir(parents=True)
    (duck / "__init__.py").write_text(textwrap.dedent('''
        class Duck:
            name = "ducky"
            def update_from_response(self, usage): pass
            def should_compress(self, prompt_tokens=None): return False
            def compress(self, messages, **kw): return messages

        def register(ctx):
            ctx.register_context_engine(Duck())
    '''), encoding="utf-8")
    code = main(["replay", str(session(tmp_path)), "--engine", "ducky", "--plugin-dir", str(tmp_path / "ducks"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "replay with engine 'ducky' crashed: AttributeError" in err and "Traceback" not in err


def test_a_hanging_get_status_times_out_once_and_is_not_called_again(tmp_path: Path, capsys) -> None:
    root = plugin(tmp_path / "plugins", "statusy", '''
    def get_status(self):
        import time
        time.sleep(30)
        return {}
    ''')
    assert main(["replay", str(session(tmp_path)), "--engine", "statusy", "--plugin-dir", str(root), "--quiet",
                 "--set", "inspector.hook_timeout_seconds=0.5"]) == 0
    out = capsys.readouterr().out
    assert "get_status(): " in out and "not called again in this run" in out


def test_compress_results_hermes_would_commit_are_committed_and_explained(tmp_path: Path, capsys) -> None:
    from inspector.trace.io import load_trace

    root = plugin(tmp_path / "plugins", "roley", '''
    def compress(self, messages, **kwargs):
        self.compression_count += 1
        return [{"role": "robot", "content": "beep"}] + [dict(m) for m in messages[-2:]]
    ''')
    plugin(root, "inplace", '''
    def compress(self, messages, **kwargs):
        messages[:] = messages[-2:]
        return messages
    ''')
    for name, committed in (("roley", True), ("inplace", False)):
        out = tmp_path / f"{name}.json"
        assert main(["replay", str(session(tmp_path, 10)), "--engine", name, "--plugin-dir", str(root), "--quiet",
                     "--out", str(out)]) == 0
        trace = load_trace(out)
        notes = [trace.events[k].note or "" for k in trace.compress_events]
        assert notes
        if committed:
            assert "roles providers refuse (message 0: 'robot')" in notes[0]
            assert all(m.get("role") != "robot" for r in trace.requests for m in trace.request_messages(r))
        else:
            assert "changed its input list in place" in notes[0] and "return a new list" in notes[0]
    capsys.readouterr()


def test_a_plugin_directory_that_offers_nothing_is_said_to(tmp_path: Path, capsys) -> None:
    root = plugin(tmp_path / "plugins", "found")
    assert main(["replay", str(session(tmp_path)), "--engine", "found", "--plugin-dir", str(tmp_path / "plugin"),
                 "--quiet"]) == 2
    assert f"plugin directory {tmp_path / 'plugin'} does not exist" in capsys.readouterr().err
    assert main(["engines", "--plugin-dir", str(root / "context_engine" / "found")]) == 0
    assert f"give its grandparent {root}" in capsys.readouterr().err


def test_an_engine_calling_sys_exit_is_a_fault_not_the_end_of_the_program(tmp_path: Path, capsys) -> None:
    root = plugin(tmp_path / "plugins", "quitter", '''
    def on_turn_complete(self, messages, **kwargs):
        import sys
        sys.exit(3)
    ''')
    assert main(["compare", str(session(tmp_path)), "--engine", "compressor", "--engine", "quitter",
                 "--plugin-dir", str(root), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "on_turn_complete: exception: SystemExit: 3" in out
