"""Packed dicts: held as tuples, read back as exactly the dicts they were (types, order, references)."""

from __future__ import annotations

import dataclasses
import gc
import inspect

import pytest

from inspector.trace.model import EV_REQUEST, EV_RESPONSE, Event, Request, hold_request
from inspector.trace.packed import LIST, VALUE, is_packed, keys_of, pack, pack_usage, shape_of, unpack
from inspector.trace.token_table import TokenTable, figures

SAMPLES = [
    {"prompt_tokens": 1234, "site": "pre_api", "figure": "rough"},
    {"inputs": {"$list": 4}, "timestamp": 1.5},
    {"messages": {"$msg": "ab" * 10}, "n": None, "ok": True, "ratio": 1.0, "one": 1},
    {"usage": {"prompt_tokens": 3}, "kwargs": {"force": True}, "names": ["a", {"$list": 2}]},
    {"ref": {"$list": True}, "other": {"$msg": 5}},  # not references: a bool id, a number key
]


@pytest.mark.parametrize("value", SAMPLES)
def test_a_packed_dict_reads_back_equal_in_key_order_and_types(value):
    for _ in range(2):  # the first packing of a key set walks it, the next ones take its shape
        held = pack(value)
        assert is_packed(held)
        back = unpack(held)
        assert back == value and repr(back) == repr(value) and back is not value


def test_nested_values_are_held_as_the_same_objects():
    usage = {"prompt_tokens": 3}
    assert unpack(pack({"usage": usage}))["usage"] is usage


def test_a_reference_where_the_shape_expects_none_or_none_where_it_expects_one_still_reads_back():
    pack({"a": {"$list": 1}, "b": 2})  # the key set's shape: a is a list reference
    for value in ({"a": {"x": 1}, "b": 2}, {"a": None, "b": 2}, {"a": {"$msg": "k"}, "b": 2}):
        assert unpack(pack(value)) == value


@pytest.mark.parametrize("value", [{}, {1: "a"}, {"a": 1, 2: "b"}, [1, 2], "text", None, 3, (1, 2)])
def test_what_is_not_a_dict_with_string_keys_is_held_as_it_is(value):
    assert pack(value) is value
    assert unpack(value) is value


def test_a_str_subclass_key_is_not_taken_for_the_str_it_equals():
    class Name(str):
        pass

    pack({"x": 1})
    value = {Name("x"): 1}
    assert pack(value) is value


def test_a_packed_tuple_of_numbers_and_strings_is_left_alone_by_the_garbage_collector():
    held = pack({"prompt_tokens": 7, "site": "pre_api"})
    gc.collect()
    assert not gc.is_tracked(held)  # as the dict it replaces was: its shape handle is bytes


def test_a_shape_written_by_hand_reads_as_the_dict_pack_would_make():
    shape = shape_of(("inputs", "timestamp"), (LIST, VALUE))
    assert unpack((shape, 9, 2.0)) == {"inputs": {"$list": 9}, "timestamp": 2.0}
    assert keys_of((shape, 9, 2.0)) == ("inputs", "timestamp") and keys_of({"a": 1}) == {"a": 1}


# -- events and requests ----------------------------------------------------------------------


def test_events_are_built_with_every_field_the_dataclass_declares_in_order_with_its_defaults():
    params = list(inspect.signature(Event.__init__).parameters.values())[1:]
    fields = dataclasses.fields(Event)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default
        elif f.default_factory is not dataclasses.MISSING:
            assert Event(0, "k").args == f.default_factory() and Event(0, "k").args is not Event(0, "k").args
        else:
            assert p.default is inspect.Parameter.empty


def test_an_event_reads_packed_arguments_and_status_as_dicts_and_equals_one_holding_dicts():
    args, status = {"prompt_tokens": 5, "site": "pre_api", "figure": "rough"}, {"last_prompt_tokens": 5}
    packed = Event(index=1, kind="should_compress", args=pack(args), status=pack(status), result=True)
    plain = Event(index=1, kind="should_compress", args=dict(args), status=dict(status), result=True)
    assert packed.args == args and packed.status == status
    assert packed == plain and repr(packed) == repr(plain)
    assert dataclasses.asdict(packed) == dataclasses.asdict(plain)
    assert dataclasses.replace(packed, index=2).args == args


def test_assigning_a_new_dict_changes_what_an_event_reads_and_editing_the_one_read_does_not():
    ev = Event(index=0, kind="should_compress", args=pack({"prompt_tokens": 5}))
    ev.args["prompt_tokens"] = 6
    assert ev.args == {"prompt_tokens": 5}
    ev.args = {"prompt_tokens": 6}
    assert ev.args == {"prompt_tokens": 6}


def _request() -> Request:
    return Request(index=3, turn=1, call=0, event=7, assembled=11, selected=12, response_key="k" * 20,
                   usage=pack({"prompt_tokens": 10, "completion_tokens": 2}),
                   tokens=(shape_of(("tiktoken", "rough")), 10, 12))


def test_a_request_marker_held_as_its_request_reads_its_selected_list_and_response():
    req = _request()
    marker = Event(index=7, kind=EV_REQUEST, request=3)
    hold_request(marker, req)
    assert marker.args == {"messages": {"$list": 12}} and marker.result == {"$msg": "k" * 20}
    assert marker == Event(index=7, kind=EV_REQUEST, request=3, args={"messages": {"$list": 12}},
                           result={"$msg": "k" * 20})


def test_an_update_from_response_call_held_as_its_request_reads_its_usage():
    req = _request()
    call = Event(index=8, kind=EV_RESPONSE, request=3, result=None)
    hold_request(call, req)
    assert call.args == {"usage": {"prompt_tokens": 10, "completion_tokens": 2}} and call.result is None
    assert req.tokens == {"tiktoken": 10, "rough": 12}


# -- token table ------------------------------------------------------------------------------


def test_a_token_table_reads_as_the_mapping_it_holds():
    plain = {"a" * 20: {"tiktoken": 3, "rough_chars": 9, "images": 0}, "b" * 20: {"tiktoken": None}, "c" * 20: {}}
    table = TokenTable(plain)
    assert table == plain and dict(table.items()) == plain and len(table) == 3 and "a" * 20 in table
    assert table.get("z", {}) == {} and table.get("b" * 20) == {"tiktoken": None}
    assert is_packed(table.rows["a" * 20])


def test_a_row_changes_by_assigning_a_new_one():
    table = TokenTable({"k": {"tiktoken": 3}})
    table["k"]["tiktoken"] = 4
    assert table["k"] == {"tiktoken": 3}
    table["k"] = {**table["k"], "tiktoken": 4}
    assert table["k"] == {"tiktoken": 4}


def test_the_hosts_rows_read_as_its_three_figures_with_or_without_images():
    table = TokenTable()
    table.rows["k"] = figures(30, 140, 0)
    table.rows["j"] = figures(40, 150, 2)
    assert len(table.rows["k"]) == 3  # no images: nothing held for them
    assert table["k"] == {"tiktoken": 30, "rough_chars": 140, "images": 0}
    assert table["j"] == {"tiktoken": 40, "rough_chars": 150, "images": 2}


# -- usage, the gates' arguments, empty block counts -------------------------------------------


def _usage(p=1_000, c=20, cr=600, cw=100, r=0):
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c, "input_tokens": max(0, p - cr - cw),
            "output_tokens": c, "cache_read_tokens": cr, "cache_write_tokens": cw, "reasoning_tokens": r}


@pytest.mark.parametrize("usage", [
    _usage(), _usage(p=10, cr=600),  # input clamped at 0
    {**_usage(), "total_tokens": 7},  # not what it is made of
    {**_usage(), "prompt_tokens": 1_000.0},  # a float
    {**_usage(), "extra": 1},
    dict(reversed(list(_usage().items()))),  # another key order
])
def test_a_usage_dict_packed_reads_back_exactly(usage):
    held = pack_usage(usage)
    assert is_packed(held) and unpack(held) == usage and repr(unpack(held)) == repr(usage)


def test_hermes_usage_is_held_as_the_five_numbers_the_rest_is_made_of():
    assert len(pack_usage(_usage())) == 6 and len(pack_usage({**_usage(), "total_tokens": 7})) == 9


def test_should_compress_arguments_hold_only_the_figure_and_read_with_their_site_and_figure():
    from inspector.host.gates import _should_at

    held = _should_at(1_234, "pre_api", "anchored")
    assert len(held) == 2 and unpack(held) == {"prompt_tokens": 1_234, "site": "pre_api", "figure": "anchored"}
    assert keys_of(held) == ("prompt_tokens", "site", "figure")


def test_empty_block_counts_held_as_none_read_as_a_new_empty_list():
    from inspector.trace.model import NO_BLOCKS, CacheInfo

    info = CacheInfo(read=5, block_tokens=NO_BLOCKS)
    assert info.block_tokens == [] and info.block_tokens is not info.block_tokens
    assert info == CacheInfo(read=5) and dataclasses.asdict(info) == dataclasses.asdict(CacheInfo(read=5))
