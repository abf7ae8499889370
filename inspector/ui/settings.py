"""File → Settings…: the values users tune, written to a config file the command line reads too.

The dialog edits the file the replay bar points at (or Hermes' defaults) and saves the result as a
new config file — never over the config it read, nor over a file the inspector did not write
(``inspector.outputs.output_problem``) — which the replay bar then uses and
``context-inspector --config FILE`` reads. Every other key of the original file is kept. API keys
are never asked for or written: the live endpoint names the environment variable that holds one.

The Qt-free half (:func:`current_values`, :func:`apply_values`, :func:`write_settings`) is what the
tests drive; :class:`SettingsDialog` is the form over it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector import yaml_safe
from inspector.config import cfg_get, cfg_set, config_warnings, load_config

HEADER = "# Context Engine Inspector settings (File → Settings…); use with: context-inspector --config THIS_FILE\n"
CACHE_PROFILES = ("anthropic", "openai", "deepseek", "ideal", "none")

# (dotted key, label, kind): the fields of the form, in order
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("context.engine", "Engine (context.engine)", "engine"),
    ("compression.threshold", "Compression threshold (fraction of the window)", "fraction"),
    ("compression.threshold_tokens", "Threshold cap in tokens (0: none)", "tokens"),
    ("model.default", "Model (model.default)", "text"),
    ("model.context_length", "Context length (0: the model table)", "tokens"),
    ("inspector.cache_profile", "Cache profile", "cache"),
    ("inspector.live.base_url", "Live endpoint URL", "text"),
    ("inspector.live.model", "Live model", "text"),
    ("inspector.live.api_key_env", "Live API key variable (its name, not the key)", "text"),
)
# the engine's own keys: every scalar of the compression section the form does not show above
ENGINE_SECTION = "compression"


def is_settings_file(head: bytes) -> bool:
    """A config this dialog wrote (it may be written again)."""
    return head.startswith(HEADER.encode("utf-8"))


def read_file_data(path: str | None) -> dict[str, Any]:
    """The config file as written (no defaults merged in), {} without one."""
    if not path:
        return {}
    data = yaml_safe.load(Path(path).read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def current_values(config_path: str | None) -> dict[str, Any]:
    """Every editable value as the replay would see it (defaults filled in), by dotted key."""
    config = load_config(config_path)
    values = {key: cfg_get(config, key) for key, _label, _kind in FIELDS}
    shown = {key.split(".", 1)[1] for key, _l, _k in FIELDS if key.startswith(ENGINE_SECTION + ".")}
    for key, value in (config.get(ENGINE_SECTION) or {}).items():
        if key not in shown and (value is None or isinstance(value, bool | int | float | str)):
            values[f"{ENGINE_SECTION}.{key}"] = value
    return values


def apply_values(data: dict[str, Any], values: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every value that differs from ``defaults`` set (dotted keys); the rest kept."""
    out = copy.deepcopy(data)
    if isinstance(out.get("model"), str):  # Hermes' short form ``model: NAME``
        out["model"] = {"default": out["model"]}
    for key, value in values.items():
        if defaults.get(key) == value and cfg_get(out, key) is None:
            continue  # unchanged and not in the file: leave the file as short as it was
        cfg_set(out, key, value)
    return out


def write_settings(path: str, data: dict[str, Any], *, inputs: list[str], keys: Collection[str] = ()) -> None:
    """Write ``data`` to ``path`` as a config file, after checking that it loads and that none of
    ``keys`` (the edited ones; all when empty) draws a warning (ValueError if not)."""
    from inspector.outputs import output_problem

    problem = output_problem(path, inputs=inputs, ours=is_settings_file, what="(.yaml)")
    if problem:
        raise ValueError(f"{path} {problem}")
    text = HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    tmp = f"{path}.part-{os.getpid()}"
    try:
        Path(tmp).write_text(text, encoding="utf-8")
        # a value the replay would refuse, or one Hermes would ignore, is refused here, before
        # anything is replaced (a hand-written config only gets the warning)
        problems = [p for p in config_warnings(load_config(tmp)) if not keys or p.split(":", 1)[0] in keys]
        if problems:
            raise ValueError("; ".join(problems))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def suggested_path(config_path: str | None) -> str:
    """Beside the config being edited (``NAME.inspector.yaml``), else in the home folder."""
    if config_path:
        p = Path(config_path)
        stem = p.name.split(".")[0] or "config"
        return str(p.with_name(f"{stem}.inspector.yaml" if not p.name.endswith(".inspector.yaml") else p.name))
    return str(Path.home() / "inspector-settings.yaml")


class SettingsDialog(QDialog):
    """The form: one field per :data:`FIELDS` entry, then the engine's other keys as a table."""

    def __init__(self, values: dict[str, Any], engines: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.resize(620, 560)
        self.widgets: dict[str, QWidget] = {}
        form = QFormLayout()
        for key, label, kind in FIELDS:
            widget = self._field(kind, values.get(key), engines)
            widget.setToolTip(key)
            self.widgets[key] = widget
            form.addRow(label, widget)
        extra = [(k, v) for k, v in values.items() if k not in self.widgets]
        self.table = QTableWidget(len(extra), 2)
        self.table.setHorizontalHeaderLabels(["key", "value (YAML)"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        for row, (key, value) in enumerate(extra):
            name = QTableWidgetItem(key)
            name.setFlags(name.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, QTableWidgetItem(yaml.safe_dump(value).strip().removesuffix("...").strip()))
        self.table.resizeColumnToContents(0)
        note = QLabel("Saved as a new config file (your config is never overwritten); the next replay uses it, "
                      "and context-inspector --config FILE reads it.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel("Engine keys (compression.*)"))
        layout.addWidget(self.table, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)

    @staticmethod
    def _field(kind: str, value: Any, engines: list[str]) -> QWidget:
        if kind == "fraction":
            box = QDoubleSpinBox()
            box.setRange(0.01, 1.0)
            box.setDecimals(2)
            box.setSingleStep(0.05)
            box.setValue(float(value or 0.5))
            return box
        if kind == "tokens":
            spin = QSpinBox()
            spin.setRange(0, 100_000_000)
            spin.setSingleStep(1000)
            spin.setGroupSeparatorShown(True)
            spin.setValue(int(value or 0))
            return spin
        if kind in ("engine", "cache"):
            combo = QComboBox()
            combo.setEditable(kind == "engine")
            combo.addItems(list(engines) if kind == "engine" else list(CACHE_PROFILES))
            combo.setCurrentText(str(value or ""))
            return combo
        edit = QLineEdit(str(value or ""))
        return edit

    def values(self) -> dict[str, Any]:
        """What the form holds, by dotted key (0 tokens → None: Hermes' "not set")."""
        out: dict[str, Any] = {}
        for key, _label, _kind in FIELDS:
            widget = self.widgets[key]
            if isinstance(widget, QDoubleSpinBox):
                out[key] = round(widget.value(), 4)
            elif isinstance(widget, QSpinBox):
                out[key] = widget.value() or None
            elif isinstance(widget, QComboBox):
                out[key] = widget.currentText().strip()
            elif isinstance(widget, QLineEdit):
                out[key] = widget.text().strip()
        for row in range(self.table.rowCount()):
            key_item, value_item = self.table.item(row, 0), self.table.item(row, 1)
            if key_item is None or value_item is None:
                continue
            try:
                out[key_item.text()] = yaml_safe.load(value_item.text()) if value_item.text().strip() else None
            except yaml.YAMLError:
                out[key_item.text()] = value_item.text()
        return out


def ask_settings(parent: QWidget, values: dict[str, Any], engines: list[str]) -> dict[str, Any] | None:
    """The dialog, modal; the edited values, or None when cancelled."""
    dialog = SettingsDialog(values, engines, parent)
    try:
        return dialog.values() if dialog.exec() == QDialog.DialogCode.Accepted else None
    finally:
        dialog.deleteLater()
