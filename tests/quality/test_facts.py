"""Fact extraction: each kind found with its origin, tool outputs reduced to their key lines,
the same facts every time."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from inspector.quality import facts as fx
from inspector.quality.facts import extract_facts, message_facts, normalise

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "demo_session.json"


def found(message):
    return {(f.kind, f.text) for f in message_facts(message, 0)}


def test_a_user_message_yields_its_decision_paths_urls_identifiers_and_numbers():
    msg = {"role": "user", "content": "Amounts must be Decimal, never floats. See docs at https://example.org/money "
                                      "and keep `split_amount()` in ledgerlite/money.py under 250 ms."}
    got = found(msg)
    assert (fx.DECISION, "Amounts must be Decimal, never floats.") in got
    assert (fx.URL, "https://example.org/money") in got
    assert (fx.PATH, "ledgerlite/money.py") in got
    assert (fx.IDENTIFIER, "split_amount()") in got
    assert (fx.NUMBER, "250 ms") in got


def test_a_tool_call_yields_its_command():
    msg = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "terminal",
                                                      "arguments": json.dumps({"command": "pytest -q tests/x.py"})}}]}
    assert (fx.COMMAND, "pytest -q tests/x.py") in found(msg)


def test_a_tool_output_gives_key_lines_not_every_line_of_a_file():
    output = {"output": "collected 3 items\nFAILED tests/test_m.py::test_split - AssertionError: 9.99 != 10.00\n"
                        "E   AssertionError: 9.99 != 10.00\n==== 1 failed, 2 passed in 0.31s ===="}
    got = found({"role": "tool", "tool_call_id": "c1", "content": json.dumps(output)})
    assert (fx.ERROR, "FAILED tests/test_m.py::test_split - AssertionError: 9.99 != 10.00") in got
    assert (fx.RESULT, "==== 1 failed, 2 passed in 0.31s ====") in got
    listing = {"path": "m.py", "content": "  12|    raise ParseError('bad')\n  13|def split_amount(total):"}
    kinds = {k for k, _ in found({"role": "tool", "tool_call_id": "c2", "content": json.dumps(listing)})}
    assert fx.ERROR not in kinds and fx.IDENTIFIER not in kinds  # a file read back is not a list of facts


def test_a_tool_output_line_naming_a_missing_file_anywhere_is_an_error_and_a_word_containing_it_is_not():
    output = ("$ cat notes.md\ncat: notes.md: No such file or directory\nthe Permission deniedness of it\n"
              "  7|    # command not found here\nls: /root: Permission denied")
    got = found({"role": "tool", "tool_call_id": "c1", "content": output})
    errors = {text for kind, text in got if kind == fx.ERROR}
    assert errors == {"cat: notes.md: No such file or directory", "ls: /root: Permission denied"}
    quiet = found({"role": "tool", "tool_call_id": "c2", "content": "all\nfine\nhere"})
    assert {k for k, _ in quiet} == {fx.RESULT}  # only the last line, as for any output
    assert (fx.RESULT, "here") in quiet


def test_normalising_folds_case_space_quotes_and_thousands_separators():
    assert normalise("  `Total`:  1,204 Rows ") == normalise("total: 1204 rows")
    assert normalise("“Ran” *12,345,678* tests\u00a0in\u3000 3,5 s,\\n OK.") == "ran 12345678 tests in 3,5 s, ok"
    assert normalise("a,1234 and 1,23 and ٣,٤٥٦") == "a,1234 and 1,23 and ٣٤٥٦"  # a separator sits between digits


def test_normalising_is_the_pattern_form_it_stands_for():
    """The spelled-out rule: fold case, "\\n" to a space, drop a comma between a digit and three
    more, drop quotes, collapse whitespace, strip edges."""
    import random
    import re

    def rule(text: str) -> str:
        text = text.casefold().replace("\\n", " ")
        text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
        text = re.sub(r"[`\"“”‘’*]", "", text)
        return re.sub(r"\s+", " ", text).strip("`'\"“”‘’()[]{}<>,;:.!? \t\n")

    rng = random.Random(3)
    alphabet = [*"0123456789,,  \t\n`\"“”‘’*'()[]{}<>;:.!?aZß\u00a0\u2028\u3000٣İ", "\\n", "1,000", ",123 "]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        assert normalise(text) == rule(text), text


def test_a_fact_stated_twice_keeps_its_first_origin():
    msgs = [{"role": "user", "content": "Look at app/main.py please."},
            {"role": "assistant", "content": "Opening app/main.py now."}]
    origins = [f.origin for f in extract_facts(msgs) if f.text == "app/main.py"]
    assert origins == [0]


def test_extraction_is_deterministic_on_the_demo():
    messages = json.loads(DEMO.read_text())["messages"]
    first = extract_facts(messages)
    assert first == extract_facts(json.loads(DEMO.read_text())["messages"])
    assert len(first) > 100 and {f.kind for f in first} >= {fx.DECISION, fx.COMMAND, fx.ERROR, fx.PATH}


def _key_lines_line_by_line(prose: str) -> list[tuple[str, str]]:
    """The rule as stated, one line at a time: what the scan over the whole output must equal."""
    out, lines = [], prose.splitlines()
    phrase = any(p in prose for p in fx._TOOL_ERROR_PHRASES)
    result = fx._RESULT_LINE.search(prose) is not None
    for line in lines:
        if len(out) >= fx.MAX_TOOL_KEY_LINES:
            break
        if fx._LISTING_LINE.match(line):
            continue
        if fx._TOOL_ERROR_START.match(line) or (phrase and fx._TOOL_ERROR_PHRASE.search(line)):
            out.append((fx.ERROR, line))
        elif result and fx._RESULT_LINE.search(line):
            out.append((fx.RESULT, line))
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    if tail and len(tail) <= fx.MAX_FACT_CHARS and not fx._LISTING_LINE.match(tail):
        out.append((fx.RESULT, tail))
    return out


_PIECES = ["\n", " ", "  ", "E ", "Error", "ValueError:", "xError", "Exception", "Traceback", "FAILED", "ERROR",
           "error:", "error[", "fatal:", "panic:", "No such file or directory", "Permission denied", "OK", "PASS",
           "3 passed", "exit code", "returned 2", "Total", "12|", "def ", "raise ", "word", "_", ".", ":", "\r\n",
           "\u2028", "\x0c", "7", "build failed", "Build succeeded",
           "\u0663 passed", "\u0663", "é", "\ud800", "2 files changed"]


@given(st.lists(st.sampled_from(_PIECES), max_size=60))
def test_a_tool_outputs_key_lines_are_those_of_the_line_by_line_rule(pieces):
    prose = "".join(pieces)
    assert list(fx.tool_key_lines(prose)) == _key_lines_line_by_line(prose)


def test_key_lines_of_a_long_output_read_back_are_found_without_matching_every_line():
    listing = "".join(f"{i:5d}|    value_{i} = compute({i})\n" for i in range(20_000))
    prose = listing + "Traceback (most recent call last):\nValueError: bad value\n== 3 passed, 1 failed in 2.1s ==\n"
    assert list(fx.tool_key_lines(prose)) == _key_lines_line_by_line(prose)
    assert [kind for kind, _ in fx.tool_key_lines(prose)] == [fx.ERROR, fx.ERROR, fx.RESULT, fx.RESULT]


def test_a_result_line_counted_in_other_scripts_digits_is_a_key_line_too():
    prose = "collecting\n\u0663 passed, \u0661 failed\nsee the log\n"
    assert list(fx.tool_key_lines(prose)) == [(fx.RESULT, "\u0663 passed, \u0661 failed"), (fx.RESULT, "see the log")]


def test_an_output_with_a_lone_surrogate_gets_the_same_key_lines():
    prose = "Traceback (most recent call last):\n\ud800 bad byte\nValueError: x\ndone"
    assert list(fx.tool_key_lines(prose)) == _key_lines_line_by_line(prose)
    assert [line for _, line in fx.tool_key_lines(prose)] == ["Traceback (most recent call last):", "ValueError: x",
                                                              "done"]
