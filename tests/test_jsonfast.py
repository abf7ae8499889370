"""The fast JSON writer writes what the standard library writes, and refuses nothing it must keep."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from inspector import jsonfast

_scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text())  # text() includes lone surrogates
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text() | st.integers() | st.booleans(), inner, max_size=4), max_leaves=30)


def _stdlib(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(_values)
def test_the_text_reads_back_as_the_standard_librarys_for_any_json_value(value):
    text = jsonfast.dumps_text(value)
    assert json.loads(text) == json.loads(_stdlib(value))
    assert repr(json.loads(text)) == repr(json.loads(_stdlib(value)))  # -0.0, 1 vs 1.0: the same value exactly


def test_without_floats_the_text_is_the_standard_librarys_byte_for_byte():
    value = {"a": [1, -2**70, "ü\udcff", None, True], 3: {"x": ""}, None: "n"}
    assert jsonfast.dumps_text(value) == _stdlib(value)
    assert jsonfast.dumps_text(value[None]) == _stdlib(value[None])


@given(_values)
def test_what_the_fast_writer_accepts_reads_back_as_the_standard_library_reads_it(value):
    data = jsonfast.dumps_fast(value)
    if data is not None:
        assert jsonfast.loads_fast(data) == json.loads(_stdlib(value))


def test_what_the_fast_writer_cannot_keep_exactly_it_refuses():
    assert jsonfast.dumps_fast({"n": 2**64}) is None  # orjson would read it back as a float
    assert jsonfast.dumps_fast({"s": "\ud800"}) is None  # a lone surrogate


def test_the_default_hook_serves_both_writers_and_nan_is_strict_null():
    def default(value):
        return sorted(value)

    assert jsonfast.dumps_text({"s": {3, 1}, "t": (1, 2)}, default) == '{"s":[1,3],"t":[1,2]}'
    assert jsonfast.dumps_text({"s": {2**70}}, default) == f'{{"s":[{2**70}]}}'
    assert json.loads(jsonfast.dumps_text([math.nan])) == [None]


@given(_values)
def test_reading_gives_what_the_standard_library_reads(value):
    data = _stdlib(value).encode("utf-8", "surrogatepass")
    assert repr(jsonfast.loads(data)) == repr(json.loads(_stdlib(value)))


def test_what_the_fast_reader_refuses_the_standard_library_reads_or_rejects_as_it_would():
    assert jsonfast.loads(b'{"n": 18446744073709551617}') == {"n": 2**64 + 1}  # exact, not a float
    assert jsonfast.loads(b'["\\ud800", NaN]')[0] == "\ud800"
    assert math.isnan(jsonfast.loads(b"[NaN]")[0])
    for bad in (b'{"a": }', b"", b"[1,"):
        try:
            json.loads(bad.decode())
        except json.JSONDecodeError as expected:
            try:
                jsonfast.loads(bad)
            except json.JSONDecodeError as got:
                assert (got.lineno, got.colno, got.msg) == (expected.lineno, expected.colno, expected.msg)
            else:
                raise AssertionError(f"{bad!r} was accepted")


@given(_values)
def test_reading_text_gives_what_the_standard_library_reads(value):
    for text in (_stdlib(value), json.dumps(value)):  # raw lone surrogates, and their escapes
        assert repr(jsonfast.loads_text(text)) == repr(json.loads(text))


def test_text_the_fast_reader_refuses_is_read_or_rejected_as_the_standard_library_does():
    assert jsonfast.loads_text('{"a": 1, "a": 2, "b": "\udcff"}') == {"a": 2, "b": "\udcff"}
    assert math.isnan(jsonfast.loads_text("[NaN]")[0])
    for bad in ('{"a": }', "", "[1,", '{"a": 1} {"b": 2}', "[" * 100_000):
        try:
            json.loads(bad)
        except (json.JSONDecodeError, RecursionError) as expected:
            try:
                jsonfast.loads_text(bad)
            except type(expected) as got:
                assert str(got) == str(expected)
            else:
                raise AssertionError(f"{bad[:20]!r} was accepted")
