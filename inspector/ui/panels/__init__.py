"""The panels, one module each, all implementing :class:`~inspector.ui.panels.base.Panel`.

To add a panel: write ``panels/<name>.py`` with a ``Panel`` subclass (``panel_id``, ``title``,
``render_trace``, ``render_cursor``, and where it goes: ``area``, or ``tab_with`` another panel)
and list it in :data:`PANEL_CLASSES`. The window makes a dock for each, places it as declared, wires it to the cursor, and the shared tests check that it renders an empty
trace, a demo trace and a faulted trace, and follows the cursor.
"""

from __future__ import annotations

from inspector.ui.panels.base import Panel
from inspector.ui.panels.bookmarks import BookmarksPanel
from inspector.ui.panels.cache import CachePanel
from inspector.ui.panels.compression import CompressionPanel
from inspector.ui.panels.context import ContextPanel
from inspector.ui.panels.counters import CountersPanel
from inspector.ui.panels.decision import DecisionPanel
from inspector.ui.panels.diff import DiffPanel
from inspector.ui.panels.engine import EnginePanel
from inspector.ui.panels.events import EventsPanel
from inspector.ui.panels.lifetime import LifetimePanel
from inspector.ui.panels.request import RequestPanel
from inspector.ui.panels.run_info import RunInfoPanel
from inspector.ui.panels.timeline import TimelinePanel

PANEL_CLASSES: tuple[type[Panel], ...] = (
    EventsPanel,
    TimelinePanel,
    CompressionPanel,
    CountersPanel,
    DiffPanel,
    DecisionPanel,
    ContextPanel,
    RequestPanel,
    CachePanel,
    EnginePanel,
    BookmarksPanel,
    LifetimePanel,
    RunInfoPanel,
)

__all__ = ["PANEL_CLASSES", "Panel"]
