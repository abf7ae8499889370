"""Config YAML: safe_load semantics, and alias bombs refused before they expand."""

from __future__ import annotations

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


def test_a_recursive_alias_terminates() -> None:
    loaded = yaml_safe.load("a: &x [1, *x]")
    assert loaded["a"][0] == 1 and loaded["a"][1] is loaded["a"]
