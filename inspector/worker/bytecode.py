"""Our own modules' bytecode, compiled before a worker needs it.

A worker imports the host, the tokenizer glue and the engine loader at every start, and under
bubblewrap it sees the installation read-only (``inspector.worker.sandbox``): whatever bytecode
is missing or stale it compiles from source, every time, and cannot keep. Measured with
``inspector.bench.worker_bench``, compiling was about a tenth of a worker's CPU time. So before
the first worker of a process starts, the supervisor brings our package's ``__pycache__`` up to
date, as Python's own import would have, and only where Python may write bytecode at all
(``PYTHONDONTWRITEBYTECODE`` and ``-B`` are the user's choice; ``make`` compiles at install).
"""

from __future__ import annotations

import compileall
import sys
import threading
from pathlib import Path

import inspector

_lock = threading.Lock()
_compiled: set[str] = set()


def ensure_compiled(root: str | Path | None = None) -> bool:
    """Compile what is missing or stale under ``root`` (our package) once per process; True if it ran."""
    folder = str(Path(root) if root is not None else Path(inspector.__file__).resolve().parent)
    if sys.dont_write_bytecode:
        return False
    with _lock:
        if folder in _compiled:
            return False
        _compiled.add(folder)
    try:
        compileall.compile_dir(folder, quiet=2, workers=1)
    except Exception:  # noqa: BLE001 - only a speed-up: a worker compiles what it lacks itself
        return False
    return True
