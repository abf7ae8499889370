"""Transcript text printed on a terminal cannot drive it."""

from __future__ import annotations

from inspector.terminal import printable


def test_escape_sequences_and_bidi_overrides_become_visible() -> None:
    shown = printable("\x1b]0;PWNED\x07\x1b[31mRED\u202egnp.exe")
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == "\\x1b]0;PWNED\\x07\\x1b[31mRED\\u202egnp.exe"
    assert printable("plain text, tabs\tand ünïcode") == "plain text, tabs\tand ünïcode"
