"""Hermes' rough estimators measure the Python repr of a message, to the character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.tokens import rough


def test_text_estimate():
    assert rough.estimate_tokens_rough("") == 0
    assert rough.estimate_tokens_rough("a") == 1
    assert rough.estimate_tokens_rough("abcd") == 1
    assert rough.estimate_tokens_rough("abcde") == 2


def test_message_uses_repr_not_json():
    msg = {"role": "tool", "content": 'it\'s "x"\n', "ok": True, "n": None}
    # Written out by hand: repr picks double quotes for a string holding a single quote,
    # escapes the inner double quotes and the newline, and spells True / None.
    expected_repr = "{'role': 'tool', 'content': 'it\\'s \"x\"\\n', 'ok': True, 'n': None}"
    assert str(msg) == expected_repr
    chars, images = rough.message_rough_chars(msg)
    assert (chars, images) == (len(expected_repr), 0)
    assert rough.estimate_messages_tokens_rough([msg]) == (len(expected_repr) + 3) // 4


def test_non_ascii_counts_characters_not_bytes():
    msg = {"role": "user", "content": "café ☕"}
    assert rough.message_rough_chars(msg)[0] == len("{'role': 'user', 'content': 'café ☕'}")


def test_images_are_stripped_and_charged_flat():
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 10_000}},
        ],
    }
    shadow = "{'role': 'user', 'content': [{'type': 'text', 'text': 'look'}, {'type': 'image_url', 'image': '[stripped]'}]}"
    assert rough.message_rough_chars(msg) == (len(shadow), 1)
    assert rough.estimate_messages_tokens_rough([msg]) == (len(shadow) + 3) // 4 + 1500


def test_sum_then_round_over_messages():
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    total = sum(len(str(m)) for m in msgs)
    assert rough.estimate_messages_tokens_rough(msgs) == (total + 3) // 4


def test_anthropic_blocks_removed_and_multimodal_summary_used():
    msg = {
        "role": "tool",
        "content": {"_multimodal": True, "text_summary": "screenshot", "content": [{"type": "image"}]},
    }
    assert rough.message_rough_chars(msg) == (len(str({"role": "tool", "content": "screenshot"})), 1)
    stash = {
        "role": "user",
        "content": "hi",
        "_anthropic_content_blocks": [{"type": "image"}, {"type": "text"}],
    }
    assert rough.message_rough_chars(stash) == (len(str({"role": "user", "content": "hi"})), 1)


def test_tools_estimate():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "grep",
                "description": "Search — fast",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]
    params = '{"type":"object","properties":{"q":{"type":"string"}}}'
    assert (
        rough.estimate_tools_tokens_rough(tools)
        == (len("grep") + len("Search — fast") + len(params) + 3) // 4
    )
    assert rough.estimate_tools_tokens_rough(None) == 0


def test_request_estimate_adds_parts():
    msgs = [{"role": "user", "content": "hello"}]
    assert rough.estimate_request_tokens_rough(
        msgs, system_prompt="abcdefgh"
    ) == 2 + rough.estimate_messages_tokens_rough(msgs)


_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40),
    st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=3), max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(
    base=st.dictionaries(st.text(min_size=1, max_size=8), _values, min_size=1, max_size=5),
    content=st.one_of(st.none(), st.text(max_size=60)),
    dropped=st.integers(0, 5),
    extra=st.dictionaries(st.text(min_size=1, max_size=8), _values, max_size=3),
    edited=st.dictionaries(st.sampled_from(["content", "role"]), st.text(max_size=20), max_size=2),
    padding=st.tuples(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x85\xa0\u2000\u2028\u3000", max_size=4),
                      st.text(alphabet=" \t\n\r\x0b\x1f\xa0\u2029\u205f", max_size=4)),
)
def test_rough_chars_from_a_related_message_equals_measuring_it(base, content, dropped, extra, edited, padding):
    # A history row and its wire form share most values (the wire form strips string content);
    # the shortcut must give Hermes' figure for the row exactly, whatever was dropped, added,
    # edited or stripped.
    if content is not None and dropped % 2:
        base = {**base, "content": content.strip()}
        edited = {**edited, "content": padding[0] + content.strip() + padding[1]}
    base = {**base, "content": content if "content" not in base else base["content"]}
    other = {k: v for i, (k, v) in enumerate(base.items()) if i != dropped}
    other.update(extra)
    other.update(edited)
    expected = rough.message_rough_chars(other)[0]
    derived = rough.rough_chars_from(base, rough.message_rough_chars(base)[0], other)
    if derived is not None:
        assert derived == expected
    else:  # declined only where either side's content is measured through a shadow
        assert not other or any(type(m.get("content")) not in (str, type(None)) for m in (base, other))


def test_rough_chars_from_declines_shadowed_content():
    base = {"role": "user", "content": "hi"}
    with_image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}
    assert rough.rough_chars_from(base, rough.message_rough_chars(base)[0], with_image) is None
    blocks = {"role": "assistant", "content": "x", "_anthropic_content_blocks": []}
    assert rough.rough_chars_from(base, rough.message_rough_chars(base)[0], blocks) is None
