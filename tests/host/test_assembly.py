"""Request assembly and token counting: the history, the request built from it, and its figures."""

from __future__ import annotations

import copy
import json

from inspector.host.assembly import RequestAssembly
from inspector.host.calibration import UsageModel
from inspector.host.profiles import PROFILES
from inspector.host.recorder import HookRecorder
from inspector.tokens.rough import estimate_messages_tokens_rough, estimate_request_tokens_rough
from inspector.trace.model import Trace

from .conftest import CountingEngine

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


class Counter:
    """Counts one token per character, and how often it was asked."""

    def __init__(self):
        self.asked = 0

    def count_message(self, message, key=None):
        self.asked += 1
        return len(json.dumps(message))

    def count_tools(self, tools):
        return len(json.dumps(tools))


def _assembly(pre_api_tokens="rough", counter=None):
    rec = HookRecorder(CountingEngine(), PROFILES["hermes-main"], Trace(), hook_timeout=2)
    asm = RequestAssembly(rec, counter=counter or Counter(), usage_model=UsageModel(), pre_api_tokens=pre_api_tokens,
                          system_prompt="You are careful.", tools=list(TOOLS))
    asm.refresh_tools()
    return asm


def _turn(i, tool_calls=True):
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.py"})}}
    rows = [{"role": "user", "content": f"Fix module {i}."},
            {"role": "assistant", "content": None, "tool_calls": [call]}]
    if tool_calls:
        rows.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * 50})
    rows.append({"role": "assistant", "content": f"Fixed module {i}."})
    return rows


def test_the_rough_figures_are_hermes_estimates_of_the_history_and_the_request():
    asm = _assembly()
    for i in range(3):
        asm.history.extend(_turn(i))
        assert asm.history_rough() == estimate_messages_tokens_rough(asm.history)
        assert asm.request_rough() == estimate_request_tokens_rough(asm.history, system_prompt="You are careful.",
                                                                    tools=TOOLS)


def test_each_message_is_measured_once_however_often_the_request_is_assembled():
    counter = Counter()
    asm = _assembly(counter=counter)
    asm.history.extend(_turn(0))
    first = asm.assembled()
    asked = counter.asked
    assert asm.assembled() is first and counter.asked == asked  # nothing new: nothing counted
    asm.history.extend(_turn(1))
    assert len(asm.assembled().keys) == 1 + 8  # the system prompt, then the history
    assert counter.asked == asked + 4  # only the new messages
    asm.history = list(asm.history[-4:])  # a compaction replaces the list: assembled afresh, counted never again
    assert len(asm.assembled().keys) == 5 and counter.asked == asked + 4


def test_a_shallow_copy_of_a_history_message_takes_its_forms_and_an_equal_one_of_other_types_does_not():
    asm = _assembly()
    asm.history.extend([{**m, "timestamp": 10**20} for m in _turn(0)])
    keys = list(asm.assembled().keys)
    measured = []
    put = asm.store.put_measured
    asm.store.put_measured = lambda wire: measured.append(wire) or put(wire)
    asm.history = [dict(m) for m in asm.history]  # what an engine's compress hands back
    assert list(asm.assembled().keys) == keys and measured == []
    asm.history = copy.deepcopy(asm.history)  # tool calls rebuilt too
    assert list(asm.assembled().keys) == keys and measured == []
    asm.history = [{**asm.history[0], "timestamp": 1e20}] + asm.history[1:]  # == the original; its repr is shorter
    assert asm.history_rough() == estimate_messages_tokens_rough(asm.history) and len(measured) == 1


def test_the_request_sent_for_an_unpaired_tool_call_has_a_stub_result_and_the_history_is_untouched():
    asm = _assembly()
    asm.history.extend(_turn(0, tool_calls=False))
    asm_now = asm.assembled()
    assert not asm_now.clean
    keys = tuple(asm_now.keys)
    selected, sel_keys = asm.sanitised(asm_now, keys)
    assert len(selected) == len(keys) + 1 and selected[3]["role"] == "tool" and selected[3]["tool_call_id"] == "c0"
    assert len(asm.history) == 3


def test_under_the_usage_anchor_the_pre_api_figure_is_the_last_real_prompt_plus_what_came_since():
    for rule, anchored in (("usage_anchor", True), ("rough", False)):
        asm = _assembly(rule)
        asm.history.extend(_turn(0))
        asm.set_anchor(5_000)  # the reply to a request of all but the last message
        asm.history.extend(_turn(1))
        a = asm.assembled()
        pressure, tik = asm.pressure(a, tuple(a.keys), False)
        if anchored:
            assert asm.figure == "anchored" and pressure == 5_000 + estimate_messages_tokens_rough(asm.history[3:])
        else:
            assert asm.figure == "rough" and pressure == estimate_messages_tokens_rough(a.wire) + asm.tools_rough
        assert tik == a.tik + asm.tools_tokens + 3
