"""Where the HTML report's plots put their x-axis labels and legend, so that no two texts overlap.

The x axis counts provider requests and is labelled at the request where a turn starts. Turns
take very different widths — one may hold a hundred requests, the next twenty turns one each — so
labelling every k-th turn can stack several labels on a few pixels. Labels are chosen on the
page's own scale instead: the smallest round turn step (1, 2, 5, 10, …) whose labels, at their
widths, all keep clear of each other where the turns really fall. The first and last turn are
always labelled, so the axis says where the session starts and ends.

The SVG is drawn without a browser, so text widths are estimated: per character, an upper bound
of DejaVu Sans (Linux' default sans-serif, wider than Arial or Helvetica), so a label is never
wider on the page than it was laid out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FONT_PX = 11.0  # the plots' font-size
GAP_PX = 10.0  # clear space between two labels

# Advance widths in em, rounded up from DejaVu Sans; any non-ASCII character counts as 1 em.
_NARROW = frozenset(" .,:;'!|ijlft()[]/\\-`\"r")  # at most 0.42 em
_WIDE = frozenset("=+<>~^#&*$?_{}")  # at most 0.84 em
_WIDEST = frozenset("mwMW%@")  # at most 1.0 em


def _char_em(ch: str) -> float:
    if ch in _NARROW:
        return 0.42
    if ch in _WIDEST or not ch.isascii():
        return 1.0
    if ch in _WIDE:
        return 0.84
    if ch.isupper():
        return 0.80
    return 0.64  # digits, lowercase letters


def text_width(text: str, font_px: float = FONT_PX) -> float:
    """An upper bound of ``text``'s width in pixels in the plots' sans-serif font."""
    return font_px * sum(_char_em(ch) for ch in text)


@dataclass(frozen=True)
class TickLabel:
    """One x-axis label: the tick at ``x``, the text centred at ``centre`` (moved off ``x`` only
    to stay inside the picture or clear of the other end's label)."""

    x: float
    centre: float
    text: str

    @property
    def width(self) -> float:
        return text_width(self.text)

    @property
    def left(self) -> float:
        return self.centre - self.width / 2

    @property
    def right(self) -> float:
        return self.centre + self.width / 2


def _label(x: float, turn: int, lo: float, hi: float) -> TickLabel:
    text = f"t{turn}"
    half = text_width(text) / 2
    return TickLabel(x, max(lo + half, min(x, hi - half)), text)


def turn_tick_labels(starts: Sequence[tuple[float, int]], lo: float, hi: float,
                     gap: float = GAP_PX) -> list[TickLabel]:
    """Labels for turn starts ``(pixel x, turn)`` (in x order); labels stay within ``[lo, hi]``.

    Between the first and the last turn, only turns on a round step (1, 2, 5, 10, 20, …) are
    labelled: the smallest step at which no two of them come closer than ``gap``, so the axis
    reads as a regular scale without holes. Only the first and last turn's labels may push a
    round one next to them out.
    """
    if not starts:
        return []
    first, last = starts[0], starts[-1]
    ends = [_label(x, turn, lo, hi) for x, turn in (first, last)]
    if len(starts) == 1:
        return ends[:1]
    step = 1  # grows until at most one round turn is left between the ends: a lone one never clashes
    while (labels := _step_labels(starts, step, ends, lo, hi, gap)) is None:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2  # 1, 2, 5, 10, 20, 50, …
    return labels


def _step_labels(starts: Sequence[tuple[float, int]], step: int, ends: list[TickLabel], lo: float, hi: float,
                 gap: float) -> list[TickLabel] | None:
    """The first and last labels with the round ones between; None when two round ones clash."""
    first, end = ends
    kept = [first]
    for x, turn in starts[1:-1]:
        if turn % step:
            continue
        label = _label(x, turn, lo, hi)
        if label.left >= kept[-1].right + gap:
            kept.append(label)
        elif len(kept) > 1:
            return None
    while len(kept) > 1 and end.left < kept[-1].right + gap:
        kept.pop()  # the last turn's label wins over a round one next to it
    if end.left >= kept[-1].right + gap:
        return [*kept, end]
    return _apart(first, end, lo, hi, gap)


def _apart(a: TickLabel, b: TickLabel, lo: float, hi: float, gap: float) -> list[TickLabel]:
    """The first and the last turn start a few pixels apart: their labels sit either side of the
    midpoint between the two ticks; when even that does not fit, only the first is labelled."""
    if a.width + gap + b.width > hi - lo:
        return [a]
    mid = (a.x + b.x) / 2
    mid = max(lo + a.width + gap / 2, min(mid, hi - b.width - gap / 2))
    return [TickLabel(a.x, mid - gap / 2 - a.width / 2, a.text), TickLabel(b.x, mid + gap / 2 + b.width / 2, b.text)]


LEGEND_SAMPLE_PX = 28.0  # the line sample before each legend text
LEGEND_SPACING_PX = 24.0  # between one legend entry and the next


def legend_layout(texts: Sequence[str], width: float) -> list[tuple[int, float, str]]:
    """Legend entries flowed into rows ``width`` wide: ``(row, x offset, text)`` each, in order.

    Run labels carry their config overrides and can be long: an entry goes to the next row when
    it would not fit, and a text too wide even for a row of its own is shortened with "…".
    """
    out: list[tuple[int, float, str]] = []
    row, x = 0, 0.0
    for text in texts:
        text = _shorten(text, width - LEGEND_SAMPLE_PX)
        entry = LEGEND_SAMPLE_PX + text_width(text)
        if x > 0 and x + entry > width:
            row, x = row + 1, 0.0
        out.append((row, x, text))
        x += entry + LEGEND_SPACING_PX
    return out


def _shorten(text: str, room: float) -> str:
    if text_width(text) <= room:
        return text
    while text and text_width(text + "…") > room:
        text = text[:-1]
    return text + "…"
