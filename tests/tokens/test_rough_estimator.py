"""Hermes' rough estimators measure the Python repr of a message, to the character."""

from __future__ import annotations

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
