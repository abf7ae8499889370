"""Message keys: content addressing that survives key order and a save/load, and measures."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.trace.io import load_trace, save_trace
from inspector.trace.model import Trace, earlier_message_keys, measured_key, message_key

_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
_messages = st.dictionaries(st.text(max_size=8), _json, max_size=5)


def _reversed_order(value):
    if isinstance(value, dict):
        return {k: _reversed_order(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_order(v) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(message=_messages)
def test_the_key_ignores_key_order_and_the_length_is_the_repr_length(message):
    key, chars = measured_key(message)
    assert message_key(_reversed_order(message)) == key
    assert chars == len(str(message))  # Hermes' rough estimator measures exactly this


@settings(max_examples=200, deadline=None)
@given(a=_messages, b=_messages)
def test_different_content_gets_a_different_key(a, b):
    # Equal keys exactly when the messages are equal as JSON (1 and 1.0, True and 1 differ).
    same_json = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (message_key(a) == message_key(b)) == same_json


def test_values_json_cannot_hold_are_keyed_as_a_reloaded_trace_holds_them(tmp_path: Path):
    odd = {"role": "tool", "content": "x", "extra": ("a", 1), "ids": {3: "three"}, "when": Path("/tmp/f")}
    key, chars = measured_key(odd)
    assert chars is None  # the repr was normalised, so it is not Hermes' figure
    trace = Trace()
    assert trace.store.put(odd) == key
    save_trace(trace, tmp_path / "t.json")
    reloaded = load_trace(tmp_path / "t.json", verify=True)
    assert message_key(reloaded.store.get(key)) == key


_long_ascii = st.text(alphabet=st.characters(max_codepoint=127), min_size=512, max_size=2000)


@settings(max_examples=200, deadline=None)
@given(content=_long_ascii, name=_long_ascii)
def test_a_long_texts_repr_length_is_counted_exactly(content, name):
    message = {"role": "tool", "content": content, "name": name, "parts": [content, {"text": name}]}
    assert measured_key(message)[1] == len(str(message))


def test_traces_keyed_the_old_ways_still_verify(tmp_path: Path):
    message = {"role": "user", "content": "hello"}
    for old_key in earlier_message_keys(message):
        assert old_key != message_key(message)
        trace = Trace()
        trace.store.messages[old_key] = message
        trace.store.put_list([old_key])
        save_trace(trace, tmp_path / "old.json")
        assert load_trace(tmp_path / "old.json", verify=True).store.get(old_key) == message
