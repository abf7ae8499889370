"""A deterministic synthetic trace, shaped like what the host records.

The window's tests and the UI benchmark need traces of any size (empty, a few turns with
faults, 10,000 requests) without running an engine, so this builds one directly through the
Trace model: content-addressed messages, interned lists, requests with token figures and a
simple prefix-cache outcome, and the hook events a compressor produces (select_context,
update_from_response, should_compress, compress, tool calls, lifecycle, faults). It makes no
claim to model a real engine; it only has to exercise every panel the way real traces do.
"""

from __future__ import annotations

import json
import random
from typing import Any

from inspector.trace import model as tm
from inspector.trace.model import CacheInfo, Event, Fault, Request, Trace

_WORDS = (
    "context engine token cache prefix summary tool result request turn compress select window "
    "message provider usage threshold model budget history prune keep drop file path test error "
    "function value index list session replay trace event cursor panel diff block read write"
).split()

SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into this summary."


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _tok(text: str) -> int:
    return len(text) // 4 + 4


def build_trace(
    requests: int = 40,
    *,
    faults: bool = False,
    seed: int = 7,
    context_length: int = 8_000,
    threshold_ratio: float = 0.5,
    words_per_message: int = 60,
    recorded: bool = True,
) -> Trace:
    """A trace with about ``requests`` provider calls; 0 gives a trace with lifecycle events only.

    ``faults`` adds an engine exception in select_context, a compress timeout and a host fault
    every few turns so fault rendering and F4 navigation have something to find.
    """
    rng = random.Random(seed)
    trace = Trace(
        meta={
            "format": 1,
            "engine": {
                "name": "compressor",
                "source": "builtin",
                "version": "0.1.0",
                "plugin": {"name": "compressor", "description": "Hermes' built-in summarising compressor", "version": "0.1.0"},
                "config": {"threshold": threshold_ratio, "protect_last_n": 6, "target_ratio": 0.2},
                "files_written": ["~/.hermes/compressor/state.json"],
            },
            "session": {"source": "synthetic", "format": "synthetic", "id": f"synthetic-{seed}"},
            "tokenizer": "cl100k_base",
            "cache_profile": "anthropic",
            "differences": ["synthetic trace: no engine ran"],
        }
    )
    store = trace.store
    state = [0, 0, 0, int(context_length * threshold_ratio), context_length, 0]

    def put(msg: dict[str, Any]) -> str:
        key = store.put(msg)
        if key not in store.tokens:
            text = str(msg.get("content") or "") + str(msg.get("tool_calls") or "")
            n = _tok(text)
            store.tokens[key] = {"tiktoken": n, "rough": int(n * 1.12) + 2}
        return key

    def ev(kind: str, **kw: Any) -> Event:
        kw.setdefault("state", tuple(state))
        kw.setdefault("t", len(trace.events) * 0.01)
        return trace.add_event(Event(index=0, kind=kind, **kw))

    tools = [
        {"type": "function", "function": {"name": "lcm_expand", "description": "Expand a compacted span",
                                          "parameters": {"type": "object", "properties": {"span": {"type": "integer"}}}}},
    ]
    trace.tool_schemas = tools
    tools_list = store.put_messages(tools)

    ev(tm.EV_SESSION_START, args={"session_id": f"synthetic-{seed}"}, status={"engine": "compressor", "compression_count": 0})
    ev(tm.EV_UPDATE_MODEL, args={"model": "anthropic/claude-sonnet-4.5", "context_length": context_length})
    ev(tm.EV_TOOL_SCHEMAS, result={"count": len(tools)})

    system = put({"role": "system", "content": "You are a careful coding agent. " + _text(rng, 40)})
    history: list[str] = [system]
    prev_selected: tuple[str, ...] = ()
    last_change_event: int | None = None
    r = 0
    turn = 0
    model_switched = False
    while r < requests:
        turn += 1
        if not model_switched and requests >= 10 and r >= int(requests * 0.6):
            model_switched = True
            state[4] = int(context_length * 1.5)
            state[3] = int(state[4] * threshold_ratio)
            ev(tm.EV_UPDATE_MODEL, turn=turn, args={"model": "openai/gpt-5", "context_length": state[4]})
        user_text = _text(rng, rng.randint(8, words_per_message))
        if turn == 2:
            user_text = "Render <b>this</b> literally & keep <script>alert(1)</script> as text. " + user_text
        user = put({"role": "user", "content": user_text})
        history.append(user)
        ev(tm.EV_TURN, turn=turn, args={"message": {"$msg": user}})
        calls = rng.randint(1, 3)
        for call in range(1, calls + 1):
            if r >= requests:
                break
            tokens_now = sum(store.tokens[k]["tiktoken"] for k in history)
            over = tokens_now >= state[3]
            ev(tm.EV_SHOULD, turn=turn, args={"prompt_tokens": tokens_now}, result=over)
            if over:
                before = store.put_list(history)
                keep = history[-6:]
                summary = put({"role": "user", "content": f"{SUMMARY_PREFIX}\n" + _text(rng, 120)})
                timed_out = faults and turn % 9 == 4
                if timed_out:
                    ev(tm.EV_COMPRESS, turn=turn, args={"messages": {"$list": before}, "current_tokens": tokens_now},
                       duration=30.0, fault=Fault("timeout", "compress() exceeded 30 s; compression discarded"))
                else:
                    history = [system, summary, *[k for k in keep if k != system]]
                    after = store.put_list(history)
                    state[5] += 1
                    e = ev(tm.EV_COMPRESS, turn=turn, args={"messages": {"$list": before}, "current_tokens": tokens_now,
                                                           "focus_topic": None},
                           result={"$list": after}, duration=0.4 + rng.random(),
                           status={"engine": "compressor", "compression_count": state[5]},
                           output=f"INFO inspector.engines.compressor: Compressed {len(store.get_list(before))} -> "
                                  f"{len(history)} messages\n")
                    last_change_event = e.index
            assembled = store.put_list(history)
            selected_keys = list(history)
            engine_selected = False
            select_fault = faults and turn % 7 == 3 and call == 1
            if not select_fault and len(selected_keys) > 8 and r % 5 == 4:
                # the engine drops the oldest tool result it can find (keeps the system prompt)
                for i in range(1, len(selected_keys) - 4):
                    if store.get(selected_keys[i]).get("role") == "tool":
                        del selected_keys[i]
                        engine_selected = True
                        break
            selected = store.put_list(selected_keys)
            if select_fault:
                sel_ev = ev(tm.EV_SELECT, turn=turn, request=r, args={"request_messages": {"$list": assembled}},
                            fault=Fault("exception", "KeyError: 'tool_call_id'",
                                        "Traceback (most recent call last):\n  File \"engine.py\", line 42, in select_context\nKeyError: 'tool_call_id'"),
                            output=f"selecting from {len(selected_keys)} messages\n"
                                   "WARNING engine: a tool result without its call\n")
            else:
                sel_ev = ev(tm.EV_SELECT, turn=turn, request=r, args={"request_messages": {"$list": assembled}},
                            result={"$list": selected}, duration=0.002)
            if engine_selected:
                last_change_event = sel_ev.index
            blocks = [store.tokens[k]["tiktoken"] for k in selected_keys]
            total = sum(blocks)
            prefix = 0
            for a, b in zip(prev_selected, selected_keys):
                if a != b:
                    break
                prefix += 1
            if not prev_selected:
                kind, reason, brk = "cold", "cold start: nothing cached yet", 0
                read = 0
            elif prefix < len(prev_selected):
                kind, brk = "prefix_break", prefix
                reason = f"prefix broke at message {prefix}" + (
                    f" ({trace.events[last_change_event].kind} at event {last_change_event})" if last_change_event is not None else "")
                read = sum(blocks[:prefix]) if prefix >= 2 else 0
            else:
                kind, reason, brk = "hit", f"hit: {prefix} messages served from cache", None
                read = sum(blocks[:prefix])
            write = max(0, total - read - blocks[-1]) if selected_keys else 0
            uncached = max(0, total - read - write)
            cost = read * 0.3e-6 + write * 3.75e-6 + uncached * 3e-6
            completion = rng.randint(40, 600)
            usage = {"prompt_tokens": total, "completion_tokens": completion, "total_tokens": total + completion,
                     "cache_read_tokens": read, "cache_write_tokens": write}
            req = Request(
                index=r, turn=turn, call=call, event=len(trace.events), assembled=assembled, selected=selected,
                selected_by_engine=engine_selected, tools=tools_list,
                tokens={"tiktoken": total, "rough": int(total * 1.12), "tools": 120},
                usage=usage,
                recorded=({"prompt_tokens": int(total * 1.04) + 50, "completion_tokens": completion} if recorded else None),
                cache=CacheInfo(read=read, write=write, uncached=uncached, break_index=brk, reason=reason, reason_kind=kind,
                                cause_event=last_change_event if kind == "prefix_break" else None,
                                block_tokens=blocks, cost=cost),
                timestamp=1_700_000_000.0 + r * 7.5,
            )
            trace.requests.append(req)
            ev(tm.EV_REQUEST, turn=turn, request=r)
            prev_selected = tuple(selected_keys)
            state[0], state[1], state[2] = total, completion, total + completion
            more = call < calls
            if more:
                call_id = f"call_{r}"
                reply = {"role": "assistant", "content": "",
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": rng.choice(["read_file", "grep", "run_tests"]),
                                                      "arguments": json.dumps({"path": f"src/module_{r}.py"})}}]}
            else:
                reply = {"role": "assistant", "content": _text(rng, rng.randint(10, words_per_message))}
            reply_key = put(reply)
            req.response_key = reply_key
            ev(tm.EV_RESPONSE, turn=turn, request=r, args={"usage": usage}, duration=0.0005,
               status={"engine": "compressor", "last_prompt_tokens": total, "compression_count": state[5]})
            history.append(reply_key)
            if more:
                history.append(put({"role": "tool", "tool_call_id": call_id, "content": _text(rng, rng.randint(40, 3 * words_per_message))}))
            if r % 11 == 6:
                ev(tm.EV_TOOL, turn=turn, request=r, args={"name": "lcm_expand", "args": {"span": r}}, result="expanded 3 messages")
            if faults and r % 13 == 12:
                ev(tm.EV_FAULT, turn=turn, request=r, fault=Fault("host_error", "provider returned HTTP 529 (overloaded); retried"))
            r += 1
        ev(tm.EV_TURN_COMPLETE, turn=turn)
    if requests:
        ev(tm.EV_SESSION_END, args={"session_id": f"synthetic-{seed}"})
    return trace.finish()


def empty_trace() -> Trace:
    """A trace with no events at all (a replay that produced nothing, or a new live session)."""
    return Trace(meta={"engine": {"name": "none"}}).finish()
