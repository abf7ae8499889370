"""An engine's own ``is_available()`` answer, asked the way Hermes asks it and no more.

Hermes consults ``is_available()`` only when listing directory engines
(``plugins.context_engine.discover_context_engines`` → ``probe_availability``: an engine without
the method counts as available, one that raises as unavailable), and even the ``hermes plugins``
picker drops the answer. Activation never asks: an engine ``context.engine`` names is used
whatever it says. So the inspector shows the answer and never refuses on it. The call is engine
code: it runs under the hook watchdog, and a raise or a hang becomes "unknown" with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspector.config import cfg_get

YES, NO, UNKNOWN = "yes", "no", "unknown"
DEFAULT_TIMEOUT = 30.0  # inspector.hook_timeout_seconds' default


@dataclass(frozen=True)
class Availability:
    state: str  # YES, NO or UNKNOWN
    reason: str

    @property
    def available(self) -> bool | None:
        return {YES: True, NO: False}.get(self.state)

    def describe(self) -> str:
        return f"{self.state}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"available": self.available, "availability": self.describe()}


def hook_timeout(config: dict[str, Any]) -> float:
    try:
        return float(cfg_get(config, "inspector.hook_timeout_seconds", DEFAULT_TIMEOUT) or 0)
    except (TypeError, ValueError):
        return DEFAULT_TIMEOUT


def probe(engine: Any, timeout: float | None) -> Availability:
    """Call ``engine.is_available()`` once, guarded; never raises."""
    from inspector.host.guard import call_inline

    try:
        method = getattr(engine, "is_available", None)
    except Exception as exc:  # a property or __getattr__ may raise
        return Availability(UNKNOWN, f"reading is_available raised {type(exc).__name__}: {exc} "
                                     "(Hermes counts that as unavailable)")
    if method is None:
        return Availability(YES, "no is_available() (Hermes counts the engine as available)")
    if not callable(method):
        return Availability(UNKNOWN, f"is_available is a {type(method).__name__}, not a method "
                                     "(Hermes counts that as unavailable)")
    out = call_inline(method, timeout=timeout)
    if out.fault is not None:
        what = (f"is_available() did not return within {timeout:g} s" if out.fault.kind == "timeout"
                else f"is_available() raised {out.fault.message}")
        return Availability(UNKNOWN, f"{what} (Hermes counts that as unavailable)")
    try:
        truth = bool(out.value)
    except Exception as exc:  # an object whose __bool__ raises
        return Availability(UNKNOWN, f"is_available() returned {type(out.value).__name__}, whose truth value raised "
                                     f"{type(exc).__name__}: {exc}")
    return Availability(YES if truth else NO, f"is_available() returned {_safe_repr(out.value)}")


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return f"a {type(value).__name__}"


def unavailable_note(name: str, availability: Availability | None) -> str | None:
    """The sentence replay and doctor show for an engine that does not report itself available."""
    if availability is None or availability.state == YES:
        return None
    verdict = "reports itself unavailable" if availability.state == NO else "could not say whether it is available"
    return (f"engine {name!r} {verdict} ({availability.reason}); Hermes asks is_available() only when listing "
            "engines and activates an engine context.engine names regardless, so the inspector runs it too")
