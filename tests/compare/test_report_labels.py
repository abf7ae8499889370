"""The HTML report labels every count as the window does and gives the ★ by the Runs table's rule.

A run whose engine drops every tool result looks cheapest in the core table; the host repaired
what it sent before every call, so the report (like the window) gives it no ★ and shows why.
"""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import pytest

from inspector.compare import parse_specs, run_comparison, summary_table
from inspector.compare.health import best_marks, run_health
from inspector.compare.report import render_html_report

from .conftest import make_session


class _SummaryRows(HTMLParser):
    """The summary table's rows as text cells, and which cells hold the ★."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.stars: list[list[bool]] = []
        self._in, self._cell = False, None

    def handle_starttag(self, tag, attrs):  # noqa: ANN001, ANN201
        if tag == "table" and dict(attrs).get("id") == "summary":
            self._in = True
        elif self._in and tag == "tr":
            self.rows.append([])
            self.stars.append([])
        elif self._in and tag in ("td", "th"):
            self._cell = ""
            self.stars[-1].append("best" in (dict(attrs).get("class") or ""))

    def handle_endtag(self, tag):  # noqa: ANN001, ANN201
        if tag == "table":
            self._in = False
        elif self._in and tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join(self._cell.split()))
            self._cell = None

    def handle_data(self, data):  # noqa: ANN001, ANN201
        if self._cell is not None:
            self._cell += data


@pytest.fixture(scope="module")
def comparison(plugin_dir):  # noqa: ANN001, ANN201
    from inspector.config import load_config

    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}, "inspector": {"hook_timeout_seconds": 5}})
    specs = parse_specs(["cmp_tail", "cmp_drops_tools", "cmp_never"])
    comp = run_comparison(make_session(turns=6), specs, cfg, plugin_dirs=[str(plugin_dir)])
    assert all(r.ok for r in comp.runs), [r.error for r in comp.runs]
    return comp


def _table(comparison) -> dict[str, tuple[list[str], list[bool]]]:  # noqa: ANN001
    parser = _SummaryRows()
    parser.feed(render_html_report(comparison))
    return {row[0]: (row[1:], stars[1:]) for row, stars in zip(parser.rows[1:], parser.stars[1:])}


def test_a_repaired_run_that_looks_cheapest_gets_no_star_and_its_repairs_are_rows(comparison):
    labels = comparison.labels
    drops = labels.index("cmp_drops_tools")
    core = summary_table(comparison)
    assert core.row("tokens_sent").best[drops], "the core table alone would star it: it sends the fewest tokens"
    rows = _table(comparison)
    assert not any(stars[drops] for _cells, stars in rows.values()), "never the best at anything"
    health = run_health(comparison.runs[drops].trace)
    assert health["host_repairs"] > 0 and health["orphan_fixes"] > 0
    assert rows["host repairs"][0][drops] == f"{health['host_repairs']:,}"
    assert rows["orphan fixes"][0][drops] == f"{health['orphan_fixes']:,}"
    assert rows["host repairs"][0][labels.index("cmp_tail")] == "0"
    # the ★ is the window's: the same rule, the same cells
    marks = best_marks(core, [run_health(t) for t in comparison.traces])
    sent = next(k for k in rows if k.startswith("prompt tokens sent"))
    assert rows[sent][1] == marks["tokens_sent"] and any(marks["tokens_sent"])


def test_every_count_says_what_it_is(comparison):
    rows = _table(comparison)
    kinds = {name.rsplit(" (", 1)[0]: name for name in rows}
    assert kinds["prompt tokens sent simulated"].endswith("(lower is better)")
    for name in ("peak prompt tokens simulated", "cached tokens read simulated", "cache tokens written simulated",
                 "cache hit rate simulated", "estimated cost (USD) simulated"):
        assert name in kinds, sorted(kinds)
    # figures that are not token counts carry no kind
    assert "provider requests" in kinds and "compressions committed" in kinds
    page = render_html_report(comparison)
    svgs = [base64.b64decode(m).decode() for m in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)]
    assert any("Prompt tokens per request (simulated usage)" in svg for svg in svgs)
    assert any("Cached tokens read per request (simulated cache)" in svg for svg in svgs)
    assert 'alt="prompt tokens per request per run (simulated usage)' in page
    assert "tokens before &#8594; after (rough)" in page
