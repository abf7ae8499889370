"""``context-inspector engines``: every discoverable engine, where it comes from, whether it loads."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

HELP = ("List every discoverable context engine with its description, source, whether it loads and whether it "
        "reports itself available (is_available()).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory (repeatable)")
    parser.add_argument("--config", help="config.yaml (Hermes keys + inspector section)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--verbose", "-v", action="store_true", help="show full tracebacks and warnings")


def run(args: argparse.Namespace) -> int:
    from inspector.config import ConfigError, load_config
    from inspector.engines.availability import YES
    from inspector.engines.discovery import plugin_dir_problems

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    infos = discover_in_workers(config, args.plugin_dir)
    for problem in plugin_dir_problems(config, args.plugin_dir):
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps([i.to_json() for i in infos], indent=2))
        return 0
    selected = str(config.get("context", {}).get("engine") or "compressor") if isinstance(config.get("context"), dict) else "compressor"
    rows = [("", "NAME", "SOURCE", "LOADS", "AVAILABLE", "VERSION", "DESCRIPTION")]
    for i in infos:
        mark = "*" if i.name == selected else ""
        available = i.availability.state if i.availability else "-"
        rows.append((mark, i.name, i.source, "yes" if i.loads else "no", available, i.version or "-", i.description or "-"))
    widths = [max(len(r[c]) for r in rows) for c in range(6)]
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in range(6)) + "  " + r[6])
    not_available = [(i.name, i.availability) for i in infos if i.availability and i.availability.state != YES]
    if not_available:
        print("\nNot available by their own account (Hermes lists them as unavailable but activates an engine "
              "context.engine names regardless):")
        for name, availability in not_available:
            print(f"  {name}: {availability.describe()}")
    for i in infos:
        if i.error:
            print(f"\n{i.name} ({i.source}, {i.path}) does not load:")
            text = i.error if args.verbose else _headline(i.error)
            print("  " + text.replace("\n", "\n  "))
        if args.verbose and i.warnings:
            print(f"\n{i.name}: warnings")
            for w in i.warnings:
                print("  - " + w.replace("\n", "\n    "))
    print(f"\n* = selected by context.engine ({selected}); {sum(i.loads for i in infos)}/{len(infos)} load"
          + (f", {len(not_available)} not available." if not_available else ".")
          + ("" if args.verbose else " Use -v for tracebacks."))
    return 0


def _headline(error: str) -> str:
    """The first line plus the exception line at the end of the traceback."""
    lines = [ln for ln in error.strip().splitlines() if ln.strip()]
    if not lines:
        return error
    first, last = lines[0], lines[-1]
    return first if first == last or last in first else f"{first}\n{last}"


def _info(data: dict[str, Any]) -> Any:
    from inspector.engines.availability import Availability
    from inspector.engines.discovery import EngineInfo

    availability = None
    described = data.get("availability")
    if isinstance(described, str) and ": " in described:
        state, _, reason = described.partition(": ")
        availability = Availability(state, reason)
    return EngineInfo(name=str(data["name"]), description=str(data.get("description") or ""),
                      version=str(data.get("version") or ""), source=str(data.get("source") or ""),
                      path=str(data.get("path") or ""), loads=bool(data.get("loads")), error=data.get("error"),
                      metadata=dict(data.get("metadata") or {}), warnings=list(data.get("warnings") or []),
                      how=str(data.get("how") or ""), plugin=str(data.get("plugin") or ""), availability=availability)


def discover_in_workers(config: dict[str, Any], plugin_dirs: list[str]) -> list[Any]:
    """Discovery in a worker process. A plugin whose import freezes, exits the process or outlives
    ``inspector.load_timeout_seconds`` is listed as not loading, with what happened, and the
    listing starts again in a fresh worker without it (each such plugin costs one restart)."""
    from inspector.engines.discovery import EngineInfo
    from inspector.worker.replays import _absolute
    from inspector.worker.supervisor import run_worker

    failed: dict[str, EngineInfo] = {}
    candidates: dict[str, tuple[str, str]] = {}

    def on_frame(_worker: Any, frame: dict[str, Any]) -> None:
        if frame.get("type") == "candidates":
            for name, path, kind in frame.get("names") or []:
                candidates.setdefault(str(name), (str(path), str(kind)))

    while True:
        job = {"job": "discover", "config": config, "plugin_dirs": _absolute(plugin_dirs), "skip": sorted(failed)}
        outcome = run_worker(job, config, on_frame=on_frame)
        engines = (outcome.done or {}).get("engines") if outcome.ok else None
        if isinstance(engines, list):
            infos = [_info(e) for e in engines]
            return infos + [failed[n] for n in sorted(failed)]
        culprit = _plugin_at_fault(outcome)
        if culprit is None or culprit in failed:
            raise RuntimeError(f"listing engines failed: {outcome.describe()}")
        path, kind = candidates.get(culprit, ("", ""))
        tb = (outcome.fault.traceback or "") if outcome.fault else ""
        failed[culprit] = EngineInfo(culprit, "", "", kind or "plugin", path, False,
                                     error=f"importing it {outcome.describe()}\n\n{tb}".rstrip())


def _plugin_at_fault(outcome: Any) -> str | None:
    """The plugin whose import the worker was in when it froze or died (the tracker's phase)."""
    fault = outcome.fault
    text = fault.message if fault is not None else ""
    marker = "plugin:"
    if marker not in text:
        return None
    return text.split(marker, 1)[1].split("\t", 1)[0].split(" ", 1)[0].strip() or None
