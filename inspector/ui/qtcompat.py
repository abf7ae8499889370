"""Work around a reference-counting bug in the installed PySide6 before it crashes the app.

The PySide6 6.12.0 wheels in this environment return the singletons ``None`` (from every
``void`` Qt method: ``QPainter.drawLine``, ``setPen``…) and ``True`` (from ``Signal.emit``)
without taking a reference. On CPython 3.12+ those objects are immortal and nothing happens;
on 3.11 each call drops one reference until CPython aborts with "none_dealloc" or
"bool_dealloc: deallocating True or False" — after a few thousand paints or emits, i.e.
seconds into a session, mid-test, or at interpreter exit.

:func:`guard_singleton_refcounts` detects the bug with a probe (a void call and an emit) and,
only when a count really drops, gives ``None``/``True``/``False`` a reserve of references so
large no session can use it up — the effect Python 3.12's immortal objects have. It is a
no-op on a fixed PySide6 or Python 3.12+. The real fix is one of those; see the lead's report.
"""

from __future__ import annotations

import ctypes
import platform
import sys

RESERVE = 1 << 40
_applied: bool | None = None


def _probe_drops() -> bool:
    """True when a void Qt call or a signal emit loses a reference to None or True."""
    from PySide6.QtCore import QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(16):
        probe.ping.emit()
        probe.setObjectName("probe")
    dropped = sys.getrefcount(None) < none_before - 8 or sys.getrefcount(True) < true_before - 8
    del probe
    return dropped


def guard_singleton_refcounts() -> bool:
    """Apply the reserve when the running PySide6 has the bug; returns whether it did."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if platform.python_implementation() != "CPython" or sys.version_info >= (3, 12):
        return False
    try:
        if not _probe_drops():
            return False
    except Exception:  # noqa: BLE001 - no usable Qt: nothing to guard
        return False
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += RESERVE
    _applied = True
    return True
