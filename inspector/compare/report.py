"""A self-contained HTML report of a comparison: one file, no scripts, nothing fetched.

Everything a transcript or an engine produced (message text, labels, error messages, paths)
is passed through :func:`_e` (``html.escape(quote=True)``) before it reaches the page; plots are
SVG documents we draw ourselves, with their text escaped as XML, then embedded as base64
``data:`` images — so even a hostile label cannot become markup of the page. A strict Content
Security Policy (no scripts, no fetches, inline CSS and ``data:`` images only) backs this up:
should something slip through, the browser still refuses to run it.
"""

from __future__ import annotations

import base64
import html
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspector.compare.align import aligned_series, compression_points
from inspector.compare.health import HEALTH_ROWS, best_marks, run_health
from inspector.compare.plot_layout import legend_layout, turn_tick_labels
from inspector.compare.runs import Comparison, RunResult
from inspector.compare.table import RETENTION_KEY, RUN_COLORS, format_delta, format_value, summary_table
from inspector.host.replay import models_differ
from inspector.outputs import write_atomic
from inspector.trace.counts import PROVIDER, ROUGH, SIMULATED, summary_row_kind, summary_row_tip
from inspector.trace.diff import OP_EQUAL, diff_messages, message_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
EXCERPT_CHARS = 400  # characters of a message shown in a compression excerpt
MAX_EXCERPTS = 12  # compressions per run with an excerpt (the list itself is complete)
MAX_FAULTS = 200  # faults listed per run
MAX_FAULT_OUTPUTS = 20  # faults per run shown with what the engine printed and logged during the call
OUTPUT_TAIL_CHARS = 1_500  # of that output, the end: what the engine said just before it failed
MAX_PLOT_POINTS = 2_000  # per series; longer series are min/max-decimated per bucket

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1d1d1f;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:4px 8px;text-align:right;
vertical-align:top}th:first-child,td:first-child,th.l,td.l{text-align:left}thead th{background:#f4f4f6}
td.best{background:#e6f4ea;font-weight:600}.mark{color:#137333}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:middle}
.err{color:#b00020}.warn{color:#9a4d00;font-weight:600}.muted{color:#666}.delta{color:#666;font-size:12px}
.kind{display:inline-block;padding:0 4px;margin-left:2px;border:1px solid #bbb;border-radius:3px;font-size:11px;color:#444;background:#f6f6f6}
dl.info{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dl.info dt{color:#666}dl.info dd{margin:0}
img.plot{display:block;max-width:100%;border:1px solid #eee;margin:8px 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;border:1px solid #eee;padding:6px 8px;
margin:4px 0;font-size:12px;max-height:240px;overflow:auto}
.role{font-weight:600;color:#444}.op{margin:8px 0 2px;color:#444}
"""


def _e(value: Any) -> str:
    """Escape any text for HTML text and attribute values (quotes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def _short(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit:,} more characters]"


def _color(run: int) -> str:
    return RUN_COLORS[run % len(RUN_COLORS)]


# -- SVG plots ---------------------------------------------------------------------------------


def _nice_step(span: float, ticks: int = 5) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt_tick(v: float) -> str:
    if abs(v) >= 1_000_000:
        return f"{v / 1_000_000:g}M"
    if abs(v) >= 1_000:
        return f"{v / 1_000:g}k"
    return f"{v:g}"


def _decimate(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Keep the shape of a long segment: min and max of each bucket, in x order."""
    if len(points) <= MAX_PLOT_POINTS:
        return points
    size = math.ceil(len(points) / (MAX_PLOT_POINTS // 2))
    out: list[tuple[float, float]] = []
    for i in range(0, len(points), size):
        bucket = points[i : i + size]
        lo = min(bucket, key=lambda p: p[1])
        hi = max(bucket, key=lambda p: p[1])
        out.extend(sorted({lo, hi}))
    return out


def _segments(values: Sequence[float], step: bool) -> list[list[tuple[float, float]]]:
    """Runs of finite values as point lists; a step plot holds each value until the next x."""
    segs: list[list[tuple[float, float]]] = []
    cur: list[tuple[float, float]] = []
    for x, y in enumerate(values):
        if y is None or (isinstance(y, float) and math.isnan(y)):
            if cur:
                segs.append(cur)
            cur = []
            continue
        if step and cur:
            cur.append((float(x), cur[-1][1]))
        cur.append((float(x), float(y)))
    if cur:
        segs.append(cur)
    return segs


def svg_plot(
    series: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    title: str,
    y_label: str,
    turn_starts: Sequence[tuple[int, int]] = (),
    step: bool = False,
    dashed: Sequence[Sequence[float]] | None = None,
    dashed_label: str = "",
    markers: Sequence[Sequence[float]] | None = None,
    width: int = 960,
    height: int = 300,
) -> str:
    """An SVG document: one polyline per run (run colours), optional dashed per-run lines
    (thresholds) and vertical markers (compressions). All text is XML-escaped here.

    ``turn_starts`` are ``(x, turn)`` where each turn's first request is; as many are labelled
    as the width holds without overlap (see :func:`turn_tick_labels`).
    """
    left, right, top, bottom = 64, 16, 30, 44
    pw = width - left - right
    n = max((len(s) for s in series), default=0)
    data = [v for s in series for v in s if v is not None and not math.isnan(v)]
    lines = [v for s in (dashed or []) for v in s if v is not None and not math.isnan(v)]
    data_max = max(data, default=0.0)
    # A threshold far above the data would flatten every curve: then it is named, not drawn.
    off_scale = bool(lines) and data_max > 0 and max(lines) > 2 * data_max
    if off_scale:
        dashed_label = f"{dashed_label}: above the plot (up to {_fmt_tick(max(lines))})"
    entries = [(label, _color(i), False) for i, label in enumerate(labels)]
    if dashed:
        entries.append((dashed_label, "#555", True))
    legend = legend_layout([label for label, _, _ in entries], pw)
    legend_h = 18 * (legend[-1][0] + 1 if legend else 0)
    height += legend_h
    ph = height - top - bottom - legend_h
    ymax = max([data_max, *([] if off_scale else lines)]) or 1.0
    ystep = _nice_step(ymax)
    ymax = math.ceil(ymax / ystep) * ystep
    xmax = max(n - 1, 0)

    def sx(x: float) -> float:
        # Each request owns one slot of the width, its point in the middle: a session of one or
        # two requests is drawn across the plot, not pressed against the y axis.
        return left + pw * (x + 0.5) / (xmax + 1)

    def sy(y: float) -> float:
        return top + ph - ph * y / ymax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">{_e(title)}</text>']
    y = 0.0
    while y <= ymax + 1e-9:
        py = sy(y)
        out.append(f'<line x1="{left}" y1="{py:.1f}" x2="{left + pw}" y2="{py:.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{left - 6}" y="{py + 4:.1f}" text-anchor="end" fill="#555">{_e(_fmt_tick(y))}</text>')
        y += ystep
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#999"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#999"/>')
    for tick in turn_tick_labels([(sx(x), turn) for x, turn in turn_starts], 2, width - 2):
        out.append(f'<line x1="{tick.x:.1f}" y1="{top + ph}" x2="{tick.x:.1f}" y2="{top + ph + 4}" stroke="#999"/>')
        out.append(f'<text x="{tick.centre:.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#555">'
                   f'{_e(tick.text)}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{top + ph + 32}" text-anchor="middle" fill="#555">'
               f'provider request (labelled by turn)</text>')
    out.append(f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" fill="#555" '
               f'transform="rotate(-90 14 {top + ph / 2:.1f})">{_e(y_label)}</text>')
    for run, xs in enumerate(markers or []):
        for x in xs:
            if x is None or math.isnan(x):
                continue
            px = sx(max(0.0, min(float(x), xmax)))
            out.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" stroke="{_color(run)}" '
                       f'stroke-opacity="0.35" stroke-dasharray="2 3"/>')
    for run, values in enumerate([] if off_scale else (dashed or [])):
        for seg in _segments(values, step=True):
            pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in _decimate(seg))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{_color(run)}" stroke-width="1" '
                       f'stroke-dasharray="6 4"/>')
    for run, values in enumerate(series):
        # Earlier runs are drawn wider underneath, so runs that coincide stay visible.
        stroke = 1.5 + 1.5 * (len(series) - 1 - run)
        for seg in _segments(values, step):
            if len(seg) == 1:
                x, y = seg[0]
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2" fill="{_color(run)}"/>')
                continue
            pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in _decimate(seg))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{_color(run)}" stroke-width="{stroke:g}" '
                       f'stroke-linejoin="round"/>')
    ly = top + ph + bottom
    for (row, offset, label), (_, color, is_dashed) in zip(legend, entries):
        lx, yy = left + offset, ly + 18 * row
        dash = ' stroke-dasharray="6 4"' if is_dashed else ""
        out.append(f'<line x1="{lx:.1f}" y1="{yy - 4}" x2="{lx + 22:.1f}" y2="{yy - 4}" stroke="{color}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 28:.1f}" y="{yy}" fill="#222">{_e(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _img(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img class="plot" alt="{_e(alt)}" src="data:image/svg+xml;base64,{data}">'


def _turn_starts(rows: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(row, turn)`` of each turn's first row."""
    return [(i, turn) for i, (turn, _call) in enumerate(rows) if i == 0 or rows[i - 1][0] != turn]


# -- sections ----------------------------------------------------------------------------------


def _assumed_model(run: RunResult, transcript_model: str) -> tuple[str, str | None]:
    """The model the run's replay assumed, as table cell HTML, and a sentence when it is not the
    transcript's (the fact the command line gives as a note, for this run's own config)."""
    if run.trace is None:
        return '<span class="muted">no trace</span>', None
    if "assumed_model" not in run.trace.meta:
        return '<span class="muted">not recorded (trace saved by an older version)</span>', None
    model = str(run.trace.meta.get("assumed_model") or "")
    recorded = str((run.trace.meta.get("session") or {}).get("model") or transcript_model or "")
    if not model:
        return '<span class="muted">none named</span>', None
    if not recorded:
        return f'{_e(model)}<br><span class="muted">the transcript names none</span>', None
    if not models_differ(recorded, model):
        return f'{_e(model)}<br><span class="muted">the transcript&#8217;s</span>', None
    cell = f'{_e(model)}<br><span class="warn">not the transcript&#8217;s ({_e(recorded)})</span>'
    sentence = (f'<p><span class="warn">Model differs:</span> the transcript&#8217;s model is {_e(recorded)} but run '
                f'<b>{_e(run.label)}</b> assumed {_e(model)} for update_model, the context window, the cache minimum '
                f'and prices; set model.default={_e(recorded)} to replay it as recorded.</p>')
    return cell, sentence


def _run_host(run: RunResult) -> tuple[str, str, list[str]]:
    """The host profile cell, the settings-assumed cell (window, cache profile, TTL: the model has its
    own column) and sentences for a Hermes fallback and a shadowed engine
    (:mod:`inspector.trace.run_facts`; the window's Run tab says the same)."""
    from inspector.host.transcript_defaults import describe
    from inspector.trace.run_facts import engine_fallback, host_profile, shadowing

    if run.trace is None:
        return '<span class="muted">no trace</span>', "", []
    who = f"<strong>{_e(run.label)}</strong>"
    notes = []
    fallback = engine_fallback(run.trace)
    if fallback:
        notes.append(f'<p><span class="warn">Engine fallback:</span> {who}: {_e(fallback)}.</p>')
    notes += [f'<p><span class="warn">Shadowed:</span> {who}: {_e(text)}.</p>' for text in shadowing(run.trace)]
    chosen = {k: v for k, v in (run.trace.meta.get("assumed") or {}).items() if k != "model"}
    settings_cell = (_e(describe(chosen).removeprefix("replay settings: ")) if chosen else
                     '<span class="muted">not recorded</span>')
    profile = host_profile(run.trace)
    cell = _e(profile) if "host_profile" in run.trace.meta else f'<span class="muted">{_e(profile)}</span>'
    return cell, settings_cell, notes


def _section_runs(comparison: Comparison) -> str:
    rows, notes = [], []
    transcript_model = str((comparison.session or {}).get("model") or "")
    for i, run in enumerate(comparison.runs):
        status = _e(run.status) + (f' <span class="err">{_e(run.error)}</span>' if run.error else "")
        model, note = _assumed_model(run, transcript_model)
        if note:
            notes.append(note)
        profile, settings, said = _run_host(run)
        notes += said
        rows.append(f'<tr><td><span class="sw" style="background:{_color(i)}"></span>{_e(run.label)}</td>'
                    f'<td>{_e(run.spec.describe())}</td><td class="l">{model}</td><td class="l">{settings}</td>'
                    f"<td>{profile}</td><td>{status}</td><td>{run.seconds:.2f}</td></tr>")
    return ('<h2>Runs</h2><table><thead><tr><th>run</th><th>engine spec</th><th class="l">model assumed</th>'
            '<th class="l">settings assumed</th><th>host profile</th><th>status</th><th>wall time (s)</th></tr>'
            "</thead><tbody>" + "".join(rows)
            + "</tbody></table>" + "".join(notes))


def _section_cache_truth(comparison: Comparison) -> str:
    """Recorded cache figures beside the simulator's, and its accuracy, per run (when recorded)."""
    from inspector.cache.accuracy import accuracy, recorded_vs_simulated
    from inspector.trace.run_facts import usage

    rows, fits = [], []
    for i, run in enumerate(comparison.runs):
        if run.trace is None:
            continue
        fed = usage(run.trace)
        if fed:  # the mode and the calibration's fitted numbers and method
            fits.append(f'<p class="muted"><strong>{_e(run.label)}</strong>: {_e(fed)}</p>')
        both = recorded_vs_simulated(run.trace)
        rec, sim = both["recorded"], both["simulated"]
        if rec is None:
            continue
        acc = accuracy(run.trace)
        mode = (run.trace.meta.get("usage_model") or {}).get("mode", "?")

        def pct(v: Any) -> str:
            return "-" if v is None else f"{v * 100:.1f} %"

        fig = ("-" if acc is None else
               f"{acc['mean_error_points']:.2f} / {acc['p90_error_points']:.2f}",
               "-" if acc is None or not acc["real_misses"] else f"{acc['caught']} of {acc['real_misses']}",
               "-" if acc is None else f"{acc['false_alarms']} ({acc['false_alarms_per_100']:.2f})")
        rows.append(f'<tr><td><span class="sw" style="background:{_color(i)}"></span>{_e(run.label)}</td>'
                    f"<td>{_e(mode)}</td><td>{pct(rec['hit_rate'])}</td><td>{pct(sim['hit_rate'])}</td>"
                    f"<td>{rec['read']:,}</td><td>{sim['read']:,}</td><td>{rec['write']:,} ({rec['write_1h']:,} 1h)</td>"
                    f"<td>{sim['write']:,}</td><td>{_e(fig[0])}</td><td>{_e(fig[1])}</td><td>{_e(fig[2])}</td></tr>")
    if not rows:
        return ""
    return ('<h2>Cache: recorded vs simulated</h2><table><thead><tr><th>run</th><th>usage</th>'
            "<th>hit rate recorded</th><th>hit rate simulated</th><th>read recorded</th><th>read simulated</th>"
            "<th>written recorded</th><th>written simulated</th><th>hit-rate error mean / p90 (points)</th>"
            "<th>real misses caught</th><th>false alarms (per 100)</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + "".join(fits))


def _section_table(comparison: Comparison) -> str:
    """The summary table as the window's Runs table shows it: each count says what it is, the
    host's repairs and overflows are rows of their own, and a run that needed them gets no ★."""
    table = summary_table(comparison)
    traces = comparison.traces
    health = [run_health(t) if t is not None else None for t in traces]
    best = best_marks(table, health)
    head = "".join(f'<th><span class="sw" style="background:{_color(i)}"></span>{_e(label)}</th>'
                   for i, label in enumerate(table.labels))
    body = []
    for r in table.rows:
        cells = []
        deltas = r.deltas
        marks = best.get(r.key) or []
        for i, value in enumerate(r.values):
            text = _e(format_value(r.key, value))
            if i > 0 and deltas[i] is not None:
                d = (f"{deltas[i] * 100:+.1f} pt" if r.key in ("hit_rate", RETENTION_KEY)
                     else format_delta(r.key, deltas[i]))
                text += f' <span class="delta">({_e(d)})</span>'
            if i < len(marks) and marks[i]:
                cells.append(f'<td class="best">{text} <span class="mark" title="best">&#9733;</span></td>')
            else:
                cells.append(f"<td>{text}</td>")
        better = {"low": "lower is better", "high": "higher is better"}.get(r.better or "", "not ranked")
        kind = summary_row_kind(r.key, traces)
        label = _e(r.label) + (f' <span class="kind">{_e(kind)}</span>' if kind else "")
        tip = summary_row_tip(r.key)
        title = f' title="{_e(tip)}"' if tip else ""
        body.append(f'<tr><td{title}>{label} <span class="muted">({better})</span></td>{"".join(cells)}</tr>')
    for key, name, tip in HEALTH_ROWS:
        if key == "faults":  # a summary row already
            continue
        cells = []
        for h in health:
            value = h[key] if h is not None else None
            if value:
                cells.append(f'<td class="err" title="{_e(tip)}: no best value is marked for this run">{value:,}</td>'
                             if key != "no_progress" else f'<td class="err">{value:,}</td>')
            else:
                cells.append(f"<td>{'-' if value is None else 0}</td>")
        body.append(f'<tr class="health"><td title="{_e(tip)}">{_e(name)}</td>{"".join(cells)}</tr>')
    return ('<h2>Summary</h2><table id="summary"><thead><tr><th>whole session</th>' + head
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>"
            '<p class="muted">&#9733; best value in the row among the runs with the fewest faults and no host '
            "repairs, orphan fixes or overflows (ties all marked; for cost, among those that also retain as many "
            "facts as the best); deltas are to the first run. Each count says what it is: "
            f"<strong>{_e(SIMULATED)}</strong> (the host's tokenizer count in a replay, or the cache simulator), "
            f"<strong>{_e(PROVIDER)}</strong> (usage the provider returned), <strong>{_e(ROUGH)}</strong> (Hermes' chars/4 estimate, "
            "what the gates compare).</p>")


def _section_plots(comparison: Comparison) -> str:
    al = comparison.alignment
    if not al.rows:
        return "<h2>Plots</h2><p>No provider requests in any run.</p>"
    labels = comparison.labels
    ticks = _turn_starts(al.rows)
    marks = [[p["x"] for p in pts] for pts in compression_points(comparison)]
    usage = summary_row_kind("tokens_sent", comparison.traces)
    prompt = svg_plot(aligned_series(comparison, "prompt_tokens"), labels,
                      title=f"Prompt tokens per request ({usage} usage)",
                      y_label="tokens", turn_starts=ticks, dashed=aligned_series(comparison, "threshold_tokens"),
                      dashed_label="compression threshold (per run)", markers=marks)
    comp = svg_plot(aligned_series(comparison, "compression_count"), labels, title="compression_count",
                    y_label="compressions", turn_starts=ticks, step=True)
    cached = svg_plot(aligned_series(comparison, "cache_read"), labels,
                      title=f"Cached tokens read per request ({SIMULATED} cache)",
                      y_label="tokens", turn_starts=ticks)
    return ("<h2>Plots</h2>"
            + _img(prompt, f"prompt tokens per request per run ({usage} usage), with each run's compression "
                   "threshold")
            + _img(comp, "compression_count per request per run")
            + _img(cached, f"cached tokens read per request per run ({SIMULATED} cache)"))


def _message_block(msg: dict[str, Any]) -> str:
    role = msg.get("role", "?")
    extra = ""
    if msg.get("tool_call_id"):
        extra = f" (tool_call_id {msg.get('tool_call_id')})"
    return f'<div><span class="role">{_e(role)}{_e(extra)}</span><pre>{_e(_short(message_text(msg)))}</pre></div>'


def _excerpt(trace: Any, ev: Any) -> str:
    """What a compression changed: the dropped messages (first and last) and what replaced them."""
    args, result = ev.args or {}, ev.result or {}
    try:
        before = trace.store.materialise(args["messages"]["$list"])
        after = trace.store.materialise(result["$list"])
    except (KeyError, TypeError, IndexError):
        return '<p class="muted">messages not recorded</p>'
    diff = diff_messages(before, after)
    parts = []
    for op in diff.ops:
        if op.kind == OP_EQUAL:
            continue
        removed = before[op.before_range[0] : op.before_range[1]]
        added = after[op.after_range[0] : op.after_range[1]]
        parts.append(f'<div class="op">{_e(op.kind)}: {len(removed)} message(s) out, {len(added)} in</div>')
        shown = removed if len(removed) <= 2 else [removed[0], removed[-1]]
        if len(removed) > 2:
            parts.append(f'<div class="muted">first and last of {len(removed)} messages taken out:</div>')
        parts.extend(_message_block(m) for m in shown)
        if added:
            parts.append('<div class="muted">put in:</div>')
            parts.extend(_message_block(m) for m in added[:2])
        if len(parts) > 16:
            parts.append('<div class="muted">…</div>')
            break
    return "".join(parts) or '<p class="muted">no change</p>'


def _section_compressions(comparison: Comparison) -> str:
    points = compression_points(comparison)
    out = ["<h2>Compressions</h2>"]
    for i, run in enumerate(comparison.runs):
        out.append(f'<h3><span class="sw" style="background:{_color(i)}"></span>{_e(run.label)}</h3>')
        if run.trace is None:
            out.append(f'<p class="err">no trace: {_e(run.error)}</p>')
            continue
        pts = points[i]
        if not pts:
            out.append('<p class="muted">no compression committed</p>')
            continue
        rows = "".join(
            f"<tr><td>{_e(p['turn'])}</td><td>{_e(p['event'])}</td>"
            f"<td>{_e(format_value('n', p['tokens_before']))} &#8594; {_e(format_value('n', p['tokens_after']))}</td>"
            f"<td>{_e(p['count_before'])} &#8594; {_e(p['count_after'])}</td></tr>"
            for p in pts)
        out.append(f"<table><thead><tr><th>turn</th><th>event</th><th>tokens before &#8594; after ({_e(ROUGH)})</th>"
                   "<th>messages before &#8594; after</th></tr></thead><tbody>" + rows + "</tbody></table>")
        for p in pts[:MAX_EXCERPTS]:
            ev = run.trace.events[p["event"]]
            out.append(f"<details><summary>turn {_e(p['turn'])}, event {_e(p['event'])}: excerpt</summary>"
                       f"{_excerpt(run.trace, ev)}</details>")
        if len(pts) > MAX_EXCERPTS:
            out.append(f'<p class="muted">excerpts shown for the first {MAX_EXCERPTS} of {len(pts)}</p>')
    return "".join(out)


MAX_LOST_FACTS = 60  # per run in the report (replay --json lists them all)


def _section_retention(comparison: Comparison) -> str:
    """Facts retained per compaction and at the end, and the facts each run lost (``inspector.quality``)."""
    from inspector.quality.analysis import analyse
    from inspector.quality.report import percent, probe_lines, run_line

    out = ["<h2>Facts retained</h2>",
           '<p class="muted">Facts (paths, identifiers, numbers with units, errors, commands, URLs, the user\'s '
           "decisions, key tool-result lines) of the messages a compaction took out, looked up in the next request: "
           "carried by a message still sent, only in a summary, or lost. The run's figure is measured at the last "
           "request.</p>"]
    for i, run in enumerate(comparison.runs):
        out.append(f'<h3><span class="sw" style="background:{_color(i)}"></span>{_e(run.label)}</h3>')
        if run.trace is None:
            out.append(f'<p class="err">no trace: {_e(run.error)}</p>')
            continue
        a = analyse(run.trace)
        out.append(f"<p>{_e(run_line(run.label, a))}</p>")
        out.extend(f'<p class="muted">{_e(line)}</p>' for line in probe_lines(a))
        points = a.retention.compactions
        if points:
            rows = "".join(
                f"<tr><td>{n}</td><td>{_e(p.event)}</td><td>{_e(p.request)}</td><td>{_e(p.total)}</td>"
                f"<td>{_e(p.count('carried'))}</td><td>{_e(p.count('summary'))}</td><td>{_e(p.count('lost'))}</td>"
                f"<td>{_e(percent(p.retention))}</td></tr>" for n, p in enumerate(points, 1))
            out.append("<table><thead><tr><th>compaction</th><th>event</th><th>next request</th><th>facts</th>"
                       "<th>carried</th><th>in a summary</th><th>lost</th><th>retained</th></tr></thead><tbody>"
                       + rows + "</tbody></table>")
        lost = a.lost_facts()
        if lost:
            items = "".join(f"<li><strong>{_e(f.fact.kind)}</strong> {_e(_short(f.fact.text, 200))} "
                            f'<span class="muted">(message {_e(f.fact.origin)})</span></li>'
                            for f in lost[:MAX_LOST_FACTS])
            more = (f'<p class="muted">first {MAX_LOST_FACTS} of {len(lost):,} lost facts</p>'
                    if len(lost) > MAX_LOST_FACTS else "")
            out.append(f"<details><summary>{len(lost):,} facts lost at the end</summary><ul>{items}</ul>{more}</details>")
    return "".join(out)


def _fault_output(output: str | None) -> str:
    """What the engine printed and logged during the faulted call, folded; its end if long."""
    if not output:
        return ""
    cut = len(output) - OUTPUT_TAIL_CHARS
    text = f"[… {cut:,} earlier characters]\n" + output[cut:] if cut > 0 else output
    return f"<details><summary>engine output</summary><pre>{_e(text)}</pre></details>"


def _section_faults(comparison: Comparison) -> str:
    out = ["<h2>Faults</h2>"]
    any_fault = False
    for i, run in enumerate(comparison.runs):
        if run.trace is None:
            if run.error:
                any_fault = True
                out.append(f'<h3>{_e(run.label)}</h3><p class="err">{_e(run.error)}</p>')
                if run.details:
                    out.append(f"<pre>{_e(_short(run.details, 4000))}</pre>")
            continue
        faults = [run.trace.events[k] for k in run.trace.fault_events]
        if not faults:
            continue
        any_fault = True
        rows = "".join(
            f"<tr><td>{_e(ev.index)}</td><td>{_e(ev.turn)}</td><td>{_e(ev.kind)}</td><td>{_e(ev.fault.kind)}</td>"
            f'<td style="text-align:left">{_e(_short(ev.fault.message, 600))}'
            + (f'<br><code>at {_e(ev.fault.where)}</code>' if ev.fault.where else "")
            + (_fault_output(ev.output) if n < MAX_FAULT_OUTPUTS else "") + "</td></tr>"
            for n, ev in enumerate(faults[:MAX_FAULTS]) if ev.fault is not None)
        out.append(f'<h3><span class="sw" style="background:{_color(i)}"></span>{_e(run.label)}</h3>'
                   "<table><thead><tr><th>event</th><th>turn</th><th>hook</th><th>fault</th><th>message</th></tr>"
                   "</thead><tbody>" + rows + "</tbody></table>")
        if len(faults) > MAX_FAULTS:
            out.append(f'<p class="muted">first {MAX_FAULTS} of {len(faults)} faults</p>')
    if not any_fault:
        out.append('<p class="muted">none</p>')
    return "".join(out)


def _section_session(comparison: Comparison) -> str:
    s = comparison.session or {}
    items = [("title", s.get("title")), ("session id", s.get("id")), ("format", s.get("format")),
             ("source", s.get("path")), ("transcript's model", s.get("model")), ("turns", s.get("turns")),
             ("messages", s.get("messages"))]
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items if v not in (None, ""))
    return f'<h2>Session</h2><dl class="info">{body}</dl>'


def render_html_report(comparison: Comparison, *, title: str | None = None) -> str:
    """The report as one HTML string (see :func:`write_html_report`)."""
    from inspector import __version__

    s = comparison.session or {}
    heading = title or f"Engine comparison: {s.get('title') or s.get('id') or s.get('path') or 'session'}"
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(heading)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(heading)}</h1>",
        f'<p class="muted">Context Engine Inspector {_e(__version__)} &#183; generated {_e(generated)} &#183; '
        f"{len(comparison.runs)} run(s) aligned by (turn, provider request)</p>",
        _section_session(comparison),
        _section_runs(comparison),
        _section_table(comparison),
        _section_cache_truth(comparison),
        _section_plots(comparison),
        _section_compressions(comparison),
        _section_retention(comparison),
        _section_faults(comparison),
        "</body></html>\n",
    ])


def write_html_report(comparison: Comparison, path: str | os.PathLike[str], *, title: str | None = None) -> None:
    """Write ONE self-contained HTML file: no scripts, no external resources, inline CSS and
    ``data:`` SVG images only, transcript text escaped throughout.
    """
    target = Path(path)
    # errors="replace" as before: a lone surrogate from a transcript becomes "?" in the report
    page = render_html_report(comparison, title=title).encode("utf-8", errors="replace").decode("utf-8")
    write_atomic(target, page)
