"""The inputs of the compressor differential and our side of it.

Inputs are every corpus session and the bundled demo, read through our own readers, cut at every
turn boundary, at context lengths from 16k to 1M and a few protect settings, each in the three
summariser modes of ``wire.MODES``. The same request goes to Hermes (one subprocess) and to our
built-in compressor (in-process); ``wire.run_jobs`` runs it identically on both sides.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.differential import wire

REPO = Path(__file__).resolve().parents[2]
# Next to the repository (``<repo>/../shared/corpus``), or next to the worktrees' folder.
CORPUS = next((p for p in (REPO.parent / "shared" / "corpus", REPO.parent.parent / "shared" / "corpus") if p.is_dir()),
              REPO.parent / "shared" / "corpus")
DEMO = REPO / "resources" / "demo" / "demo_session.json"

# Below the 64K minimum (85 % trigger), a small window (75 % floor) and a large one (50 %).
CONTEXT_LENGTHS = (16_000, 200_000, 1_000_000)
PROTECT = ({}, {"protect_first_n": 0, "protect_last_n": 4}, {"protect_first_n": 1, "protect_last_n": 40})
# The demo is large (635 rows, 1.6M characters) and Hermes redacts every summarised row, so it
# is cut at every turn boundary under one (context length, protect) pair, not all nine, and the two
# failing-summariser modes (which also build Hermes' fallback summary) run at every second cut.
DEMO_SETTINGS = ((16_000, 0),)
REPLAY_CONTEXTS = (16_000, 32_000)
SCRIPT_SEEDS = range(60)


def _sources() -> list[Path]:
    files = [DEMO]
    if CORPUS.is_dir():
        files += sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(".source.txt"))
    return files


@functools.lru_cache(maxsize=1)
def load_sessions() -> dict[str, list[dict[str, Any]]]:
    """``name -> messages as an engine sees them`` for every session of every source."""
    from inspector.sessions.api import list_sessions, load_session
    from inspector.sessions.model import is_replayable, wire_message

    out: dict[str, list[dict[str, Any]]] = {}
    for path in _sources():
        for summary in list_sessions(str(path)):
            session = load_session(str(path), session_id=summary.id)
            name = f"{path.relative_to(CORPUS if path != DEMO else DEMO.parent)}#{summary.id}"
            out[name] = [wire_message(m) for m in session.messages if is_replayable(m)]
    return out


def corpus_missing() -> str | None:
    return None if CORPUS.is_dir() else f"sample corpus not found at {CORPUS} (only the demo is compared)"


@functools.lru_cache(maxsize=1)
def build_request() -> dict[str, Any]:
    sessions = load_sessions()
    jobs: dict[str, dict[str, Any]] = {}
    demo = next(n for n in sessions if n.startswith("demo_session"))
    for name, messages in sessions.items():
        settings = DEMO_SETTINGS if name == demo else [(c, p) for c in CONTEXT_LENGTHS for p in range(len(PROTECT))]
        for k, cut in enumerate(wire.turn_ends(messages)):
            modes = wire.MODES if name != demo or k % 2 == 0 else wire.MODES[:1]
            for ctx, p in settings:
                kwargs = PROTECT[p]
                for mode in modes:
                    jobs[f"compress|{name}|{cut}|{ctx}|p{p}|{mode}"] = {
                        "kind": "compress", "session": name, "cut": cut, "context_length": ctx,
                        "kwargs": kwargs, "mode": mode,
                    }
    for ctx in REPLAY_CONTEXTS:
        for mode in wire.MODES:
            jobs[f"replay|{demo}|{ctx}|{mode}"] = {"kind": "replay", "session": demo, "context_length": ctx, "mode": mode}
    for seed in SCRIPT_SEEDS:
        jobs[f"script|{seed}"] = {"kind": "script", "context_length": (16_000, 128_000, 1_000_000)[seed % 3],
                                  "ops": wire.script_ops(seed)}
    return {"sessions": sessions, "jobs": jobs}


def _answer(mode: str):
    from types import SimpleNamespace

    def fixed(*_args: Any, **_kwargs: Any) -> Any:
        message = SimpleNamespace(content=wire.FIXED_SUMMARY)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)], model="fixed")

    def error(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(wire.ERROR_TEXT)

    def no_provider(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(wire.NO_PROVIDER_TEXT)

    return {"fixed": fixed, "error": error, "no_provider": no_provider}[mode]


@contextlib.contextmanager
def our_side() -> Iterator[wire.Side]:
    """Our built-in compressor with ``inspector.llm.aux.call_llm`` answering per mode.

    No auxiliary endpoint is configured (so the on-disk summary cache is never consulted) and
    the offline stand-in rule is off outside a run, which is Hermes' strict behaviour.
    """
    from inspector.engines.compressor import ContextCompressor
    from inspector.llm import aux
    from inspector.tokens.rough import estimate_messages_tokens_rough

    saved = aux.call_llm

    def set_mode(mode: str) -> None:
        aux.call_llm = _answer(mode)

    try:
        with aux.use_aux_config({}):
            yield wire.Side(make=ContextCompressor, estimate=estimate_messages_tokens_rough, set_mode=set_mode)
    finally:
        aux.call_llm = saved
