"""Output options never overwrite the user's data: the inputs, or files the inspector did not write."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.outputs import output_problem, write_atomic


def _session(path: Path) -> Path:
    messages = [{"role": "user", "content": f"q{i}"} if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}
                for i in range(6)]
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_out_and_html_refuse_the_input_and_files_they_did_not_write(tmp_path: Path, capsys) -> None:
    src = _session(tmp_path / "s.json")
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}', encoding="utf-8")
    before = {p: _digest(p) for p in (src, notes)}
    for args in (["replay", str(src), "--out", str(src)],
                 ["replay", str(src), "--out", str(notes)],
                 ["compare", str(src), "--engine", "compressor", "--engine", "compressor", "--html", str(src)],
                 ["compare", str(src), "--engine", "compressor", "--engine", "compressor", "--out", str(notes)]):
        assert main([*args, "--quiet"]) == 2, args
        err = capsys.readouterr().err
        assert "is one of the inputs" in err or "is not a file the inspector wrote" in err
    assert {p: _digest(p) for p in (src, notes)} == before
    trace = tmp_path / "run.trace.json"
    assert main(["replay", str(src), "--out", str(trace), "--quiet"]) == 0
    assert main(["replay", str(src), "--out", str(trace), "--quiet"]) == 0, "re-running over our own trace is fine"


def test_a_database_and_its_side_files_are_inputs(tmp_path: Path, capsys) -> None:
    from tests.sessions import hermes_db_fixtures as fx

    db = tmp_path / "state.db"
    conn = fx.create(db)
    fx.add_session(conn, "s1", system_prompt="sys")
    fx.plain_exchange(conn, "s1", 1_760_000_000.0, "hello")
    conn.commit()
    conn.close()
    before = _digest(db)
    assert main(["replay", f"{db}#s1", "--out", str(db), "--quiet"]) == 2
    assert main(["replay", f"{db}#s1", "--out", f"{db}-wal", "--quiet"]) == 2
    assert "is one of the inputs" in capsys.readouterr().err and _digest(db) == before


def test_write_atomic_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    from inspector.outputs import write_atomic

    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_atomic(target, "<!doctype html>new")
    assert target.read_text(encoding="utf-8") == "<!doctype html>new"
    assert target.stat().st_mode & 0o777 == 0o640  # the replaced file's mode is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    write_atomic(tmp_path / "t.json.gz", b'{"a": 1}', compress=True)
    assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()) == b'{"a": 1}'


def test_write_atomic_never_touches_an_old_fixed_temporary_name_or_a_symlink_target(tmp_path: Path) -> None:
    # The old report writer wrote through ".NAME.tmp": a user file of that name was overwritten
    # and a symlink there was followed.
    from inspector.outputs import write_atomic

    precious = tmp_path / "precious.txt"
    precious.write_text("mine", encoding="utf-8")
    (tmp_path / ".report.html.tmp").symlink_to(precious)
    user_file = tmp_path / ".trace.json.tmp"
    user_file.write_text("also mine", encoding="utf-8")
    write_atomic(tmp_path / "report.html", "<!doctype html>x")
    write_atomic(tmp_path / "trace.json", "{}")
    assert precious.read_text(encoding="utf-8") == "mine" and user_file.read_text(encoding="utf-8") == "also mine"
    assert (tmp_path / ".report.html.tmp").is_symlink()


def test_write_atomic_names_are_unpredictable_and_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    from inspector import outputs

    seen: list[str] = []
    real_open = os.open

    def spy(path, flags, mode=0o777):
        seen.append(os.path.basename(path))
        assert flags & os.O_EXCL and flags & os.O_NOFOLLOW
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", spy)
    outputs.write_atomic(tmp_path / "a.png", b"1")
    outputs.write_atomic(tmp_path / "a.png", b"2")
    assert len(set(seen)) == 2 and all(name.startswith(".a.png.") for name in seen)
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OSError):
        outputs.write_atomic(tmp_path / "a.png", b"3")
    assert (tmp_path / "a.png").read_bytes() == b"2" and sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]


def test_write_atomic_masks_known_keys_in_text(tmp_path: Path, monkeypatch) -> None:
    from inspector.outputs import write_atomic

    monkeypatch.setenv("SOME_SERVICE_API_KEY", "kq-7c1d9e2f4a6b8")
    write_atomic(tmp_path / "x.json", '{"note": "echoed kq-7c1d9e2f4a6b8"}')
    assert (tmp_path / "x.json").read_text(encoding="utf-8") == '{"note": "echoed ***"}'
    hexed = b"kq-7c1d9e2f4a6b8".hex()
    pieces = [b'{"n\xc3\xb6te": "kq-7c1d9e2f4a6b8 ', hexed.encode(), b'"}']
    for compress in (False, True):  # UTF-8 text given as bytes (a trace's JSON pieces): masked too
        path = write_atomic(tmp_path / "p.json.gz", iter(pieces), compress=compress, text_bytes=True)
        data = gzip.decompress(path.read_bytes()) if compress else path.read_bytes()
        assert data.decode() == '{"nöte": "*** ***"}'
    image = b"\x89PNG kq-7c1d9e2f4a6b8"
    assert write_atomic(tmp_path / "i.png", image).read_bytes() == image  # bytes of an image are not text


def test_special_files_are_refused_as_outputs_heads(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "named pipe" in (output_problem(str(fifo)) or "")


def test_a_compressed_file_is_gzip_members_every_reader_inflates_whole_and_the_same_bytes_each_time(
        tmp_path: Path, monkeypatch) -> None:

    from inspector import outputs
    from inspector.gunzip import gunzip, member_spans

    monkeypatch.setattr(outputs, "MEMBER_BYTES", 1000)  # many members from a small text
    pieces = [f'{{"n":{i},"text":"{"word " * (i % 50)}"}}\n' for i in range(400)]
    first = write_atomic(tmp_path / "a.json.gz", iter(pieces), compress=True).read_bytes()
    again = write_atomic(tmp_path / "b.json.gz", iter(pieces), compress=True).read_bytes()
    assert first == again  # no time, no name: the same data gives the same file
    assert first.count(b"\x1f\x8b\x08") > 5  # several members
    whole = "".join(pieces).encode()
    assert gzip.decompress(first) == whole
    assert gunzip(first, 1 << 30) == (whole, True)
    assert subprocess.run(["gzip", "-dc"], input=first, capture_output=True, check=True).stdout == whole
    assert len(member_spans(first)) == first.count(b"\x1f\x8b\x08"), "each member says its length"
