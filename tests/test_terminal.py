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
    assert raw.getvalue() == ("error: x.jsonl:line 3: bad \\u001b[2J\\u001b]0;t\\u0007 value\n\tnext\r\n"
                              "fake\\u000doverwritten\\u202e\n")


def test_commands_print_notes_with_data_escaped(tmp_path, capsys) -> None:
    # The settings note quotes the transcript's model name as it is: escape sequences in it reach
    # the terminal as text, never as commands.
    import json
    import sys

    from inspector.cli import main

    base = {"sessionId": "s", "cwd": "/w", "version": "2.1.38"}
    rows = [{**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "hi"}},
            {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
             "message": {"model": "evil\x1b]0;owned\x07\x1b[2J", "role": "assistant",
                         "content": [{"type": "text", "text": "yo"}], "usage": {"input_tokens": 5, "output_tokens": 2}}}]
    src = tmp_path / "evil.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = sys.stderr
    assert main(["replay", str(src), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "model evil\\u001b]0;owned\\u0007\\u001b[2J (transcript)" in err
    assert "\x1b" not in err and "\x07" not in err
    assert sys.stderr is before


def test_stdout_is_made_safe_only_when_it_is_a_terminal(monkeypatch) -> None:
    import io
    import sys

    from inspector.terminal import safe_stderr

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, expected in ((Tty(), "\\u001b[2J table \\u009b\n"), (io.StringIO(), "\x1b[2J table \x9b\n")):
        monkeypatch.setattr(sys, "stdout", stream)
        with safe_stderr():
            print("\x1b[2J table \x9b")
        assert sys.stdout is stream and stream.getvalue() == expected  # a pipe gets the exact bytes
