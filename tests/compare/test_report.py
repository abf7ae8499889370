"""The HTML report: self-contained, nothing active from the transcript, and it opens in Chromium."""

from __future__ import annotations

import base64
import html
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


# -- the model each run assumed ------------------------------------------------------------------


def _runs_rows(page: str) -> dict[str, str]:
    """The Runs table as {run label: the row's text}, and the text after the table under "notes"."""
    section = page[page.index("<h2>Runs</h2>"):page.index("<h2>Summary</h2>")]
    table, _, after = section.partition("</table>")
    rows: dict[str, str] = {}
    for row in table.split("<tr>")[2:]:  # [0] before the table, [1] the header
        parser = _Collector()
        parser.feed(row)
        cells = [t for t in parser.text if t.strip()]
        rows[cells[0]] = " ".join(cells[1:])
    parser = _Collector()
    parser.feed(after)
    rows["notes"] = "".join(parser.text)
    return rows


@pytest.fixture(scope="module")
def two_model_comparison(plugin_dir):
    from inspector.config import load_config

    session = make_session(turns=2)
    session.model = "gpt-4o"
    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    specs = parse_specs(["cmp_never:label=assumes-default", "cmp_never:model.default=gpt-4o,label=as-recorded"])
    comp = run_comparison(session, specs, cfg, plugin_dirs=[str(plugin_dir)])
    assert all(r.ok for r in comp.runs)
    return comp


def _says_each_runs_own_model(page: str) -> None:
    rows = _runs_rows(page)
    assert "claude-opus-4-5" in rows["assumes-default"] and "not the transcript’s (gpt-4o)" in rows["assumes-default"]
    assert "gpt-4o" in rows["as-recorded"] and "the transcript’s" in rows["as-recorded"]
    assert "claude-opus-4-5" not in rows["as-recorded"] and "not the transcript" not in rows["as-recorded"]
    # the command line's note, said for the run it concerns and only for it
    assert "the transcript’s model is gpt-4o but run assumes-default assumed claude-opus-4-5" in rows["notes"]
    assert "set model.default=gpt-4o to replay it as recorded" in rows["notes"]
    assert "as-recorded" not in rows["notes"]


def test_report_names_the_model_each_run_assumed(two_model_comparison):
    _says_each_runs_own_model(render_html_report(two_model_comparison))


def test_a_saved_comparison_keeps_the_models_its_runs_assumed(two_model_comparison, tmp_path):
    from inspector.compare import load_comparison, save_comparison

    save_comparison(two_model_comparison, tmp_path / "c.json.gz")
    _says_each_runs_own_model(render_html_report(load_comparison(tmp_path / "c.json.gz")))


def test_a_run_on_the_transcripts_own_model_has_nothing_to_warn_about(plugin_dir):
    from inspector.config import load_config

    session = make_session(turns=1)
    session.model = "anthropic/claude-opus-4-5"  # the same model with a provider prefix
    comp = run_comparison(session, parse_specs(["cmp_never"]), load_config(None, {"model": {"default": "claude-opus-4-5"}}),
                          plugin_dirs=[str(plugin_dir)])
    rows = _runs_rows(render_html_report(comp))
    assert "claude-opus-4-5 the transcript’s" in rows["cmp_never"] and "Model differs" not in rows["notes"]


def test_a_trace_saved_before_the_model_was_recorded_still_renders():
    from inspector.compare.runs import Comparison, RunResult

    from .conftest import synthetic_trace

    old = synthetic_trace([2, 1])
    assert "assumed_model" not in old.meta
    comp = Comparison(runs=[RunResult(spec=RunSpec("x", (), "old run"), trace=old)], session={"model": "gpt-4o"})
    rows = _runs_rows(render_html_report(comp))
    assert "not recorded" in rows["old run"] and "Model differs" not in rows["notes"]


# -- x-axis labels -------------------------------------------------------------------------------

# Per character, at the plots' 11 px: DejaVu Sans draws digits at 0.636 em, the widest of the
# common sans-serif fonts; "t" is narrower. The test's own bound, independent of the report's.
LABEL_PX_PER_CHAR = 0.64 * 11
_X_LABEL = re.compile(r'<text x="([-\d.]+)" y="[\d.]+" text-anchor="middle" fill="#555">(t\d+)</text>')


def _x_labels(calls_per_turn: list[int]) -> tuple[list[tuple[float, float, str]], float]:
    """The prompt plot's x-axis labels as (left, right, text) in x order, and the picture's width."""
    from inspector.compare.runs import Comparison, RunResult

    from .conftest import synthetic_trace

    comp = Comparison(runs=[RunResult(spec=RunSpec("x", (), "x"), trace=synthetic_trace(calls_per_turn))])
    page = render_html_report(comp)
    svg = base64.b64decode(re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)[0]).decode()
    width = float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    labels = []
    for x, text in _X_LABEL.findall(svg):
        half = len(text) * LABEL_PX_PER_CHAR / 2
        labels.append((float(x) - half, float(x) + half, text))
    return sorted(labels), width


def _assert_readable(labels: list[tuple[float, float, str]], width: float) -> None:
    assert labels
    for (_, right, a), (left, _, b) in zip(labels, labels[1:]):
        assert left - right >= 4, f"{a} and {b} are {left - right:.1f} px apart"
    assert labels[0][0] >= 0 and labels[-1][1] <= width, "a label runs off the picture"


@pytest.mark.parametrize("calls_per_turn", [
    [300] + [1] * 30,  # one long turn, then thirty turns on neighbouring rows
    [1] * 30 + [300],
    [1] * 10 + [200] + [1] * 40,
    [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] * 4 + [90],
], ids=["crowded-end", "crowded-start", "crowded-both", "uneven"])
def test_x_labels_never_overlap_where_turns_crowd(calls_per_turn):
    labels, width = _x_labels(calls_per_turn)
    _assert_readable(labels, width)
    assert labels[0][2] == "t0" and labels[-1][2] == f"t{len(calls_per_turn) - 1}"  # first and last turn named


def test_x_labels_of_a_long_session_are_a_round_step():
    turns = 2_500
    labels, width = _x_labels([1 + t % 3 for t in range(turns)])
    _assert_readable(labels, width)
    texts = [text for _, _, text in labels]
    assert texts[0] == "t0" and texts[-1] == f"t{turns - 1}"
    inner = [int(t[1:]) for t in texts[1:-1]]
    step = inner[1] - inner[0]
    assert len(inner) >= 6 and str(step).rstrip("0") in ("1", "2", "5"), texts
    assert all(b - a == step for a, b in zip(inner, inner[1:])), "no round turn left out in the middle"


@pytest.mark.parametrize("calls_per_turn, expected", [
    ([1], ["t0"]),
    ([4], ["t0"]),
    ([1, 1], ["t0", "t1"]),
    ([1, 2, 1], ["t0", "t1", "t2"]),
    ([1, 400], ["t0", "t1"]),  # the two turns start one request apart: both named, side by side
])
def test_x_labels_of_a_short_session_name_every_turn(calls_per_turn, expected):
    labels, width = _x_labels(calls_per_turn)
    _assert_readable(labels, width)
    assert [text for _, _, text in labels] == expected


def test_legend_texts_stay_apart_and_inside_the_picture():
    from inspector.compare.plot_layout import text_width

    labels = ["compressor[threshold=0.3,default=gpt-4o]", "compressor[threshold=0.5,default=gpt-4o]"]
    svg = svg_plot([[10.0, 20.0], [12.0, 22.0]], labels, title="t", y_label="y", dashed=[[1000.0] * 2] * 2,
                   dashed_label="compression threshold (per run)")
    width = float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    boxes = sorted((float(y), float(x), float(x) + text_width(html.unescape(text)))
                   for x, y, text in re.findall(r'<text x="([\d.]+)" y="([\d.]+)" fill="#222">([^<]*)</text>', svg))
    assert len(boxes) == 3
    for (y_a, _, right), (y_b, left, _) in zip(boxes, boxes[1:]):
        assert y_a != y_b or right < left, "two legend texts overlap"
    assert all(right <= width for _, _, right in boxes), "a legend text runs off the picture"
