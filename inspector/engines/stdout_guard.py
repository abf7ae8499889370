"""Keeping engines' prints out of the command line's own output.

Plugins print (debug lines, progress, banners). On stdout that output would corrupt what the
commands print there — the ``--json`` documents above all — so while engine code may run, file
descriptor 1 and ``sys.stdout`` both point at stderr, where the user still sees it. (The host
also records what Python code writes with the hook call that wrote it: :mod:`inspector.host.capture`.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (by Python code or C code) to stderr until the block ends."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable stdout (closed, or not a real file)
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 1)
        os.close(saved)
