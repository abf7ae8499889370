"""The batch's HTML report: the group table, then each figure's per-session change against a baseline.

One self-contained file (no script, no external resource), so it opens anywhere and can be
mailed. Every text that comes from data (session paths, engine names, settings, errors) is
escaped. The distributions are inline SVG strips: one dot per session, at that session's
change from the baseline engine (same session, same setting when the baseline ran it, else
the baseline's first setting), with the median marked; the tails say more than a mean.
"""

from __future__ import annotations

import html
import statistics
from typing import Any

from inspector.batch.table import groups

# (result field, label, lower is better)
DELTA_FIGURES = (("tokens_sent", "prompt tokens sent", True), ("cost", "estimated cost", True),
                 ("cache_read", "cached tokens read", False), ("compressions", "compactions", True))
W, ROW, PAD = 720, 32, 230

_CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f2f2f2}td.t{text-align:left}
h2{margin-top:28px}.note{color:#666}svg text{font:11px system-ui,sans-serif}"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.4f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return _e(value)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def session_deltas(results: list[dict[str, Any]], baseline: str, field: str) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """(engine, setting) → [(session, relative change of ``field`` against the baseline engine)].

    Another engine is measured against the baseline under the same setting (else the baseline's
    first one); the baseline's other settings against its first."""
    ok = [r for r in results if r.get("error") is None and r.get(field) is not None]
    base: dict[tuple[str, str], float] = {}
    first_setting = next((r["setting"] for r in results if r["engine"] == baseline), None)
    for r in ok:
        if r["engine"] == baseline:
            base[(r["session"], r["setting"])] = float(r[field])
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for r in ok:
        if r["engine"] == baseline:
            if r["setting"] == first_setting:
                continue  # the reference itself
            ref = base.get((r["session"], first_setting))  # another setting of the baseline: against its first
        else:
            ref = base.get((r["session"], r["setting"]), base.get((r["session"], first_setting)))
        if not ref:
            continue  # no baseline for the session, or nothing to compare against (zero)
        out.setdefault((r["engine"], r["setting"]), []).append((r["session"], (float(r[field]) - ref) / ref))
    return out


def _strip_svg(rows: list[tuple[str, list[tuple[str, float]]]], lower_better: bool) -> str:
    values = [v for _, pts in rows for _, v in pts]
    lo, hi = min(values + [0.0]), max(values + [0.0])
    span = (hi - lo) or 1.0
    lo, hi = lo - span * 0.05, hi + span * 0.05

    def x(v: float) -> float:
        return PAD + (v - lo) / (hi - lo) * (W - PAD - 20)

    height = ROW * len(rows) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" role="img">',
             f'<line x1="{x(0):.1f}" y1="4" x2="{x(0):.1f}" y2="{height - 22}" stroke="#999" stroke-dasharray="3,3"/>']
    for i, (label, pts) in enumerate(rows):
        y = 16 + i * ROW
        engine, _, setting = label.partition(" · ")
        parts.append(f'<text x="4" y="{y - 2}">{_e(engine[:36])}<tspan x="4" dy="12" fill="#777">{_e(setting[:40])}'
                     '</tspan></text>')
        for session, v in pts:
            good = (v < 0) == lower_better if v else True
            parts.append(f'<circle cx="{x(v):.1f}" cy="{y}" r="3.5" fill="{"#2a7" if good else "#c33"}" '
                         f'fill-opacity="0.6"><title>{_e(session)}: {v * 100:+.1f}%</title></circle>')
        med = statistics.median(v for _, v in pts)
        parts.append(f'<line x1="{x(med):.1f}" y1="{y - 9}" x2="{x(med):.1f}" y2="{y + 9}" stroke="#000" stroke-width="2">'
                     f'<title>median {med * 100:+.1f}%</title></line>')
    for v in (lo, 0.0, hi):
        parts.append(f'<text x="{x(v):.1f}" y="{height - 6}" text-anchor="middle">{v * 100:+.0f}%</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_report(results: list[dict[str, Any]], baseline: str) -> str:
    """The whole report as one HTML document."""
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>context-inspector batch</title>",
           f"<style>{_CSS}</style></head><body><h1>Batch: {len({r['session'] for r in results})} sessions, "
           f"{len(results)} tasks</h1>"]
    out.append("<table><tr><th>engine</th><th>setting</th><th>sessions</th><th>failed</th><th>requests</th>"
               "<th>tokens sent</th><th>median</th><th>cost $</th><th>median</th><th>hit simulated</th>"
               "<th>hit recorded</th><th>compactions</th><th>faults</th></tr>")
    for g in groups(results):
        out.append(f"<tr><td class='t'>{_e(g['engine'])}</td><td class='t'>{_e(g['setting'])}</td>"
                   f"<td>{_num(g['sessions'])}</td><td>{_num(g['failed'])}</td><td>{_num(g['requests'])}</td>"
                   f"<td>{_num(g['tokens_sent'])}</td><td>{_num(g['tokens_sent_median'])}</td><td>{_num(g['cost'])}</td>"
                   f"<td>{_num(g['cost_median'])}</td><td>{_pct(g['hit_rate'])}</td>"
                   f"<td>{_pct(g['recorded_hit_rate'])}</td><td>{_num(g['compressions'])}</td><td>{_num(g['faults'])}</td></tr>")
    out.append("</table>")
    out.append(f"<h2>Per-session change against {_e(baseline)}</h2>")
    any_delta = False
    for field, label, lower in DELTA_FIGURES:
        deltas = session_deltas(results, baseline, field)
        if not deltas:
            continue
        any_delta = True
        rows = [(f"{engine} · {setting}", pts) for (engine, setting), pts in deltas.items()]
        out.append(f"<h3>{_e(label)}</h3><p class='note'>one dot per session; green is better than {_e(baseline)}, "
                   "the bar is the median</p>")
        out.append(_strip_svg(rows, lower))
    if not any_delta:
        out.append(f"<p class='note'>no other engine or setting to compare with {_e(baseline)}</p>")
    failed = [r for r in results if r.get("error") is not None]
    if failed:
        out.append("<h2>Failed tasks</h2><table><tr><th>session</th><th>engine</th><th>setting</th><th>error</th></tr>")
        for r in failed:
            out.append(f"<tr><td class='t'>{_e(r['session'])}</td><td class='t'>{_e(r['engine'])}</td>"
                       f"<td class='t'>{_e(r['setting'])}</td><td class='t'>{_e(r['error'])}</td></tr>")
        out.append("</table>")
    out.append("</body></html>\n")
    return "".join(out)
