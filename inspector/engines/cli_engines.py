"""``context-inspector engines``: every discoverable engine, where it comes from, whether it loads."""

from __future__ import annotations

import argparse
import json
import sys

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
    from inspector.worker.commands import discover_in_workers

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

