"""The HTML report's Facts retained section: figures per run and compaction, lost facts as text."""

from __future__ import annotations

from inspector.compare.report import render_html_report
from inspector.compare.runs import Comparison, RunResult, RunSpec

from .conftest import KeepLastTwo, Lossless, url_session


def test_the_report_gives_each_runs_retention_and_its_lost_facts_escaped(run):
    session = url_session(8)
    session.messages[1]["content"] = "You must keep <b>bold</b> <script>alert(1)</script> out of https://example.com/x-1"
    runs = [RunResult(RunSpec("forgetful", label="forgetful"), trace=run(KeepLastTwo(), session)),
            RunResult(RunSpec("lossless", label="lossless"), trace=run(Lossless(), session))]
    page = render_html_report(Comparison(runs=runs, session={"id": "s"}))
    section = page[page.index("<h2>Facts retained</h2>"):page.index("<h2>Faults</h2>")]
    assert "forgetful: 0.0% of" in section and "lossless: 100.0% of" in section
    assert section.count("<th>compaction</th>") == 2  # one table per run that compacted
    assert "https://example.com/doc-002-end" in section  # a lost fact, named
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section and "<script" not in page.lower()
    assert "<b>" not in page
