"""``context-inspector engines`` and ``doctor`` through the real dispatcher."""

from __future__ import annotations

import json

from inspector.cli import main

from .conftest import BASIC, GENERAL


def test_engines_table(capsys):
    assert main(["engines", "--plugin-dir", str(BASIC), "--plugin-dir", str(GENERAL)]) == 0
    out = capsys.readouterr().out
    assert "fixture_simple" in out and "directory" in out and "general-plugin" in out
    assert "fixture_broken (directory" in out and "does not load" in out


def test_engines_json(capsys):
    assert main(["engines", "--plugin-dir", str(BASIC), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {d["name"]: d for d in data}
    assert by_name["compressor"]["source"] == "built-in"
    assert by_name["fixture_broken"]["loads"] is False and "Traceback" in by_name["fixture_broken"]["error"]


def test_doctor_exit_codes(capsys):
    assert main(["doctor", "fixture_simple", "--plugin-dir", str(BASIC)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["doctor", "fixture_misplaced", "--plugin-dir", str(BASIC), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["failed"] and any("the provider rejects" in f["message"] for f in data["findings"])
    assert main(["doctor", "fixture_orphans", "--plugin-dir", str(BASIC)]) == 0  # Hermes repairs orphans: warnings only
    assert "WARN" in capsys.readouterr().out
    assert main(["doctor", "nope", "--plugin-dir", str(BASIC)]) == 1
    assert "Available engines" in capsys.readouterr().out


def test_engines_shows_what_each_engine_says_about_its_availability(monkeypatch, capsys):
    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    assert main(["engines", "--plugin-dir", str(BASIC)]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert "AVAILABLE" in header.split()
    row = next(r for r in rows if r.split()[:1] == ["fixture_unavailable"])
    assert row.split()[1:4] == ["directory", "yes", "no"]
    assert "fixture_unavailable: no: is_available() returned False" in out
    assert "activates an engine context.engine names regardless" in out


def test_engines_json_has_availability(monkeypatch, capsys):
    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    assert main(["engines", "--plugin-dir", str(BASIC), "--json"]) == 0
    by_name = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert by_name["fixture_unavailable"]["available"] is False
    assert by_name["fixture_unavailable"]["availability"] == "no: is_available() returned False"
    assert by_name["fixture_simple"]["available"] is True
    assert by_name["fixture_broken"]["available"] is None
