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


def test_the_report_names_each_runs_host_profile_fallback_shadowing_and_calibration():
    import copy
    import re

    from inspector.trace import model as tm
    from inspector.trace.model import Event

    s = make_session(turns=3)
    s.api_calls = [ApiCall(message_index=i, usage=Usage(prompt_tokens=5_000 + 100 * i, cache_read_tokens=4_000))
                   for i, m in enumerate(s.messages) if m["role"] == "assistant"]
    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    comparison = run_comparison(s, parse_specs(["compressor", "compressor:protect_last_n=4"]), cfg)
    page = render_html_report(comparison)
    profile = comparison.runs[0].trace.meta["host_profile"]
    assert "<th>host profile</th>" in page and page.count(f"<td>{profile}</td>") == 2
    assert "Engine fallback:" not in page and "Shadowed:" not in page, "said only when it happened"
    cal = comparison.runs[0].trace.meta["usage_model"]["calibration"]
    assert re.search(rf"usage calibrated \(head {cal['hidden_tokens']:,} tokens, ratio {cal['ratio']:.2f}", page)
    assert '<th class="l">settings assumed</th>' in page
    assert page.count('<td class="l">window 200,000 (model table), cache profile anthropic (model)') == 2

    trace = copy.deepcopy(comparison.runs[1].trace)
    trace.meta["engine"] = dict(trace.meta["engine"], fallback="its engine cannot be copied", requested="mine")
    trace.add_event(Event(index=0, kind=tm.EV_NOTE, turn=0, t=0.0, note="engine loading: bundled example engine "
                          "'lcm' at /a is shadowed by yours at /b: yours runs"))
    comparison.runs[1].trace = trace
    page = render_html_report(comparison)
    assert "Engine fallback:</span> <strong>compressor[protect_last_n=4]</strong>: mine did not run: its engine cannot be copied" in page
    assert "Shadowed:</span> <strong>compressor[protect_last_n=4]</strong>: bundled example engine &#x27;lcm&#x27; at /a" in page
