"""Before a worker starts, our modules' bytecode is brought up to date where Python may write it."""

from __future__ import annotations

import importlib.util
import os
import sys

from inspector.worker import bytecode


def _package(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    for path in (root / "__init__.py", root / "sub" / "__init__.py", root / "sub" / "mod.py"):
        path.write_text("VALUE = 1\n")
    return root


def test_missing_bytecode_is_compiled_once_per_process(tmp_path, monkeypatch):
    root = _package(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(bytecode, "_compiled", set())
    assert bytecode.ensure_compiled(root)
    compiled = importlib.util.cache_from_source(str(root / "sub" / "mod.py"))
    assert os.path.exists(compiled)
    assert not bytecode.ensure_compiled(root)  # the second worker of the process pays nothing


def test_a_user_who_turned_bytecode_off_gets_none_written(tmp_path, monkeypatch):
    root = _package(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(bytecode, "_compiled", set())
    assert not bytecode.ensure_compiled(root)
    assert not list(root.rglob("*.pyc"))
