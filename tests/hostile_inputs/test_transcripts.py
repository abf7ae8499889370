"""Hostile transcripts: each is refused with one line naming the file (or read), within bounds.

Bounds are generous for a loaded 2-core machine; what they catch is a hang, a gigabyte-sized
allocation or a traceback, which are what these inputs used to cause.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path

import pytest

MESSAGES = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}] * 3


def _corrupt_gzip(path: Path) -> Path:
    data = bytearray(gzip.compress(json.dumps(MESSAGES * 50).encode()))
    data[30] ^= 0xFF
    data[31] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("command", [["sessions"], ["replay", "--quiet"], ["replay", "--quiet", "--out", "t.json"],
                                     ["compare", "--engine", "compressor", "--engine", "compressor"]])
def test_corrupt_gzip_is_one_line_naming_the_file(cli, tmp_path, command):
    src = _corrupt_gzip(tmp_path / "s.json.gz")
    r = cli(command[0], str(src), *command[1:], timeout=60, inputs=(src,))
    assert r.code == 2
    assert "corrupt gzip data" in r.one_line_error(str(src))
    assert not (tmp_path / "t.json").exists()


def test_a_fifo_is_refused_at_once_instead_of_blocking(cli, tmp_path):
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    for command in (["sessions", str(fifo)], ["replay", str(fifo), "--quiet"]):
        r = cli(*command, timeout=20)
        assert r.code == 2 and "named pipe" in r.one_line_error(str(fifo))
        assert r.seconds < 15


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_character_device_is_refused_before_it_is_read(cli, device):
    import stat

    if not os.path.exists(device) or not stat.S_ISCHR(os.stat(device).st_mode):
        pytest.skip(f"{device} is not a character device on this machine")
    r = cli("sessions", device, timeout=20)
    assert r.code == 2 and "character device" in r.one_line_error(device)
    assert r.peak_mib < 300


def test_a_plain_file_past_the_cap_is_refused_naming_the_setting(cli, tmp_path):
    src = tmp_path / "big.jsonl"
    line = json.dumps({"role": "user", "content": "x" * 1000}) + "\n"
    src.write_text(line * 3000, encoding="utf-8")  # ~3 MB
    r = cli("sessions", str(src), env={"INSPECTOR_MAX_INPUT_MIB": "1"}, inputs=(src,))
    assert r.code == 2 and "INSPECTOR_MAX_INPUT_MIB" in r.one_line_error(str(src), "larger than 1 MiB")


def test_a_gzip_bomb_stops_at_the_cap(cli, tmp_path):
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    src = tmp_path / "bomb.jsonl.gz"
    src.write_bytes(squeeze.compress(b"[" + b" " * (64 * 1024**2)) + squeeze.flush())
    assert src.stat().st_size < 200_000
    r = cli("sessions", str(src), env={"INSPECTOR_MAX_INPUT_MIB": "16"}, inputs=(src,))
    assert r.code == 2 and "inflates to more than 16 MiB" in r.one_line_error(str(src))
    assert r.peak_mib < 400


def test_one_500_mb_string_in_a_small_gzip_never_reaches_the_tokenizer(cli, tmp_path):
    src = tmp_path / "one-string.json.gz"
    with gzip.open(src, "wb", compresslevel=9) as gz:
        gz.write(b'[{"role": "user", "content": "')
        block = b"a" * (1 << 20)
        for _ in range(500):
            gz.write(block)
        gz.write(b'"}, {"role": "assistant", "content": "ok"}]')
    assert src.stat().st_size < 1_000_000
    for command in (["sessions", str(src)], ["replay", str(src), "--quiet"]):
        r = cli(*command, timeout=60, inputs=(src,))
        assert r.code == 2 and "single value of more than 64 MiB" in r.one_line_error(str(src))
        assert r.peak_mib < 600 and r.seconds < 45


@pytest.mark.parametrize("shape", ["array", "jsonl"])
def test_deep_nesting_is_one_line(cli, tmp_path, shape):
    src = tmp_path / f"deep.{'json' if shape == 'array' else 'jsonl'}"
    deep = "[" * 100_000 + "]" * 100_000
    src.write_text(deep if shape == "array" else '{"type": "user", "message": ' + deep + "}\n", encoding="utf-8")
    r = cli("sessions", str(src), inputs=(src,))
    line = r.one_line_error(str(src))
    assert r.code == 2 and ("nested too deeply" in line or "recursion depth exceeded" in line)


@pytest.mark.parametrize("fmt", ["openai", "claude-code"])
def test_a_400_digit_timestamp_is_no_time_not_a_crash(cli, tmp_path, fmt):
    huge = int("9" * 400)
    if fmt == "openai":
        rows = [{"role": "user", "content": "hi", "timestamp": huge}, {"role": "assistant", "content": "yo"}]
        src = tmp_path / "ts.json"
        src.write_text(json.dumps(rows), encoding="utf-8")
    else:
        base = {"sessionId": "s", "cwd": "/w", "version": "2.1.38"}
        rows = [{**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "9" * 400,
                 "message": {"role": "user", "content": "hi"}},
                {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": huge,
                 "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}}]
        src = tmp_path / "ts.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for command in (["sessions", str(src)], ["replay", str(src), "--quiet"]):
        r = cli(*command, inputs=(src,))
        assert r.code == 0 and "Traceback" not in r.err, r.err[-2000:]


def test_escape_sequences_in_a_reader_error_reach_the_terminal_as_text(cli, tmp_path):
    src = tmp_path / "evil.json"
    src.write_text("\x1b]0;owned\x07\x1b[2J\u202e not json", encoding="utf-8")
    r = cli("replay", str(src), "--quiet", inputs=(src,))
    line = r.one_line_error(str(src))
    assert r.code == 2 and "\x1b" not in r.err and "\x07" not in r.err and "\u202e" not in r.err
    assert "\\x1b]0;owned" in line or "\\u001b]0;owned" in line


def test_escape_sequences_in_the_model_note_and_fault_lines_reach_the_terminal_as_text(cli, tmp_path):
    base = {"sessionId": "s", "cwd": "/w", "version": "2.1.38"}
    rows = [{**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "hi"}},
            {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
             "message": {"model": "m\x1b]0;owned\x07\x1b[2J\u202e", "role": "assistant",
                         "content": [{"type": "text", "text": "yo"}], "usage": {"input_tokens": 5, "output_tokens": 2}}}]
    src = tmp_path / "evil.jsonl"
    src.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    r = cli("replay", str(src), "--quiet", inputs=(src,))
    # The replay takes the transcript's model and says so, quoting its name as data.
    assert r.code == 0 and "note: replay settings: model m\\u001b]0;owned\\u0007\\u001b[2J\\u202e (transcript)" in r.err
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in r.err
