"""Placing the report plots' x-axis labels and legend: never overlapping, inside the picture, ends named."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from inspector.compare.plot_layout import (
    FONT_PX,
    LEGEND_SAMPLE_PX,
    legend_layout,
    text_width,
    turn_tick_labels,
)


def _starts(rng: random.Random, turns: int, lo: float, hi: float) -> list[tuple[float, int]]:
    """Turn starts at random request counts per turn, spread over [lo, hi] as the report does."""
    calls = [rng.choice([1, 1, 1, 2, 3, 8, 40, 300]) for _ in range(turns)]
    total = sum(calls)
    starts, row = [], 0
    for turn, n in enumerate(calls):
        starts.append((lo + (hi - lo) * (row + 0.5) / total, turn))
        row += n
    return starts


@pytest.mark.parametrize("seed", range(40))
def test_labels_never_overlap_and_name_the_first_and_last_turn(seed):
    rng = random.Random(seed)
    turns = rng.choice([1, 2, 3, 7, 30, 150, 2_000, 12_000])
    width = rng.choice([160, 480, 960])
    starts = _starts(rng, turns, 64, width - 16)
    labels = turn_tick_labels(starts, 2, width - 2)
    assert labels[0].text == "t0" and labels[0].x == starts[0][0]
    assert labels[-1].text == f"t{turns - 1}" and labels[-1].x == starts[-1][0]
    for a, b in zip(labels, labels[1:]):
        assert b.left - a.right >= 10 - 1e-9, (a, b)
    assert all(2 - 1e-9 <= lab.left and lab.right <= width - 2 + 1e-9 for lab in labels)
    ticks = dict((turn, x) for x, turn in starts)
    assert all(ticks[int(lab.text[1:])] == lab.x for lab in labels), "each label sits on its turn's tick"


def test_a_label_leaves_its_tick_only_to_stay_in_the_picture():
    lone = turn_tick_labels([(500.0, 7)], 0, 1000)
    assert [(lab.x, lab.centre, lab.text) for lab in lone] == [(500.0, 500.0, "t7")]
    edge = turn_tick_labels([(0.5, 0), (999.5, 2047)], 0, 1000)
    assert edge[0].left == 0 and edge[1].right == 1000 and edge[1].x == 999.5


_MEASURE = """
import json, sys
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication
app = QGuiApplication([])
out = {}
for family in ("DejaVu Sans", "Liberation Sans", "sans-serif"):
    font = QFont(family)
    font.setPixelSize(int(sys.argv[1]))
    font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    metrics = QFontMetricsF(font)
    out[family] = {text: metrics.horizontalAdvance(text) for text in json.loads(sys.argv[2])}
print(json.dumps(out))
"""


def test_text_width_is_an_upper_bound_of_real_fonts():
    pytest.importorskip("PySide6")
    texts = ["t0", "t19", "t2047", "t123456", "compressor", "compressor[threshold=0.3,default=gpt-4o]",
             "compression threshold (per run)", "MWmw%@", "lcm #2", "Ünïcödé label"]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(int(FONT_PX)), json.dumps(texts)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for family, widths in json.loads(proc.stdout.splitlines()[-1]).items():
        for text, real in widths.items():
            assert text_width(text) >= real, f"{family}: {text!r} is {real:.1f} px, estimated {text_width(text):.1f}"


def test_legend_entries_flow_into_rows_without_overlap():
    texts = ["compressor", "compressor[threshold=0.3,default=gpt-4o]", "lcm", "recall[budget=12000,keep=40]",
             "compression threshold (per run): above the plot (up to 96k)", "x" * 400]
    width = 880
    layout = legend_layout(texts, width)
    assert [row for row, _, _ in layout] == sorted(row for row, _, _ in layout) and layout[-1][0] >= 1
    for (row_a, x_a, a), (row_b, x_b, _) in zip(layout, layout[1:]):
        if row_a == row_b:
            assert x_a + LEGEND_SAMPLE_PX + text_width(a) < x_b
    assert all(x + LEGEND_SAMPLE_PX + text_width(text) <= width for _, x, text in layout)
    assert [text for _, _, text in layout][:5] == texts[:5]  # whole where they fit
    assert layout[-1][2].endswith("…") and layout[-1][1] == 0  # too wide for any row: shortened, on its own
