"""Small real comparisons for the window tests: tiny plugin engines over a hand-made session.

The engines are plugin directories written once per test session (plugin import is process
global); the session is an OpenAI JSONL transcript on disk so the window opens it the way a
user would. Token figures are large enough that the "tail" engines compact at different points,
which gives runs with different compressions, counters and cache outcomes at the same row.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml

from tests.engine_sources import BROKEN_ENGINE, NEVER_ENGINE, TAIL_ENGINE

ENGINES = ["ui_tail", "ui_tail_late", "ui_never"]


def write_plugins(root: Path) -> Path:
    """``root/context_engine/<name>/__init__.py`` for each test engine; returns ``root``."""
    engines = {
        "ui_tail": TAIL_ENGINE.format(limit=1500, name="ui_tail"),
        "ui_tail_late": TAIL_ENGINE.format(limit=2600, name="ui_tail_late"),
        "ui_never": NEVER_ENGINE.format(name="ui_never"),
        "ui_broken": BROKEN_ENGINE.format(name="ui_broken"),
    }
    for name, code in engines.items():
        d = root / "context_engine" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "__init__.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def session_messages(turns: int = 6, hostile: str = "") -> list[dict[str, Any]]:
    """Per turn: a question, one tool call, its (long) result, an answer."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": f"Please look at module {t} and fix the bug. {hostile if t == 0 else ''}"})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{t}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{t}.py"})}}]})
        body = "".join(f"def helper_{t}_{i}(value):\n    return value * {i} + {t}\n" for i in range(60))
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": body})
        msgs.append({"role": "assistant", "content": f"Fixed module {t}."})
    return msgs


def write_session(path: Path, turns: int = 6, hostile: str = "") -> Path:
    path.write_text("\n".join(json.dumps(m) for m in session_messages(turns, hostile)) + "\n", encoding="utf-8")
    return path


def write_config(path: Path, **extra: Any) -> Path:
    """A config.yaml with short hook timeouts (tests must stay quick) plus ``extra`` sections."""
    config: dict[str, Any] = {
        "model": {"default": "claude-opus-4-5"},
        "inspector": {"hook_timeout_seconds": 5},
        "compression": {"context_timeout_seconds": 5},
    }
    for key, value in extra.items():
        config.setdefault(key, {}).update(value)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path
