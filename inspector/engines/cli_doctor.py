"""``context-inspector doctor ENGINE``: load an engine like Hermes would and report what it gets wrong."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "Diagnose a context engine: loading, host imports, deep copy, ABC, every hook, returned messages, threads."

_MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("engine", help="engine name (as context.engine would name it)")
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory (repeatable)")
    parser.add_argument("--config", help="config.yaml (Hermes keys + inspector section)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--timeout", type=float, default=None, help="seconds each hook may take (default: inspector.hook_timeout_seconds, max 30)")
    parser.add_argument("--verbose", "-v", action="store_true", help="show tracebacks and details")


def run(args: argparse.Namespace) -> int:
    from inspector.config import ConfigError, cfg_get, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    timeout = args.timeout if args.timeout is not None else min(30.0, float(cfg_get(config, "inspector.hook_timeout_seconds", 10) or 10))
    from inspector.worker.commands import doctor_in_worker

    report = doctor_in_worker(args.engine, config, args.plugin_dir, timeout)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 1 if report.failed else 0
    where = f" ({report.source}, {report.path})" if report.source else ""
    print(f"Engine doctor: {report.engine}{where}")
    width = max((len(f.check) for f in report.findings), default=0)
    for f in report.findings:
        times = f" (x{f.count})" if f.count > 1 else ""
        print(f"  {_MARK.get(f.status, f.status.upper())}  {f.check.ljust(width)}  {f.message}{times}")
        if f.details and (args.verbose or (f.status == "fail" and f.check == "load")):
            print("        " + f.details.rstrip().replace("\n", "\n        "))
    c = report.counts()
    print(f"\n{c['pass']} passed, {c['warn']} warnings, {c['fail']} failed"
          + ("" if args.verbose else " (use -v for tracebacks)"))
    return 1 if report.failed else 0

