"""Opening inputs: regular files only, read with a ceiling, one huge value refused before parsing."""

from __future__ import annotations

import gzip
import os
import random
import time
from pathlib import Path

import pytest

from inspector import input_files
from inspector.input_files import InputRefused, ValueRuns, check_values, open_regular, read_capped, read_input


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputRefused, match="named pipe"):
        open_regular(fifo)
    assert time.monotonic() - started < 2


def test_devices_and_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputRefused, match="character device"):
        read_capped("/dev/zero")
    with pytest.raises(InputRefused, match="directory"):
        read_capped(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_capped(tmp_path / "missing")


def test_the_read_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert read_capped(path, 1000) == b"x" * 1000
    with pytest.raises(InputRefused, match="larger than"):
        read_capped(path, 999)


def test_gzip_is_inflated_and_corrupt_gzip_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b'{"a": "b"}'))
    assert read_input(path) == (b'{"a": "b"}', True, True)
    data = bytearray(gzip.compress(b"some text " * 1000))
    data[20:24] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    with pytest.raises(InputRefused, match="corrupt gzip data"):
        read_input(path)


@pytest.mark.parametrize("run", [99, 100, 101, 250])
def test_check_values_finds_exactly_the_runs_past_the_limit(run: int) -> None:
    rng = random.Random(run)
    short = "".join(f'"{"y" * rng.randint(0, 100)}",' for _ in range(50))
    text = short + '"' + "z" * run + '"' + short
    if run > 100:
        with pytest.raises(InputRefused, match="single value of more than"):
            check_values(text, 100)
        with pytest.raises(InputRefused):
            check_values(text.encode(), 100)
    else:
        check_values(text, 100)
        check_values(text.encode(), 100)


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_value_runs_give_the_same_answer_whatever_the_pieces(size: int) -> None:
    for run, refused in ((100, False), (101, True)):
        data = b'["a", "' + b"q" * run + b'", "b"]'
        runs = ValueRuns(100)
        try:
            for start in range(0, len(data), size):
                runs.feed(data[start:start + size])
            got = False
        except InputRefused:
            got = True
        assert got == refused, (size, run)


def test_limits_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("INSPECTOR_MAX_INPUT_MIB", "3")
    monkeypatch.setenv("INSPECTOR_MAX_STRING_MIB", "not a number")
    assert input_files.max_input_bytes() == 3 * 1024**2
    assert input_files.max_string_chars() == input_files.DEFAULT_MAX_STRING_MIB * 1024**2
    monkeypatch.setenv("INSPECTOR_MAX_INPUT_MIB", "-5")
    assert input_files.max_input_bytes() == input_files.DEFAULT_MAX_INPUT_MIB * 1024**2
