"""Hostile config.yaml files: one line naming the file and the line, never a traceback."""

from __future__ import annotations

import json
import os

import pytest

CASES = {
    "self_alias": ("a: &a [*a]\n", "line 1: an alias"),
    "self_alias_map": ("compression:\n  m: &m {inner: *m}\n", "contains it"),
    "deep": ("a: " + "[" * 20_000 + "]" * 20_000 + "\n", "nested more than 64 levels"),
    "inf": ("compression:\n  threshold: .inf\n", "line 2: compression.threshold: '.inf' is not a finite number"),
    "nan": ("inspector:\n  hook_timeout_seconds: .nan\n", "line 2: inspector.hook_timeout_seconds: '.nan'"),
    "neg_inf": ("compression:\n  target_ratio: -.inf\n", "is not a finite number"),
    "huge_int": ("compression:\n  protect_last_n: " + "9" * 400 + "\n", "too large"),
    "billion_laughs": ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{n}: &{n} [" + ",".join([f"*{p}"] * 10) + "]\n" for p, n in zip("abcdefg", "bcdefgh")), "alias bomb"),
}


@pytest.fixture
def session(tmp_path):
    src = tmp_path / "s.json"
    src.write_text(json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
                   encoding="utf-8")
    return src


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_config_is_one_line_naming_the_file(cli, tmp_path, session, case):
    text, words = CASES[case]
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    r = cli("replay", str(session), "--config", str(config), "--quiet", inputs=(config, session))
    assert r.code == 2
    assert words in r.one_line_error(str(config))


@pytest.mark.parametrize("value, words", [(".nan", "not a finite number"), ("1e999", "not a finite number"),
                                          (".inf", "not a finite number")])
def test_a_non_finite_set_option_is_one_line(cli, session, value, words):
    r = cli("replay", str(session), "--set", f"compression.threshold={value}", "--quiet")
    assert r.code == 2 and words in r.one_line_error("compression.threshold")


def test_a_fifo_as_config_is_refused_at_once(cli, tmp_path, session):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    r = cli("replay", str(session), "--config", str(fifo), "--quiet", timeout=20)
    assert r.code == 2 and "named pipe" in r.one_line_error(str(fifo))
