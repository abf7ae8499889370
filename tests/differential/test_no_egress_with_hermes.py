"""With the real Hermes importable in the engine's process, a replay still sends nothing out.

The inspector runs in a subprocess whose ``sys.path`` ends with the Hermes venv's site-packages
(so ``agent.*`` is Hermes' own), with provider keys in the environment, a socket audit hook that
refuses and records every non-loopback connection or name lookup, and an engine that subclasses
Hermes' real ``ContextCompressor``. Hermes' ``call_llm`` would auto-detect a provider from those
keys; routed through the inspector, the compaction's summary request goes only to the endpoint the
user configured (on loopback here, which gives the engine's worker the keys) and the replay makes no
other connection. The same replay with the routing switched
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

# Installed in every process of the replay (the command and the engine's worker) as sitecustomize:
# Hermes' site-packages at the end of sys.path, and the audit hook, which logs each refusal.
SITECUSTOMIZE = textwrap.dedent('''
    import os, socket, sys
    sys.path.append(os.environ["NOEGRESS_SITE"])
    def hook(event, args):
        what = None
        if event == "socket.getaddrinfo" and str(args[0]) not in ("localhost", "127.0.0.1", "::1"):
            what = f"getaddrinfo {args[0]}"
        if event == "socket.connect" and isinstance(args[1], tuple) and not str(args[1][0]).startswith(("127.", "::1")):
            what = f"connect {args[1]}"
        if what:
            with open(os.environ["NOEGRESS_LOG"], "a") as fh:
                fh.write(what + "\\n")
            raise OSError("no network in this test")
    sys.addaudithook(hook)
    if os.environ.get("NOEGRESS_MODE") == "unrouted":  # the control: Hermes' modules left as they are
        import inspector.engines.compat.hermes_routing as routing
        routing.route_hermes = lambda: []
''')

CHILD = textwrap.dedent('''
    import json, os, socket, sys
    from inspector.cli import main
    code = main(["replay", sys.argv[1], "--engine", "hermes_sub", "--plugin-dir", sys.argv[2], "--quiet",
                 "--set", "model.context_length=64000", "--out", sys.argv[3],
                 # an endpoint of the user's on loopback: the worker is then given the keys, as a user's is
                 "--set", "auxiliary.compression.base_url=http://127.0.0.1:9/v1"])
    log = os.environ["NOEGRESS_LOG"]
    during = open(log).read().split("\\n")[:-1] if os.path.exists(log) else []
    try:
        socket.getaddrinfo("openrouter.ai", 443)
    except OSError:
        pass
    after = open(log).read().split("\\n")[:-1][len(during):]
    print(json.dumps({"code": code, "refused_during_replay": during, "refused_after": after}))
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


    import agent.context_compressor as _cc, json as _json, sys as _sys
    from inspector.engines.compat.hermes_routing import MARKER as _MARKER
    print("HERMES_SUB " + _json.dumps({"hermes_file": _cc.__file__,
                                       "routed": getattr(_cc.ContextCompressor, _MARKER, False)}), file=_sys.stderr)
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
    custom = tmp_path / f"site-{mode}"
    custom.mkdir()
    (custom / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env.update({"OPENROUTER_API_KEY": "sk-or-v1-not-a-real-key", "OPENAI_API_KEY": "sk-not-a-real-key",
                "ANTHROPIC_API_KEY": "sk-ant-not-a-real-key", "HERMES_HOME": str(home), "HOME": str(home),
                "PYTHONPATH": f"{custom}{os.pathsep}{REPO}", "QT_QPA_PLATFORM": "offscreen",
                "NOEGRESS_SITE": site, "NOEGRESS_LOG": str(tmp_path / f"refused-{mode}.log"), "NOEGRESS_MODE": mode,
                # the log is written from the engine's worker: no read-only OS sandbox around it (the
                # routing is what this test measures; tests/worker has the sandbox's own tests)
                "CONTEXT_INSPECTOR_SANDBOX": "off"})
    trace = tmp_path / f"trace-{mode}.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(session), str(tmp_path / "plugins"), str(trace)],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    engine = [line for line in proc.stderr.splitlines() if "HERMES_SUB " in line]
    assert engine, proc.stderr[-3000:]  # what the engine's module said from its worker
    report.update(json.loads(engine[-1].split("HERMES_SUB ", 1)[1]))
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
