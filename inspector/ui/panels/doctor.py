"""Doctor: run the engine doctor on an engine and list its findings (pass / warn / fail, with the reason).

The doctor loads the engine the way Hermes would and runs every hook over a small built-in
session, with timeouts; that takes from a fraction of a second to many seconds for a slow or
hanging engine, so it runs as a job on the window's job runner. It is written to never raise
for a broken engine, but it is young code owned elsewhere, so anything it does raise (or a
missing API) becomes one "fail" row here instead of an exception in the window.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.ui import theme
from inspector.ui.jobs import Job, JobRunner

ConfigProvider = Callable[[], tuple[dict[str, Any], list[str]]]

STATUS_STYLE = {"pass": ("PASS", "#2e7d32", "#e8f5e9"), "warn": ("WARN", "#8d6e00", "#fff8e1"),
                "fail": ("FAIL", "#b71c1c", "#fdecea")}


def normalise_report(report: Any, engine: str) -> dict[str, Any]:
    """The doctor's report as plain data, whatever shape it has (``to_json`` or attributes)."""
    data: dict[str, Any]
    if isinstance(report, dict):
        data = dict(report)
    elif callable(getattr(report, "to_json", None)):
        data = report.to_json()
    else:
        data = {"engine": getattr(report, "engine", engine), "source": getattr(report, "source", ""),
                "path": getattr(report, "path", ""),
                "findings": [{"status": getattr(f, "status", "fail"), "check": getattr(f, "check", "?"),
                              "message": getattr(f, "message", str(f)), "details": getattr(f, "details", ""),
                              "count": getattr(f, "count", 1)} for f in getattr(report, "findings", []) or []]}
    findings = []
    for f in data.get("findings") or []:
        f = f if isinstance(f, dict) else {"status": "fail", "check": "?", "message": str(f)}
        status = str(f.get("status") or "fail").lower()
        findings.append({"status": status if status in STATUS_STYLE else "fail", "check": str(f.get("check") or "?"),
                         "message": str(f.get("message") or ""), "details": str(f.get("details") or ""),
                         "count": int(f.get("count") or 1)})
    data["findings"] = findings
    data.setdefault("engine", engine)
    return data


def run_doctor_safely(engine: str, config: dict[str, Any], plugin_dirs: list[str], timeout: float) -> dict[str, Any]:
    """Run the doctor in a worker process; an exception from it becomes a single failing finding."""
    try:
        from inspector.worker.commands import doctor_in_worker

        report = doctor_in_worker(engine, config, plugin_dirs, timeout)
        return normalise_report(report, engine)
    except BaseException as exc:  # noqa: BLE001 - the doctor's own failures are findings too
        return {"engine": engine, "source": "", "path": "", "findings": [{
            "status": "fail", "check": "doctor", "message": f"the doctor could not run: {type(exc).__name__}: {exc}",
            "details": traceback.format_exc(), "count": 1}]}


class DoctorPanel(QWidget):
    """Engine picker, Run, and the findings as a list (details in the tooltip and as child rows)."""

    panel_id = "doctor"
    title = "Engine doctor"

    finished = Signal(object)  # the report as plain data

    def __init__(self, config_provider: ConfigProvider | None = None, engines: list[str] | None = None,
                 parent: QWidget | None = None, *, jobs: JobRunner | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panel_doctor")
        self.jobs = jobs if jobs is not None else JobRunner(self)
        self.config_provider = config_provider or (lambda: ({}, []))
        self.engine_combo = QComboBox()
        self.engine_combo.setEditable(True)
        self.engine_combo.setMinimumWidth(160)
        self.set_engines(engines or ["compressor"])
        self.run_button = QPushButton("Run doctor")
        self.run_button.clicked.connect(lambda: self.run())
        self.summary = QLabel("Checks an engine the way Hermes would load and call it.")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["result", "check", "finding"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setStretchLastSection(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        engine_label = QLabel("Engine:")
        row.addWidget(engine_label)
        row.addWidget(self.engine_combo)
        row.addWidget(self.run_button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(row)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        self._job: Job | None = None
        self.report: dict[str, Any] | None = None
        self._bold = QFont(self.tree.font())
        self._bold.setBold(True)

    @property
    def running(self) -> bool:
        return self._job is not None

    def set_engines(self, names: list[str], current: str | None = None) -> None:
        keep = current or self.engine_combo.currentText()
        self.engine_combo.clear()
        self.engine_combo.addItems(names)
        if keep:
            self.engine_combo.setCurrentText(keep)

    def run(self, engine: str | None = None) -> bool:
        """Diagnose ``engine`` (default: the picker's) on a worker thread; False if one is running."""
        if self.running:
            return False
        if engine:
            self.engine_combo.setCurrentText(engine)
        name = self.engine_combo.currentText().strip()
        if not name:
            self.summary.setText("Name an engine first.")
            return False
        try:
            config, plugin_dirs = self.config_provider()
        except Exception as exc:  # noqa: BLE001
            self.summary.setText(f"Could not read the config: {exc}")
            return False
        timeout = min(30.0, float(((config.get("inspector") or {}).get("hook_timeout_seconds")) or 10))
        self.tree.clear()
        self.report = None
        self.summary.setText(f"Running the doctor on {name}…")
        dirs = list(plugin_dirs)
        self._job = self.jobs.submit(lambda _job: run_doctor_safely(name, config, dirs, timeout), self._on_done,
                                     self._on_failed, key="doctor", name="doctor")
        self.run_button.setEnabled(False)
        return True

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Wait for a doctor in progress (it has its own hook timeouts, so it ends)."""
        job = self._job
        if job is None:
            return True
        stopped = self.jobs.wait(job, timeout_ms, deliver=False)
        if stopped:
            self._cleanup()
        return stopped

    def _cleanup(self) -> None:
        self._job = None
        self.run_button.setEnabled(True)

    def _on_failed(self, message: str, details: str) -> None:
        """``run_doctor_safely`` turns the doctor's failures into findings; this is anything else."""
        self._cleanup()
        self.show_report({"engine": self.engine_combo.currentText().strip(), "findings": [
            {"status": "fail", "check": "doctor", "message": f"the doctor could not run: {message}",
             "details": details, "count": 1}]})
        self.finished.emit(self.report)

    def _on_done(self, report: dict[str, Any]) -> None:
        self._cleanup()
        self.show_report(report)
        self.finished.emit(report)

    def show_report(self, report: dict[str, Any]) -> None:
        """Fill the list: one row per finding, failures first; details as a child row (plain text)."""
        self.report = report
        self.tree.clear()
        findings = report.get("findings") or []
        order = {"fail": 0, "warn": 1, "pass": 2}
        for f in sorted(findings, key=lambda f: order.get(f["status"], 0)):
            text, fg, bg = STATUS_STYLE[f["status"]]
            message = f["message"] + (f" (×{f['count']})" if f.get("count", 1) > 1 else "")
            item = QTreeWidgetItem(self.tree, [text, f["check"], message])
            item.setForeground(0, QBrush(QColor(fg)))
            item.setFont(0, self._bold)
            for col in range(3):
                item.setBackground(col, QBrush(QColor(bg)))
            item.setToolTip(2, theme.plain_tooltip(f["message"] + ("\n\n" + f["details"] if f["details"] else "")))
            if f["details"]:
                for line in f["details"].rstrip().splitlines()[-12:]:
                    QTreeWidgetItem(item, ["", "", line])
        counts = {s: sum(1 for f in findings if f["status"] == s) for s in STATUS_STYLE}
        where = f" ({report.get('source')}, {report.get('path')})" if report.get("source") else ""
        self.summary.setText(f"{report.get('engine')}{where}: {counts['pass']} passed, {counts['warn']} warnings, "
                             f"{counts['fail']} failed")
