"""Fact extraction: each kind found with its origin, tool outputs reduced to their key lines,
the same facts every time."""

from __future__ import annotations

import json
from pathlib import Path

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
