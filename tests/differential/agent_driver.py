"""Run the real Hermes 0.19.0 ``AIAgent`` with a recording probe engine (executed by the Hermes interpreter).

Not a test module: ``tests/differential/agent_scenarios.py`` starts it as a subprocess of the
Hermes environment with a JSON scenario on stdin and reads one JSON document from stdout: every
hook call the agent made on the probe (name, thread, key arguments), the conversation it kept and,
with a session database, where that database is. It imports only Hermes and the standard library.

The probe is handed to the agent the way a general plugin's engine is: ``get_plugin_context_engine``
(hermes_cli/plugins.py:2340) returns it and the agent deep-copies it (agent/agent_init.py:1851-1870).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any


def _roles(messages: Any) -> list[str]:
    return [str(m.get("role")) for m in messages or [] if isinstance(m, dict)]


def main() -> None:
    spec = json.load(sys.stdin)
    home = spec["hermes_home"]
    os.environ["HERMES_HOME"] = home
    os.environ.setdefault("HERMES_QUIET", "1")
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the agent prints banners and spinners: stdout carries only our JSON

    import hermes_cli.plugins as plugins
    from agent.context_engine import ContextEngine

    calls: list[dict[str, Any]] = []
    main_thread = threading.main_thread().ident

    from probe import make_probe  # this folder is the script's, so first on sys.path

    if spec.get("probe"):
        probe = make_probe(ContextEngine, spec["probe"], calls, main_thread)
        plugins.get_plugin_context_engine = lambda: probe

    hooks: list[dict[str, Any]] = []

    def plugin_hook(name: str):
        def callback(**kwargs: Any) -> None:
            entry = {"hook": f"plugin:{name}", "thread": "main", "kwargs": sorted(kwargs),
                     "history": len(kwargs.get("conversation_history") or [])}
            hooks.append(entry)
            calls.append(entry)
        return callback

    manager = plugins.get_plugin_manager()
    for hook_name in ("pre_llm_call", "post_llm_call"):
        manager._hooks.setdefault(hook_name, []).append(plugin_hook(hook_name))

    session_db = None
    if spec.get("with_db"):
        from hermes_state import SessionDB

        session_db = SessionDB()
    from run_agent import AIAgent

    compress_context = AIAgent._compress_context

    def recorded_compress(self: Any, messages: list, *args: Any, **kwargs: Any) -> Any:
        out = compress_context(self, messages, *args, **kwargs)
        calls.append({"hook": "COMPACTION", "thread": "main", "before": len(messages), "after": len(out[0])})
        return out

    AIAgent._compress_context = recorded_compress  # where every compaction site goes (run_agent.py:6133)

    interrupt_tools = {t.get("interrupt_on_tool") for t in spec["turns"]} - {None}

    def on_tool_start(call_id: str, name: str, args: Any) -> None:
        if name in interrupt_tools:
            agent.interrupt("the scenario stops this turn")

    agent = AIAgent(
        base_url=spec["base_url"], api_key="sk-test-not-a-key", provider="custom", model=spec["model"],
        quiet_mode=True, enabled_toolsets=spec.get("toolsets"), skip_context_files=True, skip_memory=True,
        session_db=session_db, session_id=spec.get("session_id"), max_iterations=20,
        platform="cli", tool_start_callback=on_tool_start,
    )
    history: list[dict[str, Any]] = []
    results = []
    for turn in spec["turns"]:
        calls.append({"hook": "TURN", "thread": "main"})
        out = agent.run_conversation(turn["user"], conversation_history=history or None,
                                     system_message=spec.get("system"))
        history = out.get("messages") or history
        journal = getattr(agent.context_compressor, "journal", None)
        if callable(journal):
            journal(history)
        results.append({k: out.get(k) for k in ("final_response", "interrupted", "completed", "api_calls")})
    agent.shutdown_memory_provider(history) if hasattr(agent, "shutdown_memory_provider") else None
    real_stdout.write(json.dumps({
        "calls": calls, "plugin_hooks": hooks, "results": results, "session_id": agent.session_id,
        "messages": history, "rows": getattr(agent.context_compressor, "rows", []), "db": os.path.join(home, "state.db") if session_db is not None else None,
        "tools": [t.get("function", {}).get("name") for t in agent.tools or []],
        "system_prompt": getattr(agent, "_cached_system_prompt", None),
    }, default=repr))
    real_stdout.flush()


if __name__ == "__main__":
    main()
