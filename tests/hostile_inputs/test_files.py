"""Writing outputs never touches a file the user has at the old fixed temporary names, never
follows a symlink planted there, and leaves no temporary file behind."""

from __future__ import annotations

import json


def test_html_report_and_trace_ignore_files_and_symlinks_at_the_old_temporary_names(cli, tmp_path):
    session = tmp_path / "s.json"
    session.write_text(json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}] * 2),
                       encoding="utf-8")
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's own file", encoding="utf-8")
    (tmp_path / ".report.html.tmp").symlink_to(precious)
    (tmp_path / ".bundle.json.tmp").write_text("also the user's", encoding="utf-8")
    r = cli("compare", str(session), "--engine", "compressor", "--engine", "compressor",
            "--html", str(tmp_path / "report.html"), "--out", str(tmp_path / "bundle.json"), inputs=(session,))
    assert r.code == 0, r.err[-2000:]
    assert precious.read_text(encoding="utf-8") == "the user's own file"
    assert (tmp_path / ".report.html.tmp").is_symlink()
    assert (tmp_path / ".bundle.json.tmp").read_text(encoding="utf-8") == "also the user's"
    assert (tmp_path / "report.html").read_text(encoding="utf-8").lower().startswith("<!doctype html>")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if n.endswith(".tmp") and n not in (".report.html.tmp", ".bundle.json.tmp")], names
