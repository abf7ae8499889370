"""PySide6 + pyqtgraph window over a Trace: one cursor, one module per panel (see ``panels``).

Importing the package guards against a PySide6 refcount bug first (``qtcompat``), so every
entry point — the app, the tests, the benchmark — is protected before any signal is emitted.
"""

from inspector.ui.qtcompat import guard_singleton_refcounts

guard_singleton_refcounts()
