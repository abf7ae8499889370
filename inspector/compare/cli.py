"""``context-inspector compare``: run 2–4 engines (or configs) over one session, headlessly.

Prints the whole-session summary table (text with best values marked, or JSON), and writes the
HTML report (``--html``) and the comparison bundle (``--out``) when asked. Progress goes to
stderr so stdout stays machine-readable. Exit status: 0 when every run completed, 2 on a usage
error (bad spec, config, session) or when any run failed (the other runs are still reported).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

HELP = "Compare context engines (or configs of one engine) side by side on one session."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", help="transcript file or Hermes state.db[#session id]")
    parser.add_argument("--engine", action="append", default=[], metavar="NAME[:key=value,...]",
                        help="a run: engine name, optionally with config overrides, e.g. "
                             "compressor:compression.threshold=0.6 (repeat, 2-4 runs; label=NAME names the run)")
    parser.add_argument("--config", help="config.yaml (Hermes keys + inspector section), the base of every run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value for every run, e.g. compression.threshold=0.6")
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory")
    parser.add_argument("--format", help="transcript format (skip detection)")
    parser.add_argument("--session-id", help="session to load from a multi-session source")
    parser.add_argument("--json", action="store_true", help="print the table as JSON instead of text")
    parser.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report here")
    parser.add_argument("--out", metavar="BUNDLE", help="save the comparison (all runs) to one file (.json or .json.gz)")
    parser.add_argument("--turns", action="store_true", help="also print the per-turn table (text mode)")
    parser.add_argument("--workers", type=int, default=4, help="replays run in parallel, one worker process each (default 4)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    from inspector.quality.report import add_probe_arguments

    add_probe_arguments(parser)


def _progress(quiet: bool):
    """A thread-safe stderr reporter: one line per run every 10% (replays run in parallel)."""
    if quiet:
        return None
    lock = threading.Lock()
    last: dict[str, int] = {}

    def report(label: str, done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 100
        with lock:
            if pct // 10 != last.get(label, -1) // 10 or done == total:
                if last.get(label) == 100:
                    return
                last[label] = pct
                sys.stderr.write(f"{label}: turn {done}/{total} ({pct}%)\n")
                sys.stderr.flush()

    return report


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from inspector.compare.bundle import save_comparison
    from inspector.compare.report import write_html_report
    from inspector.compare.runs import MAX_RUNS, SpecError, parse_specs, run_comparison
    from inspector.config import ConfigError, load_config, parse_set_option, print_config_warnings

    try:
        config = load_config(args.config, parse_set_option(args.set))
    except ConfigError as exc:
        return _error(str(exc))
    except Exception as exc:  # a --set value YAML cannot read
        return _error(f"--set: {exc}")
    print_config_warnings(config)
    from inspector.quality.report import apply_probe_options, run_graded_probes

    apply_probe_options(args, config)
    texts = args.engine or [str((config.get("context") or {}).get("engine") or "compressor")]
    try:
        specs = parse_specs(texts)
    except SpecError as exc:
        return _error(str(exc))
    if len(specs) > MAX_RUNS:
        return _error(f"at most {MAX_RUNS} runs in one comparison (got {len(specs)})")
    from inspector.config import config_warnings
    from inspector.config_check import ConfigProblem, check_config

    shared = set(config_warnings(config))
    for spec in specs:  # a run's own overrides are checked like --set: a typo must not pass as a setting
        try:
            own = [w for w in check_config(spec.config_for(config)) if w not in shared]
        except ConfigProblem as exc:
            return _error(f"run {spec.label!r}: {exc}")
        for warning in own:
            print(f"warning: run {spec.label!r}: config {warning}", file=sys.stderr)
    if len(specs) == 1:
        print("warning: only one run; give --engine twice or more to compare", file=sys.stderr)
    if args.workers < 1:
        return _error("--workers must be at least 1")
    from inspector.outputs import is_html_report, output_problem

    inputs = [args.session, args.config or ""]
    for option, path, ours in (("--out", args.out, None), ("--html", args.html, is_html_report)):
        problem = output_problem(path, inputs=inputs, **({"ours": ours} if ours else {})) if path else None
        if problem:  # said before the runs, not after their work is done
            return _error(f"{option} {path}: {problem}")

    session = _load_session(args)
    if isinstance(session, int):
        return session
    from inspector.host.cli import print_session_warnings
    from inspector.host.replay import model_note

    print_session_warnings(session)

    assumed = model_note(session, str((config.get("model") or {}).get("default") or ""))
    if assumed:
        print(f"note: {assumed}", file=sys.stderr)
    plugin_dirs = list(args.plugin_dir) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    quiet = args.quiet
    # Each run is a worker process: what engines print reaches stderr, never the table or the JSON.
    comparison = run_comparison(session, specs, config, plugin_dirs=plugin_dirs, progress=_progress(quiet),
                                max_workers=args.workers)
    failed = [r for r in comparison.runs if not r.ok]
    for r in failed:
        print(f"error: run {r.label!r} ({r.spec.describe()}): {r.error}", file=sys.stderr)
        if r.details and not quiet:
            print(_indent(r.details), file=sys.stderr)

    status = 2 if failed else 0
    from inspector.quality.analysis import analyse

    for r in comparison.runs:  # derived from each trace, cached in it (the bundle carries it)
        if r.trace is not None:
            analyse(r.trace)
    run_graded_probes(args, [r.trace for r in comparison.runs if r.trace is not None], config, sys.stderr)
    if args.out:
        try:
            save_comparison(comparison, args.out)
            if not quiet:
                print(f"comparison written: {args.out}", file=sys.stderr)
        except OSError as exc:
            status = _error(f"{args.out}: cannot write the comparison: {exc.strerror or exc}")
    if args.html:
        try:
            write_html_report(comparison, args.html)
            if not quiet:
                print(f"report written: {args.html}", file=sys.stderr)
        except OSError as exc:
            status = _error(f"{args.html}: cannot write the report: {exc.strerror or exc}")

    print_comparison(comparison, as_json=args.json, turns=args.turns)
    return status


def print_comparison(comparison: Any, *, as_json: bool = False, turns: bool = False) -> None:
    """The comparison on stdout, as ``compare`` prints it (also for a saved one, reopened)."""
    from inspector.compare.table import summary_table

    table = summary_table(comparison)
    if as_json:
        from inspector.quality.report import quality_json

        json.dump({"session": comparison.session, **table.to_json(), "summaries": table.summaries,
                   "quality": [quality_json(r.trace) if r.trace is not None else None for r in comparison.runs]},
                  sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return
    ok = [r for r in comparison.runs if r.trace is not None]
    if turns and ok:
        from inspector.host.cli import print_turn_table

        print_turn_table([r.trace for r in ok], [r.label for r in ok])
        sys.stdout.write("\n")
    sys.stdout.write(table.render_text())
    from inspector.host.cli import print_faults, print_output_count

    print_faults([r.trace for r in ok], [r.label for r in ok])  # what the faults row counts, in words
    print_output_count([r.trace for r in ok], [r.label for r in ok])
    from inspector.quality.report import print_retention

    print_retention([r.trace for r in ok], [r.label for r in ok], sys.stdout)  # what the retention row lost


def _load_session(args: argparse.Namespace) -> Any:
    """The session, or an exit status after printing why it could not be read."""
    from inspector.sessions import load_session, require_conversation
    from inspector.sessions.model import ReaderError

    try:
        return require_conversation(load_session(args.session, format=args.format, session_id=args.session_id))
    except ReaderError as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(f"{args.session}: {exc.strerror or exc}")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())
