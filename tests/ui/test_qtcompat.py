"""The PySide6 refcount guard: thousands of emits and void calls must not abort the interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import inspector.ui  # applies the guard
from PySide6.QtCore import QObject, Signal

class O(QObject):
    ping = Signal(object)

o = O()
for i in range(50_000):
    o.ping.emit(None)
    o.setObjectName("x")
print("alive")
"""


def test_many_emits_and_void_calls_do_not_abort() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "alive" in proc.stdout
