"""With the real Hermes importable in the engine's process, a replay still sends nothing out.

The inspector runs in a subprocess whose ``sys.path`` ends with the Hermes venv's site-packages
(so ``agent.*`` is Hermes' own), with provider keys in the environment, a socket audit hook that
refuses and records every non-loopback connection or name lookup, and an engine that subclasses
Hermes' real ``ContextCompressor``. Hermes' ``call_llm`` would auto-detect a provider from those
keys; routed through the inspector, the compaction's summary request goes nowhere (no endpoint is
configured) and the replay makes no connection at all. The same replay with the routing switched
off (the control) does try to reach the provider, and a lookup the child makes on purpose at the
end proves the hook sees what it should.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.differential.hermes_env import REPO, hermes_python

CHILD = textwrap.dedent('''
    import json, socket, sys
    refused = []
    def hook(event, args):
        if event == "socket.getaddrinfo" and str(args[0]) not in ("localhost", "127.0.0.1", "::1"):
            refused.append(f"getaddrinfo {args[0]}")
            raise OSError("no network in this test")
        if event == "socket.connect" and isinstance(args[1], tuple) and not str(args[1][0]).startswith(("127.", "::1")):
            refused.append(f"connect {args[1]}")
            raise OSError("no network in this test")
    sys.addaudithook(hook)
    sys.path.append(sys.argv[1])
    if sys.argv[5] == "unrouted":  # the control: Hermes' modules left as they are
        import inspector.engines.compat.hermes_routing as routing
        routing.route_hermes = lambda: []
    from inspector.cli import main
    code = main(["replay", sys.argv[2], "--engine", "hermes_sub", "--plugin-dir", sys.argv[3], "--quiet",
                 "--set", "model.context_length=64000", "--out", sys.argv[4]])
    import agent.context_compressor as cc
    from inspector.engines.compat.hermes_routing import MARKER
    during = list(refused)
    try:
        socket.getaddrinfo("openrouter.ai", 443)
    except OSError:
        pass
    print(json.dumps({"code": code, "refused_during_replay": during, "refused_after": refused[len(during):],
                      "hermes_file": cc.__file__, "routed": getattr(cc.ContextCompressor, MARKER, False)}))
''')

ENGINE = textwrap.dedent('''
    from agent.context_compressor import ContextCompressor


    class HermesSub(ContextCompressor):
        """Hermes' own compressor class, as a third-party engine subclasses it."""

        def __init__(self):
            super().__init__(model="openrouter/anthropic/claude-sonnet-4.5", config_context_length=64000,
                             quiet_mode=True)

        @property
        def name(self):
            return "hermes_sub"
''')


def _transcript(turns: int = 30) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": f"Look at module {t} and fix it."})
        msgs.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{t}", "type": "function",
                     "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{t}.py"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{t}", "content": f"# module {t}\n" + "code line\n" * 1200})
        msgs.append({"role": "assistant", "content": f"Fixed module {t}."})
    return msgs


def _replay(tmp_path, mode: str) -> dict:
    python = hermes_python()
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    plugins = tmp_path / "plugins" / "context_engine" / "hermes_sub"
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "__init__.py").write_text(ENGINE)
    session = tmp_path / "session.json"
    session.write_text(json.dumps(_transcript()))
    home = tmp_path / f"home-{mode}"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"OPENROUTER_API_KEY": "sk-or-v1-not-a-real-key", "OPENAI_API_KEY": "sk-not-a-real-key",
                "ANTHROPIC_API_KEY": "sk-ant-not-a-real-key", "HERMES_HOME": str(home), "HOME": str(home),
                "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"})
    trace = tmp_path / f"trace-{mode}.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, site, str(session), str(tmp_path / "plugins"), str(trace), mode],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["hermes_file"].startswith(site)  # the engine really ran on Hermes' class
    assert report["code"] == 0
    assert report["refused_after"] == ["getaddrinfo openrouter.ai"]  # the hook works
    from inspector.trace.io import load_trace

    report["kinds"] = [e.kind for e in load_trace(trace).events]
    return report


def test_a_replay_with_hermes_importable_and_keys_set_connects_nowhere(tmp_path):
    routed = _replay(tmp_path, "routed")
    assert routed["routed"] is True
    assert "compress" in routed["kinds"] and "call_llm" in routed["kinds"]  # it compacted, asked for a summary
    assert routed["refused_during_replay"] == []
    control = _replay(tmp_path, "unrouted")
    assert control["routed"] is False
    assert control["refused_during_replay"]  # left alone, Hermes' call_llm goes looking for the provider
