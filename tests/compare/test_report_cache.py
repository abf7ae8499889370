"""The HTML report puts the provider's recorded cache figures beside the simulator's, per run."""

from __future__ import annotations

from inspector.compare import parse_specs, run_comparison
from inspector.compare.report import render_html_report
from inspector.config import load_config
from inspector.sessions.model import ApiCall, Usage

from .conftest import make_session


def test_a_session_with_recorded_usage_gets_the_recorded_vs_simulated_table():
    s = make_session(turns=3)
    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    plain = render_html_report(run_comparison(s, parse_specs(["compressor"]), cfg))
    assert "Cache: recorded vs simulated" not in plain, "nothing recorded, nothing to compare"
    s.api_calls = [ApiCall(message_index=i, usage=Usage(prompt_tokens=5_000 + 100 * i, cache_read_tokens=4_000))
                   for i, m in enumerate(s.messages) if m["role"] == "assistant"]
    page = render_html_report(run_comparison(s, parse_specs(["compressor"]), cfg))
    assert "Cache: recorded vs simulated" in page and "<td>calibrated</td>" in page
    assert "hit-rate error mean / p90 (points)" in page
