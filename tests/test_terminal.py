"""Transcript text printed on a terminal cannot drive it."""

from __future__ import annotations

from inspector.terminal import printable


def test_escape_sequences_and_bidi_overrides_become_visible() -> None:
    shown = printable("\x1b]0;PWNED\x07\x1b[31mRED\u202egnp.exe")
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == "\\x1b]0;PWNED\\x07\\x1b[31mRED\\u202egnp.exe"
    assert printable("plain text, tabs\tand ünïcode") == "plain text, tabs\tand ünïcode"


def test_a_stream_escapes_control_characters_but_keeps_lines_and_tabs() -> None:
    import io

    from inspector.terminal import SafeStream

    raw = io.StringIO()
    stream = SafeStream(raw)
    assert stream.write("error: x.jsonl:line 3: bad \x1b[2J\x1b]0;t\x07 value\n\tnext\r\n") == 51  # what was given, as streams count it
    stream.write("fake\roverwritten\u202e\n")
    assert raw.getvalue() == ("error: x.jsonl:line 3: bad \\x1b[2J\\x1b]0;t\\x07 value\n\tnext\r\n"
                              "fake\\roverwritten\\u202e\n")


def test_commands_print_errors_with_data_escaped(tmp_path, capsys) -> None:
    # A reader error quotes the start of the file: escape sequences in it reach the terminal
    # as text, never as commands.
    import sys

    from inspector.cli import main

    bad = tmp_path / "evil.json"
    bad.write_text("\x1b]0;PWNED\x07\x1b[2J not json", encoding="utf-8")
    before = sys.stderr
    assert main(["sessions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "\x1b" not in err and "\x07" not in err and "\\x1b]0;PWNED" in err
    assert sys.stderr is before


def test_stdout_is_made_safe_only_when_it_is_a_terminal(monkeypatch) -> None:
    import io
    import sys

    from inspector.terminal import safe_stderr

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, expected in ((Tty(), "\\x1b[2J table\n"), (io.StringIO(), "\x1b[2J table\n")):
        monkeypatch.setattr(sys, "stdout", stream)
        with safe_stderr():
            print("\x1b[2J table")
        assert sys.stdout is stream and stream.getvalue() == expected  # a pipe gets the exact bytes
