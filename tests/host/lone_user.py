"""Transcripts whose last turn is a user message the agent never answered, one writer per format.

Each holds two answered exchanges, then the lone user message (an interrupted last turn).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.sessions import hermes_db_fixtures as fx

SYSTEM = "You are a careful assistant."
ANSWERED = [("What is a context engine?", "It decides what the model sees."),
            ("And compaction?", "It summarises older turns.")]
UNANSWERED = "Then show me an example."
T0 = 1_760_000_000.0


def _messages() -> list[dict[str, str]]:
    out = [{"role": "system", "content": SYSTEM}]
    for question, answer in ANSWERED:
        out += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return out + [{"role": "user", "content": UNANSWERED}]


def openai_object(folder: Path) -> Path:
    path = folder / "chat.json"
    path.write_text(json.dumps({"messages": _messages()}), encoding="utf-8")
    return path


def openai_array(folder: Path) -> Path:
    path = folder / "array.json"
    path.write_text(json.dumps(_messages()), encoding="utf-8")
    return path


def openai_jsonl(folder: Path) -> Path:
    path = folder / "messages.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in _messages()), encoding="utf-8")
    return path


def hermes_db(folder: Path) -> Path:
    path = folder / "state.db"
    conn = fx.create(path)
    fx.add_session(conn, "s1", system_prompt=SYSTEM, started_at=T0)
    for k, m in enumerate(_messages()[1:]):
        fx.add_message(conn, "s1", m["role"], m["content"], timestamp=T0 + k)
    conn.commit()
    conn.close()
    return path


def hermes_export(folder: Path) -> Path:
    rows = [{"id": k + 1, "session_id": "s1", "role": m["role"], "content": m["content"], "timestamp": T0 + k,
             "tool_call_id": None, "tool_calls": None, "tool_name": None}
            for k, m in enumerate(_messages()[1:])]
    path = folder / "export.jsonl"
    line = {"id": "s1", "source": "cli", "started_at": T0, "system_prompt": SYSTEM, "messages": rows}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def trajectory(folder: Path) -> Path:
    speaker = {"system": "system", "user": "human", "assistant": "gpt"}
    path = folder / "trajectory_samples.jsonl"
    entry = {"conversations": [{"from": speaker[m["role"]], "value": m["content"]} for m in _messages()],
             "completed": False}
    path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    return path


def claude_code(folder: Path) -> Path:
    sid = "11111111-2222-3333-4444-555555555555"
    records, parent = [], None
    for k, m in enumerate(_messages()[1:]):
        uuid = f"r{k}"
        message: dict = {"role": m["role"], "content": m["content"]}
        if m["role"] == "assistant":
            message = {"model": "claude-sonnet-4-5", "id": f"msg_{k}", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": m["content"]}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 20, "output_tokens": 8}}
        records.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p",
                        "sessionId": sid, "version": "2.1.39", "type": m["role"], "uuid": uuid,
                        "timestamp": f"2026-02-10T22:57:{10 + k:02d}.000Z", "message": message})
        parent = uuid
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def codex(folder: Path) -> Path:
    def line(kind: str, payload: dict, second: int) -> str:
        return json.dumps({"timestamp": f"2026-02-23T12:00:{second:02d}.000Z", "type": kind, "payload": payload})

    def item(role: str, text: str) -> dict:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}

    lines = [line("session_meta", {"id": "sess-1", "timestamp": "2026-02-23T12:00:00Z", "cwd": "/r",
                                   "originator": "codex_cli_rs", "base_instructions": {"text": SYSTEM}}, 0)]
    second = 1
    turns = [(q, a) for q, a in ANSWERED] + [(UNANSWERED, None)]
    for k, (question, answer) in enumerate(turns):
        lines += [line("event_msg", {"type": "task_started", "turn_id": f"t{k}"}, second),
                  line("response_item", item("user", question), second),
                  line("event_msg", {"type": "user_message", "message": question}, second),
                  line("turn_context", {"turn_id": f"t{k}", "model": "gpt-5"}, second)]
        if answer is not None:
            lines += [line("response_item", item("assistant", answer), second + 1),
                      line("event_msg", {"type": "task_complete", "turn_id": f"t{k}"}, second + 1)]
        second += 2
    path = folder / "rollout-2026-02-23T12-00-00-sess-1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


WRITERS: dict[str, Callable[[Path], Path]] = {
    "openai-object": openai_object, "openai-array": openai_array, "openai-jsonl": openai_jsonl,
    "hermes-db": hermes_db, "hermes-export": hermes_export, "trajectory": trajectory,
    "claude-code": claude_code, "codex": codex,
}
