"""The Corpus view: a batch's results as a session × engine grid whose cells open that run."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QApplication

from inspector.batch.store import StoreError, read_results
from inspector.cli import main
from inspector.tokens import persistent
from inspector.ui.corpus import CorpusDialog, corpus_grid
from tests.batch.conftest import write_session


@pytest.fixture
def batch_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(persistent.ENV_VAR, str(tmp_path / "tc.sqlite"))
    sessions = tmp_path / "sessions"
    write_session(sessions / "first.json", 6, seed=1)
    write_session(sessions / "second.json", 130, seed=2)
    out = tmp_path / "out"
    code = main(["batch", str(sessions), "--engine", "compressor", "--engine", "recall", "--out", str(out),
                 "--workers", "1", "--save-traces", "--quiet", "--json", "--set", "model.context_length=64000"])
    assert code == 0
    yield out
    persistent.forget_open_caches()


def test_the_grid_has_a_row_per_session_and_a_column_per_engine(batch_folder, qapp, capsys):
    capsys.readouterr()
    results = read_results(batch_folder)
    sessions, columns, cells = corpus_grid(results)
    assert len(sessions) == 2 and columns == [("compressor", "default"), ("recall", "default")]
    opened = []
    dialog = CorpusDialog(results, str(batch_folder), opened.append)
    try:
        dialog.show()
        QApplication.processEvents()
        table = dialog.table
        assert (table.rowCount(), table.columnCount()) == (2, 2)
        second = sessions.index(next(s for s in sessions if s.endswith("second.json")))
        base = cells[(sessions[second], "compressor", "default")]["tokens_sent"]
        other = cells[(sessions[second], "recall", "default")]["tokens_sent"]
        assert table.item(second, 0).text() == f"{base:,}"
        assert table.item(second, 1).text() == f"{other:,}  ({(other - base) / base * 100:+.1f}%)"
        dialog.figure.setCurrentIndex(dialog.figure.findData("compressions"))
        assert table.item(second, 0).text() == str(cells[(sessions[second], "compressor", "default")]["compressions"])
        dialog.figure.setCurrentIndex(0)
        dialog.grab().save(str(batch_folder / "corpus.png"))
        dialog._activated(second, 1)
        assert [r["engine"] for r in opened] == ["recall"] and opened[0]["session"] == sessions[second]
    finally:
        dialog.close()
        dialog.deleteLater()


def test_a_cell_opens_that_runs_saved_trace_in_the_window(batch_folder, window, capsys):
    capsys.readouterr()
    results = read_results(batch_folder)
    result = next(r for r in results if r["engine"] == "recall" and r["session"].endswith("second.json"))
    window.open_corpus_cell(result)
    QApplication.processEvents()
    assert window.trace is not None and window.trace_path == result["trace_path"]
    assert window.trace.meta["label"] == "recall"
    assert len(window.trace.requests) == result["requests"]


def test_a_folder_without_results_is_said_in_the_message_bar(tmp_path, window):
    with pytest.raises(StoreError, match="no batch results"):
        read_results(tmp_path)
    assert window.corpus_dialog(str(tmp_path)) is None
    assert "no batch results" in window.message_bar.label.text()


def test_results_of_an_edited_session_show_only_the_newest(tmp_path):
    from inspector.batch.store import ResultStore

    store = ResultStore(tmp_path)
    row = {"session": "s.json", "engine": "e", "setting": "default", "error": None}
    store.put({**row, "key": "old", "tokens_sent": 1})
    store.put({**row, "key": "new", "tokens_sent": 2})
    store.close()
    assert [r["key"] for r in read_results(tmp_path)] == ["new"]
    assert json.dumps(read_results(tmp_path))  # plain data
