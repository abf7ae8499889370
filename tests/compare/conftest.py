"""Hand-made sessions, tiny engines (as plugin directories) and synthetic traces for compare tests."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from inspector.config import load_config
from inspector.sessions.model import Session, compute_turns
from inspector.trace.model import (
    EV_COMPRESS,
    EV_REQUEST,
    EV_TURN,
    STATE_FIELDS,
    CacheInfo,
    Event,
    Request,
    Trace,
)
from tests.engine_sources import BROKEN_ENGINE, DROPS_TOOLS_ENGINE, NEVER_ENGINE, TAIL_ENGINE

HOSTILE = ["<script>alert(1)</script>", '" onmouseover="x', "javascript:alert(1)"]



@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin directory with the compare test engines (written once: plugin import is global)."""
    root = tmp_path_factory.mktemp("compare_plugins")
    engines = {
        "cmp_tail": TAIL_ENGINE.format(limit=1500, name="cmp_tail"),
        "cmp_tail_late": TAIL_ENGINE.format(limit=2600, name="cmp_tail_late"),
        "cmp_never": NEVER_ENGINE.format(name="cmp_never"),
        "cmp_broken": BROKEN_ENGINE.format(name="cmp_broken"),
        "cmp_drops_tools": DROPS_TOOLS_ENGINE.format(name="cmp_drops_tools"),
        "cmp_raises": NEVER_ENGINE.format(name="cmp_raises").replace(
            "        return False", "        raise RuntimeError('should_compress exploded')"),
        # Slow enough (0.1 s a provider call) that a cancel from the progress callback lands mid-run.
        "cmp_slow": NEVER_ENGINE.format(name="cmp_slow").replace(
            "        self.last_prompt_tokens =", "        __import__('time').sleep(0.1)\n        self.last_prompt_tokens ="),
        # Blocked in C: a backtracking regex holds the interpreter lock, so only the worker's supervisor ends it.
        "cmp_frozen": NEVER_ENGINE.format(name="cmp_frozen").replace(
            "        return False", "        import re\n        re.match(r'(a+)+$', 'a' * 40 + 'b')  # blocks for good\n"
            "        return False"),
        "cmp_stuck": NEVER_ENGINE.format(name="cmp_stuck").replace(
            "        return False", "        import threading\n        threading.Event().wait()  # blocks for good\n"
            "        return False"),
    }
    for name, code in engines.items():
        d = root / "context_engine" / name
        d.mkdir(parents=True)
        (d / "__init__.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def session_messages(turns: int = 6, hostile: bool = False) -> list[dict[str, Any]]:
    """An OpenAI-format coding transcript: per turn a question, one tool call, its result, an answer."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(turns):
        text = f"Please look at module {t} and fix the bug."
        if hostile and t == 0:
            text += " " + " ".join(HOSTILE)
        msgs.append({"role": "user", "content": text})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{t}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{t}.py"})}}]})
        body = "".join(f"def helper_{t}_{i}(value):\n    return value * {i} + {t}\n" for i in range(60))
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": body})
        msgs.append({"role": "assistant", "content": f"Fixed module {t}."})
    return msgs


def make_session(turns: int = 6, hostile: bool = False) -> Session:
    msgs = session_messages(turns, hostile)
    s = Session(id="cmp-session", source_format="test", messages=msgs)
    s.turns = compute_turns(msgs)
    if hostile:
        s.title = HOSTILE[0] + HOSTILE[1]
    return s


@pytest.fixture
def base_config() -> dict[str, Any]:
    return load_config(None, {"model": {"default": "claude-opus-4-5"},
                              "inspector": {"hook_timeout_seconds": 5},
                              "compression": {"context_timeout_seconds": 5}})


# -- synthetic traces ---------------------------------------------------------------------------


def _state(compressions: int = 0, prompt: int = 0, threshold: int = 1000) -> tuple[int, ...]:
    values = {"last_prompt_tokens": prompt, "threshold_tokens": threshold, "context_length": 4000,
              "compression_count": compressions}
    return tuple(values.get(f, 0) for f in STATE_FIELDS)


def synthetic_trace(calls_per_turn: list[int], *, compress_before: set[tuple[int, int]] = frozenset(),
                    base_tokens: int = 100) -> Trace:
    """A trace built directly: per turn a turn marker, then ``n`` requests; optional compress events.

    ``compress_before`` holds (turn, call) pairs before whose request a committed compress sits.
    Prompt tokens grow by 100 per request and fall to ``base_tokens`` after a compression.
    """
    trace = Trace(meta={"label": "synthetic"})
    store = trace.store
    history = [{"role": "system", "content": "sys"}]
    keys = [store.put(m) for m in history]  # each message keyed once: a request's list is the keys so far
    comps = 0
    tokens = base_tokens
    for turn, n in enumerate(calls_per_turn):
        history.append({"role": "user", "content": f"turn {turn}"})
        keys.append(store.put(history[-1]))
        trace.add_event(Event(index=0, kind=EV_TURN, turn=turn, state=_state(comps, tokens)))
        for call in range(n):
            if (turn, call) in compress_before:
                before = store.put_list(keys)
                history = [history[0], {"role": "user", "content": f"summary before {turn}.{call}"}]
                keys = [store.put(m) for m in history]
                after = store.put_list(keys)
                comps += 1
                tokens = base_tokens
                trace.add_event(Event(index=0, kind=EV_COMPRESS, turn=turn, duration=0.01,
                                      args={"messages": {"$list": before}, "tokens_before": 999},
                                      result={"$list": after, "tokens_after": 111, "count_before": 5,
                                              "count_after": 2},
                                      state=_state(comps, tokens)))
            tokens += 100
            history.append({"role": "assistant", "content": f"answer {turn}.{call}"})
            keys.append(store.put(history[-1]))
            lid = store.put_list(keys)
            req = Request(index=len(trace.requests), turn=turn, call=call, event=0, assembled=lid, selected=lid,
                          tokens={"tiktoken": tokens, "completion": 5},
                          usage={"prompt_tokens": tokens, "completion_tokens": 5, "cache_read_tokens": tokens // 2,
                                 "cache_write_tokens": 10},
                          cache=CacheInfo(read=tokens // 2, write=10, uncached=tokens - tokens // 2 - 10,
                                          reason_kind="hit", cost=tokens / 1e6))
            trace.requests.append(req)
            ev = trace.add_event(Event(index=0, kind=EV_REQUEST, turn=turn, request=req.index,
                                       state=_state(comps, tokens)))
            req.event = ev.index
    return trace.finish()
