"""When the real Hermes is importable, its LLM entry points and compressor follow the inspector's rules.

Where Hermes is installed, :func:`inspector.engines.compat.install_compat` leaves its modules in
place (plugins then run against the real host modules). Left alone, they would call providers
themselves: Hermes' ``call_llm`` auto-detects a provider from the environment's keys (a demo
replay with one set made dozens of DNS lookups of the provider host) and its
``ContextCompressor`` runs cooldowns on the wall clock. :func:`route_hermes` closes both gaps:

* ``agent.auxiliary_client.call_llm`` / ``async_call_llm`` become the inspector's
  (:mod:`inspector.llm.aux`: only the configured endpoint, every call recorded), in that module
  and in every loaded Hermes module that imported them by name (``agent.context_compressor``
  does, at agent/context_compressor.py:26 of hermes-agent 0.19.0); ``agent.plugin_llm`` and
  ``ctx.llm`` import ``call_llm`` from ``agent.auxiliary_client`` at call time
  (agent/plugin_llm.py:950, 994), so they follow.
* Hermes' ``ContextCompressor`` reads ``time`` through a shim whose ``monotonic()`` is the
  current run's clock (the transcript's during a replay), as the built-in compressor's does, and
  the offline rule applies to it: with no auxiliary provider at all, its deterministic summary
  stands in without the no-provider cooldown or a fallback-streak strike
  (``inspector.offline_fallback_counts: true`` restores Hermes' strict rule).

Idempotent; a module that is not there is skipped.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import time as _time
from typing import Any

log = logging.getLogger(__name__)

MARKER = "__inspector_routed__"
NO_PROVIDER_ERROR = "no auxiliary LLM provider configured"  # Hermes' text (context_compressor.py:2426)
_ENTRY_POINTS = ("call_llm", "async_call_llm")
_HERMES_PACKAGES = ("agent", "hermes_cli", "tools", "plugins", "gateway", "cron")


class _RunTime:
    """``time`` for Hermes' compressor module: ``monotonic()`` on the current run's clock."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)

    @staticmethod
    def monotonic() -> float:
        from inspector.engines.run_context import run_clock

        return run_clock()


def route_hermes() -> list[str]:
    """Route what the real Hermes modules would send out through the inspector; returns what changed."""
    from inspector.llm import aux

    routed: list[str] = []
    try:
        client = importlib.import_module("agent.auxiliary_client")
    except Exception as exc:  # not installed, or broken: nothing of it can run
        log.debug("agent.auxiliary_client not importable: %s", exc)
        return routed
    if getattr(client, MARKER, False):
        return routed
    originals = {name: getattr(client, name, None) for name in _ENTRY_POINTS}
    ours = {"call_llm": aux.call_llm, "async_call_llm": aux.async_call_llm}
    for name, fn in ours.items():
        if originals[name] is not None:
            setattr(client, name, fn)
    setattr(client, MARKER, True)
    routed.append("agent.auxiliary_client")
    try:
        importlib.import_module("agent.context_compressor")
    except Exception as exc:
        log.debug("agent.context_compressor not importable: %s", exc)
    for module_name, module in list(sys.modules.items()):
        if module is None or module is client or module_name.partition(".")[0] not in _HERMES_PACKAGES:
            continue
        for name, original in originals.items():
            if original is not None and getattr(module, name, None) is original:
                setattr(module, name, ours[name])
                routed.append(f"{module_name}.{name}")
    compressor = sys.modules.get("agent.context_compressor")
    if compressor is not None and _route_compressor(compressor):
        routed.append("agent.context_compressor.ContextCompressor")
    return routed


def _route_compressor(module: Any) -> bool:
    cls = getattr(module, "ContextCompressor", None)
    if cls is None or getattr(cls, MARKER, False):
        return False
    module.time = _RunTime()
    record_cooldown = cls._record_compression_failure_cooldown
    record_compaction = cls.record_completed_compaction

    @functools.wraps(record_cooldown)
    def _record_compression_failure_cooldown(self: Any, cooldown_seconds: float, error: str | None) -> None:
        if error == NO_PROVIDER_ERROR and _offline_stand_in():
            self._last_summary_error = error
            self._inspector_offline_stand_in = True
            return None
        return record_cooldown(self, cooldown_seconds, error)

    @functools.wraps(record_compaction)
    def record_completed_compaction(self: Any, *, used_fallback: bool = False) -> None:
        if used_fallback and self.__dict__.pop("_inspector_offline_stand_in", False):
            self._verify_compaction_cleared_threshold = True  # a stand-in is neither healthy nor failed
            return None
        self.__dict__.pop("_inspector_offline_stand_in", None)
        return record_compaction(self, used_fallback=used_fallback)

    cls._record_compression_failure_cooldown = _record_compression_failure_cooldown
    cls.record_completed_compaction = record_completed_compaction
    setattr(cls, MARKER, True)
    return True


def _offline_stand_in() -> bool:
    """The current run's offline rule (off outside a run: Hermes' strict rule)."""
    from inspector.engines.run_context import current_run

    run = current_run()
    return bool(run is not None and run.offline_stand_in)
