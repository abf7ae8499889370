"""Benchmark: fact extraction and retention on the bundled demo (prints figures; not a test).

    python -m inspector.quality.bench
"""

from __future__ import annotations

import json
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "demo_session.json"


def main() -> None:
    from inspector.config import load_config
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.quality.analysis import compute
    from inspector.quality.facts import extract_facts
    from inspector.sessions import load_session, require_conversation

    messages = json.loads(DEMO.read_text())["messages"]
    started = time.perf_counter()
    facts = extract_facts(messages)
    extract = time.perf_counter() - started
    print(f"demo: {len(messages)} messages, {len(facts)} facts extracted in {extract:.3f} s")
    config = load_config(None, {})
    session = require_conversation(load_session(str(DEMO)))
    trace = replay(session, load_engine("compressor", config), config)
    started = time.perf_counter()
    analysis = compute(trace)
    took = time.perf_counter() - started
    print(f"compressor run: lifetimes + retention in {took:.3f} s "
          f"({len(analysis.lifetimes.messages)} messages, {len(trace.requests)} requests, "
          f"{len(analysis.lifetimes.compactions)} compactions); retention {analysis.run_retention:.1%}")


if __name__ == "__main__":
    main()
