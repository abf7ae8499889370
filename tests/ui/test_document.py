"""The document: what is open, its bookmarks and unsaved state, announced to whoever observes it."""

from __future__ import annotations

import pytest

from inspector.ui.document import MARKS, MODIFIED, SOURCE, Document
from inspector.ui.synthetic import build_trace


def test_bookmarks_mark_the_document_unsaved_and_are_announced() -> None:
    demo_trace = build_trace(20, seed=5)  # its own: bookmarks change the trace
    doc = Document()
    seen: list[str] = []
    doc.subscribe(seen.append)
    doc.opened(trace=demo_trace, source="/tmp/run.trace.json", trace_path="/tmp/run.trace.json")
    assert seen == [SOURCE] and not doc.modified and doc.name == "run.trace.json"
    mark = doc.set_bookmark(5, "here", "a note")
    assert doc.mark_at(5) is mark and doc.modified and seen[-1] == MARKS
    doc.set_bookmark(5, "renamed")
    assert [m.label for m in demo_trace.marks if m.event == 5] == ["renamed"]
    assert doc.delete_bookmark(5) and doc.mark_at(5) is None
    assert not doc.delete_bookmark(5), "deleting what is not there changes nothing"
    doc.saved("/tmp/other.trace.json")
    assert not doc.modified and doc.trace_path == "/tmp/other.trace.json" and seen[-1] == SOURCE


def test_a_saved_comparison_becomes_the_source_it_was_opened_as() -> None:
    doc = Document()
    doc.opened(source="/tmp/a.comparison.json.gz", comparison=object(), comparison_path="/tmp/a.comparison.json.gz")
    doc.saved("/tmp/b.comparison.json.gz", comparison=True)
    assert doc.source_path == doc.comparison_path == "/tmp/b.comparison.json.gz"


def test_the_unsaved_flag_is_announced_once_per_change() -> None:
    doc = Document()
    seen: list[str] = []
    doc.subscribe(seen.append)
    doc.modified = True
    doc.modified = True
    doc.modified = False
    assert seen == [MODIFIED, MODIFIED]
    with pytest.raises(TypeError):
        doc.opened(trace=None, nonsense=1)


def test_the_window_keeps_its_state_in_the_document(window) -> None:
    demo_trace = build_trace(20, seed=5)
    window.set_trace(demo_trace, source="/tmp/demo.json")
    assert window.document.source_path == "/tmp/demo.json" and window.document.trace is demo_trace
    window.set_bookmark(3, "look")
    assert window.document.modified and window.windowTitle().startswith("* ")
    window.document.modified = False
    assert not window.windowTitle().startswith("* "), "the title follows the document"
