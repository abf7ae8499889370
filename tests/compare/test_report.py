"""The HTML report: self-contained, nothing active from the transcript, and it opens in Chromium."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from inspector.compare import RunSpec, parse_specs, run_comparison
from inspector.compare.report import CSP, render_html_report, svg_plot, write_html_report

from .conftest import make_session


class _Collector(HTMLParser):
    """Every tag and attribute of the page, as the browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def hostile_report(plugin_dir, tmp_path_factory) -> Path:
    from inspector.config import load_config

    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    specs = parse_specs(["cmp_tail", "cmp_never", "cmp_broken"])
    # a label with markup and quotes, as a user (or a pasted spec) might give
    specs[1] = RunSpec(specs[1].engine, (), 'never <b>"bold"</b> javascript:alert(1)')
    comp = run_comparison(make_session(turns=6, hostile=True), specs, cfg, plugin_dirs=[str(plugin_dir)])
    assert comp.runs[0].ok and comp.runs[1].ok
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_html_report(comp, path)
    return path


def test_report_is_self_contained_with_strict_csp(hostile_report):
    page = hostile_report.read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(page)
    metas = [a for t, a in parser.tags if t == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert metas and metas[0]["content"] == CSP == "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    tags = {t for t, _ in parser.tags}
    assert not tags & {"script", "iframe", "object", "embed", "link", "base", "form", "frame", "svg"}
    for tag, attrs in parser.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("src", "href"):
                assert value.startswith("data:image/svg+xml;base64,"), (tag, name, value[:40])
            assert "javascript:" not in (value or "").lower(), (tag, name)
    assert 'id="summary"' in page and "&#9733;" in page


def test_transcript_text_appears_only_escaped(hostile_report):
    page = hostile_report.read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "onmouseover=" not in page.replace("onmouseover=&quot;", "")  # only the escaped form
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the excerpt of the dropped first turn
    assert "&quot; onmouseover=&quot;x" in page
    assert "never &lt;b&gt;&quot;bold&quot;&lt;/b&gt; javascript:alert(1)" in page  # the label, as text
    assert "<b>" not in page
    parser = _Collector()
    parser.feed(page)
    text = "".join(parser.text)
    assert "<script>alert(1)</script>" in text  # shown to the reader as text...
    assert not any(t == "script" for t, _ in parser.tags)  # ...never as markup


def test_plots_are_escaped_svg_images(hostile_report):
    page = hostile_report.read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 3
    for data in images:
        svg = base64.b64decode(data).decode("utf-8")
        assert svg.startswith("<svg ") and "<script" not in svg.lower() and " on" not in svg.replace(" one", "")
        assert "never &lt;b&gt;&quot;bold&quot;&lt;/b&gt;" in svg  # legend text escaped as XML
        assert "<polyline" in svg


def test_svg_plot_handles_gaps_and_empty_series():
    svg = svg_plot([[1.0, float("nan"), 3.0], []], ["a", "b"], title="t", y_label="y")
    assert svg.count("<circle") == 2  # two isolated points, no line across the gap
    assert "<svg" in svg and "</svg>" in svg


def test_report_of_a_comparison_with_no_requests():
    from inspector.compare.runs import Comparison, RunResult

    comp = Comparison(runs=[RunResult(spec=RunSpec("x", (), "x"), status="load_failed", error="<nope>")],
                      session={"title": "<t>"})
    page = render_html_report(comp)
    assert "No provider requests" in page and "&lt;nope&gt;" in page and "<nope>" not in page


def test_a_faults_engine_output_is_folded_beside_it_escaped_and_only_its_end():
    from inspector.compare.runs import Comparison, RunResult
    from inspector.config import load_config
    from inspector.engines.contract import ContextEngine
    from inspector.host.replay import replay

    class Explaining(ContextEngine):
        name = "explaining"

        def update_from_response(self, usage):
            print("a response")

        def should_compress(self, prompt_tokens=None):
            print("x" * 3_000 + "\nabout to fail: <script>alert(1)</script>")
            raise RuntimeError("gave up")

        def compress(self, messages, current_tokens=None, **kw):
            return messages

    trace = replay(make_session(turns=2), Explaining(), load_config(None))
    comp = Comparison(runs=[RunResult(spec=RunSpec("explaining", (), "explaining"), trace=trace)], session={})
    page = render_html_report(comp)
    faults = page[page.index("<h2>Faults</h2>"):]
    assert faults.count("<details><summary>engine output</summary>") == len(trace.fault_events) > 1
    assert "about to fail: &lt;script&gt;alert(1)&lt;/script&gt;" in faults and "<script>" not in page
    assert "earlier characters]" in faults and "x" * 3_000 not in faults
    assert "a response" not in page  # output of calls that did not fault stays in the trace


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def test_report_opens_in_headless_chromium(hostile_report, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    profile = tmp_path / "profile"
    profile.mkdir()
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom",
           hostile_report.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert '<table id="summary">' in dom
    assert "cmp_tail" in dom
    for needle in ("Uncaught", "Refused", "Content Security Policy", "CONSOLE"):
        assert needle not in proc.stderr, [line for line in proc.stderr.splitlines() if needle in line]
    assert "<script" not in dom.lower()


def test_threshold_far_above_the_data_is_named_not_drawn():
    svg = svg_plot([[10.0, 20.0]], ["a"], title="t", y_label="y", dashed=[[1000.0, 1000.0]], dashed_label="threshold")
    assert "threshold: above the plot (up to 1k)" in svg
    assert svg.count("<polyline") == 1  # the data line only
    near = svg_plot([[10.0, 20.0]], ["a"], title="t", y_label="y", dashed=[[30.0, 30.0]], dashed_label="threshold")
    assert near.count("<polyline") == 2 and "above the plot" not in near
