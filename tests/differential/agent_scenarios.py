"""Scenarios played by the real Hermes 0.19.0 agent and by our host, and how their hook calls compare.

A scenario is a scripted conversation (each turn's user text and the provider's replies, usage
included) and a probe engine (:mod:`tests.differential.probe`). :func:`run_real_agent` plays it
with the real ``AIAgent`` in the Hermes interpreter against :class:`ScriptedServer`;
:func:`replay_ours` replays the conversation the agent kept through our host, with the same probe
and the provider's usage; :func:`sequence` turns either side's calls into comparable rows.
"""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from inspector.engines.contract import ContextEngine
from inspector.sessions.model import Session, Usage, compute_turns

from .hermes_env import hermes_python
from .probe import make_probe
from .scripted_server import ScriptedServer

DRIVER = Path(__file__).with_name("agent_driver.py")
MODEL = "probe-model"
CONTEXT_LENGTH = 128_000


@dataclass
class Scenario:
    name: str
    turns: list[dict[str, Any]]  # {"user": text, "replies": [reply], "interrupt_on_tool": name?}
    probe: dict[str, Any]
    with_db: bool = False
    # Residual differences, hook -> why (each reason must be named in the trace's host_differences).
    residual: dict[str, str] = field(default_factory=dict)

    @property
    def replies(self) -> list[dict[str, Any]]:
        return [r for t in self.turns for r in t["replies"]]


def _config_yaml(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"model:\n  default: {MODEL}\n  provider: custom\n  context_length: {CONTEXT_LENGTH}\n"
        "compression:\n  enabled: true\ncontext:\n  engine: probe\n")


def run_real_agent(scenario: Scenario, tmp_path: Path) -> dict[str, Any]:
    """The real agent's calls, the rows it kept, its system prompt and (with a database) the state.db path."""
    python = hermes_python()
    home = tmp_path / f"home-{scenario.name}"
    _config_yaml(home)
    with ScriptedServer(scenario.replies, context_length=CONTEXT_LENGTH) as server:
        spec = {"hermes_home": str(home), "base_url": server.base_url, "model": MODEL, "probe": scenario.probe,
                "turns": [{k: v for k, v in t.items() if k != "replies"} for t in scenario.turns],
                "toolsets": ["context_engine"], "with_db": scenario.with_db}
        proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(spec), capture_output=True, text=True,
                              timeout=300)
        requests = list(server.requests)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise AssertionError(f"the real agent failed on {scenario.name}: {proc.stderr[-3000:]}")
    out = json.loads(proc.stdout)
    out["requests"] = requests
    out["usages"] = [r.get("usage") for r in scenario.replies[:len(requests)]]
    return out


def session_from_rows(real: dict[str, Any]) -> Session:
    """The conversation the real agent kept (every row it ever had, in order) as a transcript."""
    messages: list[dict[str, Any]] = []
    if real.get("system_prompt"):
        messages.append({"role": "system", "content": real["system_prompt"]})
    messages.extend(real["rows"])
    session = Session(id=real["session_id"], source_format="test", messages=messages, model=MODEL)
    session.turns = compute_turns(messages)
    return session


class _Plugins:
    """A plugin manager with one callback on pre_llm_call and post_llm_call, recording like the driver's."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self._calls = calls
        self._hooks = {"pre_llm_call": [self._hook], "post_llm_call": [self._hook]}

    def _hook(self) -> None:  # present so the host sees a registered callback
        pass

    def invoke_hook(self, name: str, **kwargs: Any) -> list[Any]:
        self._calls.append({"hook": f"plugin:{name}", "thread": "main", "kwargs": sorted(kwargs),
                            "history": len(kwargs.get("conversation_history") or [])})
        return []


def replay_ours(scenario: Scenario, session: Session, usages: list[dict[str, Any]], monkeypatch: Any,
                profile: str = "hermes-0.19.0") -> tuple[list[dict[str, Any]], Any]:
    """Our host's calls on the same probe for ``session``, fed the usage the provider reported."""
    from inspector.config import load_config
    from inspector.host import responders
    from inspector.host.host import Host
    from inspector.host.replay import replay

    calls: list[dict[str, Any]] = []
    engine = make_probe(ContextEngine, scenario.probe, calls, threading.get_ident())
    pending = [Usage(prompt_tokens=u.get("prompt_tokens", 0), completion_tokens=u.get("completion_tokens", 0))
               for u in usages]
    original = responders.ReplayResponder.respond

    def respond(self: Any, request: Any, tools: Any) -> Any:
        out = original(self, request, tools)
        if out is not None and pending:
            out.usage = pending.pop(0)  # what the scripted provider reported for this call
        return out

    monkeypatch.setattr(responders.ReplayResponder, "respond", respond)
    play = Host.play_turn

    def play_turn(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append({"hook": "TURN", "thread": "main"})
        return play(self, *args, **kwargs)

    monkeypatch.setattr(Host, "play_turn", play_turn)
    config = load_config(None, {"model": {"default": MODEL, "provider": "custom", "context_length": CONTEXT_LENGTH},
                                "inspector": {"host_profile": profile}})
    loaded = SimpleNamespace(engine=engine, plugin_manager=_Plugins(calls))
    trace = replay(session, loaded, config, simulator=None)
    return calls, trace


# The arguments compared for each hook (the rest, like session ids and paths, legitimately differ).
KEYS = {
    "update_model": ("model", "context_length", "api_mode"),
    "bind_session_state": ("has_db",),
    "on_session_start": ("kwargs", "boundary_reason"),
    "on_session_end": ("count", "roles"),
    "should_defer_preflight_to_real_usage": ("tokens",),
    "should_compress": ("tokens", "result"),
    "update_from_response": ("keys", "prompt_tokens"),
    "compress": ("count", "roles", "current_tokens", "kwargs"),
    "handle_tool_call": ("name", "kwargs", "count", "roles"),
    "plugin:pre_llm_call": ("history",),
    "plugin:post_llm_call": ("history",),
}
# Keyword names Hermes passes to plugin hooks that our host has no source for.
PLUGIN_EXTRA = {"telemetry_schema_version"}


def sequence(calls: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each call as (hook, thread, key arguments...), comparable across the two hosts."""
    rows = []
    for c in calls:
        keys = KEYS.get(c["hook"], ())
        values = []
        for k in keys:
            v = c.get(k)
            values.append(tuple(v) if isinstance(v, list) else v)
        rows.append((c["hook"], c["thread"], *values))
    return rows


def plugin_kwargs(calls: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(c["hook"], tuple(k for k in c["kwargs"] if k not in PLUGIN_EXTRA))
            for c in calls if c["hook"].startswith("plugin:")]
