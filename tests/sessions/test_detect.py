"""Format detection looks at content, never only at the name (docs/formats.md §7)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from inspector.sessions import FORMATS, ReaderError
from inspector.sessions.detect import detect_format, detect_text, resolve_format


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"role": "user", "content": "x"}]', "openai-array"),
        ('[{"from": "human", "value": "x"}]', "trajectory"),
        ('[{"conversations": []}]', "trajectory"),
        ('{"role": "user", "content": "x"}\n{"role": "assistant", "content": "y"}', "openai-jsonl"),
        ('{"messages": [], "tools": []}\n{"messages": []}', "openai-conversations"),
        ('{"messages": [], "usage": {}}\n', "openai-request-log"),
        ('{\n  "messages": [],\n  "response": {}\n}', "openai-request-log"),
        ('{\n  "messages": []\n}', "openai-object"),
        ('{"history": [], "trajectory": []}', "openai-object"),
        ('{"conversations": [{"from": "human", "value": "x"}]}\n', "trajectory"),
        ('{"role": "session_meta", "tools": []}\n{"role": "user"}', "hermes-gateway-jsonl"),
        ('{"id": "s", "source": "cli", "started_at": 1, "messages": []}\n{"id": "t", "source": "cli", "started_at": 1, "messages": []}', "hermes-export"),
        ('{\n"session_id": "s", "session_start": "x", "messages": []}', "hermes-session-json"),
        ('{\n"request": {}, "session_id": "s", "reason": "r"}', "hermes-request-dump"),
        ('{"type": "file-history-snapshot"}\n{"type": "user", "sessionId": "s", "parentUuid": null}', "claude-code"),
        ('{"timestamp": "t", "type": "session_meta", "payload": {}}', "codex"),
        ('{"id": "x", "instructions": "i"}\n{"type": "message"}', "codex"),
    ],
)
def test_detects_each_format_from_content(text: str, expected: str):
    assert detect_text(text) == expected
    assert expected in FORMATS


def test_bom_and_leading_whitespace_are_ignored(tmp_path: Path):
    path = tmp_path / "renamed.txt"
    path.write_bytes(b"\xef\xbb\xbf\n  " + json.dumps([{"role": "user", "content": "x"}]).encode())
    assert detect_format(path) == "openai-array"


def test_gzip_is_looked_through(tmp_path: Path):
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"timestamp": "t", "type": "event_msg", "payload": {}}\n'))
    assert detect_format(path) == "codex"


def test_batch_output_is_explained(tmp_path: Path):
    with pytest.raises(ReaderError, match="Batch"):
        detect_text('{"id": "b", "custom_id": "r1", "response": {"body": {}}}')


def test_format_names_and_aliases():
    assert resolve_format("Claude") == "claude-code"
    assert resolve_format("state.db") == "hermes-db"
    assert resolve_format("codex") == "codex"
    with pytest.raises(ReaderError, match="choose one of"):
        resolve_format("word-doc")


def test_a_forced_format_that_reads_nothing_is_an_error_naming_the_likely_one(tmp_path):
    import json

    import pytest

    from inspector.sessions import ReaderError, load_session

    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in [{"role": "user", "content": "hi"},
                                                       {"role": "assistant", "content": "hello"}]) + "\n")
    with pytest.raises(ReaderError, match="no codex messages found with --format codex; the content looks like openai"):
        load_session(str(path), format="codex")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "openai-object"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], "openai-array"),
    ],
)
def test_a_one_document_transcript_is_read_and_parsed_once_for_detection_and_reading(
        tmp_path: Path, monkeypatch, document, expected):
    from inspector.sessions import load_session
    from inspector.sessions import source as source_module

    path = tmp_path / "chat.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document, indent=1).encode()))
    reads, parses, real_read, real_loads = [], [], source_module.read_input, json.loads
    monkeypatch.setattr(source_module, "read_input", lambda *a: reads.append(a) or real_read(*a))
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parses.append(len(text)) or real_loads(text, *a, **k))
    session = load_session(path)
    assert session.meta["format"] == expected and len(session.messages) == 2 - (expected == "openai-object")
    assert len(reads) == 1, "the file is read and inflated once"
    assert parses.count(max(parses)) == 1, "the whole document is parsed once"
