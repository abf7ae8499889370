"""Scenarios played by the real Hermes 0.19.0 agent and by our host, and how their hook calls compare.

A scenario is a scripted conversation (each turn's user text and the provider's replies, usage
included) and a probe engine (:mod:`tests.differential.probe`). :func:`run_real_agent` plays it
with the real ``AIAgent`` in the Hermes interpreter against :class:`ScriptedServer`;
:func:`replay_ours` replays the conversation the agent kept through our host, with the same probe
and the provider's usage; :func:`sequence` turns either side's calls into comparable rows.
"""

from __future__ import annotations

import itertools
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
    engine: str = "probe"  # or "compressor": Hermes' built-in ContextCompressor
    context_length: int = CONTEXT_LENGTH
    summary: str | None = None  # what the provider answers the compressor's summary calls
    # Residual differences, hook -> why (each reason must be named in the trace's host_differences).
    residual: dict[str, str] = field(default_factory=dict)

    @property
    def replies(self) -> list[dict[str, Any]]:
        return [r for t in self.turns for r in t["replies"]]


def _config_yaml(home: Path, scenario: Scenario) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"model:\n  default: {MODEL}\n  provider: custom\n  context_length: {scenario.context_length}\n"
        f"compression:\n  enabled: true\ncontext:\n  engine: {scenario.engine}\n")


def run_real_agent(scenario: Scenario, tmp_path: Path) -> dict[str, Any]:
    """The real agent's calls, the rows it kept, its system prompt and (with a database) the state.db path."""
    python = hermes_python()
    home = tmp_path / f"home-{scenario.name}"
    _config_yaml(home, scenario)
    with ScriptedServer(scenario.replies, context_length=scenario.context_length, summary=scenario.summary) as server:
        spec = {"hermes_home": str(home), "base_url": server.base_url, "model": MODEL,
                "probe": scenario.probe if scenario.engine == "probe" else None,
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
    from inspector.host.host import Host
    from inspector.host.replay import replay

    calls: list[dict[str, Any]] = []
    engine = make_probe(ContextEngine, scenario.probe, calls, threading.get_ident())
    provider_usage(usages, monkeypatch)
    play = Host.play_turn

    def play_turn(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append({"hook": "TURN", "thread": "main"})
        return play(self, *args, **kwargs)

    monkeypatch.setattr(Host, "play_turn", play_turn)
    loaded = SimpleNamespace(engine=engine, plugin_manager=_Plugins(calls))
    trace = replay(session, loaded, host_config(scenario, profile), simulator=None)
    return calls, trace


def host_config(scenario: Scenario, profile: str = "hermes-0.19.0") -> dict[str, Any]:
    """Our config for the model and window the real agent had."""
    from inspector.config import load_config

    return load_config(None, {"model": {"default": MODEL, "provider": "custom", "context_length": scenario.context_length},
                              "inspector": {"host_profile": profile}})


def provider_usage(usages: list[dict[str, Any]], monkeypatch: Any) -> None:
    """Replays answer each request with the usage the scripted provider reported for it, in order."""
    from inspector.host import responders

    pending = [Usage(prompt_tokens=u.get("prompt_tokens", 0), completion_tokens=u.get("completion_tokens", 0))
               for u in usages]
    original = responders.ReplayResponder.respond

    def respond(self: Any, request: Any, tools: Any) -> Any:
        out = original(self, request, tools)
        if out is not None and pending:
            out.usage = pending.pop(0)
        return out

    monkeypatch.setattr(responders.ReplayResponder, "respond", respond)


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
        if c["hook"] == "COMPACTION":  # the driver's own mark of a compaction, for built-in engine runs
            continue
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


# -- the scenarios ---------------------------------------------------------------------------
WORDS = "word " * 100  # 500 characters, 125 rough tokens


def _reply(content: str | None = None, prompt: int = 800, calls: list | None = None) -> dict:
    out = {"content": content, "usage": {"prompt_tokens": prompt, "completion_tokens": 7}}
    if calls:
        out["tool_calls"] = [{"id": c, "name": n, "args": {"q": c}} for c, n in calls]
    return out


SCENARIOS = {
    # The third request crosses the threshold; compaction drops the first two replies.
    "one_compaction": Scenario("one_compaction", probe={"threshold_tokens": 1700, "keep_last": 2}, turns=[
        {"user": "hello", "replies": [_reply("first " + WORDS * 3)]},
        {"user": "go on", "replies": [_reply("second " + WORDS * 6, prompt=1500)]},
        {"user": "and now?", "replies": [_reply("fine", prompt=1300)]},
    ]),
    # Two engine tools in one batch (each sees the result before it), then a big final answer that
    # the next turn's preflight compacts.
    "tool_batch_preflight": Scenario("tool_batch_preflight", probe={
        "threshold_tokens": 2800, "keep_last": 1, "tools": ["probe_a", "probe_b"], "tool_result_chars": 400}, turns=[
        {"user": "look things up", "replies": [_reply(None, calls=[("c1", "probe_a"), ("c2", "probe_b")]),
                                               _reply("found " + WORDS * 24, prompt=1100)]},
        {"user": "thanks", "replies": [_reply("ok", prompt=900)]},
    ]),
    "two_compactions": Scenario("two_compactions", probe={"threshold_tokens": 1700, "keep_last": 2}, turns=[
        {"user": "one", "replies": [_reply("a " + WORDS * 4)]},
        {"user": "two", "replies": [_reply("b " + WORDS * 6, prompt=1500)]},
        {"user": "three", "replies": [_reply("c " + WORDS * 6, prompt=1600)]},
        {"user": "four", "replies": [_reply("d", prompt=1700)]},
        {"user": "five", "replies": [_reply("e", prompt=1700)]},
    ]),
    # The engine rewrites the list it is handed and returns it: 0.19.0 commits that.
    "in_place": Scenario("in_place", probe={"threshold_tokens": 1700, "keep_last": 2, "mode": "in_place"}, turns=[
        {"user": "hello", "replies": [_reply("first " + WORDS * 3)]},
        {"user": "go on", "replies": [_reply("second " + WORDS * 6, prompt=1500)]},
        {"user": "and now?", "replies": [_reply("fine", prompt=1300)]},
    ]),
    # An engine tool call whose reply reports a prompt over the threshold: the post-tool check
    # compresses with last_prompt_tokens as current_tokens.
    "engine_tools_post_tool": Scenario("engine_tools_post_tool", probe={
        "threshold_tokens": 3000, "keep_last": 2, "tools": ["probe_a"], "tool_result_chars": 50}, turns=[
        {"user": "hello", "replies": [_reply("hi " + WORDS * 2)]},
        {"user": "search", "replies": [_reply(None, prompt=3200, calls=[("c1", "probe_a")]),
                                       _reply("done", prompt=1000)]},
    ]),
    # The user stops the turn while its tool runs: no post_llm_call for it.
    "interrupted": Scenario("interrupted", probe={"threshold_tokens": 5000, "tools": ["probe_a", "probe_stop"]},
                            turns=[
        {"user": "start", "replies": [_reply(None, calls=[("c1", "probe_stop")])], "interrupt_on_tool": "probe_stop"},
        {"user": "again", "replies": [_reply("here", prompt=900)]},
    ]),
}
WITH_DB = {f"{name}_db": Scenario(f"{name}_db", turns=s.turns, probe=s.probe, with_db=True)
           for name, s in SCENARIOS.items() if name in ("one_compaction", "in_place", "tool_batch_preflight", "two_compactions",
                                                        "interrupted")}
ALL = {**SCENARIOS, **WITH_DB}

# Hermes' own ContextCompressor on a 64K window (threshold 85 % of it, agent/context_compressor.py:1266-1305):
# eight long answers; the provider answers its summary calls.
_LONG = "lorem ipsum dolor sit amet, " * 1800  # 50,400 characters
BUILTIN = Scenario("builtin_compressor", probe={}, with_db=True, engine="compressor", context_length=64_000,
                   summary="## Summary\nThe user asked eight questions; each answer was long.", turns=[
                       {"user": f"question {t}", "replies": [_reply(f"answer {t}: " + _LONG,
                                                                  prompt=3000 + (t + 1) * len(_LONG) // 4)]}
                       for t in range(8)])
RUNS = {**ALL, BUILTIN.name: BUILTIN}

# Our host has no session database; what that changes is said in host_differences (see HOST_DIFFERENCES).
NO_DB = "No SessionDB: bind_session_state gets session_db=None"
DB_MARKER = "stamps `_db_persisted: True` on every row it has written"
# Where a rough token figure sits in a sequence row (see agent_scenarios.KEYS), and what one row's
# marker adds to it: len(", '_db_persisted': True") / 4.
ROUGH_AT = {"should_defer_preflight_to_real_usage": 2, "should_compress": 2, "compress": 4}
MARKER_TOKENS = 6
PROMPT_TOKENS = 12
SAME_PROMPT = "the system prompt never changes on compaction"


def residual(scenario: Scenario, ours: list[tuple], theirs: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Both sequences with the differences our host documents taken out (and only those)."""
    if scenario.with_db:
        # bind_session_state(session_db=...) is a SessionDB in the agent, None in our host; the agent's
        # rough figures count the `_db_persisted` marker on the rows it wrote (DB_MARKER).
        def plain(rows: list[tuple]) -> list[tuple]:
            out = []
            for r in rows:
                if r[0] == "bind_session_state":
                    r = r[:2]
                elif r[0] in ROUGH_AT:
                    i = ROUGH_AT[r[0]]
                    r = (*r[:i], None, *r[i + 1:])
                out.append(r)
            return out

        for a, b in zip(ours, theirs):
            if a[0] == b[0] in ROUGH_AT and isinstance(a[ROUGH_AT[a[0]]], int):
                gap = b[ROUGH_AT[a[0]]] - a[ROUGH_AT[a[0]]]
                # A state.db keeps the system prompt Hermes rebuilt at the last compaction (its time line
                # changes), which the replay uses throughout: a few tokens either way (PROMPT_TOKENS).
                assert -PROMPT_TOKENS <= gap <= MARKER_TOKENS * 10 + PROMPT_TOKENS, \
                    f"{a} vs {b}: more than the markers and the rebuilt prompt explain"
        return plain(ours), plain(theirs)
    # Without a database the agent calls only on_session_start at a compaction boundary; our host
    # emulates the compaction Hermes does with one (on_session_end first).
    kept = []
    for i, row in enumerate(ours):
        nxt = ours[i + 1] if i + 1 < len(ours) else None
        if row[0] == "on_session_end" and nxt is not None and nxt[0] == "on_session_start" and nxt[-1] == "compression":
            continue
        kept.append(row)
    return kept, theirs


def diff(theirs: list[tuple], ours: list[tuple]) -> str:
    lines = []
    for a, b in itertools.zip_longest(theirs, ours):
        lines.append(("   " if a == b else "!! ") + f"{a}   |   {b if a != b else ''}")
    return "\n".join(lines)
