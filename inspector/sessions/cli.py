"""``context-inspector sessions FILE_OR_DB``: list the sessions a source holds.

Errors (unreadable file, unknown format, damaged database) print one line on stderr and exit
with status 2; no traceback, since the message already names the file and the place.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

from inspector.sessions.api import list_sessions
from inspector.sessions.detect import FORMATS
from inspector.sessions.model import ReaderError
from inspector.sessions.summary import SessionSummary
from inspector.terminal import printable

HELP = (
    "List the sessions in a transcript file or a Hermes state.db (id, title, source, model, start, "
    "message count, token totals). Load one elsewhere with FILE#ID."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FILE_OR_DB", help="transcript file (json/jsonl, gzip ok) or Hermes state.db")
    parser.add_argument("--format", choices=None, metavar="NAME", help=f"skip detection; one of: {', '.join(FORMATS)}")
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of a table")


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "-"


def _cut(text: str | None, width: int) -> str:
    text = printable(" ".join((text or "-").split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(rows: list[SessionSummary]) -> str:
    """A fixed-width table; ids are never cut (they are what the user copies)."""
    header = ("ID", "TITLE", "SOURCE", "MODEL", "STARTED (UTC)", "MSGS", "CALLS", "PROMPT", "COMPL", "CACHE R", "CACHE W")
    body = []
    for s in rows:
        tokens = (s.prompt_tokens, s.completion_tokens, s.cache_read_tokens, s.cache_write_tokens)
        shown = [f"{t:,}" if s.usage_source != "none" else "-" for t in tokens]
        sid = printable(s.id) + (f" ({len(s.segments)} segments)" if s.segments else "")
        body.append(
            (sid, _cut(s.title, 40), _cut(s.source, 10), _cut(s.model, 28), _when(s.started), str(s.message_count), str(s.api_calls), *shown)
        )
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    right = {5, 6, 7, 8, 9, 10}
    lines = []
    for r in [header, *body]:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    if any(s.usage_source == "aggregate-only" for s in rows):
        lines.append("(token totals are session aggregates: this source has no per-call usage)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    try:
        rows = list_sessions(args.source, format=args.format, warnings=warnings)
    except ReaderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {args.source}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for warning in warnings[:20]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(warnings) > 20:
        print(f"warning: … and {len(warnings) - 20} more", file=sys.stderr)
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=2, ensure_ascii=False))
    elif not rows:
        print("no sessions found")
    else:
        print(format_table(rows))
    return 0
