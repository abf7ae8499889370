"""On the real Claude Code sessions of the corpus, the calibrated simulator matches what Anthropic
reported (issue 19's targets), and the built-in compressor compacts where the recorded usage
crossed its threshold.

The figures come from the same functions ``replay`` prints them with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.cache.accuracy import accuracy, threshold_crossing
from inspector.config import load_config
from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.sessions import load_session
from tests.sessions.conftest import CORPUS

SUB = "claude_code/4d5611e5-241a-462a-8d15-5122611a9569/subagents"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"sample corpus not found at {CORPUS} (it lives next to the repo, in ../shared/corpus)")
    return CORPUS


def _replay(path: Path, **overrides):
    config = load_config(None, overrides or None)
    return replay(load_session(str(path)), load_engine("compressor", config), config)


def test_calibrated_hit_rates_match_the_recorded_ones_on_every_claude_code_session(corpus: Path):
    blocks = [accuracy(_replay(p)) for p in sorted((corpus / "claude_code").rglob("*.jsonl"))]
    assert all(b is not None for b in blocks)
    compared = sum(b["compared"] for b in blocks)
    mean = sum(b["mean_error_points"] * b["compared"] for b in blocks) / compared
    misses = sum(b["real_misses"] for b in blocks)
    caught = sum(b["caught"] for b in blocks)
    alarms = sum(b["false_alarms"] for b in blocks)
    assert compared == 17
    assert mean <= 2.0
    assert misses and caught / misses >= 0.85
    assert alarms * 100 / compared <= 1.0


def test_uncalibrated_the_same_sessions_miss_the_mark(corpus: Path):
    """Without the head and ratio the simulator reasons about a third of the prompt."""
    block = accuracy(_replay(corpus / "claude_code/tool_heavy.jsonl", inspector={"usage": "tokenizer"}))
    assert block["mean_error_points"] > 10


def test_the_compressor_compacts_where_the_recorded_usage_crossed_its_threshold(corpus: Path):
    # This subagent never nears a 200K window; at 85K (threshold: Hermes' 64K floor) it crosses once.
    path = corpus / SUB / "agent-a2898e3.jsonl"
    calibrated = threshold_crossing(_replay(path, model={"context_length": 85_000}))
    assert calibrated["recorded_crossed_at"] == 3
    assert abs(calibrated["delta"]) <= 2
    uncalibrated = threshold_crossing(_replay(path, model={"context_length": 85_000}, inspector={"usage": "tokenizer"}))
    assert uncalibrated["engine_compacted_before"] is None, "our count alone never reaches the threshold"
