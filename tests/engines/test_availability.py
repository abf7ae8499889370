"""An engine's is_available(), asked as Hermes' listing asks it; a raise or a hang is "unknown", never a crash."""

from __future__ import annotations

import time

from inspector.engines.availability import NO, UNKNOWN, YES, probe, unavailable_note


class Says:
    def __init__(self, answer):
        self.answer = answer

    def is_available(self):
        return self.answer


def test_the_answer_is_taken_by_its_truth_value():
    assert probe(Says(True), 5).state == YES
    no = probe(Says(0), 5)
    assert no.state == NO and no.available is False and no.reason == "is_available() returned 0"
    assert no.to_json() == {"available": False, "availability": "no: is_available() returned 0"}


def test_an_engine_without_is_available_counts_as_available_as_in_hermes():
    found = probe(object(), 5)
    assert found.state == YES and "no is_available()" in found.reason


def test_a_raise_is_unknown_with_the_reason():
    class Raises:
        def is_available(self):
            raise RuntimeError("no config file")

    found = probe(Raises(), 5)
    assert found.state == UNKNOWN and found.available is None
    assert found.describe() == ("unknown: is_available() raised RuntimeError: no config file "
                                "(Hermes counts that as unavailable)")


def test_a_hang_is_stopped_at_the_hook_timeout_and_is_unknown():
    class Hangs:
        def is_available(self):
            while True:
                time.sleep(0.01)

    start = time.perf_counter()
    found = probe(Hangs(), 0.3)
    assert time.perf_counter() - start < 2
    assert found.state == UNKNOWN and "did not return within 0.3 s" in found.reason


def test_a_non_callable_or_unreadable_is_available_is_unknown():
    class Flag:
        is_available = True

    class Unreadable:
        def __getattr__(self, name):
            raise ValueError("lookup broke")

    assert probe(Flag(), 5).state == UNKNOWN
    assert "ValueError: lookup broke" in probe(Unreadable(), 5).reason


def test_the_note_says_hermes_activates_the_engine_anyway():
    assert unavailable_note("x", probe(Says(True), 5)) is None
    note = unavailable_note("x", probe(Says(False), 5))
    assert note.startswith("engine 'x' reports itself unavailable (is_available() returned False)")
    assert "activates an engine context.engine names regardless" in note
