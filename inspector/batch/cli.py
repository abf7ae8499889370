"""``context-inspector batch``: replay many sessions with several engines and settings, in parallel."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from inspector.config import add_config_arguments

HELP = ("Replay every session in files, folders and state.db files with each engine and setting, on all cores "
        "or a Ray cluster; results are kept, so a rerun costs nothing and an interrupted batch resumes.")
SHOWN = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", help="transcript files, folders (searched recursively) and state.db files")
    parser.add_argument("--engine", action="append", default=[], help="engine name (repeat for several)")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                        help="run every value of a config key, e.g. compression.threshold=0.5,0.7 (repeat: every "
                             "combination)")
    add_config_arguments(parser)
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local", help="where the tasks run")
    parser.add_argument("--address", help="with --backend ray: the cluster to join (default: start a local one)")
    parser.add_argument("--out", help="folder for the results (and traces with --save-traces); default: the user "
                                      "cache folder")
    parser.add_argument("--save-traces", action="store_true", help="also save each task's trace under OUT/traces")
    parser.add_argument("--fresh", action="store_true", help="replay every task again, even when a result is stored")
    parser.add_argument("--baseline", help="engine the HTML report measures the others against (default: the first)")
    parser.add_argument("--json", action="store_true", help="print JSON (groups and one row per task) instead of tables")
    parser.add_argument("--csv", metavar="FILE", help="write one row per task to FILE")
    parser.add_argument("--html", metavar="FILE", help="write an HTML report with per-session distributions")
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def _output_problems(args: argparse.Namespace) -> list[str]:
    from inspector.batch.table import is_batch_csv
    from inspector.outputs import is_html_report, output_problem

    problems = []
    inputs = list(args.sources) + [args.config or ""]
    for flag, path, ours, what in (("--csv", args.csv, is_batch_csv, "(.csv)"),
                                   ("--html", args.html, is_html_report, "(.html)")):
        if path:
            problem = output_problem(path, inputs=inputs, ours=ours, what=what)
            if problem:
                problems.append(f"{flag} {path}: {problem}")
    return problems


def _engine_identity(name: str, config: dict[str, Any], plugin_dirs: list[str]) -> dict[str, Any]:
    """Name, version and a hash of the engine's code: loaded once here, then in each task afresh."""
    from inspector.batch.tasks import files_hash, source_files
    from inspector.engines.discovery import load_engine

    loaded = load_engine(name, config, plugin_dirs=plugin_dirs, ask_availability=False)
    try:
        info = loaded.info
        files = [] if info.source == "built-in" else source_files(info.path)
        return {"name": name, "version": str(info.version or ""), "source": str(info.source or ""),
                "code": files_hash(files) if files else ""}
    finally:
        loaded.close()


def _session_digests(refs: list, store: Any) -> tuple[list[tuple[Any, str]], list[tuple[str, str]]]:
    """(ref, content hash) of every replayable session; (spec, why) of the rest."""
    from inspector.batch.tasks import session_hash
    from inspector.sessions import load_session, require_conversation
    from inspector.sessions.model import ReaderError

    ready, unusable = [], []
    for ref in refs:
        digest = store.session_hash(ref.path, ref.session_id)
        if digest is None:
            try:
                session = require_conversation(load_session(ref.spec))
            except ReaderError as exc:
                unusable.append((ref.spec, str(exc)))
                continue
            except OSError as exc:
                unusable.append((ref.spec, exc.strerror or str(exc)))
                continue
            digest = session_hash(session)
            store.remember_session_hash(ref.path, ref.session_id, digest)
        ready.append((ref, digest))
    return ready, unusable


def schedule(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order tasks go to the workers: one engine × setting after another, largest session first.

    Tasks of one session under different engines running side by side would each tokenise its
    messages; one after another, the second reads the first's counts from the shared token cache.
    Within each pass the longest replays go first, so the batch does not end on one long task
    while the other workers sit idle.
    """
    passes: dict[tuple[str, str], int] = {}
    sizes: dict[str, int] = {}

    def size(task: dict[str, Any]) -> int:
        path = str(task["session"].get("path") or "")
        if path not in sizes:
            try:
                sizes[path] = os.path.getsize(path)
            except OSError:
                sizes[path] = 0
        return sizes[path]

    def order(task: dict[str, Any]) -> tuple[int, int]:
        return passes.setdefault((task["engine"], task["setting_label"]), len(passes)), -size(task)

    return sorted(tasks, key=order)


def run(args: argparse.Namespace) -> int:
    from inspector.batch.backends import BackendError, make_backend
    from inspector.batch.progress import Progress
    from inspector.batch.runner import task_identity
    from inspector.batch.sources import discover
    from inspector.batch.store import ResultStore, StoreError
    from inspector.batch.tasks import make_task, parse_sweeps, setting_config, setting_label
    from inspector.config import ConfigError, command_config
    from inspector.engines.discovery import EngineLoadError
    from inspector.terminal import printable
    from inspector.tokens.persistent import user_cache_dir

    config = command_config(args)
    if config is None:
        return 2
    problems = _output_problems(args)
    if args.workers is not None and args.workers < 1:
        problems.append("--workers must be at least 1")
    if args.address and args.backend != "ray":
        problems.append("--address is for --backend ray")
    try:
        settings = [(s, setting_config(config, s) if s else config) for s in parse_sweeps(args.sweep)]
    except ConfigError as exc:
        problems.append(str(exc))
        settings = []
    from inspector.config import config_warnings

    known = set(config_warnings(config)) if args.sweep else set()
    for setting, cfg in settings if args.sweep else ():
        for warning in config_warnings(cfg):
            if warning not in known:
                print(f"warning: --sweep {setting_label(setting)}: config {warning}", file=sys.stderr)
    engines = list(dict.fromkeys(args.engine or [str((config.get("context") or {}).get("engine") or "compressor")]))
    if args.baseline and args.baseline not in engines:
        problems.append(f"--baseline {args.baseline!r} is not one of the engines ({', '.join(engines)})")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 2
    plugin_dirs = list(args.plugin_dir) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    out_dir = Path(args.out).expanduser() if args.out else user_cache_dir() / "batch"
    try:
        store = ResultStore(out_dir)
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    found = discover(args.sources)
    for path, why in found.errors:
        print(f"error: {printable(path)}: {printable(why)}", file=sys.stderr)
    if found.skipped:
        print(f"note: {len(found.skipped)} file(s) in the folders are not transcripts and were skipped", file=sys.stderr)
    ready, unusable = _session_digests(found.sessions, store)
    for spec, why in unusable[:SHOWN]:
        print(f"skipped: {printable(spec)}: {printable(why)}", file=sys.stderr)
    if len(unusable) > SHOWN:
        print(f"skipped: … and {len(unusable) - SHOWN} more sessions", file=sys.stderr)
    if not ready:
        print("error: no session to replay in the sources", file=sys.stderr)
        return 2
    try:
        identities = [_engine_identity(name, config, plugin_dirs) for name in engines]
    except EngineLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    trace_dir = str(out_dir / "traces") if args.save_traces else None
    if trace_dir:
        Path(trace_dir).mkdir(parents=True, exist_ok=True)
    tasks = [make_task(ref, digest, engine, setting, cfg, plugin_dirs, trace_dir)
             for ref, digest in ready for engine in identities for setting, cfg in settings]
    stored = {} if args.fresh else store.get_many([t["key"] for t in tasks])
    if trace_dir:  # a result whose trace file is gone is replayed to make it again
        stored = {k: r for k, r in stored.items() if r.get("trace_path") and Path(r["trace_path"]).exists()}
    results: dict[str, dict[str, Any]] = {t["key"]: {**stored[t["key"]], **task_identity(t), "reused": True}
                                          for t in tasks if t["key"] in stored}
    todo = schedule(list({t["key"]: t for t in tasks if t["key"] not in results}.values()))  # equal keys run once
    try:
        backend = make_backend(args.backend, workers=args.workers, address=args.address,
                               log_path=str(out_dir / "workers.log"))
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    progress = Progress(len(results) + len(todo), reused=len(results), enabled=not args.quiet)
    progress.show()
    interrupted = False
    try:
        with contextlib.closing(backend.run(todo)) as running:
            for result in running:
                result["reused"] = False
                store.put(result)
                results[result["key"]] = result
                progress.step(ok=result.get("error") is None)
    except KeyboardInterrupt:
        interrupted = True
    except BackendError as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        progress.close()
        shutdown = getattr(backend, "shutdown", None)
        if callable(shutdown):
            shutdown()
        store.close()
    ordered = [{**results[t["key"]], **task_identity(t)} for t in tasks if t["key"] in results]
    if interrupted:
        print(f"interrupted: {len(ordered)} of {len(tasks)} tasks have results (kept in {out_dir}); run the same "
              "command again to resume", file=sys.stderr)
    code = _write_outputs(args, ordered, engines)
    if interrupted:
        return 130
    failed = sum(1 for r in ordered if r.get("error") is not None)
    return 2 if (code or failed or found.errors) else 0


def _write_outputs(args: argparse.Namespace, results: list[dict[str, Any]], engines: list[str]) -> int:
    from inspector.batch.table import csv_text, groups, print_failures, print_groups, task_rows

    code = 0
    if args.json:
        json.dump({"groups": groups(results), "tasks": task_rows(results)}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_groups(results, sys.stdout)
        print_failures(results, sys.stderr)
    if args.csv:
        code |= _write_text(args.csv, csv_text(results), "--csv", quiet=args.json)
    if args.html:
        from inspector.batch.report import render_report

        code |= _write_text(args.html, render_report(results, baseline=args.baseline or engines[0]), "--html",
                            quiet=args.json)
    return code


def _write_text(path: str, text: str, flag: str, quiet: bool) -> int:
    from inspector.trace.io import _write_atomic  # the one atomic writer (temp file, fsync, rename)

    try:
        _write_atomic(path, text.encode("utf-8"), compress=False)
    except OSError as exc:
        print(f"error: {flag} {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not quiet:
        print(f"{flag[2:]} written: {path}", file=sys.stderr)
    return 0
