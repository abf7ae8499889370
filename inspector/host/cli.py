"""``context-inspector replay``: run engines over a session headlessly and print what happened."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from inspector.config import add_config_arguments
from inspector.outputs import output_problem
from inspector.terminal import printable

HELP = "Replay a session through one or more context engines and print a per-turn table."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", help="transcript file, Hermes state.db[#session id], or a saved trace")
    parser.add_argument("--engine", action="append", default=[], help="engine name (repeat for side by side)")
    add_config_arguments(parser)
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory")
    parser.add_argument("--format", help="transcript format (skip detection)")
    parser.add_argument("--session-id", help="session to load from a multi-session source")
    parser.add_argument("--out", help="write the trace here (.json or .json.gz); with several engines, one per engine")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    from inspector.quality.report import add_probe_arguments

    add_probe_arguments(parser)


def _progress(label: str, quiet: bool):
    if quiet:
        return None
    state = {"last": -1}

    def report(done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 100
        if pct != state["last"] and (pct % 5 == 0 or done == total):
            state["last"] = pct
            sys.stderr.write(f"\r{label}: turn {done}/{total} ({pct}%)")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return report


def run_engines(session: Any, names: list[str], config: dict, plugin_dirs: list[str], quiet: bool = True) -> list:
    """Replay each engine in its own worker process (all at once); returns traces in order.

    Raises :class:`ReplayFailed` when a run produced no trace; a worker that froze or died leaves
    its partial trace, ending with that fault, and its status in ``trace.meta``.
    """
    return collect_traces(start_engines(names, config, plugin_dirs, quiet).send(session), names)


def start_engines(names: list[str], config: dict, plugin_dirs: list[str], quiet: bool = True,
                  analyse: bool = False) -> Any:
    """One worker per engine, started now: they load their engines while the session is read.

    ``analyse``: each trace's quality analysis follows its batches (:mod:`inspector.quality.ahead`)."""
    from inspector.worker.replays import RunRequest, StartedReplays

    labels = unique_labels(names)
    report = None if quiet else _progress_by_label(labels)
    return StartedReplays([RunRequest(n, config, label) for n, label in zip(names, labels)], plugin_dirs,
                          progress=report, analyse=analyse)


def collect_traces(outcomes: list, names: list[str]) -> list:
    traces = []
    for name, outcome in zip(names, outcomes):
        for note in outcome.notes:
            print(f"note: {note}", file=sys.stderr)
        error = outcome.error
        if error is not None and error.get("kind") in ("load", "user", "session"):
            raise ReplayFailed(str(error.get("message") or error.get("exception")))
        if error is not None:  # the host guards every hook; what escapes is the engine failing where Hermes would crash too
            where = error.get("where")
            raise ReplayFailed(f"replay with engine {name!r} crashed: {error.get('exception')}: {error.get('message')}"
                               + (f" ({where})" if where else ""))
        if outcome.trace is None:
            raise ReplayFailed(f"replay with engine {name!r} failed: {outcome.describe()}")
        traces.append(outcome.trace)
    return traces


def _progress_by_label(labels: list[str]):
    reporters = {label: _progress(label, False) for label in labels}
    return lambda label, done, total: reporters[label](done, total)


class ReplayFailed(Exception):
    """A replay that produced no trace: an engine that does not load, a setting, a crash outside the hooks."""


def innermost_frame(exc: BaseException) -> str | None:
    """``file:line in function`` of the deepest frame of ``exc``'s traceback."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


NO_REPLY = "no reply: no provider call"


def print_turn_table(traces: list, names: list[str], out=None) -> None:
    out = out or sys.stdout
    from inspector.trace.summary import per_turn_rows

    tables = [{r["turn"]: r for r in per_turn_rows(t)} for t in traces]
    from inspector.quality.analysis import analyse
    from inspector.quality.report import per_turn, turn_cell

    kept = [per_turn(t, analyse(t)) for t in traces]  # facts retained by each compaction, per turn
    turns = sorted(set().union(*[set(t) for t in tables])) if tables else []
    if len(traces) == 1:
        # per turn: the figures of its last request, cache tokens summed over its requests
        # Σ cache rd/wr: what the engine was fed; sim/rec: the cache simulator beside the provider
        header = ["turn", "req", "last prompt", "rough", "recorded", "threshold", "comp#", "Σ cache rd",
                  "Σ cache wr", "Σ rd sim", "Σ rd rec", "retained", "faults", "first miss reason"]
        rows = []
        for turn in turns:
            r = tables[0][turn]
            rows.append([turn, r["requests"], r["prompt"], r["rough"], r["recorded"], r["threshold"],
                         r["compression_count"], r["cache_read"], r["cache_write"], r["simulated_read"],
                         r["recorded_read"], turn_cell(kept[0].get(turn)), r["faults"],
                         r["miss"][:70] if r["reply"] else NO_REPLY])
    else:
        header = ["turn"]
        for n in names:
            header += [f"{n}:last prompt", f"{n}:comp#", f"{n}:Σ cache rd", f"{n}:retained"]
        rows = []
        for turn in turns:
            row: list[Any] = [turn]
            for table, kept_by_turn in zip(tables, kept):
                r = table.get(turn, {})
                row += [r.get("prompt"), r.get("compression_count"), r.get("cache_read"),
                        turn_cell(kept_by_turn.get(turn))]
            # Runs replay the same transcript: a turn it leaves unanswered is unanswered in each.
            silent = any(turn in table and not table[turn]["reply"] for table in tables)
            rows.append(row + [NO_REPLY if silent else ""])
        if any(row[-1] for row in rows):
            header.append("note")
        else:
            rows = [row[:-1] for row in rows]
    _print_table(header, rows, out, left=(-1,) if header[-1] in ("note", "first miss reason") else ())


def _print_table(header: list[str], rows: list[list[Any]], out, left: tuple[int, ...] = (-1,)) -> None:
    """Numbers right-aligned; the columns in ``left`` (text) left-aligned."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    lefts = {i % len(header) for i in left}

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if i in lefts else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    out.write(line(header).rstrip() + "\n")
    for r in cells:
        out.write(line(r).rstrip() + "\n")


def print_summary(traces: list, names: list[str], out=None) -> None:
    out = out or sys.stdout
    from inspector.trace.summary import SUMMARY_ROWS, summarise

    sums = [summarise(t) for t in traces]
    header = ["summary"] + names
    rows = []
    for key, label, _ in SUMMARY_ROWS:
        vals = [s.get(key) for s in sums]
        if key == "hit_rate":
            vals = [f"{v * 100:.1f}%" for v in vals]
        rows.append([label] + vals)
        if key == "cost":  # what the cost bought: the facts still available at the end
            from inspector.quality.analysis import analyse
            from inspector.quality.report import percent

            rows.append(["facts retained"] + [percent(analyse(t).run_retention) for t in traces])
    # Which Hermes each run's host played (inspector.host_profile); older traces do not say.
    rows.append(["host profile"] + [str(t.meta.get("host_profile") or "not recorded") for t in traces])
    if any((t.meta.get("engine") or {}).get("fallback") for t in traces):
        rows.append(["engine run"] + [engine_run(t) for t in traces])
    out.write("\n")
    _print_table(header, rows, out, left=(0,))


def print_cache_truth(traces: list, names: list[str], out=None) -> None:
    """Per run: how usage was fed, recorded cache figures beside simulated, and the simulator's accuracy."""
    from inspector.cache.accuracy import (
        accuracy,
        describe_accuracy,
        describe_crossing,
        recorded_vs_simulated,
        threshold_crossing,
    )

    out = out or sys.stdout
    for name, trace in zip(names, traces):
        um = trace.meta.get("usage_model") or {}
        both = recorded_vs_simulated(trace)
        if both["recorded"] is None:
            continue
        out.write(f"\nusage and cache, recorded vs simulated ({name}): {describe_usage_model(um)}\n")
        rec, sim = both["recorded"], both["simulated"]

        def pct(v: Any) -> str:
            return "-" if v is None else f"{v * 100:.1f}%"

        _print_table(["", "recorded", "simulated"], [
            ["requests", rec["requests"], sim["requests"]],
            ["prompt tokens", rec["prompt"], sim["prompt"]],
            ["cache read", rec["read"], sim["read"]],
            ["cache written", rec["write"], sim["write"]],
            ["  of which 1h", rec["write_1h"], sim["write_1h"]],
            ["hit rate", pct(rec["hit_rate"]), pct(sim["hit_rate"])],
        ], out, left=(0,))
        out.write("simulator accuracy:\n")
        for line in describe_accuracy(accuracy(trace)):
            out.write(f"  {line}\n")
        crossing = describe_crossing(threshold_crossing(trace))
        if crossing:
            out.write(f"compaction: {crossing}\n")


def describe_usage_model(um: dict[str, Any]) -> str:
    """``usage calibrated (head 25,810 tokens, ratio 1.60, …)``: the mode and its fitted numbers."""
    cal = um.get("calibration")
    fed = ", ".join(f"{n} {k}" for k, n in sorted((um.get("fed") or {}).items()))
    text = f"usage {um.get('mode', '?')}"
    if cal:
        text += (f" (head {cal['hidden_tokens']:,} tokens, ratio {cal['ratio']:.2f}, warm {cal['warm_tokens']:,}; "
                 f"{cal['method']}; fit error median {cal['median_error_pct']:.1f} %, p90 {cal['p90_error_pct']:.1f} %)")
    return text + (f"; fed: {fed}" if fed else "")


def engine_run(trace: Any) -> str:
    """The engine a run really used: Hermes' built-in compressor where Hermes would fall back to it."""
    engine = trace.meta.get("engine") or {}
    if engine.get("fallback"):
        return f"compressor (Hermes' fallback: {engine['fallback']})"
    return str(engine.get("name") or "?")


def run(args: argparse.Namespace) -> int:
    from inspector.config import command_config
    from inspector.host.replay import model_note
    from inspector.sessions import load_session, require_conversation
    from inspector.sessions.model import ReaderError

    config = command_config(args)
    if config is None:
        return 2
    from inspector.quality.report import apply_probe_options, run_graded_probes

    apply_probe_options(args, config)
    plugin_dirs = list(args.plugin_dir) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    engines = args.engine or [str((config.get("context") or {}).get("engine") or "compressor")]
    names = unique_labels(engines)
    saved = _load_saved(args)
    if saved is not None:
        if isinstance(saved, int):
            return saved
        return _report(args, *saved)
    if args.out:  # said before the replay, not after its work is done
        for path in [args.out] if len(names) == 1 else [_per_engine_path(args.out, n) for n in names]:
            problem = output_problem(path, inputs=[args.session, args.config or ""])
            if problem:
                print(f"error: --out {path}: {problem}", file=sys.stderr)
                return 2
    # Engines run in workers (what they print reaches stderr, never the table or the JSON), started
    # now so that they start Python and load their engines while this process reads the session.
    started = start_engines(engines, config, plugin_dirs, quiet=args.quiet or args.json, analyse=True)
    sent = False
    try:
        try:
            session = require_conversation(load_session(args.session, format=args.format, session_id=args.session_id))
        except ReaderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"error: {args.session}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print_session_warnings(session)
        from inspector.host.transcript_defaults import describe, settle

        # What the worker's replay settles too (inspector.host.replay.replay): said here once.
        config = settle(config, session)
        assumed = model_note(session, str((config.get("model") or {}).get("default") or ""))
        if assumed:
            print(f"note: {assumed}", file=sys.stderr)
        sent = True
        from inspector.quality.analysis import facts_ahead

        try:
            with facts_ahead(session.messages):  # this process's idle core, while the workers replay
                outcomes = started.send(session)
            traces = collect_traces(outcomes, engines)
        except ReplayFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    finally:
        if not sent:
            started.abort()
    print(f"note: {describe(config['x_assumed'])}", file=sys.stderr)
    for warning in {w for t in traces for w in ((t.meta.get("usage_model") or {}).get("calibration") or {}).get(
            "warnings", ())}:
        print(f"warning: {warning}", file=sys.stderr)
    for note in {(t.meta.get("price") or {}).get("note") for t in traces} - {None}:
        print(f"note: {note}", file=sys.stderr)
    from inspector.quality.analysis import analyse, forget_facts_ahead

    for trace in traces:  # derived from the trace; cached in it, so a saved trace carries it
        analyse(trace)
    forget_facts_ahead()
    run_graded_probes(args, traces, config, sys.stderr)
    if args.out:
        from inspector.trace.io import save_trace

        for name, trace in zip(names, traces):
            path = args.out if len(traces) == 1 else _per_engine_path(args.out, name)
            try:
                save_trace(trace, path)
            except OSError as exc:
                print(f"error: {path}: cannot write the trace: {exc.strerror or exc}", file=sys.stderr)
                return 2
            if not args.json:
                print(f"trace written: {path}", file=sys.stderr)
    about = {"id": session.id, "format": session.source_format, "turns": len(session.turns),
             "warnings": list(session.warnings), "notes": [describe(config["x_assumed"])] + ([assumed] if assumed else []),
             "assumed": config["x_assumed"]}
    code = _report(args, traces, names, about)
    stopped = [(name, t.meta["stopped"]) for name, t in zip(names, traces) if t.meta.get("stopped")]
    stopped += [(name, t.meta["stopped_by_worker"]) for name, t in zip(names, traces) if t.meta.get("stopped_by_worker")]
    for name, why in stopped:
        print(f"error: engine {name!r}: {printable(why)}", file=sys.stderr)
    return 2 if stopped else code


WARNINGS_SHOWN = 20


def print_session_warnings(session: Any) -> None:
    """What the reader had to skip or guess, on stderr; the count of any not shown (--json has all)."""
    for warning in session.warnings[:WARNINGS_SHOWN]:
        print(f"warning: {warning}", file=sys.stderr)
    hidden = len(session.warnings) - WARNINGS_SHOWN
    if hidden > 0:
        print(f"warning: … and {hidden} more reading warning(s); --json lists them all", file=sys.stderr)


def _load_saved(args: argparse.Namespace) -> tuple[list, list[str], dict[str, Any]] | int | None:
    """A saved trace or comparison, shown as recorded: (traces, labels, session); an exit code on error."""
    from inspector.trace.io import BUNDLE_FORMAT, TraceFormatError, load_trace, saved_kind

    kind = saved_kind(args.session)
    if kind is None:
        return None
    if args.engine or args.out:
        print(f"error: {args.session} is a saved {'comparison' if kind == BUNDLE_FORMAT else 'trace'}: it is shown "
              "as recorded; to replay it with engines, give the session it was made from", file=sys.stderr)
        return 2
    try:
        if kind == BUNDLE_FORMAT:
            # A saved comparison reads as compare printed it: every run, failed ones included.
            from inspector.compare import load_comparison
            from inspector.compare.cli import print_comparison

            comparison = load_comparison(args.session)
            for run in comparison.runs:
                if not run.ok:
                    print(f"error: run {run.label!r} ({run.spec.describe()}): {run.error}", file=sys.stderr)
            print_comparison(comparison, as_json=args.json)
            return 0
        else:
            traces = [load_trace(args.session)]
            labels = [str(traces[0].meta.get("label") or "engine")]
    except (TraceFormatError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    session = dict(traces[0].meta.get("session") or {}) if traces else {}
    about = {"id": session.get("id"), "format": session.get("format"), "turns": session.get("turns")}
    return traces, unique_labels(labels), about


def _report(args: argparse.Namespace, traces: list, names: list[str], session: dict[str, Any]) -> int:
    if args.json:
        from inspector.cache.accuracy import accuracy, recorded_vs_simulated, threshold_crossing
        from inspector.quality.report import quality_json
        from inspector.trace.summary import fault_rows, output_rows, per_turn_rows, summarise

        json.dump({"session": session,
                   "runs": [{"engine": n, "status": run_status(t), "host_profile": t.meta.get("host_profile"),
                             "engine_fallback": (t.meta.get("engine") or {}).get("fallback"),
                             "summary": summarise(t), "turns": _with_retention(t, per_turn_rows(t)),
                             "faults": fault_rows(t), "output": output_rows(t), "quality": quality_json(t),
                             "usage_model": t.meta.get("usage_model"),
                             "cache_vs_recorded": recorded_vs_simulated(t), "cache_accuracy": accuracy(t),
                             "threshold_crossing": threshold_crossing(t)}
                            for n, t in zip(names, traces)]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print_turn_table(traces, names)
    print_summary(traces, names)
    print_cache_truth(traces, names)
    print_faults(traces, names)
    print_output_count(traces, names)
    from inspector.quality.report import print_retention

    print_retention(traces, names, sys.stdout)
    return 0


def run_status(trace: Any) -> str:
    """``ok``, or how the run ended early: the worker killed (timeout, memory) or dead, the host refusing."""
    if trace.meta.get("worker_status"):
        return str(trace.meta["worker_status"])
    return "refused" if trace.meta.get("stopped") else "ok"


def _with_retention(trace: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-turn rows with ``retention``: the facts each compaction of the turn kept (empty: none)."""
    from inspector.quality.analysis import analyse
    from inspector.quality.report import per_turn

    kept = per_turn(trace, analyse(trace))
    return [{**row, "retention": [round(v, 6) for v in kept.get(row["turn"], [])]} for row in rows]


FAULTS_SHOWN = 10
OUTPUT_LINES_SHOWN = 3  # of a faulted hook call's output, the last lines: what it said before it failed


# Faults that differ only in their figures (token counts, sizes, event numbers) are one kind.
_NUMBERS = re.compile(r"\d[\d,._]*")


def print_faults(traces: list, names: list[str], out=None) -> None:
    """Each run's first faults in words (the table only counts them)."""
    from inspector.trace.summary import fault_rows

    out = out or sys.stdout
    for name, trace in zip(names, traces):
        total = len(trace.fault_events)
        if not total:
            continue
        groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in fault_rows(trace):  # the same fault at every request is listed once, with its count
            groups.setdefault((row["hook"], row["kind"], _NUMBERS.sub("#", row["message"])), []).append(row)
        shown = list(groups.items())[:FAULTS_SHOWN]
        more = f", {len(groups) - len(shown)} more kinds in the trace" if len(groups) > len(shown) else ""
        out.write(f"\nfaults ({name}): {total:,}{more}\n")
        for (hook, kind, _shape), rows in shown:
            first, message = rows[0], rows[0]["message"]
            where = f"event {first['event']}" + (f", turn {first['turn']}" if first["turn"] is not None else "")
            times = f" (×{len(rows):,}, last at event {rows[-1]['event']})" if len(rows) > 1 else ""
            out.write(f"  {where}, {hook}: {kind}: {printable(' '.join(message.split())[:300])}{times}\n")
            if first.get("where"):
                out.write(f"    at {first['where']}\n")
            output = trace.events[first["event"]].output
            if output:
                lines = output.rstrip("\n").splitlines()[-OUTPUT_LINES_SHOWN:]
                out.write("".join(f"    {'output: ' if i == 0 else '        '}{printable(line)[:300]}\n"
                                  for i, line in enumerate(lines)))


def print_output_count(traces: list, names: list[str], out=None) -> None:
    """Say which runs recorded engine output (the terminal showed it as it came; the trace keeps it per call)."""
    out = out or sys.stdout
    for name, trace in zip(names, traces):
        calls = sum(1 for ev in trace.events if ev.output is not None)
        if calls:
            out.write(f"\nengine output ({name}): {calls:,} hook call(s) printed or logged; the trace keeps it with "
                      "each call (replay --json, the window's Engine panel)\n")


def unique_labels(names: list[str]) -> list[str]:
    """``compressor, compressor`` → ``compressor, compressor#2`` so columns and files stay distinct."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _per_engine_path(out: str, name: str) -> str:
    for suffix in (".json.gz", ".json"):
        if out.endswith(suffix):
            return out[: -len(suffix)] + f".{name}" + suffix
    return f"{out}.{name}"
