"""Config YAML: safe_load semantics, and alias bombs refused before they expand."""

from __future__ import annotations

import re

import pytest
import yaml

from inspector import yaml_safe


def test_ordinary_documents_load_as_safe_load_does() -> None:
    text = "a: &x [1, 2]\nb: *x\nc: {d: true}\n"
    assert yaml_safe.load(text) == yaml.safe_load(text)
    assert yaml_safe.load("") is None
    with pytest.raises(yaml.YAMLError):
        yaml_safe.load("x: !!python/object/apply:os.system ['true']")


def test_nested_aliases_that_expand_to_millions_are_refused_at_once() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefg", "bcdefgh"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(yaml.YAMLError, match="alias bomb"):
        yaml_safe.load("\n".join(lines))


def test_an_alias_inside_the_value_it_names_is_refused_with_its_line() -> None:
    # A value that contains itself makes every copy and JSON writer recurse forever.
    with pytest.raises(yaml.YAMLError, match="line 2: an alias .* contains it"):
        yaml_safe.load("ok: 1\na: &x [1, *x]\n")
    with pytest.raises(yaml.YAMLError, match="contains it"):
        yaml_safe.load("m: &m {inner: {again: *m}}\n")
    assert yaml_safe.load("a: &x [1]\nb: [*x, *x]\n") == {"a": [1], "b": [[1], [1]]}  # shared, not recursive


@pytest.mark.parametrize("value", [".inf", "-.inf", ".NaN", "+.Inf", "1.0e+999"])
def test_non_finite_numbers_are_refused_with_their_line(value: str) -> None:
    with pytest.raises(yaml.YAMLError, match=f"line 3: compression.threshold: '{re.escape(value)}' is not a finite number"):
        yaml_safe.load(f"compression:\n  enabled: true\n  threshold: {value}\n")


def test_huge_integers_are_refused() -> None:
    with pytest.raises(yaml.YAMLError, match="line 1: n: the number .* too large"):
        yaml_safe.load("n: " + "9" * 400)
    with pytest.raises(yaml.YAMLError, match="too large"):
        yaml_safe.load("n: " + "9" * 5000)  # past Python's own digit limit
    assert yaml_safe.load("n: 9223372036854775807") == {"n": 2**63 - 1}


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(yaml.YAMLError, match="nested more than 64 levels"):
        yaml_safe.load("a: " + "[" * 100 + "]" * 100)
    with pytest.raises(yaml.YAMLError, match="nested more than 64 levels"):
        yaml_safe.load("a: " + "[" * 20000 + "]" * 20000)  # past the parser's own stack
    assert yaml_safe.load("a: " + "[" * 60 + "]" * 60)
